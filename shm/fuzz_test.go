package shm

import (
	"errors"
	"fmt"
	"os"
	"testing"
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
	var owners []ProcIdentity
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
	if v, err := r.Claim(selfIdentity()); err == nil {
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

// FuzzOpenSegment writes arbitrary header words over a valid segment (and
// picks the object's size) and opens it as a peer would: Open validates
// the header once, and whatever it accepts must be usable without a
// fault. Reclaim reads the same header and must not panic either.
func FuzzOpenSegment(f *testing.F) {
	name := fmt.Sprintf("%sfuzz-open", testPrefix)
	seg, err := CreateSegment(name, SegmentConfig{Cells: 64, Buffers: 3, BufferSize: 1024, SplitSlots: 2})
	if err != nil {
		f.Fatal(err)
	}
	valid := make([]byte, len(seg.mem))
	copy(valid, seg.mem)
	seg.Close()
	if err := Unlink(name); err != nil {
		f.Fatal(err)
	}
	f.Add(valid[:segHeaderSize], uint16(len(valid)/4096))
	f.Add(make([]byte, 8), uint16(1))
	f.Add(valid[:offSegSplits], uint16(100))

	f.Fuzz(func(t *testing.T, hdr []byte, pages uint16) {
		size := (int(pages)%64 + 1) * 4096
		obj := make([]byte, size)
		copy(obj, valid)
		copy(obj, hdr[:min(len(hdr), segHeaderSize, size)])
		if err := os.WriteFile(segFile(name), obj, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(segFile(name))
		if s, err := Open(name); err == nil {
			for i := range s.Buffers() {
				b := s.Buffer(i)
				for k := range b {
					b[k]++ // every byte Open promised is mapped and writable
				}
			}
			buf := make([]byte, CellPayload)
			s.Ring().TryPop(buf)
			_ = s.Ring().TryPush(buf)
			s.Close()
		}
		_, _ = Reclaim(name)
	})
}
