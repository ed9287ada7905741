package hfi

// Over 600 lines: the eager and rendezvous protocols in both directions; the
// sender's and the receiver's handlers check what the other side sent, and
// share the op tables.

import (
	"errors"

	"github.com/gopsm2/libfabric-psm2/internal/umem"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// The message protocols, after PSM2's: a message of up to RndvThreshold
// bytes goes eagerly, its first packet (tEager) carrying the header and
// the rest in tCont packets; a longer one sends a request (tRTS), the
// receiver grants windows of it (tCTS: offset, length, total wanted) as
// the provider fetches it, and the sender answers each grant with tData
// packets. Everything travels in the connection's reliable flow, so the
// receiver sees one sender's messages in order.

// sendOp is a send waiting for its completion: a rendezvous (until its
// last granted byte is acknowledged) or an eager send queued while the
// connection was being set up.
type sendOp struct {
	p        *peer
	cookie   uint64
	iov      [][]byte
	iovArr   [4][]byte
	total    uint64 // message length
	want     uint64 // bytes the receiver takes (from the first grant)
	sent     uint64 // bytes built into packets
	grantEnd uint64 // bytes granted so far
	granted  bool
	owned    []byte // the data, for a SendCopy rendezvous
	fid      uint64 // the receiver's fetch id
	psize    uint64 // payload of each data packet (dataSize)
}

// fetchOp is a rendezvous receive in progress.
type fetchOp struct {
	p       *peer
	cookie  uint64
	sendID  uint64
	dst     []byte
	want    uint64
	got     uint64
	granted uint64
	early   bool // an eager message being reassembled (offerEarly)
}

func (e *Endpoint) newSend() uint32 { return e.sends.Take() }

func (e *Endpoint) freeSend(i uint32) { e.sends.Free(i) }

func (e *Endpoint) newFetch() uint32 { return e.fetches.Take() }

func (e *Endpoint) freeFetch(i uint32) { e.fetches.Free(i) }

// completeSend reports send i done.
func (e *Endpoint) completeSend(i uint32) {
	if !e.sends.Live(i) {
		return
	}
	op := e.sends.At(i)
	cookie := op.cookie
	e.freeSend(i)
	e.h.SendDone(cookie, nil)
}

// failSend fails send i with err at the next Poll's end.
func (e *Endpoint) failSend(i uint32, err error) {
	op := e.sends.At(i)
	e.failed = append(e.failed, failure{cookie: op.cookie, err: err})
	e.dropRsend(op.p, i)
	e.freeSend(i)
}

// completeFetch reports fetch i done, all it wanted written.
func (e *Endpoint) completeFetch(i uint32) {
	op := e.fetches.At(i)
	cookie, n := op.cookie, int(op.want)
	op.p.fetching--
	e.freeFetch(i)
	e.h.FetchDone(cookie, n, nil)
}

func (e *Endpoint) failFetch(i uint32, err error) {
	op := e.fetches.At(i)
	if p := op.p; op.early && p.asmFetch == i+1 {
		p.asmFetch, p.asmDrop = 0, true
	}
	e.failed = append(e.failed, failure{cookie: op.cookie, fetch: true, err: err})
	if op.p.fetching > 0 {
		op.p.fetching--
	}
	e.freeFetch(i)
}

func (e *Endpoint) dropRsend(p *peer, i uint32) {
	for k, v := range p.rsend {
		if v == i {
			p.rsend = append(p.rsend[:k], p.rsend[k+1:]...)
			return
		}
	}
}

// maxQueued bounds the packets waiting for the window, per peer: past it
// Send says ErrAgain. Credits beyond DefaultCredits (a large receive
// buffer: flowDefaults) add in-flight packets, not queued ones: a peer's
// packets kept for sending stay under 1.5 MB at the MTU of 1500 either
// way.
func (e *Endpoint) maxQueued() int { return 4*min(e.cfg.Credits, DefaultCredits) + 64 }

// Errors of this wire.
var (
	ErrLength = errors.New("hfi: header length differs from the payload's")
)

// Send sends a message (transport.Endpoint).
func (e *Endpoint) Send(c transport.Conn, h *transport.Header, iov [][]byte, cookie uint64, flags uint32) (bool, error) {
	if e.closed {
		return false, transport.ErrClosed
	}
	p := e.conn(c)
	if p == nil {
		return false, ErrBadConn
	}
	if p.state == stDead {
		// What was pending on the old connection failed with it; a new
		// send starts a new one (the peer came back, or the network
		// did).
		e.dial(p)
	}
	n := uint64(0)
	for _, b := range iov {
		n += uint64(len(b))
	}
	if n != h.Len {
		return false, ErrLength
	}
	if p.queued.len() >= e.maxQueued() {
		return false, transport.ErrAgain
	}
	var done bool
	var err error
	limit := uint64(e.cfg.RndvThreshold)
	if p.unacked.len() == 0 && p.queued.len() == 0 {
		limit = uint64(e.cfg.EagerIdle) // nothing in flight (DefaultEagerIdle)
	}
	if n > min(limit, p.eagerMax) {
		if done, err = e.sendRndv(p, h, iov, cookie, flags); err == nil {
			e.stats.RndvMsgs++
			e.stats.RndvBytes += n
		}
	} else {
		if done, err = e.sendEager(p, h, iov, n, cookie); err == nil {
			e.stats.EagerMsgs++
			e.stats.EagerBytes += n
		}
	}
	if (err == nil && done || err == transport.ErrFault) && (p.held || p.queued.len() > 0) && e.cfg.Stalled != nil {
		e.cfg.Stalled()
	}
	return done, err
}

// Unsent reports whether packets wait for a later Poll to send them: held
// by a burst, or queued (past the flow window, where an eager send that
// completed once copied leaves the rest of its packets, or to a peer being
// connected). Stalled is called only for sends reported complete: the
// application of one not yet complete polls for it, and that moves it.
func (e *Endpoint) Unsent() bool {
	for _, p := range e.busy {
		if p.held || p.queued.len() > 0 {
			return true
		}
	}
	return false
}

// sendEager copies the message into packets and queues them. It is done
// at once on a connection that is up; on one being set up it completes
// when its last packet is acknowledged.
//
// The full packets of a message in one buffer, on a connection that is
// up and not authenticated, go out first from the application's buffer
// (txPkt.src: a packet's header and the rest of it are two iovecs of the
// send), and are copied into their own buffers (for sending again) only
// after: the copy no longer delays the first send, and it overlaps the
// receiver's work. fi_pingpong 256 KiB across two namespace hosts: the
// copy took 8-10 us before the first sendmsg (perf trace).
func (e *Endpoint) sendEager(p *peer, h *transport.Header, iov [][]byte, n, cookie uint64) (bool, error) {
	mark := p.queued.len()
	first0 := p.nextPSN
	off := uint64(0)
	first := true
	size := eagerSize(n, uint64(p.room))
	direct := len(iov) == 1 && p.state == stUp && p.mac == nil
	npk := 0
	for first || off < n {
		var b []byte
		var at int
		if first {
			b = e.newPkt(p, tEager)
			put64(b, 32, h.Tag)
			put64(b, 40, h.Data)
			put32(b, 48, h.Flags)
			put32(b, 52, 0)
			put64(b, 56, n)
			at = 64
		} else {
			b = e.newPkt(p, tCont)
			put64(b, 32, off)
			at = 40
		}
		k := min(size-uint64(at), n-off)
		npk++
		if direct && off+k < n { // a full packet, not the last
			p.queued.push(txPkt{b: b[:at+int(k)], src: iov[0][off : off+k], srcAt: at})
			off += k
			first = false
			continue
		}
		if err := gather(b[at:at+int(k)], iov, off); err != nil {
			e.putBuf(b)
			for p.queued.len() > mark {
				e.putBuf(p.queued.popBack().b)
			}
			p.nextPSN = first0
			return false, err
		}
		end := at + int(k)
		if !first && off+k == n {
			end = int(size) // the last packet, padded (eagerSize)
			clear(b[at+int(k) : end])
		}
		p.queued.push(txPkt{b: b[:end]})
		off += k
		first = false
	}
	if p.state == stUp {
		if !e.hold(p) {
			e.pump(p)
		}
		if direct && npk > 1 {
			e.stats.EagerDirect++
			return true, e.fill(p, first0, npk)
		}
		return true, nil
	}
	i := e.newSend()
	op := e.sends.At(i)
	op.p, op.cookie = p, cookie
	x := p.queued.at(p.queued.len() - 1)
	x.op, x.eager = i+1, true
	return false, nil
}

// fill copies into their own buffers the payloads that the npk packets
// to p from PSN first on still take from the application's buffer
// (txPkt.src), sent or not. They are among p's unacknowledged and queued
// packets, which have consecutive PSNs (pump may have queued rendezvous
// data after them). If that buffer cannot be read (a send of it failed
// too), the packets from the first unreadable one on go as they are,
// zeroed, with fFault, and the receiver drops the message: ErrFault.
func (e *Endpoint) fill(p *peer, first psn, npk int) error {
	var err error
	nu, nq := p.unacked.len(), p.queued.len()
	j0 := 0
	if nu > 0 {
		j0 = int(pktPSN(p.unacked.at(0).b).to(first))
	} else if nq > 0 {
		j0 = int(pktPSN(p.queued.at(0).b).to(first))
	}
	for j := j0; j < j0+npk && j < nu+nq; j++ {
		var x *txPkt
		if j < nu {
			x = p.unacked.at(j)
		} else {
			x = p.queued.at(j - nu)
		}
		switch {
		case x.src == nil:
		case err != nil: // past the fault: the receiver drops the message
			faultPkt(x)
		case !ownPkt(x):
			err = transport.ErrFault
		}
	}
	return err
}

// eagerSize is the datagram size of every packet of an eager message of n
// bytes, at most max: the fewest packets, sized alike. A burst of sends
// leaves as runs of equal-sized packets, one UDP_SEGMENT sendmsg (and one
// skb through the kernel on each side) per run, so packets of the most
// the datagram holds followed by a short last one made every message of a
// stream of 2 KiB messages its own run. Alike, a stream of equal
// messages is one run, up to 64 packets: the last packet of a message is
// padded (by fewer bytes than the message has packets) to the size of the
// others, and the receiver takes only the bytes the message lacks.
func eagerSize(n, max uint64) uint64 {
	hdr0, hdr := uint64(typeHdrLen[tEager]), uint64(typeHdrLen[tCont])
	if n+hdr0 <= max {
		return n + hdr0
	}
	k := (n + hdr0 - hdr + max - hdr - 1) / (max - hdr) // packets
	total := n + hdr0 + (k-1)*hdr
	// A multiple of 8, so that every payload starts at a multiple of 8
	// in the message (the headers are too), as dataSize does.
	return min(((total+k-1)/k+7)&^7, max)
}

// dataSize is the payload of every rendezvous data packet of a message
// of n bytes in datagrams of at most max: the fewest packets, sized alike,
// as eagerSize does for eager messages, so that the data of a stream of
// equal messages leaves in runs of equal packets (one UDP_SEGMENT send
// each) instead of two runs a message, the second one packet of the
// message's last few bytes (65536 = 46 x 1424 + 32). The message's last
// packet is padded; the receiver drops what is past the message. A grant
// that ends inside a message still cuts a packet short there.
func dataSize(n, limit uint64) uint64 {
	room := limit - uint64(typeHdrLen[tData])
	if n <= room {
		return max(n, 1)
	}
	k := (n + room - 1) / room
	// A multiple of 16 (the room itself is, at the default MTU): packets
	// at odd offsets of the buffers made both copies misaligned and
	// 1 MiB ping-pongs 5% slower.
	return min(((n+k-1)/k+15)&^15, room)
}

// sendRndv queues the request to send; the data follows the grants.
func (e *Endpoint) sendRndv(p *peer, h *transport.Header, iov [][]byte, cookie uint64, flags uint32) (bool, error) {
	i := e.newSend()
	op := e.sends.At(i)
	op.p, op.cookie, op.total = p, cookie, h.Len
	if flags&transport.SendCopy != 0 {
		op.owned = make([]byte, h.Len)
		if err := gather(op.owned, iov, 0); err != nil {
			e.freeSend(i)
			return false, err
		}
		op.iovArr[0] = op.owned
		op.iov = op.iovArr[:1]
	} else if len(iov) <= len(op.iovArr) {
		op.iov = op.iovArr[:copy(op.iovArr[:], iov)]
	} else {
		op.iov = append([][]byte(nil), iov...)
	}
	b := e.newPkt(p, tRTS)
	put64(b, 32, h.Tag)
	put64(b, 40, h.Data)
	put32(b, 48, h.Flags)
	put32(b, 52, 0)
	put64(b, 56, h.Len)
	put64(b, 64, e.sends.ID(i))
	p.queued.push(txPkt{b: b[:typeHdrLen[tRTS]]})
	if p.state != stUp || !e.hold(p) {
		e.pump(p)
	}
	return false, nil
}

// buildData builds the next packet of the first rendezvous send of p
// with granted bytes left; false if there is none.
func (e *Endpoint) buildData(p *peer) bool {
	for len(p.rsend) > 0 {
		i := p.rsend[0]
		op := e.sends.At(i)
		if !e.sends.Live(i) || op.sent >= op.grantEnd {
			p.rsend = p.rsend[:copy(p.rsend, p.rsend[1:])]
			continue
		}
		if 48+int(op.psize) > p.room {
			op.psize = dataSize(op.want-op.sent, uint64(p.room)) // the path's MTU fell
		}
		b := e.newPkt(p, tData)
		put64(b, 32, op.fetchID())
		put64(b, 40, op.sent)
		k := min(op.psize, op.grantEnd-op.sent)
		if e.be.Paths() > 1 && e.cfg.PathSel == PathAdaptive {
			// Dispersive routing: each window of a large message on the
			// next path.
			w := op.sent / uint64(e.cfg.RndvWindow)
			setPath(b, onRail(uint8((w+uint64(p.path&pathMask))%uint64(e.be.Paths())), railOf(p.path)))
		}
		if p.dest.Rails() > 1 {
			if r := e.stripe(p, op.sent/railStripe); r != railOf(p.path) {
				setPath(b, onRail(b[6], r))
				e.stats.RailPkts++
			}
		}
		end := 48 + k
		last := op.sent+k == op.want && k < op.psize // padded (dataSize)
		var src []byte
		if p.mac == nil && !last {
			src = iovPart(op.iov, op.sent, k)
		}
		if src == nil {
			if err := gather(b[48:48+k], op.iov, op.sent); err != nil {
				// The sender's buffer is bad: tell the receiver, fail ours.
				setFlags(b, fFault)
				p.queued.push(txPkt{b: b[:48]})
				op.sent = op.want
				e.failSend(i, err)
				return true
			}
			if last {
				end = 48 + op.psize
				clear(b[48+k : end])
			}
		}
		op.sent += k
		x := txPkt{b: b[:end]}
		if src != nil {
			x.src, x.srcAt, x.sop = src, 48, i+1
		}
		if op.sent >= op.grantEnd {
			p.rsend = p.rsend[:copy(p.rsend, p.rsend[1:])]
			if op.sent >= op.want {
				x.op = i + 1
			}
		}
		p.queued.push(x)
		return true
	}
	return false
}

// iovPart is the n bytes of iov at offset off, if one element holds them
// all; else nil.
func iovPart(iov [][]byte, off, n uint64) []byte {
	for _, b := range iov {
		if off < uint64(len(b)) {
			if off+n > uint64(len(b)) {
				return nil
			}
			return b[off : off+n]
		}
		off -= uint64(len(b))
	}
	return nil
}

// fetchID of a send is the receiver's id, kept in the send after the
// first grant.
func (op *sendOp) fetchID() uint64 { return op.fid }

// gather copies bytes of iov from offset off into dst, guarded: a buffer
// the kernel refuses gives transport.ErrFault.
func gather(dst []byte, iov [][]byte, off uint64) error {
	for _, b := range iov {
		if len(dst) == 0 {
			return nil
		}
		if off >= uint64(len(b)) {
			off -= uint64(len(b))
			continue
		}
		n, bad, _ := umem.Copy(dst, b[off:])
		if bad != umem.None {
			return transport.ErrFault
		}
		dst = dst[n:]
		off = 0
	}
	return nil
}

// Rndv values of this wire: W[0] peer index, W[1] connection id, W[2]
// message length, W[3] the sender's send id, W[5] the endpoint's token.

func (e *Endpoint) rndvPeer(r *transport.Rndv) *peer {
	if r.W[5] != e.token || r.W[0] >= uint64(len(e.peers)) {
		return nil
	}
	p := e.peers[r.W[0]]
	if p == nil || uint64(p.connID()) != r.W[1] {
		return nil
	}
	return p
}

// Fetch starts taking the data of rendezvous message r into dst.
func (e *Endpoint) Fetch(r *transport.Rndv, dst []byte, cookie uint64) (bool, int, error) {
	if e.closed {
		return false, 0, transport.ErrClosed
	}
	p := e.rndvPeer(r)
	if p == nil {
		return false, 0, ErrBadConn
	}
	if p.state != stUp {
		return false, 0, p.deadErr()
	}
	if r.W[4] == rndvEarly {
		return e.fetchEarly(p, dst, cookie)
	}
	want := min(uint64(len(dst)), r.W[2])
	if want == 0 {
		e.grant(p, r.W[3], 0, 0, 0, 0)
		e.pumpSoon(p)
		return true, 0, nil
	}
	i := e.newFetch()
	op := e.fetches.At(i)
	op.p, op.cookie, op.sendID, op.dst, op.want = p, cookie, r.W[3], dst[:want], want
	op.granted = min(want, 2*uint64(e.cfg.RndvWindow))
	p.fetching++
	p.heard = e.clock.Now()
	e.grant(p, op.sendID, e.fetches.ID(i), 0, op.granted, want)
	e.pumpSoon(p)
	return false, 0, nil
}

// earlyMin: eager messages of at least this many bytes (several packets)
// are offered to the handler at their first packet (offerEarly).
const earlyMin = 16 << 10

// rndvEarly in Rndv.W[4] marks a message offered early (W[4] is 0 for a
// request to send).
const rndvEarly = 1

// offerEarly offers the eager message p is reassembling, at its first
// packet, as a rendezvous message marked Early (transport.Incoming): a
// receive posted for it fetches it during the Deliver call, and its
// packets then land in the receive's buffer as they come (landEarly), one
// copy where reassembly and delivery made two, the second after the last
// packet. fi_pingpong 256 KiB across two namespace hosts: the
// delivery's copy of the whole message came between the last packet
// and the answer (perf trace). Declined, the message is reassembled and
// delivered whole as before.
func (e *Endpoint) offerEarly(p *peer) {
	e.inHdr = p.asmHdr
	e.inMsg = transport.Incoming{Src: e.srcOf(p), SrcEPID: p.epid, IsRndv: true, Early: true}
	e.inMsg.Rndv = transport.Rndv{W: [6]uint64{uint64(p.idx), uint64(p.connID()), p.asmHdr.Len, 0, rndvEarly, e.token}, Wire: transport.WireHfi}
	e.offering = p
	e.h.Deliver(&e.inHdr, &e.inMsg)
	e.offering = nil
}

// fetchEarly is Fetch of a message offered early: only during its offer.
// What came so far is copied into dst; landEarly copies the rest.
func (e *Endpoint) fetchEarly(p *peer, dst []byte, cookie uint64) (bool, int, error) {
	if e.offering != p || !p.asmOn || p.asmFetch != 0 {
		return false, 0, transport.ErrStaleConn // not offered now
	}
	want := min(uint64(len(dst)), p.asmHdr.Len)
	i := e.newFetch()
	op := e.fetches.At(i)
	op.p, op.cookie, op.sendID, op.dst, op.want = p, cookie, 0, dst[:want], want
	op.early, op.got, op.granted = true, 0, want
	p.fetching++
	p.heard = e.clock.Now()
	p.asmFetch = i + 1
	e.landEarly(p, 0, p.asm)
	return false, 0, nil
}

// landEarly copies pl, the bytes at off of the message p reassembles,
// into its early fetch's buffer (as far as the buffer goes: a shorter
// receive truncates). A buffer the kernel refuses fails the fetch, and
// the rest of the message is dropped.
func (e *Endpoint) landEarly(p *peer, off uint64, pl []byte) {
	i := p.asmFetch - 1
	op := e.fetches.At(i)
	if off >= op.want || len(pl) == 0 {
		return
	}
	k := min(uint64(len(pl)), op.want-off)
	if _, bad, _ := umem.Copy(op.dst[off:off+k], pl[:k]); bad != umem.None {
		e.failFetch(i, transport.ErrFault)
	}
}

// Discard drops rendezvous message r: the sender completes.
func (e *Endpoint) Discard(r *transport.Rndv) error {
	if e.closed {
		return transport.ErrClosed
	}
	p := e.rndvPeer(r)
	if p == nil {
		return ErrBadConn
	}
	if r.W[4] == rndvEarly {
		return nil // offered early: nothing is kept for it (offerEarly)
	}
	if p.state == stUp {
		e.grant(p, r.W[3], 0, 0, 0, 0)
		e.pumpSoon(p)
	}
	return nil
}

// grant queues a CTS; the caller pumps.
func (e *Endpoint) grant(p *peer, sendID, fetchID, off, n, total uint64) {
	b := e.newPkt(p, tCTS)
	put64(b, 32, sendID)
	put64(b, 40, fetchID)
	put64(b, 48, off)
	put64(b, 56, n)
	put64(b, 64, total)
	p.queued.push(txPkt{b: b[:typeHdrLen[tCTS]]})
}

// pumpSoon pumps p now, or, while Poll takes arrived packets, at its end
// (service, as a held burst): the first grants of the rendezvous messages
// a batch of packets brings leave together, in one sendmsg carrying the
// ACK the poll owes, instead of a sendmsg (and a trip through the peer's
// network stack) each. A stream of 64 KiB messages across two namespace
// hosts, 64 in flight, went from 40.6 k to 50.2 k a second. Not for a
// grant that refills a message's window, nor for the data a grant asks
// for: deferred to the Poll's end they cost 1 MiB ping-pongs 3-8%.
func (e *Endpoint) pumpSoon(p *peer) {
	if !e.inInput {
		e.pump(p)
		return
	}
	p.held = true
	e.markBusy(p)
}

// input processes one packet that arrived from from; it returns the
// events delivered. A packet of a connection is taken only if it names
// the connection by both sides' ids and the session tag we gave the peer,
// comes from the peer's address and ports, and (with authentication)
// carries a valid MAC; its ACK must not be past what we sent.
func (e *Endpoint) input(b []byte, from Addr) int {
	if len(b) < hdrLen || get16(b, 0) != pktMagic || b[2] != pktVersion {
		e.stats.Malformed++
		return 0
	}
	if isHandshake(b[3]) {
		var h hdr
		if !decode(b, &h) {
			e.stats.Malformed++
			return 0
		}
		e.stats.Received++
		e.handshake(b, &h, from)
		return 0
	}
	dst := get32(b, 16)
	idx := dst & 0xffff
	if idx >= uint32(len(e.peers)) {
		e.stats.Stale++
		return 0
	}
	p := e.peers[idx]
	if p == nil || p.state == stConnecting || p.connID() != dst || p.remote != get32(b, 20) {
		e.stats.Stale++
		return 0
	}
	if get64(b, 24) != p.sess || !p.from(from) {
		e.stats.Forged++
		return 0
	}
	if p.mac != nil {
		var ok bool
		if b, ok = p.mac.open(b); !ok {
			e.stats.BadMAC++
			return 0
		}
	}
	var h hdr
	if !decode(b, &h) {
		e.stats.Malformed++
		return 0
	}
	e.stats.Received++
	if p.state != stUp {
		e.stats.Stale++
		if h.typ != tDisc && e.now-p.discAt >= int64(discEvery) {
			// A peer this end declared dead (silent for ConnTimeout) is
			// alive and still sending on the connection: tell it, so that
			// it fails its side at once instead of sending into nothing.
			p.discAt = e.now
			e.sendDisc(p)
		}
		return 0
	}
	if !p.ackOK(h.ack) {
		e.stats.BadAck++
		return 0
	}
	p.heard = e.now
	switch h.typ {
	case tAck, tNak:
		busy := h.flags&fBusy != 0
		resume := p.busy && !busy
		e.onAck(p, h.ack)
		switch {
		case busy:
			e.onBusy(p)
		case h.typ == tNak:
			e.onNak(p, h.ack, &h.sack)
		}
		if resume {
			e.onResume(p)
		} else if !busy && h.flags&fProbe != 0 {
			e.onProbeAnswer(p, h.psn, railOf(h.path), h.flags&fFailover != 0)
		}
		return 0
	case tDisc:
		e.onDisc(p, &h)
		return 0
	}
	e.onAck(p, h.ack)
	n := 0
	if e.onSeq(p, &h, b) == seqNext {
		if e.admit(p, &h) {
			n = e.next(p, &h)
		} else {
			e.refuse(p, b, false)
		}
	}
	if h.flags&fProbe != 0 && p.state == stUp {
		e.answerProbe(p, h.psn, railOf(h.path), h.flags&fFailover != 0)
	}
	return n
}

// process acts on sequenced packet h from p, in PSN order; it returns the
// events delivered.
func (e *Endpoint) process(p *peer, h *hdr) int {
	n := 0
	urgent := true
	switch h.typ {
	case tEager:
		if h.flags&fFault != 0 { // the sender could not read it (fill)
			e.endAsm(p)
			break
		}
		if h.msgLen > e.eagerMax {
			e.stats.Malformed++ // longer than we said we take
			break
		}
		if uint64(len(h.payload)) == h.msgLen {
			n = e.deliver(p, h, h.payload)
			urgent = h.flags&fAckLazy == 0 // else the answer to it may carry the ACK
		} else {
			// Reassembly reserves the length (admit checked the budget)
			// but grows with what arrives.
			e.startAsm(p, h.msgLen)
			p.asmHdr = transport.Header{Tag: h.tag, Data: h.data, Flags: h.hflags, Len: h.msgLen}
			p.asm = append(p.asm, h.payload...)
			p.asmGot = uint64(len(h.payload))
			if h.msgLen >= earlyMin {
				e.offerEarly(p)
			}
		}
	case tCont:
		if h.flags&fFault != 0 {
			e.abortAsm(p, transport.ErrPeerFault)
			break
		}
		got := p.asmGot
		if !p.asmOn || h.off != got {
			e.stats.Malformed++
			e.abortAsm(p, transport.ErrPeerFault)
			break
		}
		pl := h.payload
		if rest := p.asmHdr.Len - got; uint64(len(pl)) > rest {
			pl = pl[:rest] // the last packet, padded (eagerSize)
		}
		switch {
		case p.asmFetch != 0:
			e.landEarly(p, got, pl)
		case !p.asmDrop:
			p.asm = append(p.asm, pl...)
		}
		p.asmGot += uint64(len(pl))
		if p.asmGot == p.asmHdr.Len {
			switch {
			case p.asmFetch != 0:
				i := p.asmFetch - 1
				p.asmFetch = 0
				e.stats.EagerEarly++
				e.completeFetch(i)
				n = 1
			case !p.asmDrop:
				e.inHdr = p.asmHdr
				n = e.deliverIn(p, p.asm)
			}
			urgent = h.flags&fAckLazy == 0
			e.endAsm(p)
		}
	case tRTS:
		e.inHdr = transport.Header{Tag: h.tag, Data: h.data, Flags: h.hflags, Len: h.msgLen}
		e.inMsg = transport.Incoming{Src: e.srcOf(p), SrcEPID: p.epid, IsRndv: true}
		e.inMsg.Rndv = transport.Rndv{W: [6]uint64{uint64(p.idx), uint64(p.connID()), h.msgLen, h.sendID, 0, e.token}, Wire: transport.WireHfi}
		e.h.Deliver(&e.inHdr, &e.inMsg)
		n = 1
		urgent = false
	case tCTS:
		n = e.onGrant(p, h)
	case tData:
		n = e.onData(p, h)
	case tPing:
	}
	if h.flags&fAckReq != 0 {
		e.owe(p, urgent)
	}
	return n
}

func (e *Endpoint) srcOf(p *peer) transport.Conn {
	if p.wanted {
		return e.connOf(p)
	}
	return 0
}

func (e *Endpoint) deliver(p *peer, h *hdr, payload []byte) int {
	e.inHdr = transport.Header{Tag: h.tag, Data: h.data, Flags: h.hflags, Len: h.msgLen}
	return e.deliverIn(p, payload)
}

// deliverIn hands e.inHdr and payload to the handler.
func (e *Endpoint) deliverIn(p *peer, payload []byte) int {
	e.inMsg = transport.Incoming{Src: e.srcOf(p), SrcEPID: p.epid, Payload: payload}
	e.h.Deliver(&e.inHdr, &e.inMsg)
	return 1
}

// onGrant: the receiver wants [off, off+n) of send h.sendID (of total
// bytes in all).
func (e *Endpoint) onGrant(p *peer, h *hdr) int {
	i, ok := e.sends.Lookup(h.sendID)
	if !ok {
		e.stats.Stale++
		return 0
	}
	op := e.sends.At(i)
	if op.p != p || h.total > op.total {
		e.stats.Stale++
		return 0
	}
	if !op.granted {
		op.granted, op.want, op.fid = true, h.total, h.fetchID
		op.psize = dataSize(op.want, uint64(p.room))
	}
	if op.want == 0 {
		e.completeSend(i)
		return 1
	}
	if end := h.off + h.n; end > op.grantEnd {
		op.grantEnd = end
		e.dropRsend(p, i)
		p.rsend = append(p.rsend, i)
		e.pump(p)
	}
	return 0
}

// onData takes rendezvous data for fetch h.fetchID.
func (e *Endpoint) onData(p *peer, h *hdr) int {
	i, ok := e.fetches.Lookup(h.fetchID)
	if !ok {
		return 0 // a fetch that failed already
	}
	op := e.fetches.At(i)
	if op.p != p {
		return 0 // a fetch that failed already
	}
	if h.flags&fFault != 0 {
		e.failFetch(i, transport.ErrPeerFault)
		return 0
	}
	if h.off != op.got {
		e.stats.Malformed++
		return 0
	}
	if rest := op.want - op.got; uint64(len(h.payload)) > rest {
		h.payload = h.payload[:rest] // the message's last packet, padded (dataSize)
	}
	if _, bad, _ := umem.Copy(op.dst[op.got:], h.payload); bad != umem.None && len(h.payload) > 0 {
		e.failFetch(i, transport.ErrFault)
		return 0
	}
	op.got += uint64(len(h.payload))
	if op.got == op.want {
		e.owe(p, true)
		e.completeFetch(i)
		return 1
	}
	if op.granted < op.want && op.got+uint64(e.cfg.RndvWindow) >= op.granted {
		k := min(uint64(e.cfg.RndvWindow), op.want-op.granted)
		e.grant(p, op.sendID, e.fetches.ID(i), op.granted, k, op.want)
		e.pump(p) // at once, not at the Poll's end: the sender's pipeline waits for this window
		op.granted += k
	}
	return 0
}
