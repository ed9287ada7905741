// Package shm implements the intra-node transport's shared-memory building
// blocks: Ring, a bounded multi-producer, single-consumer queue of fixed
// 64-byte cells laid out in a caller-supplied []byte, and Segment, a POSIX
// shared memory object under /dev/shm that holds one Ring behind a small
// versioned header naming its owner.
//
// Each receiving endpoint owns one segment; any number of sending processes
// map it and push into its ring. The memory holds no pointers, only
// counters and offsets, so every process may map it at a different address.
// Its layout is versioned, and the offsets of every field are constants
// pinned by tests.
//
// Everything read from shared memory comes from another process and is
// untrusted: headers are validated when a ring or segment is attached, the
// cell count is read once, and every index is masked. A misbehaving peer
// can make a ring deliver garbage or refuse work, but cannot make this
// process index out of bounds. See Ring for the one failure the ring cannot
// recover from (a producer dying in the middle of a push) and how to detect
// it.
//
// The owner creates the segment and polls its ring:
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
//	if err := seg.Ring().TryPush(payload); errors.Is(err, shm.ErrFull) {
//		// back off and retry; the ring never blocks or overwrites
//	}
//
// A Ring also works on ordinary memory, which is how it is tested:
//
//	r, err := shm.InitRing(make([]byte, shm.RingSize(64)), 64)
//
// Only Linux is supported for segments; the ring itself is portable.
package shm
