package hfi

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// The hostile network (docs/hfi.md, "Threat model"): a sender off the
// path, who knows the endpoint ids (they are addresses) and may forge any
// source address, but sees none of the job's packets; a member of another
// job that knows the public default key; a member of the job gone bad.
// Each test names the row of the attack it stands for.

// addrOf is where e's packets come from (path 0).
func addrOf(net *memNet, e *Endpoint) Addr { return Addr{net.memAddr, e.be.(*memBackend).port} }

// portOf is the port e receives on.
func portOf(e *Endpoint) uint16 { return e.be.(*memBackend).port }

// transfer sends count messages of the given sizes from a to b over c
// and checks that each arrives once, in order, intact, calling each
// between polls (an attacker's turn); it fails the test on any error
// completion.
func transfer(t *testing.T, a, b *Endpoint, ra, rb *recorder, c transport.Conn, sizes []int, until time.Duration, each func()) {
	t.Helper()
	base := len(rb.msgs)
	count := len(sizes)
	sent, inflight := 0, 0
	done := map[uint64]bool{}
	deadline := time.Now().Add(until)
	for len(rb.msgs)-base < count || len(done) < count || len(rb.pending) > len(rb.fetched) {
		if time.Now().After(deadline) {
			t.Fatalf("stuck: sent %d, delivered %d, sends done %d; a %+v b %+v",
				sent, len(rb.msgs)-base, len(done), a.Stats(), b.Stats())
		}
		for sent < count && inflight < 64 {
			h := transport.Header{Tag: uint64(sent), Len: uint64(sizes[sent]), Data: uint64(sent) * 3}
			ck := uint64(1000 + sent)
			ok, err := a.Send(c, &h, [][]byte{pattern(sent, sizes[sent])}, ck, 0)
			if errors.Is(err, transport.ErrAgain) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				done[ck] = true
			} else {
				inflight++
			}
			sent++
		}
		if each != nil {
			each()
		}
		a.Poll(ra, 64)
		b.Poll(rb, 64)
		for ck, err := range ra.sends {
			if err != nil {
				t.Fatalf("send %d: %v", ck, err)
			}
			if ck >= 1000 && !done[ck] {
				done[ck] = true
				inflight--
			}
		}
		clear(ra.sends)
	}
	if got := len(rb.msgs) - base; got != count {
		t.Fatalf("delivered %d messages, sent %d", got, count)
	}
	for i := 0; i < count; i++ {
		h, d := rb.msgs[base+i], rb.data[base+i]
		if h.Tag != uint64(i) || h.Data != uint64(i)*3 || h.Len != uint64(sizes[i]) || !bytes.Equal(d, pattern(i, sizes[i])) {
			t.Fatalf("message %d: header %+v, contents intact %v", i, h, bytes.Equal(d, pattern(i, sizes[i])))
		}
	}
	for ck, n := range rb.fetched {
		if n < 0 {
			t.Fatalf("fetch %d failed", ck)
		}
	}
}

// mixedSizes is count sizes of every protocol: one packet, several, and
// rendezvous.
func mixedSizes(rng *rand.Rand, count int) []int {
	sizes := make([]int, count)
	for i := range sizes {
		switch rng.IntN(3) {
		case 0:
			sizes[i] = rng.IntN(1200)
		case 1:
			sizes[i] = rng.IntN(64001)
		default:
			sizes[i] = 64001 + rng.IntN(200000)
		}
	}
	return sizes
}

// TestBlindSpoofing (rows 1 and 2): a sender off the path forges packets
// of every type at a live connection during a transfer under 5% loss:
// from the peer's own address and ports, with the connection ids given
// away (as if 32 bits had leaked), and random session tags, PSNs, ACKs
// and payloads. Not one is taken: nothing is delivered but the
// transfer's messages, nothing is freed early (an ACK past what was sent
// would free packets the receiver lacks, and the transfer would hang),
// and every forgery is counted. 10^6 of them (10^5 under -race).
func TestBlindSpoofing(t *testing.T) {
	cfg := Config{Job: [16]byte{7}, ErrchkMin: 20 * time.Millisecond, ErrchkMax: 80 * time.Millisecond, ErrchkAdaptive: true,
		ConnTimeout: 20 * time.Second, RndvWindow: 65536}
	a, b, ra, rb, c, net := connectedPair(t, cfg)
	net.loss = 0.05
	pa, pb := a.peers[0], b.peers[0]
	total := 1_000_000
	if raceEnabled {
		total = 100_000
	}
	rng := rand.New(rand.NewPCG(5, 6))
	pkt := make([]byte, 1472)
	forged := 0
	each := func() {
		for k := 0; k < 2000 && forged < total; k++ {
			typ := uint8(1 + rng.IntN(tMax-1))
			n := typeHdrLen[typ]
			if hasPayload(typ) {
				n += rng.IntN(len(pkt) - n)
			}
			p := pkt[:n]
			for i := range p {
				p[i] = byte(rng.Uint32())
			}
			// To a from b, or to b from a: the ids are right, the
			// session tag is a guess.
			to, from, me, peer := a, b, pa, pb
			if k&1 == 1 {
				to, from, me, peer = b, a, pb, pa
			}
			word := rng.Uint64()
			if isHandshake(typ) {
				word = from.epid
			}
			putHdr(p, typ, uint16(rng.Uint32()), 0, psn(rng.Uint32()&psnMask), psn(rng.Uint32()&psnMask), me.connID(), peer.connID(), word)
			net.inject(portOf(to), p, addrOf(net, from))
			forged++
		}
	}
	sizes := mixedSizes(rand.New(rand.NewPCG(1, 1)), 400)
	for forged < total {
		transfer(t, a, b, ra, rb, c, sizes, 120*time.Second, each)
	}
	sa, sb := a.Stats(), b.Stats()
	t.Logf("%d forged; a: Forged %d Stale %d WrongJob %d Malformed %d; b: Forged %d Stale %d WrongJob %d Malformed %d Challenges %d",
		forged, sa.Forged, sa.Stale, sa.WrongJob, sa.Malformed, sb.Forged, sb.Stale, sb.WrongJob, sb.Malformed, sb.Challenges)
	if len(ra.msgs) != 0 {
		t.Errorf("a took %d messages: forgeries delivered", len(ra.msgs))
	}
	if sa.BadAck+sb.BadAck != 0 {
		t.Errorf("a forgery reached the ACK check (a %d, b %d)", sa.BadAck, sb.BadAck)
	}
	counted := sa.Forged + sa.Stale + sa.WrongJob + sa.Malformed + sb.Forged + sb.Stale + sb.WrongJob + sb.Malformed + sb.Challenges + sa.Challenges
	if counted < uint64(forged) {
		t.Errorf("%d forgeries, %d counted", forged, counted)
	}
	if sa.Forged+sb.Forged < uint64(forged)/2 {
		t.Errorf("only %d forgeries refused by their session tag", sa.Forged+sb.Forged)
	}
}

// TestForgedAckBeforePSN (row 1): an ACK past what was sent, with every
// secret right (a broken or hostile peer), is dropped before anything is
// freed: the packets it claims stay, go again, and arrive.
func TestForgedAckBeforePSN(t *testing.T) {
	cfg := Config{Job: [16]byte{7}, ErrchkMin: 5 * time.Millisecond, ErrchkMax: 20 * time.Millisecond}
	a, b, ra, rb, c, net := connectedPair(t, cfg)
	pa, pb := a.peers[0], b.peers[0]
	// b's packets are lost for a while, so a's message stays unacknowledged.
	net.filter = func(p []byte) bool { return false }
	h := transport.Header{Len: 5000}
	if _, err := a.Send(c, &h, [][]byte{pattern(9, 5000)}, 2, 0); err != nil {
		t.Fatal(err)
	}
	a.Poll(ra, 64)
	if pa.unacked.len() == 0 {
		t.Fatal("nothing unacknowledged")
	}
	ack := make([]byte, hdrLen)
	putHdr(ack, tAck, 0, 0, 0, pa.sentEnd.plus(100), pa.connID(), pb.connID(), pa.sess)
	net.inject(portOf(a), ack, addrOf(net, b))
	drive(t, a, b, ra, rb, 5*time.Second, func() bool { return a.Stats().BadAck > 0 })
	if a.Stats().BadAck == 0 || pa.unacked.len() == 0 {
		t.Fatalf("the forged ACK was taken: BadAck %d, unacked %d", a.Stats().BadAck, pa.unacked.len())
	}
	net.filter = nil
	if !drive(t, a, b, ra, rb, 3*time.Second, func() bool { return len(rb.msgs) == 2 && pa.unacked.len() == 0 }) {
		t.Fatalf("the message never arrived: a %+v", a.Stats())
	}
	if !bytes.Equal(rb.data[1], pattern(9, 5000)) {
		t.Fatal("corrupted")
	}
}

// TestForgedConnectKeepsPeer (row 4): a member of another job that knows
// the public key sends a connect request naming a job peer's id as its
// source (a new instance: "restarted"), from its own address, then from
// the peer's address (forged); neither touches the connection, and the
// challenge of the forged one goes to the real peer, which drops it.
func TestForgedConnectKeepsPeer(t *testing.T) {
	cfg := Config{Job: [16]byte{7}}
	a, b, ra, rb, c, net := connectedPair(t, cfg)
	evil, err := Open(Config{Job: cfg.Job, Backend: net.open()})
	if err != nil {
		t.Fatal(err)
	}
	defer evil.Close()
	req := make([]byte, hsLen)
	putHdr(req, tConnReq, 0, 0, 0, 0, 0, 0x4242, a.epid)
	put64(req, hsDstEPID, b.epid)
	put64(req, hsInstance, 12345) // a "new instance" of a
	evil.prove(req, proofReq)     // it knows the job key
	ch0 := b.Stats().Challenges
	net.inject(portOf(b), req, addrOf(net, evil))
	net.inject(portOf(b), req, addrOf(net, a))
	// ... and one with a cookie it made up.
	copy(req[hsCookie:], bytes.Repeat([]byte{0x5a}, 16))
	evil.prove(req, proofReq)
	net.inject(portOf(b), req, addrOf(net, a))
	transfer(t, a, b, ra, rb, c, []int{10, 5000, 100000}, 5*time.Second, nil)
	sb := b.Stats()
	if sb.Forged == 0 || sb.Challenges-ch0 != 2 || sb.PeersDead+sb.PeersLeft != 0 || b.peers[0].instance != a.instance {
		t.Errorf("b: %+v, its peer's instance %#x (a's %#x)", sb, b.peers[0].instance, a.instance)
	}
	if len(ra.msgs) != 0 {
		t.Errorf("a got %d messages", len(ra.msgs))
	}
}

// TestHandshakeFlood (rows 8 and 9): 10^6 connect requests (10^5 under
// -race) with as many made-up endpoint ids, each from the address its
// id claims (forged sources: the attacker never sees the answers), some
// with the job key's proof and a guessed cookie. The responder gives
// none of them a slot, answers each with a challenge no larger than the
// request (nothing to amplify), its heap grows by less than 16 MiB, and
// an endpoint of the job connects meanwhile within a second.
func TestHandshakeFlood(t *testing.T) {
	cfg := Config{Job: [16]byte{7}}
	net := newMemNet()
	net.qmax = 4096 // a socket buffer: a flood beyond it is dropped before the endpoint
	a, b := openPair(t, net, cfg)
	ra, rb := recorders(t, a, b)
	total := 1_000_000
	if raceEnabled {
		total = 100_000
	}
	rng := rand.New(rand.NewPCG(8, 9))
	req := make([]byte, hsLen)
	var recvd, sentBefore int
	sentBefore = int(b.be.(*memBackend).sentBytes.Load())
	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	var c transport.Conn
	var connectedIn time.Duration
	start := time.Now()
	for i := 0; i < total; i++ {
		ip := [4]byte{10, byte(1 + rng.IntN(200)), byte(rng.Uint32()), byte(rng.Uint32())}
		port := uint16(1024 + rng.IntN(60000))
		src := transport.NetEPID(ip, port, 0)
		putHdr(req, tConnReq, 0, 0, 0, 0, 0, rng.Uint32(), src)
		put64(req, hsDstEPID, b.epid)
		put64(req, hsInstance, rng.Uint64())
		if i%2 == 1 {
			for k := 0; k < 16; k++ {
				req[hsCookie+k] = byte(rng.Uint32())
			}
			a.prove(req, proofReq) // with the job key
		}
		net.inject(portOf(b), req, Addr{ip, port})
		recvd += len(req)
		if i%256 == 255 {
			// b takes them all before the next ones (none is dropped
			// before it, as a full socket buffer would).
			for bb := b.be.(*memBackend); ; {
				b.Poll(rb, 1<<20)
				bb.mu.Lock()
				left := len(bb.q)
				bb.mu.Unlock()
				if left == 0 && !b.Arrived() {
					break
				}
			}
			a.Poll(ra, 64)
			if i >= total/2 && c == 0 {
				c = connect(t, a, b)
				h := transport.Header{Len: 3}
				a.Send(c, &h, [][]byte{{1, 2, 3}}, 1, 0)
				t0 := time.Now()
				if !drive(t, a, b, ra, rb, time.Second, func() bool { return len(rb.msgs) == 1 }) {
					t.Fatalf("a legitimate peer did not connect within 1 s of the flood: b %+v", b.Stats())
				}
				connectedIn = time.Since(t0)
			}
		}
	}
	for b.Poll(rb, 1<<20) > 0 || b.Arrived() {
	}
	drive(t, a, b, ra, rb, 100*time.Millisecond, func() bool { return false })
	el := time.Since(start)
	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	sb := b.Stats()
	sent := int(b.be.(*memBackend).sentBytes.Load()) - sentBefore
	t.Logf("%d requests in %v (%d dropped before the endpoint, as by a full socket buffer); b: %d slots, Challenges %d WrongJob %d Forged %d; sent %d bytes for %d received; heap %+d KiB; a peer connected in %v",
		total, el, net.qdrops.Load(), b.live, sb.Challenges, sb.WrongJob, sb.Forged, sent, recvd, (int64(m1.HeapInuse)-int64(m0.HeapInuse))/1024, connectedIn)
	if b.live != 1 {
		t.Errorf("b holds %d peers, want 1 (a)", b.live)
	}
	if sent > recvd {
		t.Errorf("b sent %d bytes for %d received", sent, recvd)
	}
	if sb.Challenges < uint64(total)*99/100 || net.qdrops.Load() > int64(total)/100 {
		t.Errorf("%d challenges for %d requests (%d dropped before b)", sb.Challenges, total, net.qdrops.Load())
	}
	if d := int64(m1.HeapInuse) - int64(m0.HeapInuse); d > 16<<20 {
		t.Errorf("heap grew by %d MiB", d>>20)
	}
}

// TestReflection (row 9): a request that names a third host as its
// source (and comes from the attacker's address) is answered with
// nothing; one forged from the third host's address draws one challenge,
// smaller than the request, and no connection: what the third host gets
// is less than what the attacker sent.
func TestReflection(t *testing.T) {
	cfg := Config{Job: [16]byte{7}}
	net := newMemNet()
	victim, third := openPair(t, net, cfg)
	evil := net.open()
	var got int
	net.filter = func(p []byte) bool { got += len(p); return true }
	req := make([]byte, hsLen)
	putHdr(req, tConnReq, 0, 0, 0, 0, 0, 77, third.epid)
	put64(req, hsDstEPID, victim.epid)
	sentByEvil := 0
	for i := 0; i < 100; i++ {
		net.inject(portOf(victim), req, Addr{net.memAddr, evil.port})
		net.inject(portOf(victim), req, addrOf(net, third))
		sentByEvil += 2 * len(req)
	}
	rv, rt := recorders(t, victim, third)
	drive(t, victim, third, rv, rt, 5*time.Second, func() bool {
		s := victim.Stats()
		return s.Forged == 100 && s.Challenges == 100
	})
	drive(t, victim, third, rv, rt, 20*time.Millisecond, func() bool { return false }) // (anything more it would send)
	if got > sentByEvil/2 || victim.live != 0 || victim.Stats().Forged != 100 {
		t.Errorf("the third host got %d bytes for %d the attacker sent; victim: %d peers, %+v", got, sentByEvil, victim.live, victim.Stats())
	}
}

// TestMalformedLengths (row 5): a job member gone bad (it has every
// secret of the connection) sends an eager head claiming 2^40 bytes and
// then continuation packets: the head is malformed (longer than the
// receiver takes), nothing is reserved or grows, the continuations are
// dropped, and the connection goes on.
func TestMalformedLengths(t *testing.T) {
	cfg := Config{Job: [16]byte{7}}
	a, b, ra, rb, c, net := connectedPair(t, cfg)
	pa := a.peers[0]
	net.qmax = 4096
	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	p := make([]byte, 1400)
	putHdr(p, tEager, 0, 0, pa.nextPSN, pa.expect, pa.remote, pa.connID(), pa.rsess)
	put64(p, 56, 1<<40)
	net.inject(portOf(b), p, addrOf(net, a))
	pa.nextPSN = pa.nextPSN.plus(1)
	for i := 0; i < 20000; i++ {
		putHdr(p, tCont, 0, 0, pa.nextPSN, pa.expect, pa.remote, pa.connID(), pa.rsess)
		put64(p, 32, uint64(1336+i*1360))
		for net.inject(portOf(b), p, addrOf(net, a)); net.qdrops.Load() > 0; net.inject(portOf(b), p, addrOf(net, a)) {
			net.qdrops.Store(0) // (the queue is full: let b take some)
			b.Poll(rb, 1<<20)
		}
		pa.nextPSN = pa.nextPSN.plus(1)
		if i%100 == 0 {
			b.Poll(rb, 1<<20)
		}
	}
	pa.sentEnd = pa.nextPSN // (b acknowledges what we forged)
	drive(t, a, b, ra, rb, 5*time.Second, func() bool { return b.peers[0].expect == pa.nextPSN })
	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	if b.Stats().Malformed < 20000 || b.asmUsed != 0 || len(rb.msgs) != 1 {
		t.Errorf("b: Malformed %d, reserved %d, messages %d", b.Stats().Malformed, b.asmUsed, len(rb.msgs))
	}
	if d := int64(m1.HeapInuse) - int64(m0.HeapInuse); d > 8<<20 {
		t.Errorf("heap grew by %d MiB", d>>20)
	}
	transfer(t, a, b, ra, rb, c, []int{1, 20000, 70000}, 5*time.Second, nil)
}

// admitGate is a recorder that refuses every new message while shut,
// as the provider does at its limits (transport.Admitter).
type admitGate struct {
	*recorder
	shut    bool
	refused int
}

func (g *admitGate) Admit(h *transport.Header, src uint64, rndv bool) bool {
	if g.shut {
		g.refused++
		return false
	}
	return true
}

// TestBusyHoldsSender (row 7's mechanism): a receiver at its limits
// refuses new messages for three times the connection timeout; its
// sender waits without resending its window over and over, the
// connection stays up (busy answers are signs of life), and once the
// receiver takes messages again every one arrives, once, intact.
func TestBusyHoldsSender(t *testing.T) {
	cfg := Config{Job: [16]byte{7}, ConnTimeout: time.Second, ErrchkMin: 10 * time.Millisecond,
		ErrchkMax: 40 * time.Millisecond, OOOBytes: 64 << 10}
	a, b, ra, rb0, c, _ := connectedPair(t, cfg)
	gate := &admitGate{recorder: rb0, shut: true}
	sizes := mixedSizes(rand.New(rand.NewPCG(2, 3)), 300)
	ok := make(chan struct{})
	go func() {
		time.Sleep(3 * cfg.ConnTimeout)
		close(ok)
	}()
	opened := false
	each := func() {
		if !opened {
			select {
			case <-ok:
				gate.shut, opened = false, true
			default:
			}
		}
	}
	// transfer with b polled through the gate.
	rb := gate.recorder
	base := len(rb.msgs)
	sent := 0
	done := 0
	deadline := time.Now().Add(20 * time.Second)
	for len(rb.msgs)-base < len(sizes) || done < len(sizes) || len(rb.pending) > len(rb.fetched) {
		if time.Now().After(deadline) {
			t.Fatalf("stuck: delivered %d of %d; a %+v b %+v", len(rb.msgs)-base, len(sizes), a.Stats(), b.Stats())
		}
		for sent < len(sizes) {
			h := transport.Header{Tag: uint64(sent), Len: uint64(sizes[sent])}
			fin, err := a.Send(c, &h, [][]byte{pattern(sent, sizes[sent])}, uint64(100+sent), 0)
			if errors.Is(err, transport.ErrAgain) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if fin {
				done++
			}
			sent++
		}
		each()
		a.Poll(ra, 64)
		b.Poll(gate, 64)
		for ck, err := range ra.sends {
			if err != nil {
				t.Fatalf("send %d failed: %v (the receiver was only busy)", ck, err)
			}
			done++
		}
		clear(ra.sends)
		time.Sleep(20 * time.Microsecond)
	}
	for i, sz := range sizes {
		if !bytes.Equal(rb.data[base+i], pattern(i, sz)) || rb.msgs[base+i].Tag != uint64(i) {
			t.Fatalf("message %d wrong: header %+v (size %d), %d bytes, equal to pattern of %d? %v", i, rb.msgs[base+i], sz, len(rb.data[base+i]), rb.msgs[base+i].Tag, bytes.Equal(rb.data[base+i], pattern(int(rb.msgs[base+i].Tag), sz)))
		}
	}
	sa, sb := a.Stats(), b.Stats()
	t.Logf("refused %d times; a: Busy %d Retransmits %d Probes %d; b: Refused %d", gate.refused, sa.Busy, sa.Retransmits, sa.Probes, sb.Refused)
	if gate.refused == 0 || sa.Busy == 0 || sb.Refused == 0 || sa.PeersDead+sb.PeersDead+sa.PeersLeft+sb.PeersLeft != 0 {
		t.Errorf("a %+v, b %+v", sa, sb)
	}
}

// TestReconnectAfterTimeout (row 10): a partition longer than the
// connection timeout fails what was pending (ErrTimeout); once the
// network heals, the next send connects again and arrives, and so does
// the other way (the peer had declared nothing: it takes the new
// connection in place of the old one).
func TestReconnectAfterTimeout(t *testing.T) {
	cfg := Config{Job: [16]byte{7}, ConnTimeout: 500 * time.Millisecond, ErrchkMin: 5 * time.Millisecond, ErrchkMax: 20 * time.Millisecond,
		RndvThreshold: 64000} // the 100 kB send is a rendezvous, pending until acknowledged
	a, b, ra, rb, c, net := connectedPair(t, cfg)
	net.filter = func(p []byte) bool { return false }
	h := transport.Header{Len: 3000}
	a.Send(c, &h, [][]byte{pattern(1, 3000)}, 5, 0) // completes at once (eager, up)
	h = transport.Header{Len: 100000}
	a.Send(c, &h, [][]byte{pattern(2, 100000)}, 6, 0)
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { _, ok := ra.sends[6]; return ok }) {
		t.Fatal("no failure after the partition")
	}
	if !errors.Is(ra.sends[6], transport.ErrTimeout) {
		t.Fatalf("send: %v", ra.sends[6])
	}
	clear(ra.sends)
	drive(t, a, b, ra, rb, 2*cfg.ConnTimeout, func() bool { return false }) // 2x the timeout
	net.filter = nil
	transfer(t, a, b, ra, rb, c, []int{7, 3000, 100000}, 5*time.Second, nil)
	cb, err := b.Connect(a.EPID())
	if err != nil {
		t.Fatal(err)
	}
	h = transport.Header{Len: 4}
	b.Send(cb, &h, [][]byte{{9, 8, 7, 6}}, 1, 0)
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(ra.msgs) == 1 }) {
		t.Fatalf("b -> a after the reconnection: a %+v b %+v", a.Stats(), b.Stats())
	}
}

// TestMTUFalls (row 11): the path's MTU falls to 1280 in the middle of a
// transfer, then rises to 9000: segmented sends of the old size fail
// (ErrPacketTooBig, sent fragmented), packets shrink to the new MTU at
// once and grow back after mtuRecheck, to the ceiling; nothing is lost.
func TestMTUFalls(t *testing.T) {
	clk := &fakeClock{}
	cfg := Config{Job: [16]byte{7}, Clock: clk, ErrchkMin: 20 * time.Millisecond, ConnTimeout: time.Hour}
	a, b, ra, rb, c, net := connectedPair(t, cfg)
	sizes := mixedSizes(rand.New(rand.NewPCG(4, 4)), 200)
	step := 0
	big := func() int {
		m := 0
		for _, p := range a.peers[0].unacked.v {
			m = max(m, len(p.b))
		}
		return m
	}
	transfer(t, a, b, ra, rb, c, sizes, 30*time.Second, func() {
		clk.Advance(time.Millisecond)
		step++
		if step == 20 {
			net.mu.Lock()
			net.mtu = 1280
			net.mu.Unlock()
		}
	})
	pa := a.peers[0]
	if net.tooBig == 0 || a.Stats().MTUDown == 0 || pa.pmtu != 1280-28 {
		t.Fatalf("tooBig %d, MTUDown %d, datagrams %d", net.tooBig, a.Stats().MTUDown, pa.pmtu)
	}
	transfer(t, a, b, ra, rb, c, sizes, 30*time.Second, nil)
	if m := big(); m > 1280-28 {
		t.Errorf("a packet of %d bytes after the MTU fell", m)
	}
	net.mu.Lock()
	net.mtu = 9000
	net.mu.Unlock()
	clk.Advance(2 * mtuRecheck)
	transfer(t, a, b, ra, rb, c, sizes, 30*time.Second, func() { clk.Advance(time.Millisecond) })
	if pa.pmtu != pa.ceil || pa.ceil != 1500-28 {
		t.Errorf("datagrams %d after the MTU rose, ceiling %d", pa.pmtu, pa.ceil)
	}
}

// TestEagerDoneWhenConnected (row 12): an eager send made while the
// connection is being set up completes when the connection is up, as one
// made on a connection that is up does once copied: a receiver that
// takes the message and vanishes at once (no close, no ACK) does not
// leave its sender with an error for a message it delivered.
func TestEagerDoneWhenConnected(t *testing.T) {
	net := newMemNet()
	cfg := Config{Job: [16]byte{7}, ConnTimeout: 200 * time.Millisecond}
	a, b := openPair(t, net, cfg)
	ra, rb := recorders(t, a, b)
	c := connect(t, a, b)
	h := transport.Header{Len: 6}
	if done, err := a.Send(c, &h, [][]byte{[]byte("hello!")}, 3, 0); done || err != nil {
		t.Fatalf("send while connecting: %v %v", done, err)
	}
	// b takes the message, then nothing of b's reaches a again.
	if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 1 }) {
		t.Fatal("not delivered")
	}
	net.filter = func(p []byte) bool { return false }
	drive(t, a, b, ra, rb, 3*cfg.ConnTimeout, func() bool { return false })
	if err, ok := ra.sends[3]; !ok || err != nil {
		t.Fatalf("the delivered message's send: done %v, %v", ok, err)
	}
}

// TestPeerTableReclaims (row 8, with the job key): peers that connected
// and died do not keep their slots: with PeersPerHost slots taken by dead
// peers of one address, a new peer from it still connects.
func TestPeerTableReclaims(t *testing.T) {
	net := newMemNet()
	cfg := Config{Job: [16]byte{7}, ConnTimeout: time.Second, ErrchkMin: 5 * time.Millisecond, ErrchkMax: 10 * time.Millisecond, PeersPerHost: 4}
	_, b := openPair(t, net, cfg)
	rb := newRecorder(t)
	rb.ep = b
	for i := 0; i < 6; i++ {
		cc := cfg
		cc.Backend = net.open()
		x, err := Open(cc)
		if err != nil {
			t.Fatal(err)
		}
		rx := newRecorder(t)
		rx.ep = x
		cx := connect(t, x, b)
		h := transport.Header{Len: 2}
		x.Send(cx, &h, [][]byte{{byte(i), 1}}, 1, 0)
		if !drive(t, x, b, rx, rb, 2*time.Second, func() bool { return len(rb.msgs) == i+1 }) {
			t.Fatalf("peer %d did not connect: b %+v", i, b.Stats())
		}
		x.Close()
		drive(t, x, b, rx, rb, 50*time.Millisecond, func() bool { p := b.byEPID[x.epid]; return p == nil || p.state == stDead })
	}
	if b.live > cfg.PeersPerHost || b.Stats().Reclaimed == 0 {
		t.Errorf("b: %d peers, %+v", b.live, b.Stats())
	}
}

// TestRefusedCopyDropped: a refused packet kept for a later try, whose
// resend arrives and is admitted first, leaves no copy behind: before,
// the copy stayed in its slot and was taken, a window later, for the
// packet with that slot's next PSN (a message delivered corrupted, the
// real packet dropped as a duplicate).
func TestRefusedCopyDropped(t *testing.T) {
	cfg := Config{Job: [16]byte{7}, ConnTimeout: time.Hour, ErrchkMin: time.Hour, Credits: 16}
	a, b, ra, rb0, c, net := connectedPair(t, cfg)
	gate := &admitGate{recorder: rb0, shut: true}
	var first []byte
	net.filter = func(p []byte) bool {
		if p[3] == tEager && first == nil {
			first = append([]byte(nil), p...)
		}
		return true
	}
	h := transport.Header{Tag: 1, Len: 100}
	a.Send(c, &h, [][]byte{pattern(1, 100)}, 2, 0)
	a.Poll(ra, 64)
	for end := time.Now().Add(5 * time.Second); b.Stats().Refused == 0 && time.Now().Before(end); {
		b.Poll(gate, 64)
		time.Sleep(time.Millisecond)
	}
	if b.Stats().Refused == 0 || b.peers[0].nKept != 1 {
		t.Fatalf("not refused and kept: %+v, kept %d", b.Stats(), b.peers[0].nKept)
	}
	net.filter = nil
	gate.shut = false
	net.inject(portOf(b), first, addrOf(net, a)) // the sender's resend, before b's own retry
	for end := time.Now().Add(time.Second); !b.Arrived() && time.Now().Before(end); {
	}
	b.peers[0].rnrAt = b.clock.Now() + int64(time.Hour) // (b's retry must not come first)
	for end := time.Now().Add(5 * time.Second); len(gate.msgs) < 2 && time.Now().Before(end); {
		b.Poll(gate, 64)
		time.Sleep(time.Millisecond)
	}
	if len(gate.msgs) != 2 {
		t.Fatalf("the resend was not taken: %d messages", len(gate.msgs))
	}
	if n := b.peers[0].nKept; n != 0 {
		t.Errorf("%d packets kept after the refused one was taken", n)
	}
	// More than a window of the kept slots (a power of two >= Credits).
	sizes := make([]int, 100)
	for i := range sizes {
		sizes[i] = 40 + i
	}
	transfer(t, a, b, ra, gate.recorder, c, sizes, 10*time.Second, nil)
}

// TestAuthenticated: a connection is authenticated if either side asks
// (Config.Auth). Under loss, reordering and duplication everything
// arrives intact; a packet an on-path attacker altered (it knows the
// session tag and ids: it saw them) or made up is dropped (BadMAC); one
// from the peer that lacks the trailer too.
func TestAuthenticated(t *testing.T) {
	net := newMemNet()
	ca := Config{Job: [16]byte{7}, Auth: true, ErrchkMin: 20 * time.Millisecond, ErrchkMax: 80 * time.Millisecond, ErrchkAdaptive: true}
	cb := ca
	cb.Auth = false
	a, b := openPairOf(t, net, ca, cb)
	ra, rb := recorders(t, a, b)
	c := connect(t, a, b)
	net.loss, net.reorder, net.dup = 0.03, 0.03, 0.01
	var grabbed [][]byte
	net.filter = func(p []byte) bool {
		if p[3] == tEager && len(grabbed) < 50 {
			grabbed = append(grabbed, append([]byte(nil), p...))
		}
		return true
	}
	transfer(t, a, b, ra, rb, c, mixedSizes(rand.New(rand.NewPCG(9, 9)), 300), 60*time.Second, nil)
	net.filter = nil
	net.loss, net.reorder, net.dup = 0, 0, 0
	pa, pb := a.peers[0], b.peers[0]
	if pa.mac == nil || pb.mac == nil {
		t.Fatal("the connection is not authenticated")
	}
	bad0 := b.Stats().BadMAC
	for i, g := range grabbed {
		p := append([]byte(nil), g...)
		switch i % 3 {
		case 0:
			p[len(p)-authTrailer-1] ^= 1 // a payload byte
		case 1:
			setAck(p, 0) // a header field
		default:
			p = p[:len(p)-authTrailer] // no trailer: as an unauthenticated peer would send
		}
		net.inject(portOf(b), p, addrOf(net, a))
	}
	drive(t, a, b, ra, rb, 5*time.Second, func() bool { return b.Stats().BadMAC-bad0 == uint64(len(grabbed)) })
	if got := b.Stats().BadMAC - bad0; got != uint64(len(grabbed)) || len(grabbed) == 0 {
		t.Fatalf("%d of %d altered packets refused", got, len(grabbed))
	}
	transfer(t, a, b, ra, rb, c, []int{1, 3000, 100000}, 10*time.Second, nil)
}

// FuzzHandshake feeds arbitrary handshake packets, seeded with the real
// request, challenge, request with cookie and reply of a connection, to
// an endpoint: whatever comes, from its claimed address or not, nothing
// panics, and no slot is given without a cookie and proof (a packet that
// carries both is a real request, or a replay of one).
func FuzzHandshake(f *testing.F) {
	net := newMemNet()
	var seeds [][]byte
	net.filter = func(p []byte) bool {
		if isHandshake(p[3]) {
			seeds = append(seeds, append([]byte(nil), p...))
		}
		return true
	}
	cfg := Config{Job: [16]byte{7}}
	a, b := openPair(f, net, cfg)
	ra, rb := recorders(f, a, b)
	c, _ := a.Connect(b.EPID())
	h := transport.Header{Len: 1}
	a.Send(c, &h, [][]byte{{1}}, 1, 0)
	for end := time.Now().Add(2 * time.Second); len(rb.msgs) == 0 && time.Now().Before(end); {
		a.Poll(ra, 64)
		b.Poll(rb, 64)
	}
	net.filter = nil
	if len(seeds) < 4 {
		f.Fatalf("%d handshake packets seen", len(seeds))
	}
	for _, s := range seeds {
		f.Add(s, true)
	}
	victim, rv := b, rb // the responder: a seed request is a replay to it
	f.Fuzz(func(t *testing.T, p []byte, fromClaim bool) {
		rv.t = t
		from := Addr{net.memAddr, 1}
		if fromClaim && len(p) >= hdrLen {
			if ip, port, ok := transport.EPIDAddr(get64(p, 24)); ok {
				from = Addr{ip, port}
			}
		}
		before := victim.live
		net.inject(portOf(victim), p, from)
		for i := 0; i < 3; i++ {
			victim.Poll(rv, 64)
		}
		if victim.live > before && (len(p) != hsLen || !victim.proven(p, proofReq)) {
			t.Fatalf("a slot for a packet without a proof of the key: %x", p)
		}
	})
}

// TestGapsHeldOpen (memory): peers that each send a window of packets
// past a gap they never fill make the receiver keep at most OOOBytes of
// them, whatever their number; the rest are dropped (and would be sent
// again). A job member that then fills its gap is served as before.
func TestGapsHeldOpen(t *testing.T) {
	net := newMemNet()
	cfg := Config{Job: [16]byte{7}, OOOBytes: 256 << 10, Credits: 128}
	b, err := Open(Config{Job: cfg.Job, OOOBytes: cfg.OOOBytes, Credits: cfg.Credits, Backend: net.open()})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rb := newRecorder(t)
	rb.ep = b
	var peers []*Endpoint
	for i := 0; i < 8; i++ {
		cc := cfg
		cc.Backend = net.open()
		x, err := Open(cc)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		rx := newRecorder(t)
		rx.ep = x
		c := connect(t, x, b)
		h := transport.Header{Len: 1}
		x.Send(c, &h, [][]byte{{1}}, 1, 0)
		if !drive(t, x, b, rx, rb, 2*time.Second, func() bool { return len(rb.msgs) == i+1 }) {
			t.Fatal("no connection")
		}
		peers = append(peers, x)
	}
	pkt := make([]byte, 1400)
	for _, x := range peers {
		px := x.peers[0]
		for k := uint32(1); k < 128; k++ { // PSN nextPSN never comes
			putHdr(pkt, tEager, 0, 0, px.nextPSN.plus(k), px.expect, px.remote, px.connID(), px.rsess)
			put64(pkt, 56, uint64(len(pkt)-64))
			net.inject(portOf(b), pkt, addrOf(net, x))
		}
		for b.Poll(rb, 1<<20) > 0 || b.Arrived() {
		}
	}
	drive(t, b, b, rb, rb, 100*time.Millisecond, func() bool { return false })
	if kept := b.keptN * b.keptSize; kept > cfg.OOOBytes || b.keptN == 0 {
		t.Fatalf("%d buffers (%d bytes) kept past gaps, limit %d", b.keptN, kept, cfg.OOOBytes)
	}
	t.Logf("8 peers x 127 packets past a gap: %d kept (%d bytes), %d out of order", b.keptN, b.keptN*b.keptSize, b.Stats().OutOfOrder)
}
