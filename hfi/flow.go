package hfi

import (
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// The reliable flow of each direction of a connection, after PSM2's
// ips protocol: every sequenced packet takes the next 31-bit PSN; every
// packet carries the cumulative ACK of the reverse flow; the receiver
// takes packets only in order, drops duplicates and, at the first packet
// after a gap, sends one NAK with the PSN it expects; the sender keeps
// what it sent until it is acknowledged and sends it all again (go-back-N)
// on a NAK or when the errchk timer fires, the timer doubling up to its
// cap; a peer that acknowledges nothing for ConnTimeout is dead.

// txPkt is a built sequenced packet: its bytes, and the send to complete
// when it is acknowledged (sendOp index + 1, 0 for none).
type txPkt struct {
	b  []byte
	op uint32
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
// type t to p with the next PSN.
func (e *Endpoint) newPkt(p *peer, t uint8) []byte {
	b := e.getBuf()
	putHdr(b, t, 0, p.path, p.nextPSN, p.expect, p.remote, p.connID(), e.epid)
	p.nextPSN = (p.nextPSN + 1) & psnMask
	return b
}

// ackInterval: an ACK is requested every this many packets (PSM2:
// credits/4 - 1).
func (e *Endpoint) ackInterval() int { return max(e.cfg.Credits/4-1, 1) }

// pump sends what the window allows: queued packets first, then the
// next packets of granted rendezvous data.
func (e *Endpoint) pump(p *peer) {
	if p.state != stUp {
		return
	}
	for p.unacked.len() < e.cfg.Credits {
		if p.queued.len() == 0 && !e.buildData(p) {
			break
		}
		x := p.queued.pop()
		last := p.queued.len() == 0 && len(p.rsend) == 0
		f := pktFlags(x.b)
		p.sinceReq++
		if last || p.sinceReq >= e.ackInterval() || p.unacked.len()+1 == e.cfg.Credits {
			f |= fAckReq
			p.sinceReq = 0
		}
		setFlags(x.b, f)
		setAck(x.b, p.expect)
		if p.unacked.len() == 0 || p.rttAt == 0 {
			now := e.clock.Now()
			if p.unacked.len() == 0 {
				p.progress = now
				p.rtxWait = e.rto(p)
				p.rtxAt = now + p.rtxWait
			}
			if p.rttAt == 0 { // time this packet's ACK (RTT sample)
				p.rttPSN, p.rttAt = pktPSN(x.b), now
			}
		}
		e.batch(p, x.b[6], x.b)
		p.unacked.push(x)
		p.ackOwed = false
		p.acked = p.expect
	}
	e.flush(p)
	if p.unacked.len() > 0 || p.queued.len() > 0 {
		e.markBusy(p)
	}
}

// batch adds a packet to the batch for p on path (flush sends it).
func (e *Endpoint) batch(p *peer, path uint8, b []byte) {
	if len(e.out) > 0 && (e.outPath != path || len(e.out) == cap(e.out)) {
		e.flush(p)
	}
	e.outPath = path
	e.out = append(e.out, b)
}

// flush sends the batch.
func (e *Endpoint) flush(p *peer) {
	if len(e.out) == 0 {
		return
	}
	path := e.outPath
	if int(path) >= e.be.Paths() {
		path = 0
	}
	if err := e.be.SendBatch(int(path), p.dest, e.out); err != nil {
		e.stats.SendErrors++
	}
	e.stats.Sent += uint64(len(e.out))
	clear(e.out)
	e.out = e.out[:0]
}

// xmit hands one packet to the backend.
func (e *Endpoint) xmit(p *peer, path uint8, b []byte) {
	if int(path) >= e.be.Paths() {
		path = 0
	}
	if err := e.be.Send(int(path), p.dest, b); err != nil {
		e.stats.SendErrors++ // dropped: the flow sends it again
	}
	e.stats.Sent++
}

// onAck takes the cumulative ACK ack from p: packets before it are done.
func (e *Endpoint) onAck(p *peer, ack uint32) {
	if p.unacked.len() == 0 {
		return
	}
	freed := false
	for p.unacked.len() > 0 && psnLess(pktPSN(p.unacked.at(0).b), ack) {
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
	now := e.clock.Now()
	if p.rttAt != 0 && psnLess(p.rttPSN, ack) {
		sample := now - p.rttAt
		if p.srtt == 0 {
			p.srtt = sample
		} else {
			p.srtt += (sample - p.srtt) / 8
		}
		p.rttAt = 0
	}
	p.progress = now
	p.rtxWait = e.rto(p)
	p.rtxAt = now + p.rtxWait
	e.pump(p)
}

// rto is p's retransmission timeout before any backoff: the errchk
// minimum, or, when adaptive (PSM2_ERRCHK_TIMEOUT not set), four
// smoothed round trips but at least 2 ms, capped by that minimum. PSM2's
// fixed 160 ms fits a fabric that rarely drops; on a lossy Ethernet each
// lost tail would stall the flow that long.
func (e *Endpoint) rto(p *peer) int64 {
	min0 := int64(e.cfg.ErrchkMin)
	if !e.cfg.ErrchkAdaptive || p.srtt == 0 {
		return min0
	}
	return min(max(4*p.srtt, int64(2*time.Millisecond)), min0)
}

// onNak: p expects PSN ack; everything from there goes again.
func (e *Endpoint) onNak(p *peer, ack uint32) {
	e.stats.Naks++
	e.onAck(p, ack)
	if p.state != stUp || p.unacked.len() == 0 {
		return
	}
	now := e.clock.Now()
	if ack == p.nakPSN && now-p.nakAt < e.rto(p)/4 {
		return // the same NAK again, soon after: the resend is on its way
	}
	p.nakPSN, p.nakAt = ack, now
	e.resend(p)
}

// resend sends every unacknowledged packet again, the last asking for an
// ACK.
func (e *Endpoint) resend(p *peer) {
	n := p.unacked.len()
	for i := 0; i < n; i++ {
		b := p.unacked.at(i).b
		f := pktFlags(b) &^ fAckReq
		if i == n-1 {
			f |= fAckReq
		}
		setFlags(b, f)
		setAck(b, p.expect)
		e.batch(p, b[6], b)
		e.stats.Retransmits++
	}
	e.flush(p)
	p.ackOwed = false
	p.acked = p.expect
	p.rttAt = 0 // no RTT sample from a resent packet (Karn)
	p.rtxAt = e.clock.Now() + p.rtxWait
}

// onSeq checks the PSN of a sequenced packet from p: true if it is the
// one expected (the caller then processes it).
func (e *Endpoint) onSeq(p *peer, h *hdr) bool {
	if h.psn == p.expect {
		p.expect = (p.expect + 1) & psnMask
		p.nakSent, p.ooo = false, 0
		return true
	}
	if psnLess(h.psn, p.expect) {
		e.stats.Dups++
		e.owe(p, true) // our ACK was lost: say again what we have
		return false
	}
	e.stats.OutOfOrder++
	p.ooo++
	if !p.nakSent || p.ooo >= 16 {
		// One NAK per gap; again after 16 more packets past it (the
		// resend it asked for lost its first packet too).
		p.nakSent, p.ooo = true, 0
		e.stats.NaksSent++
		e.sendCtl(p, tNak)
	}
	return false
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

// sendCtl sends an unsequenced ACK or NAK carrying p.expect.
func (e *Endpoint) sendCtl(p *peer, t uint8) {
	b := e.ctl[:hdrLen]
	putHdr(b, t, 0, p.path, 0, p.expect, p.remote, p.connID(), e.epid)
	e.xmit(p, p.path, b)
	if t == tAck {
		p.ackOwed = false
		p.acked = p.expect
	}
}

func (e *Endpoint) markBusy(p *peer) {
	if !p.inBusy {
		p.inBusy = true
		e.busy = append(e.busy, p)
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
	if p.ackOwed {
		at(p.ackAt)
	}
	if p.unacked.len() > 0 {
		at(p.rtxAt)
	} else if p.fetching > 0 {
		at(max(p.heard, p.pingAt) + e.rto(p))
	}
	return t
}

// service runs the due timers of busy peers and drops from the busy list
// those with nothing left to do.
func (e *Endpoint) service() int {
	now := e.clock.Now()
	keep := e.busy[:0]
	for _, p := range e.busy {
		e.timers(p, now)
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
	return 0
}

// timers runs p's due timers.
func (e *Endpoint) timers(p *peer, now int64) {
	switch p.state {
	case stConnecting:
		if now-p.connFirst >= int64(e.cfg.ConnTimeout) {
			e.failPeer(p, transport.ErrTimeout, false)
			return
		}
		if now >= p.connLast+e.connRetry(p.connTry) {
			e.sendConn(p, tConnReq, now)
		}
		return
	case stDead:
		return
	}
	if p.unacked.len() > 0 {
		if now-p.progress >= int64(e.cfg.ConnTimeout) {
			e.failPeer(p, transport.ErrTimeout, false)
			return
		}
		if now >= p.rtxAt {
			p.rtxWait = min(p.rtxWait*int64(e.cfg.ErrchkFactor), int64(e.cfg.ErrchkMax))
			e.resend(p)
		}
	} else if p.fetching > 0 && now >= max(p.heard, p.pingAt)+e.rto(p) {
		// Waiting for the peer's data and hearing nothing: a sequenced
		// ping makes its liveness the flow's business.
		p.pingAt = now
		p.queued.push(txPkt{b: e.newPkt(p, tPing)[:hdrLen]})
		e.pump(p)
	}
	if p.ackOwed && now >= p.ackAt {
		e.sendCtl(p, tAck)
	}
}
