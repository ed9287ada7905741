package hfi

import (
	"crypto/hmac"
	"slices"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// The handshake that opens a connection (docs/hfi.md, "Connections"): the
// request, the stateless challenge that proves the initiator's address,
// and the reply; a request and a reply carry the sender's session, first
// PSN, packet and eager sizes, source ports and rail addresses, under a
// proof of the job key. up makes the peer usable once it is proven.

// sendRequest sends p's connect request (with the cookie, once one came).
func (e *Endpoint) sendRequest(p *peer, now int64) {
	b := e.ctl[:hsLen]
	var f uint16
	if e.cfg.Auth {
		f = fAuth
	}
	putHdr(b, tConnReq, f, 0, 0, 0, 0, p.connID(), e.epid)
	e.putHandshake(b, p)
	copy(b[hsNonce:], p.nonce[:])
	copy(b[hsCookie:], p.cookie[:])
	put32(b, hsSerial, p.serial)
	e.prove(b, proofReq)
	e.sendTo(p.dest, b)
	p.connTry++
	p.connLast = now
}

// sendReply sends p's connect reply: what the peer needs of us, and its
// nonce back.
func (e *Endpoint) sendReply(p *peer) {
	b := e.ctl[:hsLen]
	var f uint16
	if p.mac != nil {
		f = fAuth
	}
	putHdr(b, tConnRep, f, 0, 0, 0, p.remote, p.connID(), e.epid)
	e.putHandshake(b, p)
	copy(b[hsNonce:], p.rnonce[:])
	copy(b[hsCookie:], p.nonce[:])
	put32(b, hsSerial, p.rserial)
	e.prove(b, proofRep)
	e.sendTo(p.dest, b)
}

// putHandshake writes the fields a request and a reply share.
func (e *Endpoint) putHandshake(b []byte, p *peer) {
	clear(b[hdrLen:])
	put64(b, hsDstEPID, p.epid)
	put64(b, hsInstance, e.instance)
	put64(b, hsSession, p.sess)
	put32(b, hsPSN, uint32(p.firstPSN))
	put16(b, hsMTU, uint16(e.bufSize+28))
	put32(b, hsEagerMax, uint32(e.eagerMax))
	for i, port := range e.be.SrcPorts() {
		if i < maxSrcPorts {
			put16(b, hsPorts+2*i, port)
		}
	}
	for i, ip := range e.cfg.Rails {
		copy(b[hsRails+4*i:], ip[:])
	}
	put32(b, hsKernel, e.cfg.KernelID)
}

// peerRails are the further rails of handshake packet b's sender that
// this endpoint uses: as many as both have, each a unicast address other
// than the sender's own (a rail a peer names wrongly only loses the
// packets sent on it, which the flow sends again on the primary: flow.go,
// "Rails").
func (e *Endpoint) peerRails(b []byte, own [4]byte) [][4]byte {
	var out [][4]byte
	for i := 0; i < MaxRails-1 && len(out) < len(e.cfg.Rails); i++ {
		ip := [4]byte(b[hsRails+4*i : hsRails+4*i+4])
		if ip == ([4]byte{}) {
			break
		}
		if ip == own || ip[0] >= 224 || ip[0] == 0 || ip[0] == 127 && own[0] != 127 || slices.Contains(out, ip) {
			return nil // not a list of rails: none
		}
		out = append(out, ip)
	}
	return out
}

// sendTo sends a handshake packet (never authenticated) to d on path 0,
// whose port is in our endpoint id.
func (e *Endpoint) sendTo(d *Dest, b []byte) {
	if err := e.be.Send(0, d, b); err != nil {
		e.stats.SendErrors++
	}
	e.stats.Sent++
}

// handshake takes a connect request, challenge or reply from from.
func (e *Endpoint) handshake(b []byte, h *hdr, from Addr) {
	src := h.word
	ip, port, ok := transport.EPIDAddr(src)
	if !ok || from != (Addr{ip, port}) {
		// The sender is not where its id says: a forged source (the
		// answer would go to someone else), or a NAT we cannot work
		// through. Nothing is answered.
		e.stats.Forged++
		return
	}
	switch h.typ {
	case tConnReq:
		e.onConnReq(b, h, from)
	case tChallenge:
		e.onChallenge(b, h)
	case tConnRep:
		e.onConnRep(b, h)
	}
}

// onConnReq answers a connect request from from.
func (e *Endpoint) onConnReq(b []byte, h *hdr, from Addr) {
	if get64(b, hsDstEPID) != e.epid {
		e.stats.WrongJob++
		return
	}
	if !e.cookieOK(b, from) {
		e.challenge(b, h, from)
		return
	}
	if !e.proven(b, proofReq) {
		e.stats.WrongJob++
		return
	}
	inst, serial := get64(b, hsInstance), get32(b, hsSerial)
	p := e.byEPID[h.word]
	if p != nil && inst == p.rinst && int32(serial-p.rserial) < 0 {
		e.stats.Stale++ // an older connection's request (a replay): the newer stands
		return
	}
	if p == nil {
		var err error
		if p, err = e.newPeer(h.word); err != nil {
			return
		}
	}
	switch {
	case p.state == stUp && p.instance == inst && p.remote == h.srcConn:
		// A repeated request (our reply was lost): answer again.
		e.sendReply(p)
		return
	case p.state == stUp:
		// The peer restarted at the same address (a new instance), or
		// connects anew (it gave up on the old connection): the old one
		// is gone with everything pending on it.
		e.failPeer(p, transport.ErrPeerDead, false)
		e.restart(p)
	case p.state == stDead:
		e.restart(p)
	}
	// Connecting (both sides dialled at once: either request makes the
	// connection, with each side's own secrets) or new.
	e.up(p, b, h)
	e.sendReply(p)
}

// challenge answers a request without a valid cookie: one, computed, not
// stored.
func (e *Endpoint) challenge(b []byte, h *hdr, from Addr) {
	c := e.ctl[:chLen]
	putHdr(c, tChallenge, 0, 0, 0, 0, h.srcConn, 0, e.epid)
	put64(c, chDstEPID, h.word)
	copy(c[chNonce:chNonce+16], b[hsNonce:hsNonce+16])
	ck := e.cookie(b, from, e.epoch())
	copy(c[chCookie:chCookie+16], ck[:])
	e.stats.Challenges++
	e.chDest.set(from.IP, from.Port)
	e.sendTo(&e.chDest, c)
}

// onChallenge: the responder wants our request again with its cookie.
func (e *Endpoint) onChallenge(b []byte, h *hdr) {
	p := e.byEPID[h.word]
	if p == nil || p.state != stConnecting || h.dstConn != p.connID() || get64(b, chDstEPID) != e.epid ||
		!hmac.Equal(b[chNonce:chNonce+16], p.nonce[:]) {
		e.stats.Stale++
		return
	}
	copy(p.cookie[:], b[chCookie:chCookie+16])
	e.sendRequest(p, e.clock.Now())
}

// onConnRep completes our connect request.
func (e *Endpoint) onConnRep(b []byte, h *hdr) {
	p := e.byEPID[h.word]
	if p == nil || h.dstConn != p.connID() || get64(b, hsDstEPID) != e.epid ||
		!hmac.Equal(b[hsNonce:hsNonce+16], p.nonce[:]) {
		e.stats.Stale++
		return
	}
	if !e.proven(b, proofRep) {
		e.stats.WrongJob++
		return
	}
	switch p.state {
	case stConnecting:
		e.up(p, b, h)
	case stUp:
		if p.instance != get64(b, hsInstance) || p.remote != h.srcConn {
			e.stats.Stale++
		}
	default:
		e.stats.Stale++
	}
}

// up makes p connected with the peer whose request or reply is b.
func (e *Endpoint) up(p *peer, b []byte, h *hdr) {
	p.state, p.remote, p.instance = stUp, h.srcConn, get64(b, hsInstance)
	if h.typ == tConnReq {
		copy(p.rnonce[:], b[hsNonce:hsNonce+16])
		p.rinst, p.rserial = p.instance, get32(b, hsSerial)
	} else {
		copy(p.rnonce[:], b[hsCookie:hsCookie+16])
	}
	p.rsess = get64(b, hsSession)
	p.expect = psn(get32(b, hsPSN) & psnMask)
	p.acked = p.expect
	for i := range p.ports {
		p.ports[i] = get16(b, hsPorts+2*i)
	}
	p.ports[0] = p.dest.Port // path 0's is the id's, checked already
	p.dest.setRails(e.peerRails(b, p.dest.IP))
	p.path = onRail(p.path, 0)
	p.railDown = [MaxRails]int64{}
	p.eagerMax = max(uint64(get32(b, hsEagerMax)), minEagerMax)
	p.ceil = max(min(e.bufSize, int(get16(b, hsMTU))-28), minDatagram)
	p.pmtu = p.ceil
	if e.cfg.Auth || h.flags&fAuth != 0 {
		p.mac = e.newMacer(p)
	}
	e.setRoom(p)
	if k := get32(b, hsKernel); k != 0 && k == e.cfg.KernelID && e.cfg.SameKernel != nil {
		e.cfg.SameKernel(p.epid)
	}
	now := e.clock.Now()
	p.progress, p.heard = now, now
	// Packets queued while connecting were built before the peer's id
	// and session tag were known: stamp them in now. An eager send
	// queued meanwhile completes now, as one made on a connection that is
	// up does once copied: its packets are the flow's to deliver (a
	// receiver that exits right after taking the message must not leave
	// its sender with an error for it).
	for i := 0; i < p.queued.len(); i++ {
		x := p.queued.at(i)
		put32(x.b, 16, p.remote)
		put64(x.b, 24, p.rsess)
		if x.op != 0 && x.eager {
			op := x.op - 1
			x.op = 0
			e.completeSend(op)
		}
	}
	e.pump(p)
	e.markBusy(p)
}
