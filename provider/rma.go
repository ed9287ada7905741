package provider

// Over 600 lines: RMA over the wire contract, initiator and target: requests,
// responses, staging and their limits, whose checks answer each other.

import (
	"encoding/binary"
	"errors"
	"slices"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/internal/umem"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// RMA: fi_read* and fi_write* as provider protocol messages over any
// wire's Send and Fetch, so they work alike over shm, hfi and to self.
// The target's provider serves them while it progresses (its polls, or
// its progress thread with FI_PROGRESS_AUTO); the initiator completes an
// operation when the target's answer comes, so every completion level
// (inject, transmit, delivery complete) is met and a bad key or range
// fails at the initiator, with the target's memory untouched.
//
// Every RMA message has hfRMA in its header flags and its kind in bits
// 8-15; Tag carries the initiator's id of the operation (its index with a
// generation, so a late answer never reaches a reused op). Requests start
// with a 24-byte prefix: key, address and length (little-endian).
//
//	write       prefix + the bytes (writes up to rmaShortMax); Data: the
//	            remote CQ data with hfData
//	write-long  prefix; the bytes follow in a write-data message with the
//	            same Tag, which the wire may send by rendezvous: the
//	            target fetches it straight into the registered memory
//	ack         a write's answer: Data is 0 or the errno
//	read        prefix
//	read-resp   a read's answer: the bytes (by rendezvous when large: the
//	            initiator fetches them into its buffer), or Data = errno
//
// Messages from one sender arrive in order, so a write-data message
// always finds its write-long request waiting. Answers and data that the
// wire cannot take at once wait in the endpoint's outbox, which every
// poll flushes first; new operations are refused with EAGAIN while it
// holds anything, so operations reach a target in the order posted.
const (
	rmaKindShift = 8
	rmaKindMask  = 0xff << rmaKindShift

	rmaWrite     = 1
	rmaWriteLong = 2
	rmaWriteData = 3
	rmaAck       = 4
	rmaRead      = 5
	rmaReadResp  = 6

	rmaPrefix = 24

	// rmaShortMax: writes up to this size carry their bytes in the
	// request (one message; the wire copies them); larger ones are
	// fetched by the target (one copy, process_vm_readv on shm).
	rmaShortMax = 16 << 10

	// rmaReplyCookie names the sends of answers: nothing waits for them.
	rmaReplyCookie = ^uint64(0)

	// Bounds of what peers' RMA requests make a target hold (rmaAdmit):
	// bytes of requests staged (an atomic's operands, or a short write,
	// that the wire sent by rendezvous), write-long requests waiting for
	// their bytes, and answers waiting for the wire. A request staged
	// larger than rmaStageMax is refused with an error.
	rmaStageMax   = 16 << 20
	rmaWaitingMax = 4096
	rmaOutMax     = 4096
)

// rmaRemoteErr is the one error a target answers a refused access with:
// an unknown key, a range outside the region and a missing access right
// look alike to the initiator, so that its answers tell nothing about
// which keys exist.
const rmaRemoteErr = fi.EACCES

// rmaAdmit (Admit, for RMA messages): answers and a write-long request's
// bytes always (they answer or complete our own operations, or land in a
// registered region); a request only while the target keeps fewer than
// rmaOutMax answers waiting for the wire (its initiator outruns the
// wire) and rmaWaitingMax write-long requests, and, staged, within
// rmaStageMax bytes (one larger than that is admitted, and refused with
// an error: it would never fit).
func (ep *Endpoint) rmaAdmit(h *transport.Header, rndv bool) bool {
	e := &ep.engine
	switch rmaKind(h) {
	case rmaWrite, rmaWriteLong, rmaRead, rmaAtomic, rmaAtomicFetch, rmaAtomicCompare:
	default:
		return true
	}
	if len(e.rma.out) >= rmaOutMax || e.rma.waiting >= rmaWaitingMax {
		e.refusals++
		return false
	}
	if rndv && h.Len <= rmaStageMax && e.rma.staged+h.Len > rmaStageMax {
		e.refusals++
		return false
	}
	return true
}

// rmaOp is the RMA part of an op.
type rmaOp struct {
	conn     transport.Conn
	dest     uint64 // initiator: the target's fi_addr
	write    bool
	addr     uint64   // initiator: the remote address; target: the local one
	key      uint64   // initiator: the remote key
	iov      []Iovec  // initiator, several local buffers: where a read lands
	stage    []byte   // a bounce buffer: a scattered read, a staged request
	wire     int      // this op's sends and fetches in flight
	answered bool     // initiator: the target's answer (or a failure) came
	err      fi.Errno // the op's outcome so far
	peerID   uint64   // target: the initiator's id of the op
	src      uint64   // target: the initiator's epid
	mr       *MR      // target: the region written
	hdr      transport.Header
	next     *op  // target: the write-long requests waiting for their bytes
	watched  bool // the wire watches the peer: an initiator's until the answer, a target's write-long until its bytes (rmaSweep)
	atomic   bool // initiator: an atomic (atomic.go), not an RMA
	aslot    int  // initiator: 1 + its entry in the armed table (fastrma.go), or 0
}

// rmaState is an endpoint's RMA and atomics state beside its ops (each
// op's is op.Proto).
type rmaState struct {
	out  []rmaMsg // RMA sends waiting for the wire
	wait *op      // write-long requests waiting for their bytes

	// What arrived and waits (rmaAdmit: the limits a network sender is
	// held back at): requests staged (bytes), and write-long requests
	// waiting for theirs.
	staged  uint64
	waiting int

	watched  int              // ops whose peer the wire watches (rmaSweep)
	scratch  [atomicHdr]byte  // a request's header, copied by the wire
	flushIov [1][]byte        // the outbox's gather list for small payloads
	smallBuf [rmaSmall]byte   // a small payload sent at once
	postHdr  transport.Header // the header of a send from the outbox
	stats    RMAStats
}

// RMAStats counts an endpoint's RMA and atomic requests, as initiator
// (started on the wire) and as target (served, and refused: bad key,
// access or range). The endpoint logs them at close.
type RMAStats struct {
	Writes, Reads, Atomics uint64
	Served, Refused        uint64
	// Bytes written, read, and of the atomics' operands sent.
	WriteBytes, ReadBytes, AtomicBytes uint64
}

// rmaMsg is a send waiting in the outbox. A small payload (an answer)
// is kept in the message itself (small), so queueing one allocates
// nothing.
type rmaMsg struct {
	c        transport.Conn
	h        transport.Header
	iov      [][]byte
	cookie   uint64
	flags    uint32
	smallLen int // >= 0: the payload is small[:smallLen] (iov unused)
	small    [rmaSmall]byte
}

// rmaSmall is the largest payload an outbox message keeps inline.
const rmaSmall = 64

func rmaKind(h *transport.Header) uint32 { return (h.Flags & rmaKindMask) >> rmaKindShift }

func rmaID(o *op) uint64 { return uint64(o.Gen)<<32 | o.ID }

// rmaByID returns the initiator op named id, or nil if it is gone.
func (e *engine) rmaByID(id uint64) *op {
	if id>>32 == cTagGen {
		return e.ep.cOp(id) // an op C posted (fastrma.go)
	}
	o := e.ByCookie(id & 0xffffffff)
	if o == nil || o.Kind != opRMA || o.Gen != uint32(id>>32) {
		return nil
	}
	return o
}

// RMA starts an fi_read* (flags has FI_READ) or fi_write* (FI_WRITE)
// call: iov is the local memory, dest the peer, addr and key the remote
// memory; with FI_REMOTE_CQ_DATA a write carries data to the target's CQ.
func (ep *Endpoint) RMA(iov []Iovec, dest, addr, key, data uint64, ctx unsafe.Pointer, flags uint64) error {
	if len(iov) > getinfo.IovLimit || flags&(fi.READ|fi.WRITE) == 0 {
		return fi.EINVAL
	}
	if flags&fi.TRIGGER != 0 {
		return ep.deferCall(&trigger{kind: trigRMA, iov: slices.Clone(iov), peer: dest, addr: addr, key: key, aux: data, flags: flags}, ctx)
	}
	d := ep.dom
	d.lock()
	defer d.unlock()
	err := ep.rmaLocked(iov, dest, addr, key, data, uintptr(ctx), flags)
	d.refreshFast()
	if err != 0 {
		return err
	}
	return nil
}

func (ep *Endpoint) rmaLocked(vecs []Iovec, dest, addr, key, data uint64, ctx uintptr, flags uint64) fi.Errno {
	if !ep.enabled {
		return fi.EOPBADSTATE
	}
	e := &ep.engine
	write := flags&fi.WRITE != 0
	total, errno := iovTotal(vecs, ep.maxMsgSize)
	if errno != 0 {
		return errno
	}
	if flags&fi.INJECT != 0 && write && total > ep.injectSize {
		return fi.EMSGSIZE
	}
	o, errno := ep.rmaStart(dest, addr, key, ctx, flags, total, write)
	if errno != 0 {
		return errno
	}
	o.RData = data
	if len(vecs) == 1 {
		o.Buf = uintptr(vecs[0].Base)
	} else if !write {
		o.Proto.iov = append(o.Proto.iov[:0], vecs...)
	}
	prefix := e.rma.scratch[:rmaPrefix] // the wire copies it (SendCopy)
	binary.LittleEndian.PutUint64(prefix[0:], key)
	binary.LittleEndian.PutUint64(prefix[8:], addr)
	binary.LittleEndian.PutUint64(prefix[16:], total)
	h := &e.hdr
	*h = transport.Header{Tag: rmaID(o), Len: rmaPrefix}
	iov := e.iov[:1]
	iov[0] = prefix
	switch {
	case !write:
		h.Flags = hfRMA | rmaRead<<rmaKindShift
	case total <= rmaShortMax:
		h.Flags = hfRMA | rmaWrite<<rmaKindShift
		h.Len += total
		for i := range vecs {
			iov = append(iov, vecs[i].Bytes())
		}
	default:
		h.Flags = hfRMA | rmaWriteLong<<rmaKindShift
	}
	if write && flags&fi.REMOTE_CQ_DATA != 0 {
		h.Flags |= hfData
		h.Data = data
	}
	started, errno := ep.rmaRequest(o, h, iov)
	if !started {
		return errno
	}
	c := o.Proto.conn // (after the request: a stale one was resolved again)
	if write {
		e.rma.stats.Writes++
		e.rma.stats.WriteBytes += total
	} else {
		e.rma.stats.Reads++
		e.rma.stats.ReadBytes += total
	}
	if write && total > rmaShortMax {
		bytes := make([][]byte, len(vecs))
		for i := range vecs {
			bytes[i] = vecs[i].Bytes()
		}
		ep.rmaWire(o, 1) // the data's send, until it is done
		ep.rmaPost(c, transport.Header{Flags: hfRMA | rmaWriteData<<rmaKindShift, Tag: rmaID(o), Len: total},
			bytes, o.ID, 0)
	}
	return 0
}

// rmaStart begins an initiator op (RMA or atomic) of n bytes to dest's
// addr/key: once the outbox has drained (else EAGAIN, so a target sees
// operations in the order posted) and dest resolves to a connection.
func (ep *Endpoint) rmaStart(dest, addr, key uint64, ctx uintptr, flags, n uint64, write bool) (*op, fi.Errno) {
	e := &ep.engine
	if len(e.rma.out) > 0 {
		if ep.rmaFlush(); len(e.rma.out) > 0 {
			return nil, fi.EAGAIN
		}
	}
	c, errno := ep.conn(dest)
	if errno != 0 {
		return nil, errno
	}
	o := e.New(opRMA)
	o.Ctx, o.Flags, o.Len = ctx, flags, n
	o.Proto.conn, o.Proto.dest, o.Proto.write, o.Proto.addr, o.Proto.key = c, dest, write, addr, key
	return o, 0
}

// rmaRequest sends the request h (payload iov, copied by the wire) of
// new op o to o.rma.conn. started: the op is under way, or already failed
// through the CQ; otherwise it was refused (errno: EAGAIN, EMSGSIZE) and
// freed. While started, the wire watches the peer until the answer.
func (ep *Endpoint) rmaRequest(o *op, h *transport.Header, iov [][]byte) (started bool, errno fi.Errno) {
	e := &ep.engine
	done, err := ep.wireSend(o.Proto.dest, &o.Proto.conn, h, iov, o.ID, transport.SendCopy)
	clear(e.iov[:])
	if err != nil && (errors.Is(err, transport.ErrAgain) || errors.Is(err, transport.ErrTooLong)) {
		ep.disarm(o)
		e.Free(o)
		return false, errnoOf(err)
	}
	if err != nil {
		o.Proto.err, o.Proto.answered = errnoOf(err), true
		ep.rmaMaybeDone(o)
		return false, 0
	}
	if !done {
		ep.rmaWire(o, 1)
	}
	ep.rmaWatch(o, true)
	return true, 0
}

// isAgain reports whether err is the wire's ErrAgain (cheaply when nil).
func isAgain(err error) bool { return err != nil && errors.Is(err, transport.ErrAgain) }

// rmaPost sends h and iov to c now, or after the outbox drains; inside a
// poll (a wire's callback) it always queues. cookie is an op's id or
// rmaReplyCookie. The caller accounts for an op's send (rma.wire).
func (ep *Endpoint) rmaPost(c transport.Conn, h transport.Header, iov [][]byte, cookie uint64, flags uint32) {
	e := &ep.engine
	if len(e.rma.out) == 0 && !e.inPoll {
		e.rma.postHdr = h // (h itself would escape through the interface call)
		done, err := ep.tp.Send(c, &e.rma.postHdr, iov, cookie, flags)
		if !isAgain(err) {
			ep.rmaSent(cookie, done, err)
			return
		}
	}
	if flags&transport.SendCopy != 0 {
		var n int
		for _, b := range iov {
			n += len(b)
		}
		own := make([]byte, 0, n)
		for _, b := range iov {
			own = append(own, b...)
		}
		iov = [][]byte{own}
	}
	e.rma.out = append(e.rma.out, rmaMsg{c: c, h: h, iov: iov, cookie: cookie, flags: flags, smallLen: -1})
	e.pending++ // queued: the domain is not idle
}

// rmaPostSmall is rmaPost for a payload of at most rmaSmall bytes, copied
// at once (SendCopy): nothing of the caller's is kept, so nothing is
// allocated.
func (ep *Endpoint) rmaPostSmall(c transport.Conn, h transport.Header, payload []byte, cookie uint64) {
	e := &ep.engine
	if len(e.rma.out) == 0 && !e.inPoll {
		// Through engine-owned copies, so that neither h nor payload
		// escapes through the interface call.
		e.rma.postHdr = h
		iov := e.rma.flushIov[:0]
		if len(payload) > 0 {
			iov = append(iov, e.rma.smallBuf[:copy(e.rma.smallBuf[:], payload)])
		}
		done, err := ep.tp.Send(c, &e.rma.postHdr, iov, cookie, transport.SendCopy)
		e.rma.flushIov[0] = nil
		if !isAgain(err) {
			ep.rmaSent(cookie, done, err)
			return
		}
	}
	e.rma.out = append(e.rma.out, rmaMsg{c: c, h: h, cookie: cookie, flags: transport.SendCopy})
	m := &e.rma.out[len(e.rma.out)-1]
	m.smallLen = copy(m.small[:], payload)
	e.pending++
}

// rmaFlush sends what waits in the outbox, in order, until the wire
// refuses one. The outbox keeps its array: queueing allocates only when
// it grows.
func (ep *Endpoint) rmaFlush() {
	e := &ep.engine
	i := 0
	for ; i < len(e.rma.out); i++ {
		m := &e.rma.out[i]
		iov := m.iov
		if m.smallLen >= 0 {
			iov = e.rma.flushIov[:0]
			if m.smallLen > 0 {
				iov = append(iov, m.small[:m.smallLen])
			}
		}
		done, err := ep.tp.Send(m.c, &m.h, iov, m.cookie, m.flags)
		e.rma.flushIov[0] = nil
		if isAgain(err) {
			break
		}
		cookie := m.cookie
		m.iov = nil
		e.pending--
		ep.rmaSent(cookie, done, err)
	}
	n := copy(e.rma.out, e.rma.out[i:])
	clear(e.rma.out[n:])
	e.rma.out = e.rma.out[:n]
}

// rmaWire counts a send or fetch of op o starting (+1) or ending (-1).
// Those are the engine's pending work (the domain is busy meanwhile); an
// op only waiting for its answer is not: the answer shows in a ring.
func (ep *Endpoint) rmaWire(o *op, d int) {
	o.Proto.wire += d
	ep.engine.pending += d
}

// rmaSent accounts for a send the wire took (or failed at once).
func (ep *Endpoint) rmaSent(cookie uint64, done bool, err error) {
	e := &ep.engine
	if !done && err == nil {
		if cookie == rmaReplyCookie {
			e.pending++ // SendDone takes it back
		}
		return
	}
	if cookie == rmaReplyCookie {
		return
	}
	ep.rmaSendDone(e.ByCookie(cookie), cookie, err)
}

// rmaSendDone: a send of RMA op o (or an answer) finished.
func (ep *Endpoint) rmaSendDone(o *op, cookie uint64, err error) {
	e := &ep.engine
	if cookie == rmaReplyCookie {
		e.pending--
		return
	}
	if o == nil {
		return
	}
	ep.rmaWire(o, -1)
	switch o.Kind {
	case opRMA:
		if err != nil && o.Proto.err == 0 {
			// The request or the data did not get there: no answer
			// will come (one that does finds the op gone).
			o.Proto.err, o.Proto.answered = errnoOf(err), true
		}
		ep.rmaMaybeDone(o)
	case opRMATarget: // a read's bytes went out
		ep.rmaTargetDone(o)
	}
}

// rmaFetchDone: a fetch of RMA op o finished with n bytes.
func (ep *Endpoint) rmaFetchDone(o *op, n int, err error) {
	ep.rmaWire(o, -1)
	if o.Kind == opRMA {
		ep.rmaFetched(o, n, err)
		return
	}
	if o.Proto.stage != nil { // a request that came by rendezvous
		if err == nil && uint64(n) == o.Proto.hdr.Len {
			if rmaKind(&o.Proto.hdr) == rmaColl {
				ep.collStore(&o.Proto.hdr, o.Proto.stage[:n])
			} else {
				ep.rmaServe(&o.Proto.hdr, o.Proto.src, o.Proto.stage[:n])
			}
		}
		ep.rmaTargetDone(o)
		return
	}
	// A long write's bytes are in place.
	errno := fi.Errno(0)
	if err != nil {
		errno = fi.EIO
	}
	ep.rmaWriteLanded(o, errno)
}

// rmaDeliver handles an arrived RMA message (from Deliver).
func (ep *Endpoint) rmaDeliver(h *transport.Header, m *transport.Incoming) {
	e := &ep.engine
	switch rmaKind(h) {
	case rmaAck:
		if o := e.rmaByID(h.Tag); o != nil && o.Proto.write && !o.Proto.answered {
			o.Proto.answered, o.Proto.err = true, fi.Errno(h.Data)
			ep.rmaMaybeDone(o)
		}
		ep.rmaDrop(m)
	case rmaReadResp, rmaAtomicResp:
		o := e.rmaByID(h.Tag)
		if o == nil || o.Proto.write || o.Proto.answered {
			ep.rmaDrop(m)
			return
		}
		o.Proto.answered = true
		if h.Data != 0 || h.Len > o.Len {
			if o.Proto.err = fi.Errno(h.Data); h.Data == 0 {
				o.Proto.err = fi.EIO
			}
			ep.rmaDrop(m)
			ep.rmaMaybeDone(o)
			return
		}
		if !m.IsRndv {
			ep.rmaFetched(o, ep.rmaScatter(o, m.Payload), nil)
			return
		}
		var dst []byte
		if o.Proto.iov == nil {
			dst = cbytes(o.Buf, h.Len)
		} else {
			o.Proto.stage = make([]byte, h.Len)
			dst = o.Proto.stage
		}
		ep.rmaWire(o, 1)
		if done, n, err := ep.tp.Fetch(&m.Rndv, dst, o.ID); done || err != nil {
			ep.rmaWire(o, -1)
			ep.rmaFetched(o, n, err)
		}
	case rmaWrite, rmaWriteLong, rmaRead, rmaAtomic, rmaAtomicFetch, rmaAtomicCompare:
		if !m.IsRndv {
			ep.rmaServe(h, m.SrcEPID, m.Payload)
			return
		}
		// A request larger than the wire's eager size: stage it, within
		// rmaStageMax (its length is the peer's word; Admit has held
		// the sender back until the staged requests before it are done).
		if h.Len > rmaStageMax {
			ep.rmaDrop(m)
			ep.rmaRefuse(h, m.SrcEPID, fi.EMSGSIZE)
			return
		}
		t := e.New(opRMATarget)
		t.Proto.hdr, t.Proto.src = *h, m.SrcEPID
		ep.rmaStage(t, h.Len)
		ep.rmaWire(t, 1)
		if done, n, err := ep.tp.Fetch(&m.Rndv, t.Proto.stage, t.ID); done || err != nil {
			ep.rmaFetchDone(t, n, err)
		}
	case rmaColl:
		ep.collDeliver(h, m)
	case rmaWriteData:
		var prev *op
		t := e.rma.wait
		for ; t != nil; prev, t = t, t.Proto.next {
			if t.Proto.src == m.SrcEPID && t.Proto.peerID == h.Tag {
				break
			}
		}
		if t == nil {
			ep.rmaDrop(m)
			return
		}
		ep.rmaUnwait(prev, t)
		if t.Proto.err != 0 || h.Len != t.Len {
			if t.Proto.err == 0 {
				t.Proto.err = fi.EIO
			}
			ep.rmaDrop(m)
			ep.rmaWriteLanded(t, t.Proto.err)
			return
		}
		if !m.IsRndv {
			ep.rmaWriteLanded(t, copyIn(cbytes(uintptr(t.Proto.addr), t.Len), m.Payload))
			return
		}
		var dst []byte
		if t.Len > 0 {
			dst = cbytes(uintptr(t.Proto.addr), t.Len)
		}
		ep.rmaWire(t, 1)
		if done, n, err := ep.tp.Fetch(&m.Rndv, dst, t.ID); done || err != nil {
			ep.rmaFetchDone(t, n, err)
		}
	default:
		ep.rmaDrop(m)
	}
}

// rmaStage gives target op t a staging buffer of n bytes (rmaAdmit
// bounds their sum); rmaTargetDone frees it.
func (ep *Endpoint) rmaStage(t *op, n uint64) {
	t.Proto.stage = make([]byte, n)
	ep.engine.rma.staged += n
}

// rmaRefuse answers request h from src with errno without serving it.
func (ep *Endpoint) rmaRefuse(h *transport.Header, src uint64, errno fi.Errno) {
	c, err := ep.tp.Connect(src)
	if err != nil {
		return
	}
	ep.rmaCount(errno)
	switch rmaKind(h) {
	case rmaRead:
		ep.rmaAnswer(c, rmaReadResp, h.Tag, errno)
	case rmaAtomicFetch, rmaAtomicCompare:
		ep.rmaAnswer(c, rmaAtomicResp, h.Tag, errno)
	default:
		ep.rmaAnswer(c, rmaAck, h.Tag, errno)
	}
}

// rmaDrop lets go of a message nobody takes.
func (ep *Endpoint) rmaDrop(m *transport.Incoming) {
	if m.IsRndv {
		_ = ep.tp.Discard(&m.Rndv)
	}
}

// copyIn copies an arrived payload into registered memory.
func copyIn(dst, src []byte) fi.Errno {
	if len(src) == 0 {
		return 0
	}
	switch _, bad, _ := umem.Copy(dst, src); bad {
	case umem.Dst:
		return fi.EFAULT
	case umem.Src:
		return fi.EIO
	}
	return 0
}

// rmaServe serves a request that arrived whole: payload is its prefix
// and, for a short write, its bytes.
func (ep *Endpoint) rmaServe(h *transport.Header, src uint64, payload []byte) {
	e := &ep.engine
	if len(payload) < rmaPrefix {
		return // malformed: nothing to answer to
	}
	key := binary.LittleEndian.Uint64(payload[0:])
	addr := binary.LittleEndian.Uint64(payload[8:])
	n := binary.LittleEndian.Uint64(payload[16:])
	c, err := ep.tp.Connect(src)
	if err != nil {
		return // the initiator is gone or not of this job
	}
	// C serves this initiator's later small requests (fastrma.go).
	ep.serveFrom(src, c)
	kind := rmaKind(h)
	if kind >= rmaAtomic {
		ep.atomicServe(h, src, c, payload)
		return
	}
	access := fi.REMOTE_WRITE
	if kind == rmaRead {
		access = fi.REMOTE_READ
	}
	va, mr, errno := ep.dom.mrs.resolve(key, addr, n, access)
	if errno != 0 {
		errno = rmaRemoteErr
	}
	ep.rmaCount(errno)
	switch kind {
	case rmaWrite:
		if errno == 0 && uint64(len(payload)-rmaPrefix) != n {
			errno = fi.EIO
		}
		if errno == 0 && n > 0 {
			errno = copyIn(cbytes(va, n), payload[rmaPrefix:])
		}
		if errno == 0 {
			ep.rmaWritten(h, src, va, n, mr)
		}
		ep.rmaAnswer(c, rmaAck, h.Tag, errno)
	case rmaWriteLong:
		t := e.New(opRMATarget)
		t.Len, t.Proto.conn, t.Proto.peerID, t.Proto.src = n, c, h.Tag, src
		t.Proto.addr, t.Proto.mr, t.Proto.err, t.Proto.hdr, t.Proto.write = uint64(va), mr, errno, *h, true
		t.Proto.next, e.rma.wait = e.rma.wait, t
		e.rma.waiting++
		// Watched until its bytes come, so that an initiator that dies
		// first does not leave it here for good (rmaSweep).
		ep.rmaWatch(t, true)
	case rmaRead:
		if errno != 0 {
			ep.rmaAnswer(c, rmaReadResp, h.Tag, errno)
			return
		}
		if ep.remReadCntr != nil {
			ep.remReadCntr.inc()
		}
		rh := transport.Header{Flags: hfRMA | rmaReadResp<<rmaKindShift, Tag: h.Tag, Len: n}
		if n <= rmaSmall {
			// Copied now into the answer: nothing to track.
			var buf [rmaSmall]byte
			if copyIn(buf[:n], cbytes(va, n)) != 0 {
				ep.rmaAnswer(c, rmaReadResp, h.Tag, fi.EIO)
				return
			}
			ep.rmaPostSmall(c, rh, buf[:n], rmaReplyCookie)
			return
		}
		t := e.New(opRMATarget)
		ep.rmaWire(t, 1)
		var b [][]byte
		if n > 0 {
			b = [][]byte{cbytes(va, n)}
		}
		var flags uint32
		if n <= rmaShortMax {
			flags = transport.SendCopy // eager anyway: the wire is done at once
		}
		ep.rmaPost(c, rh, b, t.ID, flags)
	}
}

// rmaCount counts a request served (errno 0) or refused at the target.
func (ep *Endpoint) rmaCount(errno fi.Errno) {
	if errno == 0 {
		ep.engine.rma.stats.Served++
	} else {
		ep.engine.rma.stats.Refused++
	}
}

// rmaWriteLanded finishes a long write at the target.
func (ep *Endpoint) rmaWriteLanded(t *op, errno fi.Errno) {
	if errno == 0 {
		ep.rmaWritten(&t.Proto.hdr, t.Proto.src, uintptr(t.Proto.addr), t.Len, t.Proto.mr)
	}
	ep.rmaAnswer(t.Proto.conn, rmaAck, t.Proto.peerID, errno)
	ep.rmaTargetDone(t)
}

// rmaWritten reports a remote write at the target: the CQ entry of its
// remote CQ data, the remote-write counter and the region's counter.
func (ep *Endpoint) rmaWritten(h *transport.Header, src uint64, va uintptr, n uint64, mr *MR) {
	if h.Flags&hfData != 0 && ep.rxCQ != nil {
		ep.rxCQ.complete(0, fi.REMOTE_WRITE|fi.RMA|fi.REMOTE_CQ_DATA, n, va, h.Data, 0, src, ep.av)
		ep.events++
	}
	if ep.remWriteCntr != nil {
		ep.remWriteCntr.inc()
	}
	if mr != nil {
		if c := mr.Cntr(); c != nil && c != ep.remWriteCntr {
			c.inc()
		}
	}
}

// rmaAnswer sends an ack or a failed read's answer.
func (ep *Endpoint) rmaAnswer(c transport.Conn, kind uint32, id uint64, errno fi.Errno) {
	ep.rmaPostSmall(c, transport.Header{Flags: hfRMA | kind<<rmaKindShift, Tag: id, Data: uint64(errno)},
		nil, rmaReplyCookie)
}

// rmaTargetDone frees a served op once nothing of it is in flight.
func (ep *Endpoint) rmaTargetDone(t *op) {
	if t.Proto.wire > 0 || t.Kind != opRMATarget {
		return
	}
	if t.Proto.stage != nil {
		ep.engine.rma.staged -= uint64(len(t.Proto.stage))
		t.Proto.stage = nil
	}
	ep.engine.Free(t)
}

// rmaScatter copies a read's bytes into its local buffers; it returns
// the count, or -1 if a buffer could not be written.
func (ep *Endpoint) rmaScatter(o *op, b []byte) int {
	if o.Proto.iov == nil {
		if copyIn(cbytes(o.Buf, uint64(len(b))), b) != 0 {
			return -1
		}
		return len(b)
	}
	off := 0
	for _, v := range o.Proto.iov {
		if off == len(b) {
			break
		}
		k := min(uint64(len(b)-off), v.Len)
		if copyIn(v.Bytes()[:k], b[off:off+int(k)]) != 0 {
			return -1
		}
		off += int(k)
	}
	return off
}

// rmaFetched: a read's bytes arrived (n of them, or err).
func (ep *Endpoint) rmaFetched(o *op, n int, err error) {
	switch {
	case err != nil:
		o.Proto.err = errnoOf(err)
	case n < 0:
		o.Proto.err = fi.EFAULT
	case o.Proto.stage != nil:
		if ep.rmaScatter(o, o.Proto.stage[:n]) < 0 {
			o.Proto.err = fi.EFAULT
		}
		o.Proto.stage = nil
	}
	ep.rmaMaybeDone(o)
}

// rmaMaybeDone completes initiator op o once its answer came and nothing
// of it is in flight: a CQ entry (unless an inject or selective
// completion leaves it out) and the read or write counter.
func (ep *Endpoint) rmaMaybeDone(o *op) {
	if !o.Proto.answered || o.Proto.wire > 0 || o.Kind != opRMA {
		return
	}
	ep.disarm(o)
	ep.rmaWatch(o, false)
	flags, cntr := fi.RMA|fi.READ, ep.readCntr
	if o.Proto.write {
		flags, cntr = fi.RMA|fi.WRITE, ep.writeCntr
	}
	if o.Proto.atomic {
		flags ^= fi.RMA | fi.ATOMIC
	}
	ep.events++
	if o.Proto.err != 0 {
		if ep.txCQ != nil {
			ep.txCQ.completeErr(o.Ctx, flags, 0, 0, 0, 0, o.Proto.err, 0, nil)
		}
		if cntr != nil {
			cntr.incErr()
		}
	} else {
		if ep.txCQ != nil && o.Flags&NoCompletion == 0 && (!ep.txSel || o.Flags&fi.COMPLETION != 0) {
			ep.txCQ.complete(o.Ctx, flags, 0, 0, 0, 0, 0, nil)
		}
		if cntr != nil {
			cntr.inc()
		}
	}
	ep.engine.Free(o)
}

// rmaWatch has the wire watch (on) or stop watching o's peer, o.rma.conn:
// an initiator's op until its answer, a target's write-long request until
// its bytes.
func (ep *Endpoint) rmaWatch(o *op, on bool) {
	w, ok := ep.tp.(transport.Watcher)
	if !ok || o.Proto.watched == on {
		return
	}
	if on {
		w.Watch(o.Proto.conn, 1)
		ep.engine.rma.watched++
	} else {
		w.Watch(o.Proto.conn, -1)
		ep.engine.rma.watched--
	}
	o.Proto.watched = on
}

// rmaUnwait takes write-long request t (after prev, or first) out of the
// list waiting for their bytes.
func (ep *Endpoint) rmaUnwait(prev, t *op) {
	e := &ep.engine
	if prev == nil {
		e.rma.wait = t.Proto.next
	} else {
		prev.Proto.next = t.Proto.next
	}
	t.Proto.next = nil
	e.rma.waiting--
	ep.rmaWatch(t, false)
}

// rmaSweep fails the RMA ops whose target the wire has declared dead:
// their answers will not come. ep.poll runs it now and then while any op
// waits for an answer.
func (ep *Endpoint) rmaSweep() {
	w, ok := ep.tp.(transport.Watcher)
	if !ok {
		return
	}
	for _, o := range ep.engine.Ops() {
		if o.Kind != opRMA || !o.Proto.watched || o.Proto.answered {
			continue
		}
		if err := w.PeerErr(o.Proto.conn); err != nil {
			o.Proto.answered, o.Proto.err = true, errnoOf(err)
			ep.rmaMaybeDone(o)
		}
	}
	ep.collSweep(w)
	// Write-long requests whose initiator died before sending the bytes:
	// nobody is left to answer, so they go.
	var prev *op
	for t := ep.engine.rma.wait; t != nil; {
		next := t.Proto.next
		if w.PeerErr(t.Proto.conn) != nil {
			ep.rmaUnwait(prev, t)
			ep.rmaTargetDone(t)
		} else {
			prev = t
		}
		t = next
	}
}
