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
// resolves to nil.
//
// register, release and the growth of the table take mu; lookup takes
// nothing. The cells live in a slice that is replaced, never resized in
// place, when it grows, so a lookup racing with a growth sees either slice.
type slotTable[T any] struct {
	mu    sync.Mutex
	cells atomic.Pointer[[]atomic.Pointer[T]]
	free  []uint32 // released slots, reused first
	next  uint32   // the lowest slot never handed out
	live  int      // slots in use
}

// register stores v and returns its slot.
func (t *slotTable[T]) register(v *T) uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var s uint32
	if n := len(t.free); n > 0 {
		s, t.free = t.free[n-1], t.free[:n-1]
	} else {
		if t.next == 0 {
			t.next = 1
		}
		s = t.next
		t.next++
	}
	cells := t.cells.Load()
	if cells == nil || int(s) >= len(*cells) {
		n := 64
		if cells != nil {
			n = 2 * len(*cells)
		}
		for n <= int(s) {
			n *= 2
		}
		grown := make([]atomic.Pointer[T], n)
		if cells != nil {
			for i := range *cells {
				grown[i].Store((*cells)[i].Load())
			}
		}
		t.cells.Store(&grown)
		cells = &grown
	}
	(*cells)[s].Store(v)
	t.live++
	return s
}

// lookup returns the object in slot s, nil for a slot not in use.
func (t *slotTable[T]) lookup(s uint32) *T {
	cells := t.cells.Load()
	if cells == nil {
		return nil
	}
	c := *cells
	if uint(s) >= uint(len(c)) {
		return nil
	}
	return c[s].Load()
}

// release empties slot s for reuse.
func (t *slotTable[T]) release(s uint32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	cells := t.cells.Load()
	if s == 0 || cells == nil || int(s) >= len(*cells) || (*cells)[s].Load() == nil {
		return
	}
	(*cells)[s].Store(nil)
	t.free = append(t.free, s)
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
