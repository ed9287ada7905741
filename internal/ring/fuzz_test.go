package ring

import (
	"errors"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// FuzzAttachRing feeds arbitrary bytes to AttachRing, both as the whole
// memory and written over the start of a valid ring, then drives whatever
// it accepts. Nothing a peer writes may make this process panic or spin.
func FuzzAttachRing(f *testing.F) {
	_, fresh := newTestRing(f, 8)
	f.Add(fresh)
	busy, busyMem := newTestRing(f, 4)
	for i := range uint64(3) {
		if err := busy.TryPush(msg(1, i)); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(busyMem)
	f.Add(busyMem[:ringHeaderSize])
	f.Add([]byte{})
	f.Add(make([]byte, RingSize(2)))

	f.Fuzz(func(t *testing.T, data []byte) {
		mem := make([]byte, len(data))
		copy(mem, data)
		driveRing(t, mem)

		_, valid := newTestRing(t, 8)
		copy(valid, data)
		driveRing(t, valid)
	})
}

// driveRing attaches to mem and runs every operation a bounded number of
// times; it fails the test on an unexpected error.
func driveRing(t *testing.T, mem []byte) {
	r, err := AttachRing(mem)
	if err != nil {
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrMemory) {
			t.Fatalf("AttachRing: unexpected error %v", err)
		}
		return
	}
	buf := make([]byte, CellPayload)
	limit := 2*r.Cells() + 1
	var owners []sys.ProcIdentity
	for range limit {
		r.Empty()
		if pos, stuck := r.Stalled(); stuck {
			// The slots are the peer's too: whatever they say, SkipDead
			// only ever publishes the cell at pos.
			owners, _ = r.SkipDead(pos, owners)
		}
		if _, ok := r.TryPop(buf); !ok {
			break
		}
	}
	if v, err := r.Claim(sys.SelfIdentity()); err == nil {
		defer v.Release()
		r = v // push through a slot, as endpoints do
	} else if !errors.Is(err, ErrNoSlot) {
		t.Fatalf("Claim: unexpected error %v", err)
	}
	for i := range limit {
		err := r.TryPush(buf[:i%(CellPayload+1)])
		if err == ErrFull || err == ErrCorrupt {
			break
		}
		if err != nil {
			t.Fatalf("TryPush: unexpected error %v", err)
		}
	}
	for range limit {
		if _, ok := r.TryPop(buf); !ok {
			break
		}
	}
}
