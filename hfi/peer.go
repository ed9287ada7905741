package hfi

import (
	"errors"
	"fmt"
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// Peer states.
const (
	stConnecting = iota // connect request sent, no reply yet
	stUp                // connected: sequenced packets flow
	stDead              // failed, closed or gone; Connect or Send restarts it
)

// peer is the connection with one remote endpoint: its address, the
// reliable flows both ways (flow.go) and the rendezvous sends granted.
type peer struct {
	idx       uint32 // slot in Endpoint.peers
	slotGen   uint16 // bumped when the slot goes to another peer: Conn handles carry it
	id        uint16 // random upper half of this connection's id (connID)
	epid      uint64
	dest      *Dest
	ports     [maxSrcPorts]uint16 // the peer's source ports (handshake); 0 ends the list
	state     int
	remote    uint32          // the peer's id of this connection
	instance  uint64          // the peer's endpoint instance (changes when it restarts)
	wanted    bool            // the provider called Connect
	path      uint8           // the path of small messages (and its rail: the peer's primary)
	railDown  [MaxRails]int64 // multirail: until when a rail is left out (flow.go, "Rails")
	probeK    int             // probes sent since the peer last acknowledged something
	probeRail int             // the rail the probe in flight went on
	probeWide bool            // ... another than its packet's, after an unanswered probe
	probeSusp int             // the rail of the oldest packet missing when it went
	err       error           // why the peer is dead
	inBusy    bool
	deadAt    int64 // when it died: reclaim takes the longest dead first

	// This connection's secrets and parameters (peer.go: handshake).
	nonce    [16]byte // ours
	rnonce   [16]byte // the peer's
	cookie   [16]byte // initiator: the responder's cookie (zero: none yet)
	sess     uint64   // the tag packets to us carry (we chose it)
	rsess    uint64   // the tag packets to the peer carry (it chose it)
	firstPSN psn      // our flow's first PSN
	serial   uint32   // initiator: connections to this peer started
	rinst    uint64   // the instance and serial of the last request taken from
	rserial  uint32   // this peer (a replay of an older one is refused)
	mac      *macer   // per-packet authentication (auth.go), nil when off
	eagerMax uint64   // the largest eager message the peer takes
	ceil     int      // largest datagram both sides take (IP MTU - 28)
	pmtu     int      // datagram size now: ceil, or less after EMSGSIZE (flow.go: lowerMTU)
	room     int      // what a packet to the peer holds: pmtu less the auth trailer
	mtuAt    int64    // while pmtu < ceil: when the path's MTU is asked again

	connFirst, connLast int64 // first and latest connect request
	connTry             int

	// Send flow.
	nextPSN  psn   // PSN of the next packet built
	sentEnd  psn   // PSN after the last one sent: an ACK past it is forged
	queued   pktq  // built, not yet sent (over the window or connecting)
	unacked  pktq  // sent, waiting for an ACK
	sinceReq int   // packets sent since the last ACK request
	rtxAt    int64 // when unacked packets are sent again
	rtxWait  int64 // the current timeout (errchk backoff)
	progress int64 // when the peer last acknowledged something new (or said it is busy)
	srtt     int64 // smoothed round trip (ns), 0 before the first sample
	rttvar   int64 // its smoothed mean deviation
	rttPSN   psn   // the packet being timed, sent at rttAt (0: none)
	rttAt    int64
	rsend    []uint32 // rendezvous sends with granted bytes to send (sendOp indexes)
	held     bool     // queued packets wait for the next Poll (coalesce)
	sentGen  uint64   // e.polls when a Send last sent to this peer at once
	probing  bool     // the timer fired; its probe's answer is awaited
	probeEnd psn      // the last PSN sent before the probe
	probeAt  int64    // when the probe went
	busy     bool     // the peer refused our packets at its limits (fBusy): wait, do not resend

	// Receive flow.
	expect   psn // next PSN expected
	ackOwed  bool
	ackAt    int64 // when the owed ACK goes out
	acked    psn
	nakSent  bool
	ooo      int      // packets past the gap since the last NAK
	kept     [][]byte // packets past a gap (or refused), by PSN % len (a power of two >= Credits); nil before the first
	nKept    int
	rnr      bool  // we refused the packet at expect (admit.go): answers carry fBusy
	rnrLost  bool  // ... and could not keep it: the sender must send it again
	rnrAt    int64 // when admission is tried again
	rnrWait  int64
	heard    int64 // when a packet last came
	discAt   int64 // when a disconnect notice last answered its packets after it was declared dead
	fetching int   // fetches waiting for this peer's data
	watch    int   // the provider's waits on this peer (Watch)
	pingAt   int64

	// Eager reassembly (messages over one packet arrive in PSN order):
	// into asm, or, once a receive took the message early (offerEarly),
	// into that fetch's buffer.
	asm      []byte
	asmHdr   transport.Header
	asmOn    bool
	asmGot   uint64 // bytes of the message come so far
	asmFetch uint32 // the early fetch + 1, or 0
	asmDrop  bool   // the early fetch failed: the rest is dropped
}

// connID is the id this endpoint gave the connection: slot and a random
// half, new for every connection.
func (p *peer) connID() uint32 { return uint32(p.id)<<16 | p.idx }

// from reports whether a packet of the connection may come from a: the
// peer's address, from one of its source ports.
func (p *peer) from(a Addr) bool {
	if a.IP != p.dest.IP && !p.fromRail(a.IP) {
		return false
	}
	for _, port := range p.ports {
		if port == a.Port {
			return true
		}
		if port == 0 {
			break
		}
	}
	return false
}

// fromRail reports whether ip is one of p's further rails' addresses.
func (p *peer) fromRail(ip [4]byte) bool {
	for i := 1; i < p.dest.Rails(); i++ {
		if p.dest.railIP(i) == ip {
			return true
		}
	}
	return false
}

// newPeer gives epid a slot, within the limits: at most MaxPeers peers,
// and PeersPerHost of one address. At a limit a dead peer's slot is
// taken back first (reclaim); with none, the new one is refused.
func (e *Endpoint) newPeer(epid uint64) (*peer, error) {
	ip, port, ok := transport.EPIDAddr(epid)
	if !ok {
		return nil, fmt.Errorf("hfi: %#x has no network address: %w", epid, transport.ErrUnreachable)
	}
	if e.perHost[ip] >= e.cfg.PeersPerHost && !e.reclaim(ip, true) ||
		e.live >= e.cfg.MaxPeers && !e.reclaim(ip, false) {
		e.stats.PeerLimit++
		e.warnOnce(warnPeers, "hfi: peer table full (FI_PSM2_MAX_PEERS=%d, FI_PSM2_PEERS_PER_HOST=%d): connection with %d.%d.%d.%d:%d refused",
			e.cfg.MaxPeers, e.cfg.PeersPerHost, ip[0], ip[1], ip[2], ip[3], port)
		return nil, fmt.Errorf("hfi: too many peers: %w", transport.ErrUnreachable)
	}
	var idx uint32
	var gen uint16 = 1
	if n := len(e.slotFree); n > 0 {
		idx = e.slotFree[n-1]
		e.slotFree = e.slotFree[:n-1]
		gen = e.slotGens[idx] + 1
		if gen == 0 {
			gen = 1
		}
	} else {
		idx = uint32(len(e.peers))
		e.peers = append(e.peers, nil)
		e.slotGens = append(e.slotGens, 0)
	}
	e.slotGens[idx] = gen
	p := &peer{idx: idx, slotGen: gen, epid: epid, dest: NewDest(ip, port)}
	p.ports[0] = port
	p.path = e.pathFor(epid)
	e.peers[idx] = p
	e.byEPID[epid] = p
	e.perHost[ip]++
	e.live++
	e.fresh(p)
	return p, nil
}

// reclaim frees the slot of the peer dead the longest (of address ip if
// host): false if none is dead. Its operations failed when it died; a
// Conn or rendezvous value still naming it is refused from now on.
func (e *Endpoint) reclaim(ip [4]byte, host bool) bool {
	var old *peer
	for _, p := range e.peers {
		if p != nil && p.state == stDead && (!host || p.dest.IP == ip) && (old == nil || p.deadAt < old.deadAt) {
			old = p
		}
	}
	if old == nil {
		return false
	}
	e.freePeer(old)
	return true
}

// freePeer gives p's slot back.
func (e *Endpoint) freePeer(p *peer) {
	e.resetFlows(p)
	e.dropKept(p)
	e.peers[p.idx] = nil
	e.slotFree = append(e.slotFree, p.idx)
	delete(e.byEPID, p.epid)
	if e.perHost[p.dest.IP]--; e.perHost[p.dest.IP] <= 0 {
		delete(e.perHost, p.dest.IP)
	}
	e.live--
	e.stats.Reclaimed++
}

// fresh draws p's secrets for a new connection: its id, nonce, session
// tag and first PSN, so that nothing of an old connection, and nothing
// an off-path sender can guess, is taken for the new one.
func (e *Endpoint) fresh(p *peer) {
	var r [32]byte
	e.random(r[:])
	p.id = get16(r[:], 0) | 1
	copy(p.nonce[:], r[2:18])
	p.sess = get64(r[:], 18)
	p.firstPSN = psn(get32(r[:], 26) & psnMask)
	p.nextPSN, p.sentEnd = p.firstPSN, p.firstPSN
	p.cookie = [16]byte{}
	p.mac = nil
	p.ceil = min(e.bufSize, 1472) // until the handshake tells the peer's
	p.pmtu, p.mtuAt = p.ceil, 0
	p.eagerMax = minEagerMax // what every endpoint takes (admit.go)
	e.setRoom(p)
}

// pathFor picks the path of a peer's small messages (PSM2_PATH_SELECTION).
func (e *Endpoint) pathFor(epid uint64) uint8 {
	n := uint64(e.be.Paths())
	switch e.cfg.PathSel {
	case PathStaticDest:
		return uint8(uint64(transport.EPIDCtx(epid)) % n)
	case PathStaticBase:
		return 0
	default: // adaptive and static_src start at the own context
		return uint8(uint64(e.cfg.Ctx) % n)
	}
}

// Connect returns the connection to endpoint epid, starting its set-up if
// needed: the connect request goes out now, and sends queue until the
// reply comes (or fail after ConnTimeout). A peer that died (timed out,
// closed, restarted) is connected again.
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
	e.dial(p)
	p.wanted = true
	return e.connOf(p), nil
}

// dial starts connecting p if it is dead or has not started.
func (e *Endpoint) dial(p *peer) {
	if p.state == stDead {
		e.restart(p)
	}
	if p.state == stConnecting && p.connTry == 0 {
		now := e.clock.Now()
		p.connFirst = now
		p.serial++
		e.sendRequest(p, now)
		e.markBusy(p)
	}
}

// restart resets a dead peer's slot for a new connection.
func (e *Endpoint) restart(p *peer) {
	e.resetFlows(p)
	p.state, p.err, p.remote, p.instance = stConnecting, nil, 0, 0
	p.connTry, p.connFirst, p.connLast = 0, 0, 0
	p.ports = [maxSrcPorts]uint16{p.dest.Port}
	p.dest.setRails(nil)
	p.path, p.railDown, p.probeK = onRail(p.path, 0), [MaxRails]int64{}, 0
	e.fresh(p)
}

// resetFlows empties both flows of p.
func (e *Endpoint) resetFlows(p *peer) {
	for p.queued.len() > 0 {
		e.putBuf(p.queued.pop().b)
	}
	for p.unacked.len() > 0 {
		e.putBuf(p.unacked.pop().b)
	}
	p.sinceReq, p.rtxAt, p.rtxWait, p.nakSent, p.ackOwed = 0, 0, 0, false, false
	p.rsend = p.rsend[:0]
	p.rttAt, p.held, p.probing, p.busy = 0, false, false, false
	e.endAsm(p)
	p.fetching = 0
	e.dropKept(p)
	p.ooo, p.rnr, p.rnrLost = 0, false, false
}

// The handshake (docs/hfi.md, "Connections"). The initiator sends a
// connect request; the responder answers one without a valid cookie with
// a challenge, statelessly: the cookie is a MAC, under a secret of the
// responder's, of the request's source address and identity, valid for
// one to two cookieEpochs. The initiator sends the request again with
// the cookie; only then, having proven that the initiator receives at
// the address it claims (the request must come from its endpoint id's
// address) and knows the job key (hsProof), does the responder give it a
// slot, and its reply proves the same. No packet before that costs the
// responder memory, and none it sends is larger than what it received.

// onDisc: the peer closed its endpoint.
func (e *Endpoint) onDisc(p *peer, h *hdr) {
	if p.state != stUp || h.instance != p.instance {
		e.stats.Stale++
		return
	}
	e.failPeer(p, transport.ErrPeerDead, false)
}

// discEvery spaces the disconnect notices that answer the packets of a
// peer declared dead.
const discEvery = 10 * time.Millisecond

func (e *Endpoint) sendDisc(p *peer) {
	b := e.ctl[:typeHdrLen[tDisc]]
	putHdr(b, tDisc, 0, 0, 0, p.expect, p.remote, p.connID(), p.rsess)
	put64(b, 32, e.instance)
	e.xmit(p, p.path, b)
}

// failPeer declares p dead with err: everything pending on it fails.
// With closing (the endpoint closes) nothing is sent. A timeout counts as
// a peer declared dead (PeersDead), anything else as one that said it was
// gone (PeersLeft): a reader of the counters tells a failure from a
// normal close.
func (e *Endpoint) failPeer(p *peer, err error, closing bool) {
	if p.state == stDead {
		return
	}
	switch {
	case closing:
	case errors.Is(err, transport.ErrTimeout):
		e.stats.PeersDead++
	default:
		e.stats.PeersLeft++
	}
	p.state, p.err, p.deadAt = stDead, err, e.clock.Now()
	for i := range uint32(e.sends.Len()) {
		if e.sends.Live(i) && e.sends.At(i).p == p {
			e.failSend(i, err)
		}
	}
	for i := range uint32(e.fetches.Len()) {
		if e.fetches.Live(i) && e.fetches.At(i).p == p {
			e.failFetch(i, err)
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
