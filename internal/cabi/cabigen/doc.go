// Command cabigen writes cmd/libfabric-psm2/fast/layout.h, the C view of the
// memory layouts Go owns (package cabi). Run by
//
//	go generate ./cmd/libfabric-psm2/fast
//
// and checked by this package's test, which fails when the header in the
// tree is not what the Go constants say.
package main
