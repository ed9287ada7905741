// Command libfabric-psm2 is the cgo shim that turns the Go provider into a
// C shared object: libfabric.so.1 (a standalone libfabric with only the
// psm2 provider) or, built with the dl tag, libpsm2-fi.so (a provider
// plugin for an installed libfabric). It holds the exported C entry points,
// the static ops tables and the C<->Go conversions; the behaviour lives in
// provider/ and internal/, except the same-host calls the C fast path
// answers without Go (package fast, in fast/, which ep.c and cq.c call).
package main
