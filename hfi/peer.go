package hfi

import (
	"fmt"
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// Peer states.
const (
	stConnecting = iota // connect request sent, no reply yet
	stUp                // connected: sequenced packets flow
	stDead              // failed, closed or gone; Connect restarts it
)

// peer is the connection with one remote endpoint: its address, the
// reliable flows both ways (flow.go) and the rendezvous sends granted.
type peer struct {
	idx      uint32 // index in Endpoint.peers
	gen      uint16 // bumped when the slot's connection is replaced
	epid     uint64
	dest     *Dest
	state    int
	remote   uint32 // the peer's id of this connection
	instance uint64 // the peer's endpoint instance (changes when it restarts)
	wanted   bool   // the provider called Connect
	path     uint8  // the path of small messages
	err      error  // why the peer is dead
	inBusy   bool

	connFirst, connLast int64 // first and latest connect request
	connTry             int

	// Send flow.
	nextPSN  uint32 // PSN of the next packet built
	queued   pktq   // built, not yet sent (over the window or connecting)
	unacked  pktq   // sent, waiting for an ACK
	sinceReq int    // packets sent since the last ACK request
	rtxAt    int64  // when unacked packets are sent again
	rtxWait  int64  // the current timeout (errchk backoff)
	progress int64  // when the peer last acknowledged something new
	srtt     int64  // smoothed round trip (ns), 0 before the first sample
	rttvar   int64  // its smoothed mean deviation
	rttPSN   uint32 // the packet being timed, sent at rttAt (0: none)
	rttAt    int64
	rsend    []uint32 // rendezvous sends with granted bytes to send (sendOp indexes)
	held     bool     // queued packets wait for the next Poll (coalesce)
	sentGen  uint64   // e.polls when a Send last sent to this peer at once
	probing  bool     // the timer fired; its probe's answer is awaited
	probeEnd uint32   // the last PSN sent before the probe
	probeAt  int64    // when the probe went
	nextPath uint8

	// Receive flow.
	expect   uint32 // next PSN expected
	ackOwed  bool
	ackAt    int64 // when the owed ACK goes out
	acked    uint32
	nakSent  bool
	ooo      int      // packets past the gap since the last NAK
	kept     [][]byte // packets past a gap, by PSN % len (a power of two >= Credits); nil before the first gap
	nKept    int
	heard    int64 // when a packet last came
	discAt   int64 // when a disconnect notice last answered its packets after it was declared dead
	fetching int   // fetches waiting for this peer's data
	watch    int   // the provider's waits on this peer (Watch)
	pingAt   int64

	// Eager reassembly (messages over one packet arrive in PSN order).
	asm    []byte
	asmHdr transport.Header
	asmOn  bool
}

// connID is the id this endpoint gave the connection: slot and generation.
func (p *peer) connID() uint32 { return uint32(p.gen)<<16 | p.idx }

func (e *Endpoint) newPeer(epid uint64) (*peer, error) {
	ip, port, ok := EPIDAddr(epid)
	if !ok {
		return nil, fmt.Errorf("hfi: %#x has no network address: %w", epid, transport.ErrUnreachable)
	}
	if len(e.peers) >= 1<<16-1 {
		return nil, fmt.Errorf("hfi: too many peers: %w", transport.ErrUnreachable)
	}
	p := &peer{idx: uint32(len(e.peers)), epid: epid, dest: NewDest(ip, port), gen: 1}
	p.path = e.pathFor(epid)
	e.peers = append(e.peers, p)
	e.byEPID[epid] = p
	return p, nil
}

// pathFor picks the path of a peer's small messages (PSM2_PATH_SELECTION).
func (e *Endpoint) pathFor(epid uint64) uint8 {
	n := uint64(e.be.Paths())
	switch e.cfg.PathSel {
	case PathStaticDest:
		return uint8((epid >> epidCtxShift & 0xff) % n)
	case PathStaticBase:
		return 0
	default: // adaptive and static_src start at the own context
		return uint8(uint64(e.cfg.Ctx) % n)
	}
}

// Connect returns the connection to endpoint epid, starting its set-up if
// needed: the connect request goes out now, and sends queue until the
// reply comes (or fail after ConnTimeout).
func (e *Endpoint) Connect(epid uint64) (transport.Conn, error) {
	if e.closed {
		return 0, transport.ErrClosed
	}
	p := e.byEPID[epid]
	if p == nil {
		var err error
		if p, err = e.newPeer(epid); err != nil {
			return 0, err
		}
	}
	if p.state == stDead {
		e.restart(p)
	}
	if p.state == stConnecting && p.connTry == 0 {
		now := e.clock.Now()
		p.connFirst = now
		e.sendConn(p, tConnReq, now)
		e.markBusy(p)
	}
	p.wanted = true
	return e.connOf(p), nil
}

// restart resets a dead peer's slot for a new connection.
func (e *Endpoint) restart(p *peer) {
	p.gen++
	if p.gen == 0 {
		p.gen = 1
	}
	p.state, p.err, p.remote, p.instance = stConnecting, nil, 0, 0
	p.connTry, p.connFirst, p.connLast = 0, 0, 0
	e.resetFlows(p)
}

// resetFlows empties both flows of p (PSNs start again at 0).
func (e *Endpoint) resetFlows(p *peer) {
	for p.queued.len() > 0 {
		e.putBuf(p.queued.pop().b)
	}
	for p.unacked.len() > 0 {
		e.putBuf(p.unacked.pop().b)
	}
	p.nextPSN, p.expect, p.acked = 0, 0, 0
	p.sinceReq, p.rtxAt, p.rtxWait, p.nakSent, p.ackOwed = 0, 0, 0, false, false
	p.rsend = p.rsend[:0]
	p.rttAt, p.held = 0, false
	p.asmOn, p.fetching = false, 0
	for i := range p.kept {
		p.kept[i] = p.kept[i][:0]
	}
	p.nKept, p.ooo = 0, 0
}

// sendConn sends a connect request or reply to p.
func (e *Endpoint) sendConn(p *peer, t uint8, now int64) {
	b := e.ctl[:typeHdrLen[t]]
	putHdr(b, t, 0, 0, 0, 0, p.remote, p.connID(), e.epid)
	copy(b[32:48], e.cfg.Job[:])
	put64(b, 48, p.epid)
	put64(b, 56, e.instance)
	put32(b, 64, 0)
	put32(b, 68, uint32(e.cfg.MTU))
	e.xmit(p, 0, b)
	if t == tConnReq {
		p.connTry++
		p.connLast = now
	}
}

// discEvery spaces the disconnect notices that answer the packets of a
// peer declared dead.
const discEvery = 10 * time.Millisecond

func (e *Endpoint) sendDisc(p *peer) {
	b := e.ctl[:typeHdrLen[tDisc]]
	putHdr(b, tDisc, 0, 0, 0, p.expect, p.remote, p.connID(), e.epid)
	put64(b, 32, e.instance)
	e.xmit(p, p.path, b)
}

// onConnReq answers a connect request from a peer of our job.
func (e *Endpoint) onConnReq(h *hdr) {
	p := e.byEPID[h.srcEPID]
	if p == nil {
		var err error
		if p, err = e.newPeer(h.srcEPID); err != nil {
			e.stats.Stale++
			return
		}
	}
	switch {
	case p.state == stUp && p.instance == h.instance:
		// A repeated request (our reply was lost): answer again.
	case p.state == stUp || (p.state == stDead && p.instance != 0 && p.instance != h.instance):
		// The peer restarted at the same address: its old connection
		// is gone with everything pending on it.
		e.failPeer(p, transport.ErrPeerDead, false)
		e.restart(p)
		fallthrough
	default:
		if p.state == stDead {
			e.restart(p)
		}
		e.up(p, h)
	}
	e.sendConn(p, tConnRep, e.clock.Now())
}

// onConnRep completes our connect request.
func (e *Endpoint) onConnRep(h *hdr) {
	p := e.byEPID[h.srcEPID]
	if p == nil || h.dstConn != p.connID() {
		e.stats.Stale++
		return
	}
	switch p.state {
	case stConnecting:
		e.up(p, h)
	case stUp:
		if p.instance != h.instance {
			e.stats.Stale++
		}
	default:
		e.stats.Stale++
	}
}

// up makes p connected with the peer that sent h.
func (e *Endpoint) up(p *peer, h *hdr) {
	p.state, p.remote, p.instance = stUp, h.srcConn, h.instance
	now := e.clock.Now()
	p.progress, p.heard = now, now
	// Packets queued while connecting were built before the peer's id
	// was known: stamp it in now.
	for i := 0; i < p.queued.len(); i++ {
		put32(p.queued.at(i).b, 16, p.remote)
	}
	e.pump(p)
	e.markBusy(p)
}

// onDisc: the peer closed its endpoint.
func (e *Endpoint) onDisc(p *peer, h *hdr) {
	if p.state != stUp || h.instance != p.instance {
		e.stats.Stale++
		return
	}
	e.failPeer(p, transport.ErrPeerDead, false)
}

// failPeer declares p dead with err: everything pending on it fails.
// With closing (the endpoint closes) nothing is sent.
func (e *Endpoint) failPeer(p *peer, err error, closing bool) {
	if p.state == stDead {
		return
	}
	if !closing {
		e.stats.PeersDead++
	}
	p.state, p.err = stDead, err
	for i := range e.sends {
		op := &e.sends[i]
		if op.live && op.p == p {
			e.failSend(uint32(i), err)
		}
	}
	for i := range e.fetches {
		op := &e.fetches[i]
		if op.live && op.p == p {
			e.failFetch(uint32(i), err)
		}
	}
	e.resetFlows(p)
}

// deadErr is why operations on p fail.
func (p *peer) deadErr() error {
	if p.err != nil {
		return p.err
	}
	return transport.ErrPeerDead
}
