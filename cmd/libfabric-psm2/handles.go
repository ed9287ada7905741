package main

import (
	"sync"
	"sync/atomic"
	"unsafe"

	pointer "github.com/mattn/go-pointer"

	"github.com/gopsm2/libfabric-psm2/provider"
)

// This file is the one place where Go objects are put behind C pointers.
// A handle is created when an object is opened, resolved when C calls in
// with its fid, and deleted when the fid is closed. liveHandles lets tests
// check that every close released its handle.

var liveHandles atomic.Int64

// newHandle stores v and returns the C-side key for it.
func newHandle(v any) unsafe.Pointer {
	liveHandles.Add(1)
	return pointer.Save(v)
}

// handleValue returns the object behind h (nil for an unknown key).
func handleValue(h unsafe.Pointer) any {
	if h == nil {
		return nil
	}
	return pointer.Restore(h)
}

// deleteHandle forgets h.
func deleteHandle(h unsafe.Pointer) {
	if h == nil {
		return
	}
	pointer.Unref(h)
	liveHandles.Add(-1)
}

// slotTable maps small integers (slots) to the objects of one type, for
// the data path: a C struct stores its slot, and each call resolves it with
// one atomic load and a bounds-checked index, without the lock and map of
// the handles above. Slot 0 is never handed out, so a zeroed C struct
// resolves to nothing.
//
// A slot is an index (low slotIndexBits) and a generation (the high bits)
// that changes each time the index is reused, and released indexes are
// reused oldest first: a slot kept by a stale pointer to a closed object
// resolves to nothing, not to the next object given that index.
//
// register, release and the growth of the table take mu; lookup takes
// nothing. The cells live in a slice that is replaced, never resized in
// place, when it grows, so a lookup racing with a growth sees either slice.
type slotTable[T any] struct {
	mu    sync.Mutex
	cells atomic.Pointer[[]atomic.Pointer[slotEntry[T]]]
	gens  []uint32 // each index's current generation (under mu)
	free  []uint32 // released indexes, reused oldest first
	next  uint32   // the lowest index never handed out
	live  int      // slots in use
}

// slotEntry is what a cell holds: immutable once stored, so a lookup sees
// an object and its generation together.
type slotEntry[T any] struct {
	obj *T
	gen uint32
}

const (
	slotIndexBits = 20 // a million objects of a type open at once
	slotIndexMask = 1<<slotIndexBits - 1
	slotGenMask   = 1<<(32-slotIndexBits) - 1
)

// register stores v and returns its slot; 0 if every index is in use.
func (t *slotTable[T]) register(v *T) uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i uint32
	// Reuse an index only once enough others wait, so that a given
	// index comes back rarely (and its generation wraps more rarely).
	if len(t.free) > 0 && (len(t.free) >= 64 || t.next > slotIndexMask) {
		i = t.free[0]
		t.free = t.free[1:]
	} else {
		if t.next == 0 {
			t.next = 1
		}
		if t.next > slotIndexMask {
			return 0
		}
		i = t.next
		t.next++
	}
	cells := t.cells.Load()
	if cells == nil || int(i) >= len(*cells) {
		n := 64
		if cells != nil {
			n = 2 * len(*cells)
		}
		for n <= int(i) {
			n *= 2
		}
		grown := make([]atomic.Pointer[slotEntry[T]], n)
		if cells != nil {
			for k := range *cells {
				grown[k].Store((*cells)[k].Load())
			}
		}
		t.cells.Store(&grown)
		cells = &grown
		gens := make([]uint32, n)
		copy(gens, t.gens)
		t.gens = gens
	}
	t.gens[i] = (t.gens[i] + 1) & slotGenMask
	e := &slotEntry[T]{obj: v, gen: t.gens[i]}
	(*cells)[i].Store(e)
	t.live++
	return e.gen<<slotIndexBits | i
}

// lookup returns the object in slot s, nil for a slot not in use (or no
// longer: an older generation of its index).
func (t *slotTable[T]) lookup(s uint32) *T {
	cells := t.cells.Load()
	if cells == nil {
		return nil
	}
	c := *cells
	i := s & slotIndexMask
	if uint(i) >= uint(len(c)) {
		return nil
	}
	e := c[i].Load()
	if e == nil || e.gen != s>>slotIndexBits {
		return nil
	}
	return e.obj
}

// release empties slot s for reuse; a slot not in use is ignored.
func (t *slotTable[T]) release(s uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cells := t.cells.Load()
	i := s & slotIndexMask
	if i == 0 || cells == nil || int(i) >= len(*cells) {
		return
	}
	e := (*cells)[i].Load()
	if e == nil || e.gen != s>>slotIndexBits {
		return
	}
	(*cells)[i].Store(nil)
	t.free = append(t.free, i)
	t.live--
}

// inUse is the number of slots holding an object.
func (t *slotTable[T]) inUse() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.live
}

// objTable holds the objects the data path reaches by slot.
var objTable struct {
	ep   slotTable[provider.Endpoint]
	cq   slotTable[provider.CQ]
	cntr slotTable[provider.Cntr]
}

// handleObj returns the object of type T behind handle h (nil if h is
// unknown or holds another type).
func handleObj[T any](h unsafe.Pointer) *T {
	v, _ := handleValue(h).(*T)
	return v
}
