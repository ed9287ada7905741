// Package shm is the intra-node wire of the psm2 provider: Endpoint, a
// transport.Endpoint that moves messages between processes (and
// goroutines) of one node through POSIX shared memory, and the building
// blocks it is made of.
//
// # Building blocks
//
// The ring (internal/ring, shared with hfi's arrival ring) is a bounded
// multi-producer, single-consumer queue of fixed 64-byte cells laid out in
// a caller-supplied []byte. Segment is a POSIX shared
// memory object under /dev/shm holding a versioned header (owner pid, job
// key, endpoint id, state), a futex doorbell, one Ring and a pool of
// bounce buffers with a word of busy bits.
//
// The memory holds no pointers, only counters and offsets, so every
// process may map it at a different address. Its layout is versioned, and
// the offsets of every field are constants pinned by tests.
//
// Everything read from shared memory comes from another process and is
// untrusted: headers are validated when a ring or segment is attached, the
// cell count is read once, and every index is masked or range-checked. A
// misbehaving peer can make a ring deliver garbage or refuse work, but
// cannot make this process index out of bounds. See Ring for the one
// failure the ring cannot recover from (a producer dying in the middle of
// a push) and how to detect it.
//
// # Endpoint
//
// Each endpoint owns one segment, named from the user, the job key and
// the endpoint id (SegmentName), and polls its ring. Any number of peers
// map the segment and push cells into the ring. A message travels one of
// three ways, chosen by its size:
//
//   - inline: the header and payload in one cell, or a few consecutive
//     cells pushed as a unit (TryPushCells);
//   - eager: the payload in one of the sender's own bounce buffers, and a
//     cell naming it; the receiver reads it from its mapping of the
//     sender's segment and clears the buffer's busy bit;
//   - rendezvous: a request-to-send cell; when the provider has a place
//     for the data, the receiver copies it straight from the sender's
//     memory (process_vm_readv(2), or a plain copy within one process)
//     and sends a FIN cell back, or, where that is not allowed, asks with
//     a CTS cell for the data to be streamed through the sender's bounce
//     buffers.
//
// Control cells (FIN, CTS) that do not fit in a full ring are queued and
// retried by Poll, never dropped while the peer lives. Poll checks the
// liveness of the peers that operations wait on (process gone, segment
// closed or removed, ring not consumed) and fails those operations with
// transport.ErrPeerDead or transport.ErrTimeout.
//
// A sleeping endpoint (Wait) is woken through a futex in its segment; a
// producer pays one load for the check when nobody sleeps. NewEndpoint
// removes the segments of this user whose owner died (ReclaimStale).
//
// docs/shm.md describes the protocols, the cell formats and the segment
// layout in full, with benchmark figures.
//
// # Using the pieces directly
//
// The owner creates a segment and polls its ring:
//
//	seg, err := shm.Create(name, 256)
//	if errors.Is(err, os.ErrExist) {
//		if removed, _ := shm.Reclaim(name); removed { // a dead owner's leftover
//			seg, err = shm.Create(name, 256)
//		}
//	}
//	if err != nil { ... }
//	defer shm.Unlink(name)
//	defer seg.Close()
//	r := seg.Ring()
//	var msg [shm.CellPayload]byte
//	for !r.Empty() {
//		n, _ := r.TryPop(msg[:])
//		handle(msg[:n])
//	}
//
// A peer maps it and pushes:
//
//	seg, err := shm.Open(name)
//	if err != nil { ... }
//	defer seg.Close()
//	if err := seg.Ring().TryPush(payload); errors.Is(err, ring.ErrFull) {
//		// back off and retry; the ring never blocks or overwrites
//	}
//
// The ring is internal/ring's; it also works on ordinary memory, which is
// how it is tested. Only Linux is supported for segments and endpoints.
package shm
