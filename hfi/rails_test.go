package hfi

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// railCut is a UDP backend whose packets on one rail can be dropped (a
// link that went down), counting what it sent per rail.
type railCut struct {
	Backend
	cut  atomic.Int32 // rail + 1 whose packets vanish; 0: none
	sent [MaxRails]atomic.Int64
}

func (b *railCut) pass(path int, n int) bool {
	r := path >> railShift
	if int(b.cut.Load()) == r+1 {
		return false
	}
	b.sent[r].Add(int64(n))
	return true
}

func (b *railCut) Send(path int, d *Dest, p []byte) error {
	if !b.pass(path, 1) {
		return nil
	}
	return b.Backend.Send(path, d, p)
}

func (b *railCut) SendBatch(path int, d *Dest, pkts, pays [][]byte) error {
	if !b.pass(path, len(pkts)) {
		return nil
	}
	return b.Backend.SendBatch(path, d, pkts, pays)
}

// railPair opens two endpoints on 127.0.0.1 with a further rail on
// 127.0.0.2 (the loopback network has both), over railCut backends,
// connected.
func railPair(t *testing.T) (a, b *Endpoint, ba, bb *railCut, ra, rb *recorder, c, cb transport.Conn) {
	t.Helper()
	open := func() (*Endpoint, *railCut) {
		lo := [4]byte{127, 0, 0, 1}
		be, err := OpenUDP(lo, 0, 0, 1, "", 0, true)
		if err != nil {
			t.Fatal(err)
		}
		cut := &railCut{Backend: be}
		e, err := Open(Config{Job: [16]byte{4}, Addr: lo, Rails: [][4]byte{{127, 0, 0, 2}}, Backend: cut,
			ErrchkMin: 5 * time.Millisecond, RndvWindow: 65536})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e, cut
	}
	a, ba = open()
	b, bb = open()
	ra, rb = recorders(t, a, b)
	c, cb = connect(t, a, b), connect(t, b, a)
	if !drive(t, a, b, ra, rb, 5*time.Second, func() bool {
		pa, pb := a.conn(c), b.conn(cb)
		return pa.state == stUp && pb.state == stUp
	}) {
		t.Fatal("no connection")
	}
	if n := a.conn(c).dest.Rails(); n != 2 {
		t.Fatalf("the connection has %d rails, want 2", n)
	}
	return
}

// exchange sends a message of n bytes from x to y (tag tag) and waits
// until it came intact.
func exchange(t *testing.T, x, y *Endpoint, rx, ry *recorder, c transport.Conn, tag uint64, n int) {
	t.Helper()
	msg := pattern(int(tag), n)
	n0 := len(ry.msgs)
	h := transport.Header{Tag: tag, Len: uint64(n)}
	done, err := x.Send(c, &h, [][]byte{msg}, tag, 0)
	if err != nil {
		t.Fatal(err)
	}
	if done {
		rx.sends[tag] = nil
	}
	if !drive(t, x, y, rx, ry, 10*time.Second, func() bool {
		_, sent := rx.sends[tag]
		return sent && len(ry.msgs) > n0 && len(ry.fetched) == len(ry.pending)
	}) {
		t.Fatalf("message %d did not come: sends %v; sender %+v", tag, rx.sends, x.Stats())
	}
	if rx.sends[tag] != nil || !bytes.Equal(ry.data[len(ry.data)-1], msg) {
		t.Fatalf("message %d: send %v, intact %v", tag, rx.sends[tag], bytes.Equal(ry.data[len(ry.data)-1], msg))
	}
}

// TestRailsStripe: a large message is striped over both rails (its
// grant windows in turn), a small one stays on the primary.
func TestRailsStripe(t *testing.T) {
	a, b, ba, _, ra, rb, c, _ := railPair(t)
	before := ba.sent[1].Load()
	exchange(t, a, b, ra, rb, c, 2, 64)
	if n := ba.sent[1].Load() - before; n != 0 {
		t.Errorf("a small message put %d packets on rail 1", n)
	}
	exchange(t, a, b, ra, rb, c, 4, 1<<20)
	r0, r1 := ba.sent[0].Load(), ba.sent[1].Load()
	if r1 < 300 || r0 < 300 {
		t.Errorf("1 MiB: %d packets on rail 0, %d on rail 1; want each about half of ~730", r0, r1)
	}
	// (A slow run may see a timer expire: a probe is one packet again,
	// sent on the rail of the packet it repeats, so rail 1 may carry a
	// probe or more beside its stripes: a -race run with 4 CPU spinners
	// beside it, RailPkts 375, rail 1 376, 3 probes.)
	st := a.Stats()
	if st.RailPkts > uint64(r1) || uint64(r1)-st.RailPkts > st.Probes || st.Retransmits > st.Probes || st.RailsDown != 0 {
		t.Errorf("stats: RailPkts %d (rail 1 carried %d), Retransmits %d Probes %d RailsDown %d (want no loss found: nothing was lost); %+v",
			st.RailPkts, r1, st.Retransmits, st.Probes, st.RailsDown, st)
	}
}

// TestRailFails: a further rail that stops carrying packets in the
// middle of a transfer loses nothing: its packets go again on the
// primary, and it is left out of the next messages.
func TestRailFails(t *testing.T) {
	a, b, ba, _, ra, rb, c, _ := railPair(t)
	exchange(t, a, b, ra, rb, c, 2, 1<<20)
	ba.cut.Store(2) // rail 1 goes down
	exchange(t, a, b, ra, rb, c, 4, 1<<20)
	st := a.Stats()
	if st.RailsDown == 0 || st.Retransmits == 0 {
		t.Errorf("rail 1 failed: RailsDown %d, Retransmits %d; want both > 0", st.RailsDown, st.Retransmits)
	}
	sent := a.Stats().RailPkts
	exchange(t, a, b, ra, rb, c, 6, 1<<20)
	if n := a.Stats().RailPkts - sent; n != 0 {
		t.Errorf("%d packets went on the failed rail within railRetry", n)
	}
}

// TestPrimaryRailFails: when rail 0 stops carrying packets (both ways),
// the probes find rail 1, both sides make it their primary, and messages
// keep coming both ways, small and large.
func TestPrimaryRailFails(t *testing.T) {
	a, b, ba, bb, ra, rb, c, cb := railPair(t)
	exchange(t, a, b, ra, rb, c, 2, 100)
	ba.cut.Store(1)
	bb.cut.Store(1)
	exchange(t, a, b, ra, rb, c, 4, 100)
	exchange(t, b, a, rb, ra, cb, 6, 100)
	exchange(t, a, b, ra, rb, c, 8, 1<<20)
	exchange(t, b, a, rb, ra, cb, 10, 1<<20)
	if pa, pb := a.conn(c), b.conn(cb); railOf(pa.path) != 1 || railOf(pb.path) != 1 || pa.state != stUp || pb.state != stUp {
		t.Errorf("primary rails %d and %d (want 1), states %d %d", railOf(pa.path), railOf(pb.path), pa.state, pb.state)
	}
	if a.Stats().RailFailovers == 0 || b.Stats().RailFailovers == 0 {
		t.Errorf("failovers: %d, %d", a.Stats().RailFailovers, b.Stats().RailFailovers)
	}
}

// TestPeerRails: the rails a handshake names are taken only as a list of
// other unicast addresses, and only as many as this endpoint has.
func TestPeerRails(t *testing.T) {
	own := [4]byte{10, 0, 0, 2}
	e := &Endpoint{cfg: Config{Rails: [][4]byte{{10, 1, 0, 1}, {10, 2, 0, 1}}}}
	for _, tc := range []struct {
		rails [][4]byte
		want  int
	}{
		{nil, 0},
		{[][4]byte{{10, 1, 0, 2}}, 1},
		{[][4]byte{{10, 1, 0, 2}, {10, 2, 0, 2}, {10, 3, 0, 2}}, 2}, // as many as we have
		{[][4]byte{own}, 0},
		{[][4]byte{{10, 1, 0, 2}, {10, 1, 0, 2}}, 0},
		{[][4]byte{{224, 0, 0, 1}}, 0},
		{[][4]byte{{127, 0, 0, 2}}, 0},
		{[][4]byte{{0, 1, 2, 3}}, 0},
	} {
		b := make([]byte, hsLen)
		for i, ip := range tc.rails {
			copy(b[hsRails+4*i:], ip[:])
		}
		if got := e.peerRails(b, own); len(got) != tc.want {
			t.Errorf("rails %v: took %v, want %d", tc.rails, got, tc.want)
		}
	}
}
