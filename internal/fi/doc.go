// Package fi is the libfabric 1.17 vocabulary in Go: the constants of the C
// API (capability and mode bits, enums, error numbers), a Go mirror of
// struct fi_info and its attribute structs, and the fi_tostr formatting that
// libfabric prints them with.
//
// It has no cgo and no state. The C shim (cmd/libfabric-psm2) converts
// between the C structs and these types; the provider and the core reason
// only about these types, so they can be tested with CGO_ENABLED=0.
//
// Nullable C strings are plain Go strings: "" stands for NULL. Pointers the
// API only carries (fid handles) are kept as uintptr so they can be printed,
// never dereferenced.
package fi
