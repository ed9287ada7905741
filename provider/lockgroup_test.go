package provider

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// openSlotDomain opens a domain and AV for tagged RDM endpoints, or skips
// the test where the domain lock has no slots (a race build's sync.Mutex).
func openSlotDomain(t *testing.T) (*fi.Info, *Fabric, *Domain, *AV) {
	t.Helper()
	info := &fi.Info{Caps: fi.TAGGED, EP: &fi.EPAttr{Type: fi.EP_RDM}}
	f, d, av := openDomainAV(t, New(newFakeHost(nil)), info)
	if !d.fastLock {
		t.Skip("no C fast path: the domain lock is a sync.Mutex (race build)")
	}
	return info, f, d, av
}

// TestLockSlotsFollowBindings: endpoints that share no CQ get lock slots
// of their own (so C fast paths on them do not contend), an endpoint
// bound to another's CQ joins its slot, each slot lists only its
// endpoints' rings, Go's lock takes every slot in use, and a closed
// endpoint's slot goes out of use.
func TestLockSlotsFollowBindings(t *testing.T) {
	info, f, d, av := openSlotDomain(t)
	a, cqa := openBoundEP(t, d, av, info)
	b, cqb := openBoundEP(t, d, av, info)
	c, err := d.OpenEndpoint(info, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{c.Bind(av, 0), c.Bind(cqa, fi.TRANSMIT|fi.RECV), c.Enable()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	epSlot := func(ep *Endpoint) uint64 { return atomic.LoadUint64(fastWord(ep.fast.page, epfLock)) }
	cqSlot := func(cq *CQ) uint64 { return atomic.LoadUint64(fastWord(cq.fast, cqLock)) }
	slotRings := func(addr uint64) []uint64 {
		s := int(addr - d.slotAddr(0))
		n := atomic.LoadUint64(fastWord(d.fast, domSlots+s+slotNRings))
		if n == slotBlind {
			t.Fatalf("slot at +%d blind", s)
		}
		var out []uint64
		for k := range int(n) {
			out = append(out, atomic.LoadUint64(fastWord(d.fast, domSlots+s+slotRings+8*k)))
		}
		return out
	}
	sa, sb := epSlot(a), epSlot(b)
	switch {
	case sa != d.slotAddr(0) || sb != d.slotAddr(1):
		t.Fatalf("slots %#x, %#x; want slot 0 %#x and slot 1 %#x", sa, sb, d.slotAddr(0), d.slotAddr(1))
	case cqSlot(cqa) != sa || cqSlot(cqb) != sb || epSlot(c) != sa:
		t.Fatalf("CQ slots %#x, %#x and the third endpoint's %#x: each must share its endpoints'",
			cqSlot(cqa), cqSlot(cqb), epSlot(c))
	case d.slotsUsed != 2 || len(d.mu.more) != 1:
		t.Fatalf("%d slots in use, Go takes %d more words; want 2 and 1", d.slotsUsed, len(d.mu.more))
	}
	ra, rb := ringProbe(a.tp), ringProbe(b.tp)
	if ra == 0 || rb == 0 {
		t.Fatalf("ring probes %#x, %#x", ra, rb)
	}
	if r := slotRings(sa); !slices.Contains(r, ra) || !slices.Contains(r, ringProbe(c.tp)) || slices.Contains(r, rb) {
		t.Fatalf("slot 0 lists rings %#x; want a's %#x and c's, not b's %#x", r, ra, rb)
	}
	if r, want := slotRings(sb), probes(b.tp, nil); !slices.Equal(r, want) {
		t.Fatalf("slot 1 lists rings %#x; want b's alone %#x", r, want)
	}
	word := func(s int) uint32 { return atomic.LoadUint32(fastWord32(d.fast, domSlots+s*slotSize+slotLock)) }
	d.lock()
	held := [2]uint32{word(0), word(1)}
	d.unlock()
	if held[0] == 0 || held[1] == 0 || word(0) != 0 || word(1) != 0 {
		t.Fatalf("slot words %v under Go's lock, %d %d after; want both held, then free", held, word(0), word(1))
	}

	for _, cl := range []interface{ Close() error }{b, cqb} {
		if err := cl.Close(); err != nil {
			t.Fatal(err)
		}
	}
	d.lock()
	d.unlock()
	if d.slotsUsed != 1 || len(d.mu.more) != 0 || word(1) != 0 {
		t.Fatalf("after b closed: %d slots in use, %d more words, slot 1 word %d", d.slotsUsed, len(d.mu.more), word(1))
	}
	for _, cl := range []interface{ Close() error }{c, a, cqa, av, d, f} {
		if err := cl.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSyncFastDoesNotRegroup: republishing an endpoint's flags, which a
// send queue starting or draining does on the data path, leaves the slots
// alone: only bindings, enables and closes put endpoints into slots again
// (a regroup allocates).
func TestSyncFastDoesNotRegroup(t *testing.T) {
	info, f, d, av := openSlotDomain(t)
	a, cqa := openBoundEP(t, d, av, info)
	b, cqb := openBoundEP(t, d, av, info)
	if n := testing.AllocsPerRun(100, func() {
		d.lock()
		a.syncFastLocked()
		d.unlock()
	}); n != 0 {
		t.Fatalf("%v allocations per republish; want 0", n)
	}
	for _, cl := range []interface{ Close() error }{a, b, cqa, cqb, av, d, f} {
		if err := cl.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
