package hfi

// Over 600 lines: the reliable flow is one state machine per direction
// (queue, ACK, NAK, retransmission, reordering, probing); splitting it would
// put the two halves of each rule in different files.

import (
	"math/bits"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/umem"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// The reliable flow of each direction of a connection, after PSM2's
// ips protocol: every sequenced packet takes the next 31-bit PSN; every
// packet carries the cumulative ACK of the reverse flow; the receiver
// processes packets only in PSN order and drops duplicates. Unlike PSM2
// (go-back-N, fitting a fabric that almost never drops), retransmission is
// selective: the receiver keeps packets that arrive past a gap (up to the
// window) and answers them with a NAK carrying the PSN it expects and a
// bitmap of what it holds beyond it; the sender sends again only what the
// bitmap lacks, each packet at most once per quarter timeout. When the
// errchk timer fires (doubling up to its cap) every unacknowledged packet
// the receiver has not reported holding goes again. A peer that
// acknowledges nothing for ConnTimeout is dead.

// txPkt is a built sequenced packet: its bytes, and the send to complete
// when it is acknowledged (sendOp index + 1, 0 for none).
type txPkt struct {
	b []byte
	// src: the packet's payload (for b[srcAt:]) still in the
	// application's buffer, from where the first transmission sends it.
	// An eager message's packets have it while the Send that made them
	// runs, which then copies it into b (sendEager, fill); a rendezvous
	// data packet keeps it until acknowledged (its send, sop - 1, keeps
	// the buffer until then), and a packet sent again is copied first
	// (own).
	src    []byte
	srcAt  int
	sop    uint32 // the rendezvous send + 1 whose buffer src is in, or 0
	op     uint32
	eager  bool  // op is an eager send (queued while connecting: done at up)
	sacked bool  // the receiver holds it (a NAK's bitmap said so)
	at     int64 // when it was last sent
}

// pktq is a FIFO of packets that grows as needed and then stays.
type pktq struct {
	v          []txPkt
	head, size int
}

func (q *pktq) len() int { return q.size }

func (q *pktq) at(i int) *txPkt { return &q.v[(q.head+i)%len(q.v)] }

func (q *pktq) push(x txPkt) {
	if q.size == len(q.v) {
		n := make([]txPkt, max(16, 2*len(q.v)))
		for i := 0; i < q.size; i++ {
			n[i] = *q.at(i)
		}
		q.v, q.head = n, 0
	}
	q.v[(q.head+q.size)%len(q.v)] = x
	q.size++
}

func (q *pktq) popBack() txPkt {
	q.size--
	i := (q.head + q.size) % len(q.v)
	x := q.v[i]
	q.v[i] = txPkt{}
	return x
}

func (q *pktq) pop() txPkt {
	x := q.v[q.head]
	q.v[q.head] = txPkt{}
	q.head = (q.head + 1) % len(q.v)
	q.size--
	return x
}

// getBuf returns a packet buffer of bufSize bytes.
func (e *Endpoint) getBuf() []byte {
	if n := len(e.txFree); n > 0 {
		b := e.txFree[n-1]
		e.txFree = e.txFree[:n-1]
		return b[:cap(b)]
	}
	return make([]byte, e.bufSize)
}

func (e *Endpoint) putBuf(b []byte) { e.txFree = append(e.txFree, b) }

// newPkt takes a buffer and writes the header of a sequenced packet of
// type t to p with the next PSN. (Built while connecting, it gets the
// peer's id and session tag at up.)
func (e *Endpoint) newPkt(p *peer, t uint8) []byte {
	b := e.getBuf()
	putHdr(b, t, 0, p.path, p.nextPSN, p.expect, p.remote, p.connID(), p.rsess)
	p.nextPSN = p.nextPSN.plus(1)
	return b
}

// setRoom sets what a packet to p holds: its datagram size less the
// authentication trailer (reserved too while the handshake has not said
// whether the connection is authenticated).
func (e *Endpoint) setRoom(p *peer) {
	p.room = p.pmtu
	if p.mac != nil || p.state != stUp {
		p.room -= authTrailer
	}
}

// ackInterval: an ACK is requested every this many packets. PSM2 asks
// every credits/4 - 1; every ACK here is a system call and a trip through
// the peer's network stack (17% of each side's time in a 256 KiB
// ping-pong across two namespace hosts), and with credits/2 - 1 the
// window still refills before it drains: fi_pingpong across hosts 256 KiB
// 92.2 -> 81.8 us, 1 MiB 319.6 -> 306.4 us (medians of 6), msgrate 8 B
// 1.18 -> 1.35 M/s, 16 KiB 150 -> 165 k/s (means of 4).
func (e *Endpoint) ackInterval() int { return max(e.cfg.Credits/2-1, 1) }

// holdMax bounds the packets a burst of sends leaves for the next Poll.
const holdMax = 32

// holdRecent: sends are held only this soon after a Poll. An application
// that polls between its bursts (posts a window, then reads completions)
// is within it; a thread that only injects, and polls rarely if ever, is
// not, and its sends go at once as before.
const holdRecent = int64(100 * time.Microsecond)

// hold reports whether the eager message just queued to p waits for the
// next Poll instead of going at once, so that a burst of sends made
// without a poll between them leaves in one sendmsg (a run of equal-sized
// packets is one UDP_SEGMENT send, and one GRO receive on the other
// side) instead of a system call and a trip through the peer's network
// stack each. A send goes at once when it is the first to p since the
// last Poll, or when nothing sent to p is unacknowledged (a request that
// answers a message: a ping-pong pays nothing), or when holdMax packets
// wait. Poll sends what waits (timers), and so does Wait before it
// sleeps (NextDue is 0 while packets wait). Nothing is held without a
// Stalled callback (someone who polls when the application stops: not
// under FI_PSM2_LOCK_LEVEL=0), nor later than holdRecent after the last
// Poll.
func (e *Endpoint) hold(p *peer) bool {
	if p.sentGen != e.polls || p.unacked.len() == 0 || p.queued.len() >= holdMax ||
		e.cfg.Stalled == nil || e.clock.Now()-e.pollAt > holdRecent {
		p.sentGen = e.polls
		return false
	}
	p.held = true
	e.markBusy(p)
	return true
}

// pump sends what the window allows: queued packets first, then the
// next packets of granted rendezvous data.
func (e *Endpoint) pump(p *peer) {
	if p.state != stUp {
		return
	}
	p.held = false
	if p.pmtu < p.ceil {
		e.raiseMTU(p)
	}
	for p.unacked.len() < e.cfg.Credits {
		if p.queued.len() == 0 && !e.buildData(p) {
			break
		}
		x := p.queued.pop()
		last := p.queued.len() == 0 && len(p.rsend) == 0
		f := pktFlags(x.b) &^ fAckLazy
		p.sinceReq++
		if p.sinceReq >= e.ackInterval() || p.unacked.len()+1 == e.cfg.Credits {
			f |= fAckReq
			p.sinceReq = 0
		} else if last {
			// The count starts again, as at any request: a stream whose
			// bursts end in lazy requests asks for credits only when
			// the window fills (urgent: one round trip per window).
			// Counting on cost 10-20% of a stream of small messages
			// across hosts in ACKs each way.
			f |= fAckReq | fAckLazy
			p.sinceReq = 0
		}
		setFlags(x.b, f)
		setAck(x.b, p.expect)
		if p.unacked.len() == 0 || p.rttAt == 0 {
			now := e.clock.Now()
			// (Also the send time below: an idle wire's polls are
			// skipped, so Poll's reading may be old.)
			e.now = now
			if p.unacked.len() == 0 {
				p.progress = now
				p.rtxWait = e.rto(p)
				p.rtxAt = now + p.rtxWait
			}
			if p.rttAt == 0 { // time this packet's ACK (RTT sample)
				p.rttPSN, p.rttAt = pktPSN(x.b), now
			}
		}
		if x.src != nil {
			e.batch(p, x.b[6], x.b[:x.srcAt], x.src)
		} else {
			e.batch(p, x.b[6], x.b, nil)
		}
		x.at = e.now
		p.unacked.push(x)
		p.sentEnd = pktPSN(x.b).plus(1)
		p.ackOwed = false
		p.acked = p.expect
	}
	e.flush(p)
	if p.unacked.len() > 0 || p.queued.len() > 0 {
		e.markBusy(p)
	}
}

// batch adds a packet to the batch for p on path (flush sends it). A
// batch is sent before it passes the backend's BatchBytes: 184 packets of
// a 256 KiB message, sent in batches of 64 that each left as a
// UDP_SEGMENT send of 45 and one of 19, made 6 sendmsg calls where 5 do
// (fi_pingpong 256 KiB across two namespace hosts, medians of 4
// alternating runs: 64.1 -> 59.0 us).
//
// pay, if not nil, is the rest of the packet, in the application's buffer
// (txPkt.src).
func (e *Endpoint) batch(p *peer, path uint8, b, pay []byte) {
	n := len(b) + len(pay)
	if p.mac != nil {
		n += authTrailer
	}
	if len(e.out) > 0 && (e.outPath != path || len(e.out) == cap(e.out) ||
		e.outMax > 0 && e.outBytes+n > e.outMax) {
		e.flush(p)
	}
	if len(e.out) == 0 {
		e.outMax = e.be.BatchBytes() // (0 once offload failed)
	}
	e.outPath = path
	e.out = append(e.out, b)
	e.outPay = append(e.outPay, pay)
	e.outSplit = e.outSplit || pay != nil
	e.outBytes += n
}

// flush sends the batch, authenticated if p's connection is.
func (e *Endpoint) flush(p *peer) {
	if len(e.out) == 0 {
		return
	}
	path := e.pathFix(e.outPath)
	if m := p.mac; m != nil { // (no split packet: sendEager)
		for i, b := range e.out {
			e.out[i] = m.seal(b)
		}
	}
	var pays [][]byte
	if e.outSplit {
		pays = e.outPay
	}
	if err := e.be.SendBatch(int(path), p.dest, e.out, pays); err == ErrPacketTooBig {
		e.lowerMTU(p, len(e.out[0])+len(e.outPay[0]))
	} else if err != nil {
		e.stats.SendErrors++
	}
	e.stats.Sent += uint64(len(e.out))
	e.stats.Batches++
	clear(e.out)
	clear(e.outPay)
	e.out, e.outPay, e.outSplit = e.out[:0], e.outPay[:0], false
	e.outBytes = 0
}

// Rails (Config.Rails, multirail). A connection between two endpoints
// with further rails has as many rails as the one with fewer; rail i
// joins the two endpoints' addresses on their i-th networks (0: their
// ids' addresses). Packets carry their rail in the path byte, so a
// receiver knows which one a packet came on. Everything goes on the
// primary rail (rail 0 at first) except rendezvous data, whose grant
// windows (RndvWindow) go on the rails in turn (stripe): one flow, one
// window of credits, the ACKs on the primary.
//
// Rails are not equal queues: a stripe on one may arrive after the next
// one on another, as a rule. A NAK then reports a gap that is still on
// its way, so onNak sends a packet again only if one sent after it on its
// own path arrived (a rail's packets arrive in order); the receiver NAKs
// a gap once and when asked, not every 16 packets past it. The rest is
// the timer's: its probe resends the newest packet of the rail of the
// oldest one missing, on that rail, so the answer shows which of that
// rail's packets are lost (railProbe, onProbeAnswer).
//
// A rail that fails (its link is down, or someone's filter drops it) is
// found by the timer: its probe goes unanswered, and the next one goes on
// the next rail, flagged fFailover. A probe is answered on the rail it
// came on; the receiver makes the rail of one flagged fFailover its
// primary too; when the answer comes,
// the sender makes it its primary too, and the packets still missing go
// again on it. A further rail whose packets were lost that way is left
// out for railRetry, then tried again; so is a primary that was left.
// Both sides then carry on over the rails that work, and a peer is
// declared dead only when no rail answers for ConnTimeout. Every send
// and all its packets go through; nothing is lost but time: two timeouts
// (rto, at least 2 ms, the second doubled) per rail failure.
//
// railRetry is how long a failed rail is left out before it is tried
// again (with one more loss and timeout if it still fails).
const railRetry = int64(time.Second)

// railLost: x, sent on a further rail, was lost, and no later packet
// of that rail overtook it (the probe's answer, or a NAK after a
// timeout, shows it missing): the rail is left out for railRetry.
func (e *Endpoint) railLost(p *peer, x *txPkt, now int64) {
	if r := railOf(x.b[6]); r != railOf(p.path) && p.railDown[r] <= now {
		p.railDown[r] = now + railRetry
		e.stats.RailsDown++
	}
}

// railStripe is how much of a rendezvous goes on one rail before the
// next takes over: a full UDP_SEGMENT send, so that each rail's sends
// stay as large as on one, and the rails' queues fill alike.
const railStripe = 65536

// stripe is the rail of stripe w of a rendezvous's data to p: the rails
// in turn, the failed ones left out.
func (e *Endpoint) stripe(p *peer, w uint64) int {
	var up [MaxRails]int
	n := 0
	for r := 0; r < p.dest.Rails(); r++ {
		if r == railOf(p.path) || p.railDown[r] <= e.now {
			up[n] = r
			n++
		}
	}
	return up[w%uint64(n)]
}

// pathFix is path with a source port index the backend has (else 0).
func (e *Endpoint) pathFix(path uint8) uint8 {
	if int(path&pathMask) >= e.be.Paths() {
		path &^= pathMask
	}
	return path
}

// xmit hands one packet to the backend, authenticated if p's
// connection is.
func (e *Endpoint) xmit(p *peer, path uint8, b []byte) {
	path = e.pathFix(path)
	if p.mac != nil {
		b = p.mac.seal(b)
	}
	if err := e.be.Send(int(path), p.dest, b); err != nil {
		e.stats.SendErrors++ // dropped: the flow sends it again
	}
	e.stats.Sent++
}

// ackOK reports whether ack acknowledges nothing we did not send: at or
// before p.sentEnd. (An older one, from a packet overtaken on the way,
// frees nothing.) A packet whose ACK is past what was sent is forged, or
// from a broken peer; it is dropped before anything is freed.
func (p *peer) ackOK(ack psn) bool {
	return ack == p.sentEnd || ack.before(p.sentEnd)
}

// onAck takes the cumulative ACK ack from p (ackOK): packets before it
// are done.
func (e *Endpoint) onAck(p *peer, ack psn) {
	if p.unacked.len() == 0 {
		return
	}
	freed := false
	for p.unacked.len() > 0 && pktPSN(p.unacked.at(0).b).before(ack) {
		x := p.unacked.pop()
		e.putBuf(x.b)
		if x.op != 0 {
			e.completeSend(x.op - 1)
		}
		freed = true
	}
	if !freed {
		return
	}
	if p.unacked.len() == 0 {
		p.probing = false
	}
	now := e.clock.Now()
	if p.rttAt != 0 && p.rttPSN.before(ack) {
		sample := now - p.rttAt
		if p.srtt == 0 {
			p.srtt, p.rttvar = sample, sample/2
		} else {
			d := sample - p.srtt
			p.srtt += d / 8
			p.rttvar += (max(d, -d) - p.rttvar) / 4
		}
		p.rttAt = 0
	}
	p.progress, p.probeK = now, 0
	p.rtxWait = e.rto(p)
	p.rtxAt = now + p.rtxWait
	// Send again only once an ACK interval of credits is free (or all
	// are). Pumping on every ACK into the few credits it freed fills the
	// window again, so every small batch ends with a window-full ACK
	// request, gets its own ACK, and frees a few credits more: with
	// several rendezvous in flight (whose grants carry ACKs of part of
	// a window) the flow settled into batches of 6 packets, a sendmsg
	// each, and 16 1 MiB sends in flight across two namespace hosts moved
	// 0.8-1.2 GB/s against 1.8-2.4 for one at a time. No ACK is waited
	// for in vain: pump's last packet asked for one (the window filled,
	// or nothing was left to send).
	if p.unacked.len() == 0 || e.cfg.Credits-p.unacked.len() >= e.ackInterval() {
		e.pump(p)
	}
}

// rto is p's retransmission timeout before any backoff: the errchk
// minimum, or, when adaptive (PSM2_ERRCHK_TIMEOUT not set), the smoothed
// round trip plus four times its mean deviation (Jacobson's estimator, so
// a receiver that is slow to answer now and then does not cause spurious
// resends), at least 2 ms and at most that minimum. PSM2's fixed 160 ms
// fits a fabric that rarely drops; on a lossy Ethernet each lost tail
// would stall the flow that long.
func (e *Endpoint) rto(p *peer) int64 {
	min0 := int64(e.cfg.ErrchkMin)
	if !e.cfg.ErrchkAdaptive || p.srtt == 0 {
		return min0
	}
	return min(max(p.srtt+4*p.rttvar, int64(2*time.Millisecond)), min0)
}

// onNak: p expects PSN ack (the caller has taken it as a cumulative ACK)
// and holds the packets sack marks. Packets before the last one it holds
// that it lacks are lost, and sent again, if that last one left after
// them on the same path (a path delivers in order, so they would have come
// first); otherwise (another path, or a packet sent again since: the NAK
// may predate that resend) only if they were sent more than a quarter
// timeout ago. Holding every lacking packet to the quarter timeout made
// the first NAK of a burst, which comes within microseconds, repair
// nothing: each loss waited for the timer (2 ms at least) and its probe,
// a duplicate; under 5% loss a 64 KiB ping-pong across two namespace
// hosts probed once per message and sent 27% of its resends in vain.
func (e *Endpoint) onNak(p *peer, ack psn, sack *[2]uint64) {
	e.stats.Naks++
	if p.state != stUp || p.unacked.len() == 0 {
		return
	}
	hi := uint32(0) // distance from ack of the last packet held (0: none)
	if sack[1] != 0 {
		hi = 128 - uint32(bits.LeadingZeros64(sack[1]))
	} else if sack[0] != 0 {
		hi = 64 - uint32(bits.LeadingZeros64(sack[0]))
	}
	// heldAt[path]: when the latest-sent packet the receiver holds went,
	// per path. A packet sent before it on its path was overtaken: lost.
	// One on another path (a rail's queue is longer, a source port's
	// route another) may still be on its way.
	var heldAt [pathKeys + 1]int64
	for i := 0; i < p.unacked.len(); i++ {
		x := p.unacked.at(i)
		d := ack.to(pktPSN(x.b))
		if d > hi {
			break
		}
		if d > 0 && sack[(d-1)/64]>>((d-1)%64)&1 != 0 {
			k := x.b[6] & pathKeys
			heldAt[k] = max(heldAt[k], x.at)
		}
	}
	now := e.clock.Now()
	guard := e.rto(p) / 4
	var last *txPkt
	for i := 0; i < p.unacked.len(); i++ {
		x := p.unacked.at(i)
		d := ack.to(pktPSN(x.b))
		if d > hi {
			break
		}
		if d > 0 && sack[(d-1)/64]>>((d-1)%64)&1 != 0 {
			x.sacked = true
			continue
		}
		overtaken := x.at <= heldAt[x.b[6]&pathKeys]
		if !overtaken && (p.dest.Rails() > 1 || now-x.at < guard) {
			// (With rails, a packet no later one of its path overtook
			// may wait in its rail's queue: the timer's probe decides.)
			continue
		}
		if !overtaken {
			e.railLost(p, x, now)
		}
		last = e.again(p, x, now)
	}
	if last != nil {
		e.askAck(p, last)
	}
}

// again sends x, a packet of p's unacknowledged ones, again, on p's
// primary rail.
func (e *Endpoint) again(p *peer, x *txPkt, now int64) *txPkt {
	return e.againOn(p, x, now, railOf(p.path))
}

// againOn is again on rail r.
func (e *Endpoint) againOn(p *peer, x *txPkt, now int64, r int) *txPkt {
	if x.src != nil {
		e.own(p, x)
	}
	setFlags(x.b, pktFlags(x.b)&^(fAckReq|fAckLazy|fProbe))
	setAck(x.b, p.expect)
	if railOf(x.b[6]) != r {
		setPath(x.b, onRail(x.b[6], r))
	}
	e.batch(p, x.b[6], x.b, nil)
	x.at = now
	e.stats.Retransmits++
	return x
}

// own copies the payload of x, a packet sent from the application's
// buffer (txPkt.src), into x's own, to send it again: a lost packet pays
// the copy that the others are spared. A buffer the kernel refuses (which
// a first send of it then failed on too) fails the rendezvous send x is
// of: every packet of it is made its own, those the buffer refuses zeroed
// with fFault (the receiver's fetch fails), and none completes it.
func (e *Endpoint) own(p *peer, x *txPkt) {
	if ownPkt(x) || x.sop == 0 {
		return
	}
	sop := x.sop
	for _, q := range [2]*pktq{&p.unacked, &p.queued} {
		for j := 0; j < q.len(); j++ {
			if y := q.at(j); y.sop == sop {
				ownPkt(y)
				y.sop, y.op = 0, 0
			}
		}
	}
	if i := sop - 1; e.sends.Live(i) {
		e.failSend(i, transport.ErrFault)
	}
}

// ownPkt copies x's payload from src into its buffer; false (and the
// payload zeroed, with fFault) if src cannot be read.
func ownPkt(x *txPkt) bool {
	if x.src == nil {
		return true
	}
	if _, bad, _ := umem.Copy(x.b[x.srcAt:], x.src); bad != umem.None {
		faultPkt(x)
		return false
	}
	x.src = nil
	return true
}

// faultPkt makes x, a packet whose payload src cannot be read, go zeroed
// with fFault: the receiver drops the message it is of.
func faultPkt(x *txPkt) {
	x.src = nil
	clear(x.b[x.srcAt:])
	setFlags(x.b, pktFlags(x.b)|fFault)
}

// askAck ends a resend: its last packet asks for an ACK, the batch goes.
func (e *Endpoint) askAck(p *peer, last *txPkt) {
	setFlags(last.b, pktFlags(last.b)&^fAckLazy|fAckReq)
	e.flush(p)
	p.ackOwed = false
	p.acked = p.expect
	p.rttAt = 0 // no RTT sample from a resent packet (Karn)
	p.rtxAt = e.clock.Now() + p.rtxWait
}

// probe (the timer fired) sends one packet again, the newest one sent,
// flagged fProbe. The receiver answers a probe at once, after it has taken
// every packet sent before it that reached it (a flow's packets arrive in
// order, paths aside), so the answer tells lost packets from late ones
// (onProbeAnswer); the newest packet, because when the tail of a burst was
// lost it is one of those missing, and past the gap it makes the receiver
// report the others (its answer is then a NAK). Sending every
// unacknowledged packet at the first expiry, as PSM2 does, sent a full
// window (128-256 packets) again in about one run in three of
// fi_rdm_tagged_bw -W 16 across two namespace hosts, every one of them a
// duplicate: the timeout is 2 ms at least, and on a 2-CPU VM a receiver
// is sometimes not scheduled for that long.
func (e *Endpoint) probe(p *peer) {
	now := e.clock.Now()
	x := p.unacked.at(p.unacked.len() - 1)
	r := railOf(p.path)
	f := uint16(fProbe)
	p.probeK++
	p.probeWide = false
	if n := p.dest.Rails(); n > 1 {
		// The newest packet of the rail the oldest missing one went on
		// (the probe must travel behind what it vouches for); after an
		// unanswered probe, the next goes on the next rail (Rails).
		x, r = railProbe(p)
		p.probeSusp = r
		if p.probeK > 1 {
			r = (r + p.probeK - 1) % n
			f |= fFailover
			p.probeWide = true
		}
	}
	p.probing, p.probeAt, p.probeEnd, p.probeRail = true, now, pktPSN(x.b), r
	e.stats.Probes++
	last := e.againOn(p, x, now, r)
	setFlags(last.b, pktFlags(last.b)|f)
	e.askAck(p, last)
}

// railProbe is the packet a probe to p sends again and its rail: the
// newest unacknowledged one of the rail that the oldest one not held by
// the receiver went on.
func railProbe(p *peer) (*txPkt, int) {
	x := p.unacked.at(p.unacked.len() - 1)
	r := railOf(x.b[6])
	for i := 0; i < p.unacked.len(); i++ {
		if y := p.unacked.at(i); !y.sacked {
			r = railOf(y.b[6])
			break
		}
	}
	for i := p.unacked.len() - 1; i >= 0; i-- {
		if y := p.unacked.at(i); railOf(y.b[6]) == r {
			return y, r
		}
	}
	return x, r
}

// onProbeAnswer: p answered probe (an ACK or NAK flagged fProbe with the
// probe's PSN, taken as such already: a NAK has had the packets it
// reports missing sent again). If it answers the probe in flight (its
// packet; an answer to a probe of the same packet tells as much), the
// packets sent before the probe that are still unacknowledged, not
// reported held and not sent again since are lost: they go again. If all
// are acknowledged, the timer fired for nothing and nothing more is sent.
func (e *Endpoint) onProbeAnswer(p *peer, probe psn, rail int, failover bool) {
	now := e.clock.Now()
	if failover && rail != railOf(p.path) && rail < p.dest.Rails() {
		// The answer to a probe sent on another rail after the primary's
		// went unanswered: that rail is the primary now, the old one is
		// left out for a while (Rails).
		p.railDown[railOf(p.path)] = now + railRetry
		p.path = onRail(p.path, rail)
		e.stats.RailFailovers++
	}
	if !p.probing || probe != p.probeEnd {
		// The answer to an earlier probe of another packet: the packets
		// sent since may still be on the way.
		return
	}
	p.probing = false
	end := p.probeEnd.plus(1)
	var last *txPkt
	for i := 0; i < p.unacked.len(); i++ {
		x := p.unacked.at(i)
		if !pktPSN(x.b).before(end) {
			break
		}
		// With rails, the probe overtook only the packets of its own
		// rail; one sent on another rail after an unanswered probe
		// (probeWide) finds those of the rail that did not answer lost
		// too. The other rails' may still be in their queues.
		if r := railOf(x.b[6]); !x.sacked && x.at < p.probeAt &&
			(p.dest.Rails() == 1 || r == p.probeRail || p.probeWide && r == p.probeSusp) {
			e.railLost(p, x, now)
			last = e.again(p, x, now)
		}
	}
	if last != nil {
		e.askAck(p, last)
	}
}

// answerProbe answers probe (its PSN) from p at once: a NAK if packets
// wait past a gap, else an ACK, either flagged fProbe and carrying the
// probe's PSN.
func (e *Endpoint) answerProbe(p *peer, probe psn, rail int, failover bool) {
	f := uint16(fProbe)
	primary := p.path
	if rail < p.dest.Rails() {
		// The answer goes back on the rail the probe came on, which
		// works (see Rails). After one went unanswered (failover), so
		// does what we send from now on: our primary rail may be the one
		// that fails.
		p.path = onRail(p.path, rail)
		if failover {
			if rail != railOf(primary) {
				e.stats.RailFailovers++
			}
			primary = p.path
			f |= fFailover
		}
	}
	if p.nKept > 0 {
		e.sendNakSeq(p, f, probe)
	} else {
		e.sendCtlSeq(p, tAck, f, probe)
	}
	p.path = primary
}

// Outcomes of onSeq.
const (
	seqNext = iota // the packet expected: admit and process it (next)
	seqDrop        // a duplicate, or past the window: dropped
	seqKept        // past a gap: kept until the gap is filled
)

// onSeq checks the PSN of sequenced packet b (decoded in h) from p.
func (e *Endpoint) onSeq(p *peer, h *hdr, b []byte) int {
	if h.psn == p.expect {
		return seqNext
	}
	if h.psn.before(p.expect) {
		e.stats.Dups++
		e.owe(p, true) // our ACK was lost: say again what we have
		return seqDrop
	}
	e.stats.OutOfOrder++
	r := seqDrop
	if s := e.slot(p, h.psn); p.expect.to(h.psn) < uint32(len(p.kept)) {
		if *s == nil {
			if k := e.keepBuf(len(b)); k != nil {
				copy(k, b)
				*s = k
				p.nKept++
				r = seqKept
			}
		} else {
			e.stats.Dups++
		}
	}
	p.ooo++
	if !p.nakSent || p.ooo >= 16 && p.dest.Rails() == 1 || h.flags&fAckReq != 0 {
		// A NAK at the gap, then every 16 packets past it (with rails,
		// which arrive out of order as a rule, not) and whenever the
		// sender asks.
		p.nakSent, p.ooo = true, 0
		e.sendNak(p, 0)
	}
	return r
}

// next takes in-order packet h from p: the PSN advances, it is
// processed, and so are the kept packets it was the gap before.
func (e *Endpoint) next(p *peer, h *hdr) int {
	if p.nKept > 0 {
		// A copy of this packet kept when it was refused (refuse) goes:
		// its slot is the one of PSN expect + len(kept) next.
		if s := e.slot(p, p.expect); *s != nil {
			e.unkeep(s)
			p.nKept--
		}
	}
	p.expect = p.expect.plus(1)
	if p.rnr {
		// Taken after a refusal: the sender learns it from the ACK this
		// owes (without fBusy), and sends again what we did not keep.
		p.rnr, p.rnrLost = false, false
		e.owe(p, true)
	}
	if p.nKept == 0 {
		p.nakSent, p.ooo = false, 0
	}
	n := e.process(p, h)
	if p.nKept > 0 {
		n += e.drainKept(p)
	}
	return n
}

// drainKept processes the kept packets that follow, in order, now that
// the gap before them is filled (or the refused one at the gap may be
// admitted now); it returns the events delivered.
func (e *Endpoint) drainKept(p *peer) int {
	n := 0
	mask := uint32(len(p.kept) - 1)
	for p.nKept > 0 && p.state == stUp {
		s := &p.kept[uint32(p.expect)&mask]
		if *s == nil {
			// Another gap: tell the sender what is missing now.
			e.sendNak(p, 0)
			break
		}
		var h hdr
		decode(*s, &h) // it decoded when it came
		if !e.admit(p, &h) {
			e.refuse(p, *s, true)
			break
		}
		p.expect = p.expect.plus(1)
		p.nKept--
		if p.rnr {
			p.rnr, p.rnrLost = false, false
			e.owe(p, true)
		}
		n += e.process(p, &h)
		e.unkeep(s)
	}
	if p.nKept == 0 {
		p.nakSent, p.ooo = false, 0
	}
	return n
}

// sendNak sends a NAK: the PSN expected and which after it are kept.
func (e *Endpoint) sendNak(p *peer, flags uint16) { e.sendNakSeq(p, flags, 0) }

// sendNakSeq is sendNak with seq in the PSN field (a probe's answer names
// the probe it answers).
func (e *Endpoint) sendNakSeq(p *peer, flags uint16, seq psn) {
	b := e.ctl[:typeHdrLen[tNak]]
	if p.rnr {
		flags |= fBusy
	}
	putHdr(b, tNak, flags, p.path, seq, p.expect, p.remote, p.connID(), p.rsess)
	var sack [2]uint64
	if p.nKept > 0 {
		mask := uint32(len(p.kept) - 1)
		for k := uint32(0); k < 128 && k < mask; k++ {
			if p.kept[uint32(p.expect.plus(1+k))&mask] != nil {
				sack[k/64] |= 1 << (k % 64)
			}
		}
	}
	put64(b, 32, sack[0])
	put64(b, 40, sack[1])
	e.stats.NaksSent++
	e.xmit(p, p.path, b)
}

// owe records that p is owed an ACK: now (at the end of this Poll) if
// urgent, else within AckDelay, unless a packet to p carries it first.
func (e *Endpoint) owe(p *peer, urgent bool) {
	at := e.clock.Now()
	if !urgent {
		at += int64(e.cfg.AckDelay)
	}
	if !p.ackOwed || at < p.ackAt {
		p.ackAt = at
	}
	p.ackOwed = true
	e.markBusy(p)
}

// sendCtl sends an unsequenced ACK or NAK carrying p.expect (and fBusy
// while we refuse the packet there).
func (e *Endpoint) sendCtl(p *peer, t uint8, flags uint16) { e.sendCtlSeq(p, t, flags, 0) }

// sendCtlSeq is sendCtl with seq in the PSN field (sendNakSeq).
func (e *Endpoint) sendCtlSeq(p *peer, t uint8, flags uint16, seq psn) {
	b := e.ctl[:hdrLen]
	if p.rnr {
		flags |= fBusy
	}
	putHdr(b, t, flags, p.path, seq, p.expect, p.remote, p.connID(), p.rsess)
	e.xmit(p, p.path, b)
	if t == tAck {
		p.ackOwed = false
		p.acked = p.expect
	}
}

// markBusy puts p on the busy list (timers or queued work for Poll). The
// first peer on an empty list is work for a Poll that an application
// that stops calling would never make: Stalled tells the provider.
func (e *Endpoint) markBusy(p *peer) {
	if !p.inBusy {
		p.inBusy = true
		e.busy = append(e.busy, p)
		if len(e.busy) == 1 && e.cfg.Stalled != nil {
			e.cfg.Stalled()
		}
	}
}

// connRetry is the interval before connect request number try+1.
func (e *Endpoint) connRetry(try int) int64 {
	d := 20 * time.Millisecond << min(try, 6)
	return int64(min(d, time.Second))
}

// due is the time of p's earliest timer, -1 if it has none.
func (p *peer) due(e *Endpoint) int64 {
	t := int64(-1)
	at := func(x int64) {
		if t < 0 || x < t {
			t = x
		}
	}
	switch p.state {
	case stConnecting:
		at(p.connLast + e.connRetry(p.connTry))
		return t
	case stDead:
		return -1
	}
	if p.held {
		at(0) // now
	}
	if p.ackOwed {
		at(p.ackAt)
	}
	if p.rnr {
		at(p.rnrAt)
	}
	if p.unacked.len() > 0 {
		at(p.rtxAt)
	} else if p.fetching > 0 || p.watch > 0 {
		at(max(p.heard, p.pingAt) + e.rto(p))
	}
	return t
}

// service runs the due timers of busy peers and drops from the busy list
// those with nothing left to do. After packets (fresh) it reads the clock
// again: Poll's reading is older than the ACKs and timers they just set.
// An empty poll keeps Poll's reading (a clock read is a tenth of an
// empty poll's user time).
func (e *Endpoint) service(fresh bool) int {
	now := e.now
	if fresh {
		now = e.clock.Now()
	}
	keep := e.busy[:0]
	n := 0
	for _, p := range e.busy {
		n += e.timers(p, now)
		if p.state != stDead && (p.due(e) >= 0 || p.queued.len() > 0 || len(p.rsend) > 0) {
			keep = append(keep, p)
		} else {
			p.inBusy = false
		}
	}
	for i := len(keep); i < len(e.busy); i++ {
		e.busy[i] = nil
	}
	e.busy = keep
	return n
}

// timers runs p's due timers; it returns the events delivered (a refused
// message taken at last).
func (e *Endpoint) timers(p *peer, now int64) int {
	switch p.state {
	case stConnecting:
		if now-p.connFirst >= int64(e.cfg.ConnTimeout) {
			e.failPeer(p, transport.ErrTimeout, false)
			return 0
		}
		if now >= p.connLast+e.connRetry(p.connTry) {
			e.sendRequest(p, now)
		}
		return 0
	case stDead:
		return 0
	}
	n := 0
	if p.rnr && now >= p.rnrAt {
		n = e.retryAdmit(p, now)
	}
	if p.held {
		e.pump(p)
	}
	if p.unacked.len() > 0 {
		if now-p.progress >= int64(e.cfg.ConnTimeout) {
			e.failPeer(p, transport.ErrTimeout, false)
			return n
		}
		if now >= p.rtxAt {
			p.rtxWait = min(p.rtxWait*int64(e.cfg.ErrchkFactor), int64(e.cfg.ErrchkMax))
			// Again unanswered: another probe, not the whole window
			// (see probe).
			e.probe(p)
		}
	} else if (p.fetching > 0 || p.watch > 0) && now >= max(p.heard, p.pingAt)+e.rto(p) {
		// Waiting for the peer's data (or, watched, for the provider's
		// answer) and hearing nothing: a sequenced ping makes its
		// liveness the flow's business.
		p.pingAt = now
		p.queued.push(txPkt{b: e.newPkt(p, tPing)[:hdrLen]})
		e.pump(p)
	}
	if p.ackOwed && now >= p.ackAt {
		e.sendCtl(p, tAck, 0)
	}
	return n
}

// onBusy: p refused our packet at its expected PSN (fBusy). It is alive;
// nothing is sent again until it takes it (onResume), only the timer's
// probes, whose busy answers keep the connection alive.
func (e *Endpoint) onBusy(p *peer) {
	e.stats.Busy++
	now := e.clock.Now()
	p.busy, p.progress, p.probing = true, now, false
	if p.unacked.len() > 0 {
		p.rtxAt = now + p.rtxWait
	}
}

// onResume: an ACK or NAK without fBusy after p was busy. What p has not
// reported holding goes again (unless just sent: a NAK taken with this
// answer may have sent it).
func (e *Endpoint) onResume(p *peer) {
	p.busy = false
	now := e.clock.Now()
	guard := e.rto(p) / 4
	var last *txPkt
	for i := 0; i < p.unacked.len(); i++ {
		if x := p.unacked.at(i); !x.sacked && now-x.at >= guard {
			last = e.again(p, x, now)
		}
	}
	if last != nil {
		e.askAck(p, last)
	}
}

// lowerMTU: packets of size n to p were too large for the path (they
// went fragmented): later ones are sized to the path's MTU as the host
// knows it now, or, if it does not know less, a step down.
func (e *Endpoint) lowerMTU(p *peer, n int) {
	m := e.be.PathMTU(p.dest) - 28
	if m <= 0 || m >= n {
		switch {
		case n > 1280-28:
			m = 1280 - 28
		default:
			m = minDatagram
		}
	}
	m = max(min(m, p.pmtu), minDatagram)
	if m < p.pmtu {
		p.pmtu = m
		e.setRoom(p)
		e.stats.MTUDown++
	}
	p.mtuAt = e.clock.Now() + int64(mtuRecheck)
}

// mtuRecheck: while a peer's packets are below its ceiling, the path's
// MTU is asked again this often, and packets grow back when it did.
const mtuRecheck = time.Second

// raiseMTU (pump, while p.pmtu < p.ceil): after mtuRecheck, packets grow
// to what the path takes now.
func (e *Endpoint) raiseMTU(p *peer) {
	now := e.clock.Now()
	if now < p.mtuAt {
		return
	}
	p.mtuAt = now + int64(mtuRecheck)
	if m := min(e.be.PathMTU(p.dest)-28, p.ceil); m > p.pmtu {
		p.pmtu = m
		e.setRoom(p)
	}
}
