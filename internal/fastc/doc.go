// Package fastc lets Go tests call the pieces of the C fast path
// (cmd/libfabric-psm2/fast: cell.h, match.h, stream.h, ucopy.c) on inputs
// of their choosing, so that what C does can be checked against the Go
// code that does the same thing (the differential tests in shm and
// provider). It is not part of the library.
//
// The headers and ucopy.c here are links to the fast path's: the go
// command rebuilds a package when files in its own directory change, not
// headers it finds elsewhere, and a test of stale C would prove nothing.
package fastc
