package provider

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/shm"
)

// TestAVShareHostile: the object of a named AV is written by other
// processes of the user, so a reader trusts none of it: a header claiming
// more entries than the object holds, or an unfinished one, is refused;
// an entry whose address word is not its index is unpublished; a
// published garbage name is not a valid peer; a full object refuses
// inserts instead of writing past it.
func TestAVShareHostile(t *testing.T) {
	job := UUID{0xa7, 0x5e}
	name := fmt.Sprintf("hostile-%x", rand.Uint64())
	s, err := openAVShare(job, name, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	if s.cap != avShareDefault {
		t.Fatalf("capacity %d, want the default %d", s.cap, avShareDefault)
	}
	good := EPName{EPID: makeEPID(77, 1, 2), Type: EPNameRegular}
	if i, ok := s.insert(good); !ok || i != 0 {
		t.Fatalf("insert = %d, %v", i, ok)
	}
	r, err := openAVShare(job, name, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := r.entry(0); !ok || n != good {
		t.Errorf("entry 0 = %+v, %v", n, ok)
	}
	// Another process writes garbage: a reserved entry never published,
	// and a published one that is no endpoint's name.
	r.word(16).Store(3)
	off := avShareHdr + int(r.cap)*8 + 2*EPNameLen
	copy(r.mem[off:off+EPNameLen], "garbage garbage!")
	r.word(avShareHdr + 2*8).Store(2)
	if _, ok := r.entry(1); ok {
		t.Error("an unpublished entry reads as published")
	}
	if n, ok := r.entry(2); ok && validPeerName(n) {
		t.Errorf("a garbage name is a valid peer: %+v", n)
	}
	if _, ok := r.entry(1 << 40); ok {
		t.Error("an entry past the capacity")
	}
	// A count claimed past the capacity is bounded by it.
	r.word(16).Store(1 << 62)
	if c := r.count(); c != r.cap {
		t.Errorf("count %d, want the capacity %d", c, r.cap)
	}
	if _, ok := s.insert(good); ok {
		t.Error("an insert into a full object succeeded")
	}
	_ = shm.UnmapShared(r.mem)

	// A header claiming more entries than the object holds.
	s.word(8).Store(avShareMax)
	if _, err := openAVShare(job, name, 0, true); !errors.Is(err, fi.EINVAL) {
		t.Errorf("a header past the object: %v, want EINVAL", err)
	}
	s.word(8).Store(s.cap)
}
