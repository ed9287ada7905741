// Package slots owns the library's table of operations in flight: values
// kept by index in one slice, each index with a generation, so that an id
// (generation<<32 | index) handed to a peer names one operation and never
// a later one that reuses its index. Both wires keep their sends and
// fetches in it (shm, hfi); a peer's answer names its operation by such an
// id, and Lookup is where that untrusted id is checked.
//
// The rule: a fresh index starts at generation 1, Free bumps it and skips
// 0 on wrap, so a live id is never 0 and a zero word (an absent field, a
// zeroed cell) names nothing. An index is reused only after Free, most
// recently freed first (its value's memory is warm).
//
// Two tables stay outside, each for a reason: the C-exported handles of
// cmd/libfabric-psm2, read concurrently by lock-free lookups and packing
// index and generation into 32 bits (handles.go); and the provider
// engine's ops, which queues hold by pointer (a Table moves its values
// when it grows) and whose RMA ids share their generation space with the
// ops C posts (provider/fastrma.go, cTagGen). A Table belongs to one
// goroutine at a time (the endpoint's owner) and costs a bounds check and
// a compare per lookup.
package slots
