// Package cabi is the one description of the memory that the C side of
// the library (cmd/libfabric-psm2/fast) shares with Go: every
// offset, size and flag both of them read or write. The package that owns
// a layout lists it (provider.CLayout, shm.CLayout), computed from the
// constants its Go code uses; cmd/libfabric-psm2/fast/layout.h is generated
// from those lists (go generate ./cmd/libfabric-psm2/fast), and a test fails
// when the checked-in header differs from what the lists say. C code uses
// the header's names only, never a number of its own.
package cabi
