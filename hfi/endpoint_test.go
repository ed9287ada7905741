package hfi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/clock"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// recorder is a transport.Handler that keeps what arrives, fetching
// every rendezvous message at once.
type recorder struct {
	t       testing.TB
	ep      *Endpoint
	msgs    []transport.Header
	data    [][]byte
	sends   map[uint64]error
	fetched map[uint64]int
	pending map[uint64]int // fetch cookie -> index in data
	next    uint64
	discard bool
	// early: messages with even tags offered early are fetched then;
	// the others (and all without early) are taken whole later.
	early bool
}

func newRecorder(t testing.TB) *recorder {
	return &recorder{t: t, sends: map[uint64]error{}, fetched: map[uint64]int{}, pending: map[uint64]int{}, next: 1 << 40}
}

// recorders makes the recorders of endpoints a and b.
func recorders(t testing.TB, a, b *Endpoint) (ra, rb *recorder) {
	ra, rb = newRecorder(t), newRecorder(t)
	ra.ep, rb.ep = a, b
	return ra, rb
}

// connect opens a's connection to b.
func connect(t testing.TB, a, b *Endpoint) transport.Conn {
	t.Helper()
	c, err := a.Connect(b.EPID())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (r *recorder) Deliver(h *transport.Header, m *transport.Incoming) {
	if m.Early && (r.discard || !r.early || h.Tag%2 == 1) {
		return // taken whole later, as an eager message
	}
	r.msgs = append(r.msgs, *h)
	if !m.IsRndv {
		r.data = append(r.data, append([]byte(nil), m.Payload...))
		return
	}
	if r.discard {
		r.data = append(r.data, nil)
		if err := r.ep.Discard(&m.Rndv); err != nil {
			r.t.Errorf("discard: %v", err)
		}
		return
	}
	buf := make([]byte, h.Len)
	r.data = append(r.data, buf)
	r.next++
	r.pending[r.next] = len(r.data) - 1
	done, n, err := r.ep.Fetch(&m.Rndv, buf, r.next)
	if err != nil {
		r.t.Errorf("fetch: %v", err)
	}
	if done {
		r.fetched[r.next] = n
	}
}

func (r *recorder) SendDone(c uint64, err error) { r.sends[c] = err }
func (r *recorder) FetchDone(c uint64, n int, err error) {
	if err != nil {
		r.fetched[c] = -1
		return
	}
	r.fetched[c] = n
}

// fakeClock is the tests' clock: time moves only when a test says.
type fakeClock = clock.Manual

func pattern(seq, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seq*7 + i*13 + i>>8)
	}
	return b
}

func openPair(t testing.TB, net *memNet, cfg Config) (*Endpoint, *Endpoint) {
	t.Helper()
	return openPairOf(t, net, cfg, cfg)
}

// openPairOf is openPair with a configuration for each side.
func openPairOf(t testing.TB, net *memNet, ca, cb Config) (*Endpoint, *Endpoint) {
	t.Helper()
	ca.Backend, cb.Backend = net.open(), net.open()
	a, err := Open(ca)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(cb)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestMessagesExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		name               string
		loss, reorder, dup float64
		count, maxSize     int
	}{
		{"clean", 0, 0, 0, 3000, 300000},
		{"lossy", 0.05, 0.05, 0.01, 3000, 300000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := newMemNet()
			net.loss, net.reorder, net.dup = tc.loss, tc.reorder, tc.dup
			cfg := Config{Job: [16]byte{1}, ErrchkMin: 20 * time.Millisecond, ErrchkMax: 80 * time.Millisecond, ErrchkAdaptive: true,
				ConnTimeout: 20 * time.Second, AckDelay: 50 * time.Microsecond, RndvWindow: 65536}
			a, b := openPair(t, net, cfg)
			ra, rb := recorders(t, a, b)
			rb.early = true
			c := connect(t, a, b)
			rng := rand.New(rand.NewPCG(3, 4))
			sizes := make([]int, tc.count)
			for i := range sizes {
				switch rng.IntN(4) {
				case 0:
					sizes[i] = rng.IntN(9)
				case 1:
					sizes[i] = rng.IntN(1500)
				case 2:
					sizes[i] = rng.IntN(64001)
				default:
					sizes[i] = rng.IntN(tc.maxSize)
				}
			}
			sent, inflight := 0, 0
			done := map[uint64]bool{}
			deadline := time.Now().Add(60 * time.Second)
			for len(rb.msgs) < tc.count || len(done) < tc.count || len(rb.pending) > len(rb.fetched) {
				if time.Now().After(deadline) {
					t.Fatalf("stuck: sent %d, delivered %d, sends done %d, fetches %d/%d; a %+v b %+v",
						sent, len(rb.msgs), len(done), len(rb.fetched), len(rb.pending), a.Stats(), b.Stats())
				}
				for sent < tc.count && inflight < 64 {
					h := transport.Header{Tag: uint64(sent), Len: uint64(sizes[sent]), Data: uint64(sent) * 3}
					ok, err := a.Send(c, &h, [][]byte{pattern(sent, sizes[sent])}, uint64(sent), 0)
					if errors.Is(err, transport.ErrAgain) {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					if ok {
						done[uint64(sent)] = true
					} else {
						inflight++
					}
					sent++
				}
				a.Poll(ra, 64)
				b.Poll(rb, 64)
				for ck, err := range ra.sends {
					if err != nil {
						t.Fatalf("send %d: %v", ck, err)
					}
					if !done[ck] {
						done[ck] = true
						inflight--
					}
				}
				clear(ra.sends)
				if net.reorder > 0 && rng.IntN(50) == 0 {
					net.flush()
				}
			}
			if st := b.Stats(); st.EagerEarly == 0 || a.Stats().EagerDirect == 0 {
				t.Errorf("no eager message sent from its buffer or received early: a %+v b %+v", a.Stats(), st)
			}
			for i, h := range rb.msgs {
				if h.Tag != uint64(i) || h.Data != uint64(i)*3 || h.Len != uint64(sizes[i]) {
					t.Fatalf("message %d: header %+v", i, h)
				}
				if !bytes.Equal(rb.data[i], pattern(i, sizes[i])) {
					t.Fatalf("message %d (%d bytes): contents differ", i, sizes[i])
				}
			}
			for ck, n := range rb.fetched {
				if n < 0 {
					t.Fatalf("fetch %d failed", ck)
				}
			}
			sa, sb := a.Stats(), b.Stats()
			t.Logf("a: %+v", sa)
			t.Logf("b: %+v", sb)
			if tc.loss > 0 && sa.Retransmits == 0 {
				t.Errorf("no retransmissions under loss")
			}
		})
	}
}

// drive polls a and b with recorders until cond or the deadline.
func drive(t *testing.T, a, b *Endpoint, ra, rb *recorder, d time.Duration, cond func() bool) bool {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		a.Poll(ra, 64)
		b.Poll(rb, 64)
		if cond() {
			return true
		}
		time.Sleep(50 * time.Microsecond)
	}
	return false
}

func TestWrongJobDelivers(t *testing.T) {
	net := newMemNet()
	a, err := Open(Config{Job: [16]byte{1}, Backend: net.open(), ConnTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(Config{Job: [16]byte{2}, Backend: net.open(), ConnTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	ra, rb := recorders(t, a, b)
	c := connect(t, a, b)
	h := transport.Header{Len: 5}
	if done, err := a.Send(c, &h, [][]byte{[]byte("hello")}, 7, 0); done || err != nil {
		t.Fatalf("send to a connecting peer: done %v err %v", done, err)
	}
	if !drive(t, a, b, ra, rb, 3*time.Second, func() bool { _, ok := ra.sends[7]; return ok }) {
		t.Fatal("the send never completed")
	}
	if !errors.Is(ra.sends[7], transport.ErrTimeout) {
		t.Errorf("send: %v, want ErrTimeout", ra.sends[7])
	}
	if len(rb.msgs) != 0 || b.Stats().WrongJob == 0 {
		t.Errorf("b got %d messages, WrongJob %d", len(rb.msgs), b.Stats().WrongJob)
	}
}

func TestPeerDiesMidRendezvous(t *testing.T) {
	net := newMemNet()
	cfg := Config{Job: [16]byte{1}, ConnTimeout: 400 * time.Millisecond, ErrchkMin: 5 * time.Millisecond, ErrchkMax: 20 * time.Millisecond}
	a, b := openPair(t, net, cfg)
	ra, rb := recorders(t, a, b)
	c, _ := a.Connect(b.EPID())
	h := transport.Header{Len: 1 << 20}
	if _, err := a.Send(c, &h, [][]byte{make([]byte, 1<<20)}, 1, 0); err != nil {
		t.Fatal(err)
	}
	// b fetches, then vanishes without a word (killed): its packets stop.
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 1 }) {
		t.Fatal("no RTS")
	}
	net.filter = func(p []byte) bool { return false }
	start := time.Now()
	if !drive(t, a, b, ra, rb, 3*time.Second, func() bool { _, ok := ra.sends[1]; return ok && len(rb.fetched) == 1 }) {
		t.Fatalf("no error completions: sends %v fetched %v", ra.sends, rb.fetched)
	}
	if !errors.Is(ra.sends[1], transport.ErrTimeout) {
		t.Errorf("send: %v", ra.sends[1])
	}
	for _, n := range rb.fetched {
		if n != -1 {
			t.Errorf("fetch completed with %d bytes", n)
		}
	}
	if el := time.Since(start); el > 2*cfg.ConnTimeout {
		t.Errorf("took %v, ConnTimeout %v", el, cfg.ConnTimeout)
	}
}

func TestDisconnectFailsPending(t *testing.T) {
	net := newMemNet()
	cfg := Config{Job: [16]byte{1}, RndvThreshold: 64000} // its send is a rendezvous, pending until fetched
	a, b := openPair(t, net, cfg)
	ra, rb := recorders(t, a, b)
	rb.discard = true
	c, _ := a.Connect(b.EPID())
	h := transport.Header{Len: 1}
	a.Send(c, &h, [][]byte{{1}}, 1, 0)
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 1 }) {
		t.Fatal("no message")
	}
	// a rendezvous b never answers, then b closes: a hears the notice.
	rb.discard = false
	b.Close()
	h = transport.Header{Len: 100000}
	a.Send(c, &h, [][]byte{make([]byte, 100000)}, 2, 0)
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { _, ok := ra.sends[2]; return ok }) {
		t.Fatal("no completion after the peer closed")
	}
	// The notice makes the peer one that left, not one a declared dead
	// (a timeout, if the notice was lost).
	st := a.Stats()
	switch {
	case errors.Is(ra.sends[2], transport.ErrPeerDead):
		if st.PeersLeft != 1 || st.PeersDead != 0 {
			t.Errorf("after the notice: peers_left %d, peers_dead %d; want 1, 0", st.PeersLeft, st.PeersDead)
		}
	case errors.Is(ra.sends[2], transport.ErrTimeout):
		if st.PeersLeft != 0 || st.PeersDead != 1 {
			t.Errorf("after a timeout: peers_left %d, peers_dead %d; want 0, 1", st.PeersLeft, st.PeersDead)
		}
	default:
		t.Errorf("send: %v", ra.sends[2])
	}
}

func TestRestartedPeerReusesAddress(t *testing.T) {
	net := newMemNet()
	cfg := Config{Job: [16]byte{1}}
	a, b := openPair(t, net, cfg)
	ra, rb := recorders(t, a, b)
	c, _ := a.Connect(b.EPID())
	h := transport.Header{Len: 1}
	a.Send(c, &h, [][]byte{{1}}, 1, 0)
	drive(t, a, b, ra, rb, time.Second, func() bool { return len(rb.msgs) == 1 })
	// b is killed (no disconnect) and a new endpoint takes its port.
	port := b.be.(*memBackend).port
	b.rx.close()
	b.be.Close()
	nb := &memBackend{net: net, port: port}
	nb.cond = newCond(nb)
	net.mu.Lock()
	net.ports[port] = nb
	net.mu.Unlock()
	b2, err := Open(Config{Job: [16]byte{1}, Backend: nb})
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	r2 := newRecorder(t)
	r2.ep = b2
	// The new b connects to a (it sends first, as a restarted rank would).
	c2, _ := b2.Connect(a.EPID())
	b2.Send(c2, &h, [][]byte{{2}}, 9, 0)
	if !drive(t, a, b2, ra, r2, 2*time.Second, func() bool { return len(ra.msgs) == 1 }) {
		t.Fatalf("a never heard the restarted peer: a %+v", a.Stats())
	}
	// a's old connection is replaced: a message to the same id reaches the new b.
	c, _ = a.Connect(b.EPID())
	a.Send(c, &h, [][]byte{{3}}, 3, 0)
	if !drive(t, a, b2, ra, r2, 2*time.Second, func() bool { return len(r2.msgs) == 1 }) {
		t.Fatalf("the restarted peer got nothing: a %+v b2 %+v", a.Stats(), b2.Stats())
	}
	if r2.data[0][0] != 3 {
		t.Errorf("got %v", r2.data[0])
	}
}

// TestTimersUseTheClock: with a clock that does not move, a lost connect
// request is not sent again; moving it past the retry sends it.
func TestTimersUseTheClock(t *testing.T) {
	net := newMemNet()
	clk := &fakeClock{}
	cfg := Config{Job: [16]byte{1}, Clock: clk, RndvThreshold: 64000} // a rendezvous, pending until fetched
	a, b := openPair(t, net, cfg)
	ra, rb := recorders(t, a, b)
	net.filter = func(p []byte) bool { return false } // the first request is lost
	c, _ := a.Connect(b.EPID())
	net.filter = nil
	h := transport.Header{Len: 1}
	a.Send(c, &h, [][]byte{{1}}, 1, 0)
	if drive(t, a, b, ra, rb, 200*time.Millisecond, func() bool { return len(rb.msgs) == 1 }) {
		t.Fatal("delivered without a retry")
	}
	clk.Advance(time.Second)
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 1 }) {
		t.Fatal("not delivered after the clock moved")
	}
	// And a peer silent for ConnTimeout (by the clock) fails the send.
	net.filter = func(p []byte) bool { return false }
	hb := transport.Header{Len: 100000}
	a.Send(c, &hb, [][]byte{make([]byte, 100000)}, 2, 0)
	drive(t, a, b, ra, rb, 50*time.Millisecond, func() bool { return false })
	if _, ok := ra.sends[2]; ok {
		t.Fatal("failed before the clock moved")
	}
	for i := 0; i < 20; i++ {
		clk.Advance(time.Second)
		a.Poll(ra, 64)
	}
	if !errors.Is(ra.sends[2], transport.ErrTimeout) {
		t.Fatalf("send: %v", ra.sends[2])
	}
}

// TestCraftedPackets: packets of another job, of no connection, from
// elsewhere, with bad lengths or PSNs are dropped and counted, never
// delivered. (The forgeries here know the connection's secrets, as only
// the peer does: attack_test.go has the blind ones.)
func TestCraftedPackets(t *testing.T) {
	net := newMemNet()
	a, b := openPair(t, net, Config{Job: [16]byte{1}})
	ra, rb := recorders(t, a, b)
	c, _ := a.Connect(b.EPID())
	h := transport.Header{Len: 3}
	a.Send(c, &h, [][]byte{{1, 2, 3}}, 1, 0)
	drive(t, a, b, ra, rb, time.Second, func() bool { return len(rb.msgs) == 1 })
	pa := a.peers[0]
	good := func(t uint8, seq psn) []byte {
		p := make([]byte, typeHdrLen[t]+4)
		putHdr(p, t, 0, 0, seq, pa.expect, pa.remote, pa.connID(), pa.rsess)
		if t == tEager {
			put64(p, 56, 4)
		}
		return p
	}
	fromA := Addr{net.memAddr, a.be.(*memBackend).port}
	bport := b.be.(*memBackend).port
	inject := func(p []byte) { net.inject(bport, p, fromA) }
	cases := []struct {
		name string
		pkt  []byte
		from Addr
		stat func(Stats) uint64
	}{
		{"truncated header", good(tEager, pa.nextPSN)[:20], fromA, func(s Stats) uint64 { return s.Malformed }},
		{"bad magic", func() []byte { p := good(tEager, pa.nextPSN); p[0] ^= 1; return p }(), fromA, func(s Stats) uint64 { return s.Malformed }},
		{"payload longer than message", func() []byte { p := good(tEager, pa.nextPSN); put64(p, 56, 1); return p }(), fromA, func(s Stats) uint64 { return s.Malformed }},
		{"unknown type", func() []byte { p := good(tEager, pa.nextPSN); p[3] = 99; return p }(), fromA, func(s Stats) uint64 { return s.Malformed }},
		{"stale connection", func() []byte { p := good(tEager, pa.nextPSN); put32(p, 16, pa.remote+1<<16); return p }(), fromA, func(s Stats) uint64 { return s.Stale }},
		{"wrong session tag", func() []byte { p := good(tEager, pa.nextPSN); put64(p, 24, pa.rsess+1); return p }(), fromA, func(s Stats) uint64 { return s.Forged }},
		{"from another address", good(tEager, pa.nextPSN), Addr{[4]byte{10, 0, 0, 2}, fromA.Port}, func(s Stats) uint64 { return s.Forged }},
		{"from another port", good(tEager, pa.nextPSN), Addr{fromA.IP, fromA.Port + 1}, func(s Stats) uint64 { return s.Forged }},
		{"acknowledging the unsent", func() []byte { p := good(tAck, 0); setAck(p, (b.peers[0].sentEnd+7)&psnMask); return p[:hdrLen] }(), fromA, func(s Stats) uint64 { return s.BadAck }},
		{"far-future PSN", good(tEager, pa.nextPSN.plus(1000)), fromA, func(s Stats) uint64 { return s.OutOfOrder }},
		// An eager head claiming 2^62 bytes (more than b takes: malformed),
		// then a continuation past what came: nothing is allocated, the
		// message is dropped.
		{"huge eager length", func() []byte { p := good(tEager, pa.nextPSN); put64(p, 56, 1<<62); return p }(), fromA, func(s Stats) uint64 { return s.Malformed }},
		{"continuation past the head", func() []byte { p := good(tCont, pa.nextPSN.plus(1)); put64(p, 32, 1<<40); return p }(), fromA, func(s Stats) uint64 { return s.Malformed }},
		{"old PSN", good(tEager, pa.nextPSN.plus(psnMask)), fromA, func(s Stats) uint64 { return s.Dups }},
		{"another job's connect", func() []byte {
			// A request with a valid cookie whose proof is not of b's
			// job key.
			p := make([]byte, hsLen)
			putHdr(p, tConnReq, 0, 0, 0, 0, 0, 5, a.epid)
			put64(p, hsDstEPID, b.epid)
			ck := b.cookie(p, fromA, b.epoch())
			copy(p[hsCookie:], ck[:])
			return p
		}(), fromA, func(s Stats) uint64 { return s.WrongJob }},
	}
	for _, tc := range cases {
		prev := tc.stat(b.Stats())
		net.inject(bport, tc.pkt, tc.from)
		if !drive(t, a, b, ra, rb, time.Second, func() bool { return tc.stat(b.Stats()) > prev }) {
			t.Errorf("%s: not counted (%+v)", tc.name, b.Stats())
		}
	}
	_ = inject
	if len(rb.msgs) != 1 {
		t.Errorf("crafted packets delivered: %d messages", len(rb.msgs))
	}
	// The two in-sequence forgeries took PSNs a did not send: a moves on
	// past them, as if it had. The connection still works.
	pa.nextPSN = pa.nextPSN.plus(2)
	a.Send(c, &h, [][]byte{{4, 5, 6}}, 2, 0)
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 2 }) {
		t.Fatal("connection broken by crafted packets")
	}
}

func FuzzDecode(f *testing.F) {
	for t := uint8(1); t < tMax; t++ {
		p := make([]byte, typeHdrLen[t]+8)
		putHdr(p, t, 0, 0, 1, 2, 3, 4, 5)
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var h hdr
		if !decode(b, &h) {
			return
		}
		if len(b) < typeHdrLen[h.typ] || h.psn > psnMask {
			t.Fatalf("accepted %x", b)
		}
		if h.payload != nil && len(h.payload) > len(b) {
			t.Fatal("payload past the packet")
		}
		_ = binary.LittleEndian
		_ = fmt.Sprint
	})
}

// FuzzEndpointPacket feeds arbitrary packets, seeded with well-formed
// ones of every type on a live connection, to an endpoint's receive path:
// whatever arrives, Poll neither panics nor hangs. (A forgery with the
// right connection id and PSN is indistinguishable from the peer, so what
// it does to the connection is not checked, only that the endpoint
// survives it.)
func FuzzEndpointPacket(f *testing.F) {
	net := newMemNet()
	a, b := openPair(f, net, Config{Job: [16]byte{1}})
	ra, rb := newRecorder(f), newRecorder(f)
	ra.ep, rb.ep = a, b
	ra.discard, rb.discard = true, true
	c, _ := a.Connect(b.EPID())
	h := transport.Header{Len: 3}
	a.Send(c, &h, [][]byte{{1, 2, 3}}, 1, 0)
	for end := time.Now().Add(2 * time.Second); len(rb.msgs) == 0 && time.Now().Before(end); {
		a.Poll(ra, 64)
		b.Poll(rb, 64)
	}
	if len(rb.msgs) == 0 {
		f.Fatal("no connection")
	}
	pa := a.peers[0]
	for t := uint8(1); t < tMax; t++ {
		for _, extra := range []int{0, 8, 64} {
			p := make([]byte, typeHdrLen[t]+extra)
			word := pa.rsess
			if isHandshake(t) {
				word = a.epid
			}
			putHdr(p, t, 0, 0, pa.nextPSN, pa.expect, pa.remote, pa.connID(), word)
			f.Add(p)
		}
	}
	fromA := Addr{net.memAddr, a.be.(*memBackend).port}
	bport := b.be.(*memBackend).port
	f.Fuzz(func(t *testing.T, p []byte) {
		ra.t, rb.t = t, t
		net.inject(bport, p, fromA)
		for i := 0; i < 4; i++ {
			b.Poll(rb, 64)
			a.Poll(ra, 64)
		}
	})
}

// TestSelectiveRetransmit: one packet lost in the middle of a 30-packet
// message is the only one sent again (go-back-N would send the rest too),
// at the receiver's NAK, not the timer's probe: the packets it holds past
// the gap left after it on the same path, so it is lost. Before, a lacking
// packet sent within a quarter timeout was not sent again at a NAK, and
// the burst's NAKs (microseconds after it) repaired nothing: the loss
// waited for the timer, whose probe was a duplicate.
func TestSelectiveRetransmit(t *testing.T) {
	cfg := Config{Job: [16]byte{1}, ErrchkMin: 2 * time.Second}
	a, b, ra, rb, c, net := connectedPair(t, cfg)
	data := pattern(1, 30*1000)
	seen, dropped := 0, false
	net.filter = func(p []byte) bool {
		if p[3] != tCont {
			return true
		}
		seen++
		if seen == 5 && !dropped {
			dropped = true
			return false
		}
		return true
	}
	before, bBefore := a.Stats(), b.Stats()
	hb := transport.Header{Len: uint64(len(data))}
	start := time.Now()
	done, _ := a.Send(c, &hb, [][]byte{data}, 2, 0)
	if !drive(t, a, b, ra, rb, 5*time.Second, func() bool { return len(rb.msgs) == 2 && (done || len(ra.sends) == 2) && a.peers[0].unacked.len() == 0 }) {
		t.Fatalf("not delivered: %d msgs %d sends\n a %+v\n b %+v", len(rb.msgs), len(ra.sends), a.Stats(), b.Stats())
	}
	took := time.Since(start)
	if !bytes.Equal(rb.data[1], data) {
		t.Fatal("data differs")
	}
	st, bst := a.Stats(), b.Stats()
	if r := st.Retransmits - before.Retransmits; !dropped || r != 1 {
		t.Errorf("dropped %v, retransmitted %d packets, want 1", dropped, r)
	}
	if p := st.Probes - before.Probes; p != 0 || took >= cfg.ErrchkMin {
		t.Errorf("%d probes, repaired after %v: the NAK should repair it, not the %v timer", p, took, cfg.ErrchkMin)
	}
	if bst.OutOfOrder == bBefore.OutOfOrder || bst.Dups != bBefore.Dups {
		t.Errorf("receiver: %+v", bst)
	}
}

// holedBuffer maps a buffer of the given number of pages that holds
// pattern(seq, ...), its page number hole unreadable (PROT_NONE); it is
// unmapped when the test ends.
func holedBuffer(t *testing.T, pages, hole, seq int) []byte {
	t.Helper()
	pg := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, pages*pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	copy(mem, pattern(seq, len(mem)))
	if err := unix.Mprotect(mem[hole*pg:(hole+1)*pg], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	return mem
}

// TestEagerDirectFault: an eager message sent from the application's
// buffer (sendEager) whose middle page cannot be read: its send fails
// with ErrFault; the receiver gets the packets before that page (their
// batch failed too, so they go again from their own buffers) and then
// ones marked fFault, and drops the message; the next message arrives
// intact. A receive that took the message early fails instead.
func TestEagerDirectFault(t *testing.T) {
	for _, early := range []bool{false, true} {
		t.Run(fmt.Sprintf("early %v", early), func(t *testing.T) {
			mem := holedBuffer(t, 6, 3, 5)
			a, b, ra, rb, c, _ := connectedPair(t, Config{Job: [16]byte{1}})
			rb.early = early
			n0, before := len(rb.msgs), a.Stats()
			h := transport.Header{Tag: 2, Len: uint64(len(mem))}
			if _, err := a.Send(c, &h, [][]byte{mem}, 2, 0); !errors.Is(err, transport.ErrFault) {
				t.Fatalf("send from a buffer with an unreadable page: %v, want ErrFault", err)
			}
			if a.Stats().EagerDirect == before.EagerDirect {
				t.Fatal("not sent from the application's buffer")
			}
			good := pattern(6, len(mem))
			h = transport.Header{Tag: 4, Len: uint64(len(good))}
			if _, err := a.Send(c, &h, [][]byte{good}, 4, 0); err != nil {
				t.Fatal(err)
			}
			if !drive(t, a, b, ra, rb, 5*time.Second, func() bool {
				return len(rb.msgs) > n0 && len(rb.msgs[n0:]) >= 1 && rb.msgs[len(rb.msgs)-1].Tag == 4 && len(rb.fetched) == len(rb.pending)
			}) {
				t.Fatalf("the next message did not come: %+v", rb.msgs[n0:])
			}
			got := rb.msgs[n0:]
			want := 1
			if early {
				want = 2 // the bad one was taken early, and its fetch failed
				if got[0].Tag != 2 || rb.fetched[rb.next-1] != -1 {
					t.Fatalf("early: messages %+v, fetches %v", got, rb.fetched)
				}
			}
			if len(got) != want || got[len(got)-1].Tag != 4 || !bytes.Equal(rb.data[len(rb.data)-1], good) {
				t.Fatalf("delivered %+v (want only tag 4 after the set-up's, intact)", got)
			}
		})
	}
}

// TestRndvDirectFault: rendezvous data goes from the application's
// buffer (buildData) and is copied only to be sent again (own). A page in
// the middle of the buffer that cannot be read fails the batch that holds
// it; sent again, its packet cannot be copied, and the send fails with
// ErrFault, the receiver's fetch with ErrPeerFault (the packet goes
// zeroed with fFault), and the next message arrives intact.
func TestRndvDirectFault(t *testing.T) {
	mem := holedBuffer(t, 128, 64, 7)
	a, b, ra, rb, c, _ := connectedPair(t, Config{Job: [16]byte{1}, ErrchkMin: 5 * time.Millisecond})
	n0 := len(rb.msgs)
	h := transport.Header{Tag: 2, Len: uint64(len(mem))}
	if done, err := a.Send(c, &h, [][]byte{mem}, 2, 0); done || err != nil {
		t.Fatalf("rendezvous send: done %v, %v", done, err)
	}
	if !drive(t, a, b, ra, rb, 5*time.Second, func() bool {
		_, sent := ra.sends[2]
		return sent && len(rb.fetched) == len(rb.pending)
	}) {
		t.Fatalf("the send did not fail: sends %v, fetches %v/%v; a %+v", ra.sends, rb.fetched, rb.pending, a.Stats())
	}
	if err := ra.sends[2]; !errors.Is(err, transport.ErrFault) {
		t.Errorf("send: %v, want ErrFault", err)
	}
	if len(rb.msgs) != n0+1 || rb.fetched[rb.next] != -1 {
		t.Errorf("receiver: messages %+v, fetches %v (want the fetch failed)", rb.msgs[n0:], rb.fetched)
	}
	good := pattern(8, len(mem))
	h = transport.Header{Tag: 4, Len: uint64(len(good))}
	if _, err := a.Send(c, &h, [][]byte{good}, 4, 0); err != nil {
		t.Fatal(err)
	}
	if !drive(t, a, b, ra, rb, 5*time.Second, func() bool {
		_, sent := ra.sends[4]
		return sent && len(rb.msgs) == n0+2 && len(rb.fetched) == len(rb.pending)
	}) {
		t.Fatalf("the next message did not come: sends %v, a %+v", ra.sends, a.Stats())
	}
	if ra.sends[4] != nil || !bytes.Equal(rb.data[len(rb.data)-1], good) {
		t.Errorf("the next message: send %v, intact %v", ra.sends[4], bytes.Equal(rb.data[len(rb.data)-1], good))
	}
}

// TestNakGuardsResend: a NAK that lacks a packet sent again after the
// last packet the NAK reports held left (a late NAK, from before the
// resend came) does not send it once more within a quarter timeout.
func TestNakGuardsResend(t *testing.T) {
	a, b, ra, rb, c, net := connectedPair(t, Config{Job: [16]byte{1}, ErrchkMin: 4 * time.Second})
	// The 5th data packet is lost; b's first NAK is kept for a replay, and
	// every ACK and NAK after it is lost (so a keeps the packets unacked).
	seen := 0
	var nak []byte
	net.filter = func(p []byte) bool {
		switch {
		case p[3] == tCont:
			seen++
			return seen != 5
		case p[3] == tNak && nak == nil:
			nak = append([]byte(nil), p...)
			return true
		case p[3] == tNak || p[3] == tAck:
			return nak == nil
		}
		return true
	}
	before := a.Stats()
	data := pattern(2, 30*1000)
	hb := transport.Header{Len: uint64(len(data))}
	a.Send(c, &hb, [][]byte{data}, 2, 0)
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 2 }) {
		t.Fatalf("not delivered: a %+v\n b %+v", a.Stats(), b.Stats())
	}
	if r := a.Stats().Retransmits - before.Retransmits; r != 1 || !bytes.Equal(rb.data[1], data) {
		t.Fatalf("%d packets sent again, want 1 (data intact: %v)", r, bytes.Equal(rb.data[1], data))
	}
	net.filter = nil         // (b is not polled again: it sends nothing more)
	for i := 0; i < 3; i++ { // the late NAK, as if it came after the resend
		n := a.Stats().Naks
		net.inject(portOf(a), nak, addrOf(net, b))
		for end := time.Now().Add(time.Second); a.Stats().Naks == n && time.Now().Before(end); {
			a.Poll(ra, 64)
		}
	}
	st := a.Stats()
	if st.Naks-before.Naks < 4 {
		t.Fatalf("the replayed NAKs were not taken: %d NAKs, %+v", st.Naks-before.Naks, st)
	}
	if r := st.Retransmits - before.Retransmits; r != 1 {
		t.Errorf("a late NAK sent the packet again: %d resends, want 1", r)
	}
}

// TestOpenCloseReusesArrivalRing: endpoints opened and closed one after
// another share one arrival-ring mapping (recv.go, rxRings). Before, each
// left its mapping behind: 2000 cycles kept about 105 MB resident.
func TestOpenCloseReusesArrivalRing(t *testing.T) {
	open := func() *Endpoint {
		e, err := Open(Config{Job: [16]byte{9}, Addr: [4]byte{127, 0, 0, 1}})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	open().Close() // the pool holds at least one mapping now
	rxRings.Lock()
	before := rxRings.mmaps
	rxRings.Unlock()
	for i := 0; i < 200; i++ {
		e := open()
		if e.rx.ring.Cells() != rxBuffers || !e.rx.ring.Empty() {
			t.Fatalf("cycle %d: a reused ring is not a fresh one", i)
		}
		e.Close()
	}
	rxRings.Lock()
	made := rxRings.mmaps - before
	rxRings.Unlock()
	if made != 0 {
		t.Fatalf("200 open/close cycles mapped %d new arrival rings, want 0", made)
	}
}

// TestConcurrentRendezvousBatches: with 16 rendezvous sends in flight and
// a receiver that takes a few packets per poll (so ACKs and grants come
// back for parts of a window), the sender still sends in batches of an
// ACK interval or more, not a few packets per ACK it gets.
func TestConcurrentRendezvousBatches(t *testing.T) {
	net := newMemNet()
	cfg := Config{Job: [16]byte{1}, ErrchkMin: time.Second, ConnTimeout: 20 * time.Second, RndvWindow: 65536}
	a, b := openPair(t, net, cfg)
	ra, rb := recorders(t, a, b)
	c := connect(t, a, b)
	const n, size = 16, 1 << 20
	for i := 0; i < n; i++ {
		h := transport.Header{Tag: uint64(i), Len: size}
		if _, err := a.Send(c, &h, [][]byte{pattern(i, size)}, uint64(i), 0); err != nil {
			t.Fatal(err)
		}
	}
	end := time.Now().Add(60 * time.Second)
	for len(ra.sends) < n || len(rb.fetched) < n {
		if time.Now().After(end) {
			t.Fatalf("stuck: %d sends done, %d fetched; a %+v b %+v", len(ra.sends), len(rb.fetched), a.Stats(), b.Stats())
		}
		a.Poll(ra, 64)
		b.Poll(rb, 5)
	}
	for i := range rb.msgs {
		if !bytes.Equal(rb.data[i], pattern(int(rb.msgs[i].Tag), size)) {
			t.Fatalf("message %d: contents differ", i)
		}
	}
	s := a.Stats()
	per := float64(s.Sent) / float64(s.Batches)
	t.Logf("sender: %d packets in %d batches (%.1f per batch); receiver sent %d", s.Sent, s.Batches, per, b.Stats().Sent)
	// (About 16 here: a batch also ends where a window changes path.
	// Pumping on every ACK gave under 5.)
	if per < 10 {
		t.Errorf("%.1f packets per batch, want at least 10", per)
	}
}

// TestIdleUntilFailuresReported: a failure waiting for the next Poll keeps
// the endpoint from Idle, since route skips the Poll of an idle wire.
func TestIdleUntilFailuresReported(t *testing.T) {
	a, b := openPair(t, newMemNet(), Config{Job: [16]byte{1}, ConnTimeout: time.Second})
	ra, _ := recorders(t, a, b)
	a.Poll(ra, 64)
	if !a.Idle() {
		t.Fatal("a fresh endpoint is not idle")
	}
	a.failed = append(a.failed, failure{cookie: 5, err: transport.ErrPeerDead})
	if a.Idle() {
		t.Fatal("idle with a failure to report")
	}
	a.Poll(ra, 64)
	if err := ra.sends[5]; !errors.Is(err, transport.ErrPeerDead) {
		t.Fatalf("send 5 reported %v, want ErrPeerDead", err)
	}
	if !a.Idle() {
		t.Fatal("not idle after the failure was reported")
	}
}

// connectedPair opens a pair with cfg on an in-memory network and has a
// send one message to b (cookie 1), so that the connection is up and
// nothing is left unacknowledged.
func connectedPair(t *testing.T, cfg Config) (a, b *Endpoint, ra, rb *recorder, c transport.Conn, net *memNet) {
	t.Helper()
	net = newMemNet()
	a, b = openPair(t, net, cfg)
	ra, rb = recorders(t, a, b)
	c = connect(t, a, b)
	h := transport.Header{Len: 1}
	a.Send(c, &h, [][]byte{{1}}, 1, 0)
	fc, _ := cfg.Clock.(*fakeClock)
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool {
		if fc != nil {
			fc.Advance(10 * time.Millisecond) // a delayed ACK comes in time
		}
		return len(rb.msgs) == 1 && a.peers[0].unacked.len() == 0
	}) {
		t.Fatal("no connection")
	}
	settle(t, a, b, ra, rb)
	return a, b, ra, rb, c, net
}

// settle polls a and b, without moving a fake clock, until each has
// taken every packet the other sent, so a test's counters start after
// the last packet of its set-up: a probe that the set-up's timer sent
// (its ACK was late) reached the receiver as a duplicate after the test
// read its counters, one run in about 70 under -race with the CPUs busy.
func settle(t *testing.T, a, b *Endpoint, ra, rb *recorder) {
	t.Helper()
	taken := func(s Stats) uint64 { return s.Received + s.Stale + s.Malformed + s.Forged + s.BadMAC }
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool {
		sa, sb := a.Stats(), b.Stats()
		return sa.Sent == taken(sb) && sb.Sent == taken(sa)
	}) {
		t.Fatalf("packets still on the way: a %+v b %+v", a.Stats(), b.Stats())
	}
}

// TestTimeoutProbeSpurious: a receiver that does not poll for longer than
// the timeout (descheduled) gets one packet again, the probe, not the
// whole message; its answer shows that nothing was lost.
func TestTimeoutProbeSpurious(t *testing.T) {
	a, b, ra, rb, c, _ := connectedPair(t, Config{Job: [16]byte{1}, ErrchkMin: 50 * time.Millisecond})
	before, bBefore := a.Stats(), b.Stats()
	data := pattern(2, 30000) // about 20 packets
	hb := transport.Header{Len: uint64(len(data))}
	a.Send(c, &hb, [][]byte{data}, 2, 0)
	// Only the sender polls, past the first expiry (50 ms) and well
	// before a second one could come (50 ms after it, doubled: 100 ms).
	for end := time.Now().Add(80 * time.Millisecond); time.Now().Before(end); {
		a.Poll(ra, 64)
		time.Sleep(100 * time.Microsecond)
	}
	if p := a.Stats().Probes - before.Probes; p != 1 {
		t.Fatalf("%d probes after one expiry, want 1", p)
	}
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 2 && a.peers[0].unacked.len() == 0 }) {
		t.Fatalf("not delivered: a %+v b %+v", a.Stats(), b.Stats())
	}
	if !bytes.Equal(rb.data[1], data) {
		t.Fatal("data differs")
	}
	st := a.Stats()
	if r := st.Retransmits - before.Retransmits; r != 1 {
		t.Errorf("%d packets sent again, want 1 (the probe)", r)
	}
	if d := b.Stats().Dups - bBefore.Dups; d != 1 {
		t.Errorf("receiver dropped %d duplicates, want 1", d)
	}
}

// TestTimeoutProbesAgain: a receiver that stays silent across several
// expiries (descheduled for long on a loaded machine) gets one probe at
// each, not the whole message at the second: before, the second expiry
// sent every unacknowledged packet again, each a duplicate. Its answer
// then shows that nothing was lost.
func TestTimeoutProbesAgain(t *testing.T) {
	clk := &fakeClock{}
	a, b, ra, rb, c, _ := connectedPair(t, Config{Job: [16]byte{1}, ErrchkMin: 20 * time.Millisecond, ConnTimeout: time.Hour, Clock: clk})
	before, bBefore := a.Stats(), b.Stats()
	data := pattern(2, 30000) // about 20 packets
	hb := transport.Header{Len: uint64(len(data))}
	a.Send(c, &hb, [][]byte{data}, 2, 0)
	// Only the sender polls, through four expiries (20 ms, doubled each).
	for i := 0; i < 400; i++ {
		clk.Advance(time.Millisecond)
		a.Poll(ra, 64)
	}
	if p := a.Stats().Probes - before.Probes; p < 3 {
		t.Fatalf("%d probes in 400 ms, want an expiry at 20, 60, 140 and 300 ms", p)
	}
	if r, p := a.Stats().Retransmits-before.Retransmits, a.Stats().Probes-before.Probes; r != p {
		t.Fatalf("%d packets sent again in %d expiries: want a probe each, no more", r, p)
	}
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool {
		clk.Advance(time.Millisecond)
		return len(rb.msgs) == 2 && a.peers[0].unacked.len() == 0
	}) {
		t.Fatalf("not delivered: a %+v b %+v", a.Stats(), b.Stats())
	}
	if !bytes.Equal(rb.data[1], data) {
		t.Fatal("data differs")
	}
	st := a.Stats()
	if r, p := st.Retransmits-before.Retransmits, st.Probes-before.Probes; r != p {
		t.Errorf("%d packets sent again, %d probes: the answer should show nothing was lost", r, p)
	}
	if d, p := b.Stats().Dups-bBefore.Dups, st.Probes-before.Probes; d != p {
		t.Errorf("receiver dropped %d duplicates, want %d (the probes)", d, p)
	}
}

// TestTimeoutProbeTailLoss: the last packets of a message are lost, so no
// later packet shows the gap. The timer's probe brings the answer that
// tells the sender which are missing, and those go at once, without
// waiting for a second expiry.
func TestTimeoutProbeTailLoss(t *testing.T) {
	errchk := 50 * time.Millisecond
	a, b, ra, rb, c, net := connectedPair(t, Config{Job: [16]byte{1}, ErrchkMin: errchk})
	seen, dropped := 0, 0
	net.filter = func(p []byte) bool {
		if p[3] != tCont {
			return true
		}
		seen++
		if seen > 17 && dropped < 3 {
			dropped++
			return false
		}
		return true
	}
	before := a.Stats()
	data := pattern(3, 30000) // about 20 continuation packets
	hb := transport.Header{Len: uint64(len(data))}
	start := time.Now()
	a.Send(c, &hb, [][]byte{data}, 2, 0)
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 2 && a.peers[0].unacked.len() == 0 }) {
		t.Fatalf("not delivered: a %+v b %+v", a.Stats(), b.Stats())
	}
	took := time.Since(start)
	if dropped != 3 || seen < 20 {
		t.Fatalf("dropped %d of %d continuation packets, want the last 3", dropped, seen)
	}
	if !bytes.Equal(rb.data[1], data) {
		t.Fatal("data differs")
	}
	st := a.Stats()
	if r, p := st.Retransmits-before.Retransmits, st.Probes-before.Probes; r != 3 || p != 1 {
		t.Errorf("%d packets sent again, %d probes; want 3 (the lost ones), 1", r, p)
	}
	// The first expiry comes after errchk; without the answer, the rest
	// would wait for the second, 2*errchk after it.
	if took >= 2*errchk+errchk/2 {
		t.Errorf("recovered after %v: the missing packets waited for a second expiry", took)
	}
}

// TestAckWaitsForAnswer: a message that ends its sender's burst (one
// packet or several) is acknowledged by the receiver's next packet to the
// sender, the application's answer, not by an ACK of its own sent before
// the application sees the message (it cost a multi-packet ping-pong
// across hosts a system call and a wire crossing each way: 2 KiB 12.4 ->
// 6.8 us). Without an answer the ACK goes after AckDelay; an ACK the
// sender asks for its credits goes at once.
func TestAckWaitsForAnswer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int
		credits int
		lazy    bool
	}{
		{"one packet", 100, 0, true},
		{"several packets", 4000, 0, true},
		{"credits", 4000, 4, false}, // ACK requested every packet
	} {
		t.Run(tc.name, func(t *testing.T) {
			net := newMemNet()
			clk := &fakeClock{}
			a, b := openPair(t, net, Config{Job: [16]byte{1}, Clock: clk, Credits: tc.credits, AckDelay: time.Millisecond})
			ra, rb := recorders(t, a, b)
			ca := connect(t, a, b)
			h := transport.Header{Len: 1}
			a.Send(ca, &h, [][]byte{{1}}, 1, 0)
			if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 1 }) {
				t.Fatal("no connection")
			}
			clk.Advance(10 * time.Millisecond) // past every delayed ACK
			drive(t, a, b, ra, rb, 5*time.Millisecond, func() bool { return false })
			acks := countPackets(net, tAck, b)
			data := pattern(2, tc.size)
			hb := transport.Header{Len: uint64(len(data))}
			a.Send(ca, &hb, [][]byte{data}, 2, 0)
			if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 2 }) {
				t.Fatal("not delivered")
			}
			if !bytes.Equal(rb.data[1], data) {
				t.Fatal("data differs")
			}
			drive(t, a, b, ra, rb, 5*time.Millisecond, func() bool { return false })
			if got := acks.Load(); (got == 0) != tc.lazy {
				t.Fatalf("ACKs sent by the receiver before any answer: %d, lazy %v", got, tc.lazy)
			}
			if !tc.lazy {
				return
			}
			if a.peers[0].unacked.len() == 0 {
				t.Fatal("acknowledged without an ACK or an answer")
			}
			// The answer carries the ACK.
			cb := transport.Conn(0)
			for _, p := range b.peers {
				if p != nil && p.epid == a.EPID() {
					cb = b.connOf(p)
				}
			}
			ha := transport.Header{Len: 3}
			b.Send(cb, &ha, [][]byte{{7, 8, 9}}, 3, 0)
			if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(ra.msgs) == 1 && a.peers[0].unacked.len() == 0 }) {
				t.Fatal("the answer did not acknowledge the message")
			}
			if got := acks.Load(); got != 0 {
				t.Fatalf("%d ACKs besides the answer", got)
			}
			// With no answer, the ACK goes after AckDelay.
			a.Send(ca, &hb, [][]byte{data}, 4, 0)
			if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 3 }) {
				t.Fatal("not delivered")
			}
			drive(t, a, b, ra, rb, 5*time.Millisecond, func() bool { return false })
			if acks.Load() != 0 || a.peers[0].unacked.len() == 0 {
				t.Fatal("ACK before AckDelay")
			}
			clk.Advance(2 * time.Millisecond)
			if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return a.peers[0].unacked.len() == 0 }) {
				t.Fatal("no ACK after AckDelay")
			}
			if acks.Load() == 0 {
				t.Fatal("acknowledged without an ACK")
			}
		})
	}
}

// countPackets counts the packets of type typ (sent by from; nil: any)
// that net carries from now on.
func countPackets(net *memNet, typ uint8, from *Endpoint) *atomic.Int32 {
	var n atomic.Int32
	net.filter = func(p []byte) bool {
		if p[3] == typ && (from == nil || sentBy(p, from)) {
			n.Add(1)
		}
		return true
	}
	return &n
}

// sentBy reports whether packet p of a connection was sent by e: its
// source connection id is one of e's.
func sentBy(p []byte, e *Endpoint) bool {
	c := binary.LittleEndian.Uint32(p[20:])
	for _, q := range e.peers {
		if q != nil && q.connID() == c {
			return true
		}
	}
	return false
}

// TestBurstCoalesces: sends made back to back, without a Poll between
// them, while earlier packets to the peer are unacknowledged, wait for the
// next Poll and leave together (one backend batch); a send answering a
// message (nothing unacknowledged) and the first send after a Poll go at
// once. Every message arrives once, in order.
func TestBurstCoalesces(t *testing.T) {
	// A clock that stands still: every send is within holdRecent of the
	// last Poll. Stalled set: holding needs someone who polls.
	a, b, ra, rb, ca, net := connectedPair(t, Config{Job: [16]byte{1}, AckDelay: time.Second, Clock: &fakeClock{}, Stalled: func() {}})
	h := transport.Header{Len: 1}
	sent := countPackets(net, tEager, a)
	a.Poll(ra, 64)
	const n = 10
	for i := 0; i < n; i++ {
		m := pattern(i, 100)
		hm := transport.Header{Tag: uint64(i), Len: uint64(len(m))}
		if done, err := a.Send(ca, &hm, [][]byte{m}, uint64(10+i), 0); !done || err != nil {
			t.Fatalf("send %d: done %v err %v", i, done, err)
		}
	}
	if got := sent.Load(); got != 1 {
		t.Fatalf("%d packets left before the Poll, want 1 (the first)", got)
	}
	if d, ok := a.NextDue(); !ok || d != 0 {
		t.Fatalf("NextDue %v %v while packets wait", d, ok)
	}
	before := a.Stats().Batches
	a.Poll(ra, 64)
	if got := sent.Load(); got != n {
		t.Fatalf("%d packets sent after the Poll, want %d", got, n)
	}
	if got := a.Stats().Batches - before; got != 1 {
		t.Fatalf("the held packets left in %d batches, want 1", got)
	}
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 1+n }) {
		t.Fatalf("delivered %d of %d", len(rb.msgs)-1, n)
	}
	for i := 0; i < n; i++ {
		if rb.msgs[1+i].Tag != uint64(i) || !bytes.Equal(rb.data[1+i], pattern(i, 100)) {
			t.Fatalf("message %d: tag %d, data differs %v", i, rb.msgs[1+i].Tag, !bytes.Equal(rb.data[1+i], pattern(i, 100)))
		}
	}
	// An answer (its reply carries the ACK, so nothing is unacknowledged)
	// goes at once, even right after another send.
	var cb transport.Conn
	for _, p := range b.peers {
		if p != nil && p.epid == a.EPID() {
			cb = b.connOf(p)
		}
	}
	hr := transport.Header{Len: 1}
	b.Send(cb, &hr, [][]byte{{5}}, 99, 0)
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(ra.msgs) == 1 && a.peers[0].unacked.len() == 0 }) {
		t.Fatal("the answer did not acknowledge the burst")
	}
	sent.Store(0)
	a.Send(ca, &h, [][]byte{{2}}, 30, 0)
	a.Send(ca, &h, [][]byte{{3}}, 31, 0) // unacknowledged now: waits
	if got := sent.Load(); got != 1 {
		t.Fatalf("%d packets left, want 1", got)
	}
	// Wait does not sleep on packets that wait (no wake-up left over).
	a.woken.Store(false)
	select {
	case <-a.wake:
	default:
	}
	start := time.Now()
	a.Wait(time.Second)
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("Wait slept %v with a packet waiting", d)
	}
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == n+3 }) {
		t.Fatal("the held message was not delivered")
	}
}

// TestRendezvousBurstCoalesces: the requests to send of rendezvous sends
// made back to back wait for the next Poll as eager ones do (64 KiB
// messages, 64 in flight across hosts: 32 k -> 40 k messages a second),
// and the receiver's grants for them leave together (pumpSoon).
func TestRendezvousBurstCoalesces(t *testing.T) {
	a, b, ra, rb, ca, net := connectedPair(t, Config{Job: [16]byte{1}, RndvThreshold: 1000, Clock: &fakeClock{}, Stalled: func() {}})
	rts := countPackets(net, tRTS, nil)
	a.Poll(ra, 64)
	const n = 5
	for i := 0; i < n; i++ {
		m := pattern(i, 5000)
		hm := transport.Header{Tag: uint64(i), Len: uint64(len(m))}
		if done, err := a.Send(ca, &hm, [][]byte{m}, uint64(10+i), 0); done || err != nil {
			t.Fatalf("send %d: done %v err %v", i, done, err)
		}
	}
	if got := rts.Load(); got != 1 {
		t.Fatalf("%d requests to send left before the Poll, want 1", got)
	}
	// The held ones are taken off the network here and handed to b all at
	// once below, so that b's receive thread publishes them in one batch.
	var held []memPkt
	net.filter = func(p []byte) bool {
		if p[3] == tRTS {
			rts.Add(1)
			held = append(held, memPkt{append([]byte(nil), p...), Addr{net.memAddr, pathPort(a.be.(*memBackend).port, int(p[6]))}})
			return false
		}
		return true
	}
	a.Poll(ra, 64)
	if got := rts.Load(); got != n {
		t.Fatalf("%d requests to send after the Poll, want %d", got, n)
	}
	// b takes them in one Poll and fetches each as it is delivered: the
	// grants leave together at the Poll's end, one batch, and carry the
	// ACK (none of its own).
	var cts, acks atomic.Int32
	net.filter = func(p []byte) bool {
		if sentBy(p, b) {
			switch p[3] {
			case tCTS:
				cts.Add(1)
			case tAck:
				acks.Add(1)
			}
		}
		return true
	}
	for end := time.Now().Add(2 * time.Second); !b.Arrived(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the first request to send never arrived")
		}
	}
	select {
	case <-b.wake:
	default:
	}
	be := b.be.(*memBackend)
	be.mu.Lock()
	be.q = append(be.q, held...)
	be.cond.Broadcast()
	be.mu.Unlock()
	select {
	case <-b.wake: // the receive thread published them (one Recv takes all)
	case <-time.After(2 * time.Second):
		t.Fatal("the held requests were never published")
	}
	before := b.Stats().Batches
	b.Poll(rb, 64)
	if got, batches := cts.Load(), b.Stats().Batches-before; got != n || batches != 1 || acks.Load() != 0 {
		t.Fatalf("b's Poll sent %d grants in %d batches and %d ACKs, want %d in 1 and none", got, batches, acks.Load(), n)
	}
	net.filter = nil
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 1+n && len(ra.sends) == 1+n }) {
		t.Fatalf("delivered %d of %d, %d sends done", len(rb.msgs)-1, n, len(ra.sends)-1)
	}
	for i := 0; i < n; i++ {
		if rb.msgs[1+i].Tag != uint64(i) || !bytes.Equal(rb.data[1+i], pattern(i, 5000)) || ra.sends[uint64(10+i)] != nil {
			t.Fatalf("message %d: tag %d, send %v", i, rb.msgs[1+i].Tag, ra.sends[uint64(10+i)])
		}
	}
}

// TestBurstNotHeld: without a Stalled callback (no one would poll for an
// application that stops: FI_PSM2_LOCK_LEVEL=0), or longer than
// holdRecent after the last Poll (a thread that only injects), every send
// of a burst goes at once.
func TestBurstNotHeld(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stalled func()
		idle    time.Duration
	}{
		{"no Stalled", nil, 0},
		{"long after the last Poll", func() {}, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{}
			a, _, ra, _, ca, net := connectedPair(t, Config{Job: [16]byte{1}, AckDelay: time.Second, Clock: clk, Stalled: tc.stalled})
			sent := countPackets(net, tEager, a)
			a.Poll(ra, 64)
			clk.Advance(tc.idle)
			h := transport.Header{Len: 1}
			for i := 0; i < 5; i++ {
				a.Send(ca, &h, [][]byte{{byte(i)}}, uint64(10+i), 0)
			}
			if got := sent.Load(); got != 5 {
				t.Fatalf("%d of 5 sends left at once", got)
			}
		})
	}
}

// TestDeadPeerTellsSender: a declared b dead while the network between
// them was cut (b had nothing pending, so b saw nothing wrong); when b
// then sends, a answers with a disconnect notice and b fails its side at
// once, instead of sending into nothing until its own timeout.
func TestDeadPeerTellsSender(t *testing.T) {
	net := newMemNet()
	cfg := Config{Job: [16]byte{1}, ConnTimeout: 300 * time.Millisecond, ErrchkMin: 5 * time.Millisecond, ErrchkMax: 20 * time.Millisecond,
		RndvThreshold: 64000} // b's 100 kB send is a rendezvous
	a, b := openPair(t, net, cfg)
	ra, rb := recorders(t, a, b)
	c, _ := a.Connect(b.EPID())
	h := transport.Header{Len: 1}
	a.Send(c, &h, [][]byte{{1}}, 1, 0)
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 1 }) {
		t.Fatal("no message")
	}
	net.filter = func(p []byte) bool { return false }
	hr := transport.Header{Len: 100000}
	a.Send(c, &hr, [][]byte{make([]byte, 100000)}, 2, 0)
	for end := time.Now().Add(2 * time.Second); a.Stats().PeersDead == 0; {
		if time.Now().After(end) {
			t.Fatal("a never declared b dead")
		}
		a.Poll(ra, 64)
	}
	net.filter = nil
	cb, _ := b.Connect(a.EPID())
	if _, err := b.Send(cb, &h, [][]byte{{3}}, 3, 0); err != nil {
		t.Fatal(err)
	}
	b.Send(cb, &hr, [][]byte{make([]byte, 100000)}, 4, 0)
	start := time.Now()
	if !drive(t, a, b, ra, rb, time.Second, func() bool { _, ok := rb.sends[4]; return ok }) {
		t.Fatalf("b's rendezvous never failed: a %+v b %+v", a.Stats(), b.Stats())
	}
	if !errors.Is(rb.sends[4], transport.ErrPeerDead) {
		t.Errorf("b's send: %v", rb.sends[4])
	}
	if el := time.Since(start); el >= cfg.ConnTimeout {
		t.Errorf("b failed after %v, by its own timeout (%v)", el, cfg.ConnTimeout)
	}
	if len(ra.msgs) != 0 {
		t.Errorf("a delivered %d messages of a dead connection", len(ra.msgs))
	}
}

// TestEagerSize: the packets of an eager message are as few as the
// datagram size allows and alike in size, a multiple of 8 (payloads start
// at multiples of 8 in the message); the last one carries at least one
// byte and is padded by fewer than 8 bytes a packet.
func TestEagerSize(t *testing.T) {
	hdr0, hdr := uint64(typeHdrLen[tEager]), uint64(typeHdrLen[tCont])
	for _, max := range []uint64{548, 1472, 8972} {
		for n := uint64(0); n < 300000; n += 1 + n/512 {
			size := eagerSize(n, max)
			fewest := uint64(1) // as many as filling each packet gives
			if n > max-hdr0 {
				fewest += (n - (max - hdr0) + max - hdr - 1) / (max - hdr)
			}
			k, total := uint64(1), n+hdr0
			if n > size-hdr0 {
				k += (n - (size - hdr0) + size - hdr - 1) / (size - hdr)
				total += (k - 1) * hdr
			}
			if size > max || k != fewest || total > k*size || k*size-total >= 8*k || (k > 1 && size%8 != 0 && size != max) ||
				(k > 1 && total-(k-1)*size <= hdr) {
				t.Fatalf("n %d max %d: size %d, %d packets (fewest %d), %d bytes", n, max, size, k, fewest, total)
			}
		}
	}
}

// TestDataSize: rendezvous data packets are as few as the datagram size
// allows, alike, a multiple of 16 bytes of payload (or the most a packet
// holds), and the last carries at least one byte.
func TestDataSize(t *testing.T) {
	for _, max := range []uint64{548, 1472, 8972} {
		room := max - uint64(typeHdrLen[tData])
		for n := uint64(1); n < 3000000; n += 1 + n/256 {
			ps := dataSize(n, max)
			k := (n + ps - 1) / ps
			fewest := (n + room - 1) / room
			if ps > room || k != fewest || (k > 1 && ps%16 != 0 && ps != room) || n-(k-1)*ps == 0 {
				t.Fatalf("n %d max %d: payload %d, %d packets (fewest %d)", n, max, ps, k, fewest)
			}
		}
	}
}

// packetSizes records the lengths of the packets of type typ on net; the
// function it returns gives them, length -> count.
func packetSizes(net *memNet, typ uint8) func() map[int]int {
	sizes := map[int]int{}
	var mu sync.Mutex
	net.filter = func(p []byte) bool {
		if p[3] == typ || (typ == tEager && p[3] == tCont) {
			mu.Lock()
			sizes[len(p)]++
			mu.Unlock()
		}
		return true
	}
	return func() map[int]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(sizes)
	}
}

// TestEagerBurstAlike: a burst of equal multi-packet messages leaves as
// one run of equal-sized packets (one UDP_SEGMENT send), and each message
// arrives intact, its last packet's padding dropped.
func TestEagerBurstAlike(t *testing.T) {
	a, b, ra, rb, ca, net := connectedPair(t, Config{Job: [16]byte{1}, AckDelay: time.Second, Clock: &fakeClock{}, Stalled: func() {}})
	sizes := packetSizes(net, tEager) // and its continuations
	a.Poll(ra, 64)
	const n, size = 8, 3000 // 3 packets each
	for i := 0; i < n; i++ {
		m := pattern(i, size)
		hm := transport.Header{Tag: uint64(i), Len: size}
		if done, err := a.Send(ca, &hm, [][]byte{m}, uint64(10+i), 0); !done || err != nil {
			t.Fatalf("send %d: done %v err %v", i, done, err)
		}
	}
	before := a.Stats().Batches
	a.Poll(ra, 64)
	if got := a.Stats().Batches - before; got != 1 {
		t.Errorf("the burst left in %d batches, want 1", got)
	}
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 1+n }) {
		t.Fatalf("delivered %d of %d", len(rb.msgs)-1, n)
	}
	if got := sizes(); len(got) != 1 {
		t.Errorf("packet sizes %v, want one size", got)
	}
	for i := 0; i < n; i++ {
		if rb.msgs[1+i].Tag != uint64(i) || !bytes.Equal(rb.data[1+i], pattern(i, size)) {
			t.Fatalf("message %d: tag %d, %d bytes, data differs", i, rb.msgs[1+i].Tag, len(rb.data[1+i]))
		}
	}
	if s := b.Stats(); s.Malformed != 0 {
		t.Errorf("b counted %d malformed packets", s.Malformed)
	}
}

// TestStalledOnNewWork: work that only a Poll does, made outside Poll on
// an idle wire (a rendezvous send waits for its grant; its request may be
// lost and only a Poll sends it again), calls Stalled, so a provider
// whose application stops calling has someone poll.
func TestStalledOnNewWork(t *testing.T) {
	var calls atomic.Int32
	a, b, ra, rb, ca, _ := connectedPair(t, Config{Job: [16]byte{1}, RndvThreshold: 1000, Stalled: func() { calls.Add(1) }})
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(a.busy) == 0 && len(b.busy) == 0 }) {
		t.Fatal("the pair never went idle")
	}
	calls.Store(0)
	h := transport.Header{Len: 5000}
	if done, err := a.Send(ca, &h, [][]byte{make([]byte, 5000)}, 7, 0); done || err != nil {
		t.Fatalf("send: done %v err %v", done, err)
	}
	if calls.Load() == 0 {
		t.Fatal("a rendezvous send on an idle wire did not call Stalled")
	}
}

// TestRendezvousDataAlike: the data packets of rendezvous messages of one
// size are all of one size (the last of each padded), so a stream of them
// forms runs of equal packets; every message arrives intact.
func TestRendezvousDataAlike(t *testing.T) {
	a, b, ra, rb, ca, net := connectedPair(t, Config{Job: [16]byte{1}, RndvThreshold: 1000})
	sizes := packetSizes(net, tData)
	const n, size = 3, 5000 // 4 packets each
	for i := 0; i < n; i++ {
		hm := transport.Header{Tag: uint64(i), Len: size}
		if _, err := a.Send(ca, &hm, [][]byte{pattern(i, size)}, uint64(10+i), 0); err != nil {
			t.Fatal(err)
		}
	}
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 1+n && len(ra.sends) == 1+n }) {
		t.Fatalf("delivered %d of %d", len(rb.msgs)-1, n)
	}
	if got := sizes(); len(got) != 1 {
		t.Errorf("data packet sizes %v, want one size", got)
	}
	for i := 0; i < n; i++ {
		if !bytes.Equal(rb.data[1+i], pattern(i, size)) || ra.sends[uint64(10+i)] != nil {
			t.Fatalf("message %d differs (send %v)", i, ra.sends[uint64(10+i)])
		}
	}
}

// TestEagerWhenIdle: by default a message up to DefaultEagerIdle goes
// eager to a peer with nothing in flight (a ping-pong's turn, an answer),
// while one sent right behind packets still in flight goes by rendezvous
// above RndvThreshold, as a stream should; both arrive intact. With
// RndvThreshold given, it is the only threshold.
func TestEagerWhenIdle(t *testing.T) {
	const size = 200000
	for _, c := range []struct {
		name        string
		cfg         Config
		eager, rndv uint64
	}{
		{"default", Config{Job: [16]byte{1}}, 1, 1},
		{"RndvThreshold 64000", Config{Job: [16]byte{1}, RndvThreshold: 64000}, 0, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b, ra, rb, ca, _ := connectedPair(t, c.cfg)
			if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(a.busy) == 0 && len(b.busy) == 0 }) {
				t.Fatal("the connection never went idle")
			}
			before := a.Stats()
			for i := range 2 {
				h := transport.Header{Tag: uint64(i), Len: size}
				if _, err := a.Send(ca, &h, [][]byte{pattern(i, size)}, uint64(10+i), 0); err != nil {
					t.Fatalf("send %d: %v", i, err)
				}
			}
			s := a.Stats()
			if e, r := s.EagerMsgs-before.EagerMsgs, s.RndvMsgs-before.RndvMsgs; e != c.eager || r != c.rndv {
				t.Errorf("eager %d, rendezvous %d; want %d, %d", e, r, c.eager, c.rndv)
			}
			if !drive(t, a, b, ra, rb, 5*time.Second, func() bool { return len(rb.msgs) == 3 && len(rb.fetched) == len(rb.pending) }) {
				t.Fatalf("delivered %d of 2", len(rb.msgs)-1)
			}
			for i := range 2 {
				if !bytes.Equal(rb.data[1+i], pattern(i, size)) {
					t.Errorf("message %d differs", i)
				}
			}
		})
	}
}

// TestFlowDefaults: credits and the rendezvous window left unset follow
// the receive buffer the socket got (a root process gets the 4 MiB it
// asks for, others net.core.rmem_max), within their bounds; set ones stay.
// An endpoint on UDP takes them from its own socket.
func TestFlowDefaults(t *testing.T) {
	for _, c := range []struct {
		rcvbuf, credits, window int
	}{
		{0, DefaultCredits, DefaultRndvWindow},        // unknown (a test backend)
		{212992, DefaultCredits, DefaultRndvWindow},   // Debian's rmem_max
		{1 << 20, 356, 131072},                        // 1 MiB
		{4 << 20, MaxAutoCredits, MaxAutoRndvWindow},  // what a root process gets
		{64 << 20, MaxAutoCredits, MaxAutoRndvWindow}, // bounded
	} {
		var cfg Config
		cfg.flowDefaults(c.rcvbuf)
		if cfg.Credits != c.credits || cfg.RndvWindow != c.window {
			t.Errorf("receive buffer %d: credits %d, window %d; want %d, %d", c.rcvbuf, cfg.Credits,
				cfg.RndvWindow, c.credits, c.window)
		}
	}
	set := Config{Credits: 64, RndvWindow: 65536}
	set.flowDefaults(4 << 20)
	if set.Credits != 64 || set.RndvWindow != 65536 {
		t.Errorf("set values changed: credits %d, window %d", set.Credits, set.RndvWindow)
	}

	e, err := Open(Config{Job: [16]byte{9}, Addr: [4]byte{127, 0, 0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var want Config
	want.flowDefaults(e.be.(bufferSizer).RecvBuffer())
	if e.cfg.Credits != want.Credits || e.cfg.RndvWindow != want.RndvWindow {
		t.Errorf("UDP endpoint (receive buffer %d): credits %d, window %d; want %d, %d",
			e.be.(bufferSizer).RecvBuffer(), e.cfg.Credits, e.cfg.RndvWindow, want.Credits, want.RndvWindow)
	}
	t.Logf("this process's socket: receive buffer %d, credits %d, window %d",
		e.be.(bufferSizer).RecvBuffer(), e.cfg.Credits, e.cfg.RndvWindow)
}

// TestBatchBytes: the packets of a large eager message leave in batches
// of at most the backend's BatchBytes, each full but the last (a 64
// packet batch cut into a full UDP_SEGMENT send and a short one made an
// extra system call per batch), and the message arrives intact.
func TestBatchBytes(t *testing.T) {
	for _, auth := range []bool{false, true} {
		// Credits for the whole message: the window does not cut it.
		cfg := Config{Job: [16]byte{1}, Credits: 512, Auth: auth}
		a, b, ra, rb, ca, net := connectedPair(t, cfg)
		const limit, size = 65000, 256 << 10
		net.mu.Lock()
		net.batchBytes, net.batches = limit, nil
		net.mu.Unlock()
		data := pattern(3, size)
		h := transport.Header{Tag: 3, Len: size}
		if _, err := a.Send(ca, &h, [][]byte{data}, 2, 0); err != nil {
			t.Fatal(err)
		}
		if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 2 }) {
			t.Fatalf("auth %v: not delivered", auth)
		}
		if !bytes.Equal(rb.data[1], data) {
			t.Fatalf("auth %v: data differs", auth)
		}
		net.mu.Lock()
		var big []int // a's data batches (b's ACKs are a packet each)
		for _, n := range net.batches {
			if n > 2000 {
				big = append(big, n)
			}
		}
		net.mu.Unlock()
		if len(big) < 2 {
			t.Fatalf("auth %v: batches %v", auth, big)
		}
		pkt := a.peers[0].room
		for i, n := range big {
			if n > limit || i < len(big)-1 && n < limit-pkt-authTrailer {
				t.Errorf("auth %v: batch %d of %d is %d bytes, want at most %d and full but the last (batches %v)",
					auth, i, len(big), n, limit, big)
			}
		}
	}
}
