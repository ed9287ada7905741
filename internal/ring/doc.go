// Package ring owns the library's multi-producer, single-consumer queue of
// 64-byte cells in memory shared between processes, and with the C fast
// path (cmd/libfabric-psm2/fast/ring.h pushes and pops the same cells, from
// the layout CLayout describes).
//
// Two wires use it: shm, as each endpoint's receive ring inside its
// segment (any process of the node pushes there), and hfi, as the arrival
// ring between its receive thread and Poll, so that C's idle check sees
// network arrivals with the same probe word (Ring.Probe) it uses for shm.
//
// Ring holds the protocol (reserve by CAS, publish by the cell's sequence
// word, consume by the consumer counter) and the producer slots that let a
// consumer repair a cell whose producer died between reserving and
// publishing (Claim, SkipDead; slots.go). Process identity across pid
// reuse is internal/sys's (ProcIdentity). The memory holds no pointers,
// only counters, so every process may map it at its own address, and
// everything read from it is untrusted: a hostile peer can make a ring
// deliver garbage or refuse work, never index out of bounds or spin.
//
// docs/shm.md describes the protocol with its measurements.
package ring
