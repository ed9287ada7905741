// Package atomicop owns the arithmetic of fi_atomic(3) and of the
// collectives' reductions: the datatypes and ops libfabric names, which op
// applies to which datatype (psm2's table: Valid), the size of an element,
// and applying an op to elements in memory (Apply), where a fault on the
// target is an error, not a crash. Long double types are applied by C
// (LongDoubleApply, set by cmd/libfabric-psm2), Go having no such type.
//
// Who uses it: the provider's atomics (provider/atomic.go, at the target
// of a request, under the process's atomic lock), its reductions
// (provider/coll.go), and the C fast path's integer atomics
// (cmd/libfabric-psm2/fast/atomic.h), whose element sizes are generated
// from Size and whose results provider/fastc_diff_test.go checks against
// Apply.
package atomicop
