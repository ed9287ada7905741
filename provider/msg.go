package provider

// Over 600 lines: the message path whole, sending (resolving the peer,
// queueing), receiving (posting, peek and claim, landing, completing) and
// the wire's events (Deliver, Admit, Hold, SendDone, FetchDone), which
// finish what the posting calls started.

import (
	"errors"
	"os"
	"slices"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/internal/umem"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
	"github.com/gopsm2/libfabric-psm2/provider/match"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// The endpoint's side of tag matching: posting sends and receives,
// landing a matched message, completing. The rule, the queues and the op
// table are package match's; everything here runs under the domain lock.

// Header flags: what kind of message, and what travels with it.
const (
	hfTagged uint32 = 1 << iota // FI_TAGGED message (else FI_MSG)
	hfData                      // Data holds FI_REMOTE_CQ_DATA
	hfRMA                       // an RMA protocol message (rma.go), never matched
)

// Op kinds.
const (
	opFree uint8 = match.Free + iota
	opSend
	opRecv
	opMultiChild // one message landing in a multi-receive buffer
	opRMA        // an RMA read or write this endpoint started (rma.go)
	opRMATarget  // a peer's RMA being served here (rma.go)
)

// op is a send, a receive or an RMA operation, named on the wire by its
// ID; Proto is its RMA state (rma.go).
type op = match.Op[rmaOp]

// unexpected is an arrived message no receive has taken yet.
type unexpected = match.Unexpected

// engine is an endpoint's state of the data path: its matching engine,
// connections, queued sends, RMA and collectives.
type engine struct {
	match.Engine[rmaOp] // the op table, posted receives, unexpected messages
	ep                  *Endpoint

	pending int // sends and fetches in flight on the wire

	conns []transport.Conn // by fi_addr; 0: not resolved yet
	// ctxConns: addresses of a scalable peer's context > 0 (fi_rx_addr)
	ctxConns map[uint64]transport.Conn
	iov      [getinfo.IovLimit][]byte
	hdr      transport.Header
	events   int // completions produced by the current poll

	inPoll bool      // inside the wire's Poll: RMA sends wait in the outbox
	noHold bool      // the wire's Poll takes every message (Hold)
	sendQ  sendQueue // sends the wire had no room for (sendq.go)

	rma  rmaState  // RMA and atomics (rma.go)
	coll collState // collectives (coll.go)

	polls int // ep.poll calls, to space the sweeps

	// refusals counts messages Admit refused (each is asked for again,
	// so one held-back message may count several times).
	refusals uint64
}

func (e *engine) init(ep *Endpoint) { e.ep = ep }

// forgetAddr drops the cached connection of fi_addr a (AV removal).
func (e *engine) forgetAddr(a uint64) {
	if a < uint64(len(e.conns)) {
		e.conns[a] = 0
	}
	for k := range e.ctxConns {
		if e.ep.av.baseAddr(k) == a {
			delete(e.ctxConns, k)
		}
	}
	e.ep.forgetFastPeer(a)
}

// conn resolves fi_addr a to a wire connection. An address with receive
// context bits (fi_rx_addr) names that context of a scalable peer.
func (ep *Endpoint) conn(a uint64) (transport.Conn, fi.Errno) {
	e := &ep.engine
	if a < uint64(len(e.conns)) {
		if c := e.conns[a]; c != 0 {
			return c, 0
		}
	}
	rx := ep.av.rxIndex(a)
	if rx > 0 {
		if c, ok := e.ctxConns[a]; ok {
			return c, 0
		}
	}
	name, ok := ep.av.nameLocked(a)
	if !ok || rx >= name.contexts() {
		return 0, fi.EINVAL
	}
	epid := name.contextEPID(rx)
	c, err := ep.tp.Connect(epid)
	if err != nil {
		return 0, errnoOf(err)
	}
	if fs, ok := ep.tp.(transport.FastSender); ok {
		desc := fs.FastPeer(c)
		ep.setFastPeer(a, desc)
		ep.setFastSender(epid, desc)
	}
	if rx > 0 {
		if e.ctxConns == nil {
			e.ctxConns = make(map[uint64]transport.Conn)
		}
		e.ctxConns[a] = c
		return c, 0
	}
	a = ep.av.baseAddr(a)
	for uint64(len(e.conns)) <= a {
		e.conns = append(e.conns, 0)
	}
	e.conns[a] = c
	return c, 0
}

// localWire is a wire that tells which peers it reaches through shared
// memory (route.Endpoint), where connecting costs no message.
type localWire interface {
	Local(epid uint64) bool
}

// knowLocalSource connects fi_addr src (endpoint epid), a directed
// receive's source on this host, as a send to it would: the C fast path
// queues and delivers a directed receive only from a source whose
// descriptor it has (fast/deliver.c), and a rank that receives from a peer
// it never sends to (a ring: MPI_Sendrecv to the right neighbour, from the
// left) sent every receive from it through Go: in a ring of 4 ranks
// (IMB Sendrecv), the receives of the rank whose left neighbour it never
// sent to, all of them. A source on another host is not dialled: there a
// connection is a handshake on the network.
func (ep *Endpoint) knowLocalSource(src, epid uint64) {
	if ep.fast.page == nil {
		return
	}
	if c := ep.engine.conns; src < uint64(len(c)) && c[src] != 0 {
		return
	}
	if w, ok := ep.tp.(localWire); !ok || !w.Local(epid) {
		return
	}
	_, _ = ep.conn(src) // a source that cannot be connected stays Go's
}

// wireSend sends on fi_addr dest's connection *c. A Conn the wire no
// longer knows (it took back the slot of a peer that died) is resolved
// again, once: the peer may be back, and the new connection is tried.
func (ep *Endpoint) wireSend(dest uint64, c *transport.Conn, h *transport.Header, iov [][]byte, cookie uint64, flags uint32) (bool, error) {
	done, err := ep.tp.Send(*c, h, iov, cookie, flags)
	if err != nil && errors.Is(err, transport.ErrStaleConn) {
		ep.engine.forgetAddr(ep.av.baseAddr(dest))
		nc, errno := ep.conn(dest)
		if errno != 0 {
			return false, errno
		}
		*c = nc
		done, err = ep.tp.Send(nc, h, iov, cookie, flags)
	}
	return done, err
}

// space returns the match space of a call's flags.
func space(flags uint64) uint8 {
	if flags&fi.TAGGED != 0 {
		return 1
	}
	return 0
}

// Send posts a send (every fi_send*/fi_tsend*/fi_inject* call) of the
// bytes iov names, at most getinfo.IovLimit pieces.
func (ep *Endpoint) Send(iov []Iovec, dest uint64, tag, data uint64, ctx unsafe.Pointer, flags uint64) error {
	if len(iov) > getinfo.IovLimit {
		return fi.EINVAL
	}
	if flags&fi.TRIGGER != 0 {
		return ep.deferCall(&trigger{kind: trigSend, iov: slices.Clone(iov), peer: dest, tag: tag, aux: data, flags: flags}, ctx)
	}
	d := ep.dom
	d.lock()
	defer d.unlock() // also on a panic, which the export recovers from
	err := ep.sendLocked(iov, dest, tag, data, uintptr(ctx), flags)
	d.refreshFast()
	if err != 0 {
		return err
	}
	return nil
}

func (ep *Endpoint) sendLocked(vecs []Iovec, dest uint64, tag, data uint64, ctx uintptr, flags uint64) fi.Errno {
	if !ep.enabled {
		return fi.EOPBADSTATE
	}
	e := &ep.engine
	total, errno := iovTotal(vecs, ep.maxMsgSize)
	if errno != 0 {
		return errno
	}
	if flags&fi.INJECT != 0 && total > ep.injectSize {
		return fi.EMSGSIZE
	}
	c, errno := ep.conn(dest)
	if errno != 0 {
		return errno
	}
	for i := range vecs {
		e.iov[i] = vecs[i].Bytes()
	}
	h := &e.hdr
	*h = transport.Header{Len: total}
	sp := space(flags)
	if sp == 1 {
		h.Flags |= hfTagged
		h.Tag = tag & ep.tagMask
	}
	if flags&fi.REMOTE_CQ_DATA != 0 {
		h.Flags |= hfData
		h.Data = data
	}
	o := e.New(opSend)
	o.Space, o.Ctx, o.Flags, o.Len, o.Tag, o.RData = sp, ctx, flags, total, h.Tag, data
	var tflags uint32
	if flags&fi.INJECT != 0 {
		tflags = transport.SendCopy
	}
	if e.sendQ.n > 0 {
		if !e.inPoll {
			ep.flushSendQ()
		}
		if e.sendQ.holds(c) {
			// Behind this peer's queued sends, in order (FI_ORDER_SAS).
			errno := fi.EAGAIN
			if e.sendQ.n < sendQMax {
				errno = ep.queueSend(o, c, e.iov[:len(vecs)], tflags)
			} else {
				e.Free(o)
			}
			clear(e.iov[:len(vecs)])
			return errno
		}
	}
	done, err := ep.wireSend(dest, &c, h, e.iov[:len(vecs)], o.ID, tflags)
	if err != nil && e.sendQ.n < sendQMax && errnoOf(err) == fi.EAGAIN {
		errno := ep.queueSend(o, c, e.iov[:len(vecs)], tflags)
		clear(e.iov[:len(vecs)])
		return errno
	}
	clear(e.iov[:len(vecs)])
	if err != nil {
		e.Free(o)
		errno := errnoOf(err)
		if errno == fi.EAGAIN || errno == fi.EMSGSIZE {
			return errno
		}
		// The peer is gone: the send fails through the CQ, like a send
		// that fails after it was posted.
		ep.completeSend(o, errno)
		e.Free(o)
		return 0
	}
	if done {
		ep.completeSend(o, 0)
		e.Free(o)
	} else {
		e.pending++
	}
	return 0
}

// iovTotal is the byte count of vecs: EINVAL for a NULL buffer with a
// length, EMSGSIZE past max. Each length is checked on its own first:
// lengths near 2^64 would wrap the sum to something small.
func iovTotal(vecs []Iovec, max uint64) (uint64, fi.Errno) {
	var total uint64
	for i := range vecs {
		n := vecs[i].Len
		if n > 0 && vecs[i].Base == nil {
			return 0, fi.EINVAL
		}
		if n > max {
			return 0, fi.EMSGSIZE
		}
		total += n
	}
	if total > max {
		return 0, fi.EMSGSIZE
	}
	return total, 0
}

// Iovec is one piece of an application buffer, with C's struct iovec
// layout (and struct fi_ioc's, whose count of elements takes iov_len's
// place), so that cmd/libfabric-psm2 hands the engine a C array as a
// []Iovec without copying it. The memory is the application's: the engine
// copies from or into it only with guarded copies (internal/umem).
type Iovec struct {
	Base unsafe.Pointer
	Len  uint64
}

// NoCompletion marks the sends of the fi_inject* calls (PSM2_NO_COMPLETION
// in the C shim): they never generate a completion. A send with FI_INJECT
// alone (an endpoint op flag, or fi_sendmsg's flags) frees its buffer at
// once but completes like any other, as fi_msg(3) and fabtests'
// fi_msg_inject expect.
const NoCompletion uint64 = 1 << 60

// completeSend reports a finished send: a CQ entry unless it was an
// inject call or selective completion leaves it out, and the send counter.
func (ep *Endpoint) completeSend(o *op, err fi.Errno) {
	flags := fi.SEND | fi.MSG
	if o.Space == 1 {
		flags = fi.SEND | fi.TAGGED
	}
	if err != 0 {
		if ep.txCQ != nil {
			ep.txCQ.completeErr(o.Ctx, flags, 0, 0, o.RData, o.Tag, err, 0, nil)
		}
		if ep.sendCntr != nil {
			ep.sendCntr.incErr()
		}
		ep.events++
		return
	}
	if ep.txCQ != nil && o.Flags&NoCompletion == 0 && (!ep.txSel || o.Flags&fi.COMPLETION != 0) {
		ep.txCQ.complete(o.Ctx, flags, 0, 0, 0, 0, 0, nil)
	}
	if ep.sendCntr != nil {
		ep.sendCntr.inc()
	}
	ep.events++
}

// Recv posts a receive (every fi_recv*/fi_trecv* call) into iov, at most
// one piece (rx_attr iov_limit).
func (ep *Endpoint) Recv(iov []Iovec, src uint64, tag, ignore uint64, ctx unsafe.Pointer, flags uint64) error {
	if len(iov) > 1 {
		return fi.EINVAL
	}
	if flags&fi.TRIGGER != 0 {
		return ep.deferCall(&trigger{kind: trigRecv, iov: slices.Clone(iov), peer: src, tag: tag, aux: ignore, flags: flags}, ctx)
	}
	d := ep.dom
	d.lock()
	defer d.unlock()
	err := ep.recvLocked(iov, src, tag, ignore, uintptr(ctx), flags)
	d.refreshFast()
	if err != 0 {
		return err
	}
	return nil
}

func (ep *Endpoint) recvLocked(iov []Iovec, src uint64, tag, ignore uint64, ctx uintptr, flags uint64) fi.Errno {
	if !ep.enabled {
		return fi.EOPBADSTATE
	}
	e := &ep.engine
	var buf uintptr
	var length uint64
	if len(iov) == 1 {
		buf, length = uintptr(iov[0].Base), iov[0].Len
		if length > 0 && buf == 0 {
			return fi.EINVAL
		}
	}
	sp := space(flags)
	tag, ignore = match.Key(sp, tag, ignore, ep.tagMask)
	var srcEPID uint64
	if src != fi.AddrUnspec && ep.caps&fi.DIRECTED_RECV != 0 {
		name, ok := ep.av.nameLocked(src)
		rx := ep.av.rxIndex(src)
		if !ok || rx >= name.contexts() {
			return fi.EINVAL
		}
		srcEPID = name.contextEPID(rx) // a scalable peer's context sends from its own id
		ep.knowLocalSource(src, srcEPID)
	}
	if flags&fi.PEEK != 0 {
		// What has arrived is looked at first, as psm2's probe
		// progresses its engine: an application that peeks and reads
		// the answer (an FI_ENOMSG entry, which a CQ read hands out
		// without progressing) in a loop would otherwise never see the
		// message come.
		if !e.inPoll {
			e.noHold = true // the last message in the ring too (Hold)
			ep.poll()
			e.noHold = false
		}
		ep.peek(sp, srcEPID, tag, ignore, ctx, flags)
		return 0
	}
	if flags&fi.CLAIM != 0 {
		return ep.claim(buf, length, ctx, flags)
	}
	o := e.New(opRecv)
	o.Space, o.Ctx, o.Flags, o.Buf, o.Len, o.Tag, o.Ign, o.Src = sp, ctx, flags, buf, length, tag, ignore, srcEPID
	// An unexpected message that matches is taken first.
	for u := e.TakeUnexpected(o); u != nil; u = e.TakeUnexpected(o) {
		ep.deliverUx(o, u)
		if o.Flags&fi.MULTI_RECV == 0 || o.Released {
			if o.Inflight == 0 {
				e.Free(o)
			}
			return 0
		}
	}
	e.Post(o)
	return 0
}

// peek answers FI_PEEK: a completion describing the first matching
// unexpected message (claimed with FI_CLAIM, dropped with FI_DISCARD), or
// an FI_ENOMSG error entry.
func (ep *Endpoint) peek(sp uint8, src, tag, ignore uint64, ctx uintptr, flags uint64) {
	e := &ep.engine
	u := e.Peek(sp, src, tag, ignore)
	cflags := fi.RECV | fi.MSG
	if sp == 1 {
		cflags = fi.RECV | fi.TAGGED
	}
	if u == nil {
		if ep.rxCQ != nil {
			ep.rxCQ.completeErr(ctx, cflags, 0, 0, 0, tag, fi.ENOMSG, 0, nil)
		}
		ep.events++
		return
	}
	if u.Hdr.Flags&hfData != 0 {
		cflags |= fi.REMOTE_CQ_DATA
	}
	if ep.rxCQ != nil {
		ep.rxCQ.complete(ctx, cflags, u.Hdr.Len, 0, u.Hdr.Data, u.Hdr.Tag, u.Src, ep.av)
	}
	ep.events++
	switch {
	case flags&fi.DISCARD != 0:
		e.Take(sp, u)
		ep.dropUx(u)
	case flags&fi.CLAIM != 0:
		e.Take(sp, u)
		e.SetAside(u, ctx)
	}
}

// claim takes the message an earlier FI_PEEK|FI_CLAIM with the same
// context claimed: into buf, or dropped with FI_DISCARD.
func (ep *Endpoint) claim(buf uintptr, length uint64, ctx uintptr, flags uint64) fi.Errno {
	e := &ep.engine
	u := e.Claimed(ctx)
	if u == nil {
		return fi.EINVAL
	}
	sp := uint8(0)
	if u.Hdr.Flags&hfTagged != 0 {
		sp = 1
	}
	o := e.New(opRecv)
	o.Space, o.Ctx, o.Flags, o.Buf, o.Len = sp, ctx, flags&^fi.CLAIM, buf, length
	if flags&fi.DISCARD != 0 {
		o.Len = 0
		o.RTag, o.RData, o.RHFlags, o.RLen, o.RSrc = u.Hdr.Tag, u.Hdr.Data, u.Hdr.Flags, 0, u.Src
		ep.dropUx(u)
		ep.completeRecv(o, 0, 0)
		e.Free(o)
		return 0
	}
	ep.deliverUx(o, u)
	if o.Inflight == 0 {
		e.Free(o)
	}
	return 0
}

// dropUx discards an unexpected message (the sender of a rendezvous is
// told, so its send completes).
func (ep *Endpoint) dropUx(u *unexpected) {
	if u.IsRndv {
		ep.tp.Discard(&u.Rndv)
	}
	ep.engine.FreeUnexpected(u)
}

// deliverUx lands unexpected message u in receive o and frees u.
func (ep *Endpoint) deliverUx(o *op, u *unexpected) {
	m := transport.Incoming{SrcEPID: u.Src, Payload: u.Payload, IsRndv: u.IsRndv}
	if u.IsRndv {
		m.Rndv = u.Rndv
	}
	if m.Payload == nil && !u.IsRndv {
		m.Payload = []byte{}
	}
	ep.land(o, &u.Hdr, &m)
	ep.engine.FreeUnexpected(u)
}

// land puts message (h, m) into receive o: into its buffer, or at the
// next offset of a multi-receive buffer. For a multi-receive it tracks
// the part used and releases the buffer below min_multi_recv.
func (ep *Endpoint) land(o *op, h *transport.Header, m *transport.Incoming) {
	e := &ep.engine
	t := o
	dst := o.Buf
	room := o.Len
	if o.Flags&fi.MULTI_RECV != 0 {
		t = e.New(opMultiChild)
		t.Parent, t.Space, t.Ctx, t.Flags = o, o.Space, o.Ctx, o.Flags
		dst = o.Buf + uintptr(o.Used)
		room = o.Len - o.Used
		t.Buf = dst
		o.Inflight++
	}
	n := min(h.Len, room)
	t.Len = n
	t.RTag, t.RData, t.RHFlags, t.RLen, t.RSrc = h.Tag, h.Data, h.Flags, h.Len, m.SrcEPID
	if o.Flags&fi.MULTI_RECV != 0 {
		o.Used += n
		if o.Len-o.Used < max(ep.minMultiRecv, 1) {
			o.Released = true
		}
	}
	if !m.IsRndv {
		if n > 0 {
			// A receive buffer the kernel refuses fails the receive
			// (the sender's eager send is already complete). A source
			// fault is the wire's memory (a peer's segment cut short).
			switch _, bad, _ := umem.Copy(cbytes(dst, n), m.Payload[:n]); bad {
			case umem.Dst:
				ep.finishRecv(t, 0, fi.EFAULT)
				return
			case umem.Src:
				ep.finishRecv(t, 0, fi.EIO)
				return
			}
		}
		ep.finishRecv(t, n, 0)
		return
	}
	var dstb []byte
	if n > 0 {
		dstb = cbytes(dst, n)
	}
	t.Inflight++ // the fetch
	done, got, err := ep.tp.Fetch(&m.Rndv, dstb, t.ID)
	if done || err != nil {
		t.Inflight--
		ep.finishRecv(t, uint64(got), errnoOf(err))
	} else {
		e.pending++
		ep.dom.refreshFast()
	}
}

// finishRecv completes receive (or multi-receive part) t with n bytes. A
// multi-receive part is freed here; a plain receive belongs to whoever
// landed it (the poster or Deliver, or FetchDone once it is async).
func (ep *Endpoint) finishRecv(t *op, n uint64, err fi.Errno) {
	ep.completeRecv(t, n, err)
	if p := t.Parent; p != nil {
		p.Inflight--
		ep.engine.Free(t)
	}
}

// completeRecv reports a finished receive.
func (ep *Endpoint) completeRecv(t *op, n uint64, err fi.Errno) {
	flags := fi.RECV | fi.MSG
	if t.Space == 1 {
		flags = fi.RECV | fi.TAGGED
	}
	if t.RHFlags&hfData != 0 {
		flags |= fi.REMOTE_CQ_DATA
	}
	if p := t.Parent; p != nil && p.Released && p.Inflight == 1 {
		flags |= fi.MULTI_RECV
	}
	ep.events++
	if err == 0 && n < t.RLen {
		err = fi.ETRUNC
	}
	if err != 0 {
		if ep.rxCQ != nil {
			ep.rxCQ.completeErr(t.Ctx, flags, n, t.Buf, t.RData, t.RTag, err, t.RLen-n, nil)
		}
		if ep.recvCntr != nil {
			ep.recvCntr.incErr()
		}
		return
	}
	if ep.rxCQ != nil && (!ep.rxSel || t.Flags&fi.COMPLETION != 0) {
		ep.rxCQ.complete(t.Ctx, flags, n, t.Buf, t.RData, t.RTag, t.RSrc, ep.av)
	}
	if ep.recvCntr != nil {
		ep.recvCntr.inc()
	}
}

// Cancel cancels the posted receive with context ctx: it completes with an
// FI_ECANCELED error entry. ENOENT if none is posted.
func (ep *Endpoint) Cancel(ctx unsafe.Pointer) error {
	d := ep.dom
	d.lock()
	defer d.unlock()
	e := &ep.engine
	o := e.Cancel(uintptr(ctx))
	if o == nil {
		return fi.ENOENT
	}
	flags := fi.RECV | fi.MSG
	if o.Space == 1 {
		flags = fi.RECV | fi.TAGGED
	}
	if o.Flags&fi.MULTI_RECV != 0 {
		flags |= fi.MULTI_RECV
	}
	if ep.rxCQ != nil {
		ep.rxCQ.completeErr(o.Ctx, flags, 0, o.Buf, 0, o.Tag, fi.ECANCELED, 0, nil)
	}
	if ep.recvCntr != nil {
		ep.recvCntr.incErr()
	}
	if o.Inflight == 0 {
		e.Free(o)
	} else {
		o.Released = true
	}
	return nil
}

// epEvents is the endpoint seen as the wire's event handler.
type epEvents Endpoint

// Deliver matches an arrived message against the posted receives, or
// queues it as unexpected.
func (h *epEvents) Deliver(hdr *transport.Header, m *transport.Incoming) {
	ep := (*Endpoint)(h)
	e := &ep.engine
	if hdr.Flags&hfRMA != 0 {
		if !m.Early { // (RMA takes a request whole)
			ep.rmaDeliver(hdr, m)
		}
		return
	}
	sp := uint8(0)
	if hdr.Flags&hfTagged != 0 {
		sp = 1
	}
	if o := e.Match(sp, hdr.Tag, m.SrcEPID); o != nil {
		ep.land(o, hdr, m)
		if o.Flags&fi.MULTI_RECV != 0 {
			if !o.Released {
				return // (a multi-receive buffer stays posted until released)
			}
			e.Unpost(o)
		}
		if o.Inflight == 0 {
			e.Free(o)
		}
		return
	}
	if m.Early {
		return // no receive for it yet: it comes again, whole
	}
	var rndv *transport.Rndv
	if m.IsRndv {
		rndv = &m.Rndv
	}
	e.AddUnexpected(sp, hdr, m.SrcEPID, m.Payload, rndv)
}

// Admit (transport.Admitter) bounds what a network sender can make the
// endpoint keep: a message no posted receive takes is admitted only while
// the unexpected messages are fewer than FI_PSM2_UNEXP_COUNT and their
// payloads (a rendezvous message keeps none here) within
// FI_PSM2_UNEXP_BYTES; RMA requests within rmaAdmit's bounds. Refused,
// the wire holds the sender back and asks again later.
func (h *epEvents) Admit(hdr *transport.Header, src uint64, rndv bool) bool {
	ep := (*Endpoint)(h)
	e := &ep.engine
	if hdr.Flags&hfRMA != 0 {
		return ep.rmaAdmit(hdr, rndv)
	}
	keep := hdr.Len
	if rndv {
		keep = 0
	}
	if n, b := e.Kept(); n < ep.dom.params.UnexpCount && b+keep <= uint64(ep.dom.params.UnexpBytes) {
		return true
	}
	sp := uint8(0)
	if hdr.Flags&hfTagged != 0 {
		sp = 1
	}
	if e.WouldMatch(sp, hdr.Tag, src) {
		return true
	}
	e.refusals++
	return false
}

// Hold (transport.Holder) leaves the last message in the endpoint's ring
// there while no receive is posted in Go and C may deliver: the receive
// that takes it, often posted a moment later (one side of an exchange runs
// ahead: MPI_Sendrecv), is queued in C and C delivers the message to it
// without Go. Taken now, the message would be unexpected, and every
// receive until one claims it would go through Go, whose pass would take
// the next early message the same way. Not while a thread sleeps on the
// wire or a progress thread runs (a message left in the ring would wake
// them at once, again and again), nor for a peek, which must see it, nor
// for anything C does not deliver (RMA requests: psm2_inline_head).
func (h *epEvents) Hold(hdr *transport.Header) bool {
	ep := (*Endpoint)(h)
	return hdr.Flags&^(hfTagged|hfData) == 0 && !ep.engine.noHold && ep.fast.page != nil &&
		ep.dom.prog == nil && ep.waiters.Load() == 0 && ep.deliverOK()
}

// SendDone completes a send that finished on the wire.
func (h *epEvents) SendDone(cookie uint64, err error) {
	ep := (*Endpoint)(h)
	o := ep.engine.ByCookie(cookie)
	if o != nil && (o.Kind == opRMA || o.Kind == opRMATarget) || cookie == rmaReplyCookie {
		ep.rmaSendDone(o, cookie, err)
		return
	}
	if o == nil || o.Kind != opSend {
		return
	}
	ep.engine.pending--
	ep.completeSend(o, errnoOf(err))
	ep.engine.Free(o)
}

// FetchDone completes a receive whose rendezvous data arrived.
func (h *epEvents) FetchDone(cookie uint64, n int, err error) {
	ep := (*Endpoint)(h)
	e := &ep.engine
	t := e.ByCookie(cookie)
	if t != nil && (t.Kind == opRMA || t.Kind == opRMATarget) {
		ep.rmaFetchDone(t, n, err)
		return
	}
	if t == nil || (t.Kind != opRecv && t.Kind != opMultiChild) {
		return
	}
	e.pending--
	t.Inflight--
	p := t.Parent
	ep.finishRecv(t, uint64(n), errnoOf(err))
	switch {
	case p != nil:
		if p.Released && p.Inflight == 0 && p.Kind != opFree && !e.IsPosted(p) {
			e.Free(p)
		}
	case t.Inflight == 0:
		e.Free(t)
	}
}

// pid is this process's id.
func pid() int { return os.Getpid() }
