// Package atomicx owns atomic access to memory shared with other
// processes and with C: the typed views of words inside a []byte
// (WordAt, RawWordAt, Word32At, Aligned8; word.go), and the one
// memory-ordering primitive sync/atomic lacks: a store with release (not
// sequentially consistent) ordering, for the rings of internal/ring.
//
// On amd64, sync/atomic's Store compiles to XCHG, a full barrier: the
// thread waits until every earlier store, including ones whose cache line
// is still on its way from another core, is globally visible. A ring
// producer publishing a cell therefore stalls for the whole cross-core
// transfer of that cell's line. Under x86-TSO a plain MOV already has
// release semantics (no earlier load or store passes it), so StoreRel64 is
// one MOV in assembly and lets the store buffer drain in the background.
//
// Other architectures, and builds with the race detector (which cannot see
// into assembly), use sync/atomic's Store, which is stronger than release.
package atomicx
