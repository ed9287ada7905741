// Command abigen writes a C probe program that prints every ABI-relevant
// fact of libfabric's public headers, one fact per line.
//
// It reads the reference headers (Debian's libfabric-dev by default),
// preprocesses them with gcc, parses the declarations that come from the
// libfabric files and emits a probe that, compiled once against the
// reference headers and once against another copy of them, lets the two
// outputs be compared line by line.
//
// Usage:
//
//	go run ./ctest/abi/abigen [-ref /usr/include/rdma] [-cc gcc] [-o probe.c]
//
// Only the Go standard library is used.
package main
