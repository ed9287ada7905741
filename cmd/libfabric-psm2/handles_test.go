package main

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

type slotObj struct{ n int }

func TestSlotTable(t *testing.T) {
	var tab slotTable[slotObj]
	if tab.lookup(0) != nil || tab.lookup(1) != nil || tab.lookup(1<<31) != nil {
		t.Fatal("an empty table resolved a slot")
	}
	objs := make([]*slotObj, 200) // past the first growth
	slots := make([]uint32, len(objs))
	for i := range objs {
		objs[i] = &slotObj{i}
		slots[i] = tab.register(objs[i])
		if slots[i] == 0 {
			t.Fatal("slot 0 handed out")
		}
	}
	for i, s := range slots {
		if got := tab.lookup(s); got != objs[i] {
			t.Fatalf("lookup(%d) = %v, want object %d", s, got, i)
		}
	}
	if n := tab.inUse(); n != len(objs) {
		t.Errorf("inUse = %d, want %d", n, len(objs))
	}
	tab.release(slots[7])
	if tab.lookup(slots[7]) != nil {
		t.Error("a released slot still resolves")
	}
	tab.release(slots[7]) // twice: a no-op
	tab.release(0)
	tab.release(1 << 30)
	if n := tab.inUse(); n != len(objs)-1 {
		t.Errorf("inUse after release = %d", n)
	}
	if tab.lookup(0) != nil {
		t.Error("slot 0 resolves")
	}
}

// TestSlotTableStale: a released index comes back only after others were
// released, oldest first, and with a new generation, so the old slot (a
// stale pointer's) never resolves to the new object.
func TestSlotTableStale(t *testing.T) {
	var tab slotTable[slotObj]
	first := tab.register(&slotObj{0})
	tab.release(first)
	// Below the reuse threshold new indexes are taken.
	var held []uint32
	for i := 0; i < 63; i++ {
		s := tab.register(&slotObj{i})
		if s&slotIndexMask == first&slotIndexMask {
			t.Fatalf("index of slot %#x reused after %d registrations", first, i)
		}
		held = append(held, s)
	}
	for _, s := range held {
		tab.release(s)
	}
	x := &slotObj{-1}
	s := tab.register(x)
	if s&slotIndexMask != first&slotIndexMask {
		t.Errorf("oldest released index not reused first: got %#x, want index of %#x", s, first)
	}
	if s == first || tab.lookup(first) != nil || tab.lookup(s) != x {
		t.Errorf("stale slot %#x and new slot %#x: lookup(stale) = %v, lookup(new) = %v",
			first, s, tab.lookup(first), tab.lookup(s))
	}
	tab.release(first) // a stale release must not free the new object
	if tab.lookup(s) != x {
		t.Error("releasing a stale slot released its index's new object")
	}
}

func TestSlotTableConcurrent(t *testing.T) {
	var tab slotTable[slotObj]
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []uint32
			for i := 0; i < 500; i++ {
				o := &slotObj{i}
				s := tab.register(o)
				mine = append(mine, s)
				if got := tab.lookup(s); got != o {
					t.Errorf("lookup of a fresh slot = %v", got)
					return
				}
				for _, m := range mine[max(0, len(mine)-4):] {
					if tab.lookup(m) == nil {
						t.Errorf("slot %d of this goroutine vanished", m)
						return
					}
				}
				if i%3 == 0 {
					tab.release(mine[0])
					mine = mine[1:]
				}
			}
			for _, s := range mine {
				tab.release(s)
			}
		}()
	}
	wg.Wait()
	if n := tab.inUse(); n != 0 {
		t.Errorf("%d slots in use at the end", n)
	}
}

func TestSlotLookupAllocs(t *testing.T) {
	var tab slotTable[slotObj]
	s := tab.register(&slotObj{1})
	if n := testing.AllocsPerRun(100, func() { tab.lookup(s) }); n != 0 {
		t.Errorf("lookup allocates %v times", n)
	}
}

func TestErrnoOf(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, 0},
		{fi.EAGAIN, -int(fi.EAGAIN)},
		{fi.EAVAIL, -int(fi.EAVAIL)},
		{fmt.Errorf("wrapped: %w", fi.ENOKEY), -int(fi.ENOKEY)},
		{fmt.Errorf("plain"), -int(fi.EOTHER)},
	}
	for _, tt := range tests {
		if got := int(errnoOf(tt.err)); got != tt.want {
			t.Errorf("errnoOf(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	var err error = fi.EAGAIN
	if n := testing.AllocsPerRun(100, func() { errnoOf(err) }); n != 0 {
		t.Errorf("errnoOf allocates %v times", n)
	}
}

func BenchmarkSlotLookup(b *testing.B) {
	var tab slotTable[slotObj]
	s := tab.register(&slotObj{1})
	for b.Loop() {
		tab.lookup(s)
	}
}

func BenchmarkHandleValue(b *testing.B) {
	h := newHandle(&slotObj{1})
	defer deleteHandle(h)
	for b.Loop() {
		handleValue(h)
	}
}
