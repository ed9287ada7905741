package shm

import (
	"fmt"
	"os"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/ring"
)

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
			buf := make([]byte, ring.CellPayload)
			s.Ring().TryPop(buf)
			_ = s.Ring().TryPush(buf)
			s.Close()
		}
		_, _ = Reclaim(name)
	})
}
