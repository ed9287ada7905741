//go:build linux

package ring

import (
	"errors"

	"github.com/gopsm2/libfabric-psm2/internal/atomicx"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// Producer slots. A ring ends with RingSlots slots of 32 bytes:
//
//	+0  pid of the owning process (0: free)
//	+8  its start time, in clock ticks since boot (/proc/<pid>/stat
//	    field 22), so a reused pid is not mistaken for the owner
//	+16 pos: the first position of the owner's latest reservation
//	+24 n: how many cells it covers
//
// A producer stores n and pos before the CAS that reserves them
// (reserveN), so once the producer counter shows a reservation, its
// owner's slot shows it too. The slot keeps the value after the cells are
// published, until the owner's next reservation; a stale value names
// positions that are published already, or that another producer reserved
// after a failed CAS of this one.
//
// SkipDead repairs the cell at pos only if every slot whose [pos, pos+n)
// holds it belongs to a process that is gone: the real owner is among
// them, so none of them will ever write there again. A live producer
// covering it (the owner, slow, or one whose CAS failed a moment ago and
// that will retry) makes it wait. Every word is untrusted like the rest of
// the ring: a slot only ever decides whether to skip one cell, and only
// while the ring is stalled there anyway.

// ErrNoSlot is returned by Claim when every producer slot of the ring is
// held by a live process.
var ErrNoSlot = errors.New("ring: no free producer slot in the ring")

// slotsOff is the offset of the producer slots in r.mem.
func (r *Ring) slotsOff() int { return ringHeaderSize + int(r.n)*CellSize }

func (r *Ring) slotOff(i int) int { return r.slotsOff() + i*slotSize }

// Claim returns a view of r that announces its reservations in a producer
// slot owned by id, taking a free slot or one whose owner is gone. Pushes
// through the view are repairable should the process die in the middle of
// one; the view must be the only one pushing for id's slot at a time (the
// endpoint's pushes are serialised by its owner). Release frees the slot.
// It fails with ErrNoSlot when every slot has a live owner.
func (r *Ring) Claim(id sys.ProcIdentity) (*Ring, error) {
	if id.PID <= 0 || uint64(id.PID) > 1<<32 {
		return nil, ErrNoSlot
	}
	first := int(uint(id.PID)*2654435761) % RingSlots // spread claimants
	for k := range RingSlots {
		i := (first + k) % RingSlots
		off := r.slotOff(i)
		pidw := atomicx.WordAt(r.mem, off+offSlotPID)
		old := pidw.Load()
		if old != 0 {
			owner := sys.ProcIdentity{PID: int(old), Start: atomicx.WordAt(r.mem, off+offSlotStart).Load()}
			if old > 1<<32 || !owner.Gone() {
				continue
			}
		}
		if !pidw.CompareAndSwap(old, uint64(id.PID)) {
			continue
		}
		atomicx.WordAt(r.mem, off+offSlotStart).Store(id.Start)
		atomicx.WordAt(r.mem, off+offSlotN).Store(0)
		v := *r
		v.slot = i
		v.slotPos = atomicx.RawWordAt(r.mem, off+offSlotPos)
		v.slotN = atomicx.RawWordAt(r.mem, off+offSlotN)
		return &v, nil
	}
	return nil, ErrNoSlot
}

// Release gives up the view's producer slot. The view must not push
// afterwards.
func (r *Ring) Release() {
	if r == nil || r.slot < 0 {
		return
	}
	off := r.slotOff(r.slot)
	atomicx.StoreRel64(r.slotN, 0)
	atomicx.WordAt(r.mem, off+offSlotPID).Store(0)
	r.slot, r.slotPos, r.slotN = -1, nil, nil
}

// SlotAddr returns the address of the view's slot's pos word (n is the
// next word), for a producer outside Go, or 0 without a slot.
func (r *Ring) SlotAddr() uintptr {
	if r.slotPos == nil {
		return 0
	}
	return atomicx.Addr(r.slotPos)
}

// SkipDead is for the consumer of a ring stalled at pos (Stalled): if
// every producer slot covering pos belongs to a process that is gone, it
// publishes an empty cell at pos, so the consumer can pass it, and returns
// the owners it found and true. Otherwise (a live owner, or no slot
// covering pos) it changes nothing and returns false. owners is reused for
// the result. Only the single consumer may call it, and it reads /proc, so
// only when a stall has lasted (the endpoint waits a millisecond).
func (r *Ring) SkipDead(pos uint64, owners []sys.ProcIdentity) ([]sys.ProcIdentity, bool) {
	owners = owners[:0]
	off := r.cellOff(pos)
	// Unpublished cells hold the previous lap's sequence (pos-N+1; pos
	// on the first lap), so test for "not published", and that pos is
	// reserved at all.
	if r.seq(off).Load() == pos+1 || int64(r.prod.Load()-pos) <= 0 {
		return owners, false
	}
	for i := range RingSlots {
		so := r.slotOff(i)
		pid := atomicx.WordAt(r.mem, so+offSlotPID).Load()
		if pid == 0 {
			continue
		}
		n := atomicx.WordAt(r.mem, so+offSlotN).Load()
		if pos-atomicx.WordAt(r.mem, so+offSlotPos).Load() >= n {
			continue // does not cover pos
		}
		id := sys.ProcIdentity{PID: int(pid), Start: atomicx.WordAt(r.mem, so+offSlotStart).Load()}
		if pid > 1<<32 || !id.Gone() {
			return owners, false
		}
		owners = append(owners, id)
	}
	if len(owners) == 0 {
		return owners, false
	}
	r.publish(off, pos, nil)
	return owners, true
}
