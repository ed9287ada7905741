//go:build linux

package shm

// Over 600 lines: the receive side whole, the loop (Poll, holding early
// messages) and a handler per cell kind (inline, eager, RTS, FIN, CTS,
// data, abort) with the streaming of rendezvous data they drive; each
// handler checks a peer's cell against the state the others keep.

import (
	"fmt"
	"runtime"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/ring"
	"github.com/gopsm2/libfabric-psm2/internal/slots"
	"github.com/gopsm2/libfabric-psm2/internal/umem"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Poll services the endpoint: it pushes queued control cells, streams
// rendezvous data to receivers that asked for a copy, takes up to budget
// messages or control cells from the ring (at least one), and, with
// operations pending, checks the liveness of their peers every ~100 ms.
// It returns the number of handler calls made. In steady state it does
// not allocate.
//
// After Close, Poll reports every operation still pending as failed with
// ErrClosed, once, and does nothing else.
func (e *Endpoint) Poll(h transport.Handler, budget int) int {
	if e.closed {
		return e.failAll(h, errClosed)
	}
	ev := 0
	if len(e.ctlPeers) > 0 {
		e.flushAll()
	}
	e.probeHit, e.checkHit = false, false
	budget = max(budget, 1)
	hold, _ := h.(transport.Holder)
	for k := range budget {
		if hold != nil && e.holdHead(hold) {
			break
		}
		if _, ok := e.ring.TryPop(e.rx[:]); !ok {
			if k == 0 {
				ev += e.watchStall()
			}
			break
		}
		e.idleRun = 0
		ev += e.handle(h)
	}
	if len(e.streams) > 0 {
		ev += e.pump(h)
	}
	if e.doomed || ((e.pending > 0 || e.watched > 0 || len(e.ctlPeers) > 0 || e.starved || e.blocked) && e.now() >= e.nextCheck) {
		ev += e.check(h)
	}
	e.publishHint()
	return ev
}

// holdUnits is the most messages holdHead leaves at the head of the ring,
// and C's fast path too (HOLD_UNITS, psm2_held_run): a rank that runs ahead
// sends every message of its next step before the receives for them are
// posted (MPI_Isend to both neighbours of an exchange, a pairwise
// all-to-all), and those, taken as unexpected, would send each receive of
// the step through Go. A bound, because a held eager message keeps its
// sender's bounce buffer.
const holdUnits = 4

// takeSpan bounds how far behind the head of the ring C takes a message
// out of ring order, in cells (TAKE_SPAN, psm2_later_match; at most a
// quarter of the ring): its cells stay until the head goes, and a head
// whose receive comes late must not leave the ring full of them.
const takeSpan = 16

// holdHead reports whether the next messages stay in the ring
// (transport.Holder): inline or eager messages, at most holdUnits, that are
// everything the ring holds, and the handler asks for each. It reads the
// shared cells' kind, length, tag and flags without taking them: the
// handler only decides on them whether to look again later.
func (e *Endpoint) holdHead(h transport.Holder) bool {
	at := uint64(0)
	for units := 0; ; {
		b, ok := e.ring.PeekCell(at)
		if !ok {
			return units > 0
		}
		if b[offCellKind] == cellTaken {
			at++ // delivered already (psm2_later_match): no message
			continue
		}
		if units == holdUnits {
			return false
		}
		cells := 1
		switch b[offCellKind] {
		case cellInline:
			cells = inlineCells(int(get16(b, offCellShort)), b[offCellFlags]&cellHasData != 0)
			if cells > ring.MaxPushCells {
				return false
			}
		case cellEager:
		default:
			return false
		}
		// e.hdr, lent for the call as Deliver's is: a local would
		// escape through the interface, an allocation per message.
		e.hdr = transport.Header{Tag: get64(b, offCellW2), Flags: get32(b, offCellHFlags)}
		if !h.Hold(&e.hdr) {
			return false
		}
		at += uint64(cells)
		units++
	}
}

// handle acts on the cell in e.rx and returns the handler calls made.
func (e *Endpoint) handle(h transport.Handler) int {
	switch e.rx[offCellKind] {
	case cellInline:
		return e.onInline(h)
	case cellEager:
		return e.onEager(h)
	case cellRTS:
		return e.onRTS(h)
	case cellFIN:
		return e.onFIN(h)
	case cellCTS:
		e.onCTS()
		return 0
	case cellData:
		return e.onData(h)
	case cellSplit:
		e.onSplit()
		return 0
	case cellAnswerBuf:
		return e.onAnswerBuf(h)
	case cellTaken:
		return 0 // delivered by the C fast path already
	}
	// Unknown kinds, and continuation cells without their head.
	return e.drop()
}

func (e *Endpoint) drop() int {
	e.stats.Dropped++
	return 0
}

// header fills e.hdr and e.inc with what every message cell carries.
func (e *Endpoint) header(length uint64) uint64 {
	b := e.rx[:]
	epid := get64(b, offCellEPID)
	e.hdr = transport.Header{Tag: get64(b, offCellW2), Flags: get32(b, offCellHFlags), Len: length}
	if b[offCellFlags]&cellHasData != 0 {
		e.hdr.Data = get64(b, offCellW3)
	}
	e.inc = transport.Incoming{SrcEPID: epid}
	return epid
}

// srcOf returns the Conn of peer p for Incoming.Src: 0 unless this
// endpoint connected to it.
func srcOf(p *peer) transport.Conn {
	if p == nil || !p.connected {
		return 0
	}
	return transport.Conn(p.idx + 1)
}

// deliver hands the message in e.hdr and e.inc to h.
func (e *Endpoint) deliver(h transport.Handler) int {
	e.stats.Received++
	h.Deliver(&e.hdr, &e.inc)
	e.inc = transport.Incoming{} // drop the borrowed payload
	return 1
}

// onInline delivers an inline message, taking its continuation cells
// from the ring.
func (e *Endpoint) onInline(h transport.Handler) int {
	b := e.rx[:]
	n := int(get16(b, offCellShort))
	hasData := b[offCellFlags]&cellHasData != 0
	cells := inlineCells(n, hasData)
	if cells > ring.MaxPushCells {
		return e.drop() // its continuations are dropped one by one
	}
	start := offCellW3
	if hasData {
		start = offCellW4
	}
	epid := e.header(uint64(n))
	if cells == 1 {
		e.inc.Payload = b[start : start+n : start+n]
	} else {
		got := copy(e.payload[:], b[start:])
		for k := 1; k < cells; k++ {
			// The unit's cells were published before its head; anything
			// else here is not ours to take.
			if kind, ok := e.ring.Peek(); !ok || kind != cellCont {
				return e.drop()
			}
			e.ring.TryPop(e.rx[:])
			got += copy(e.payload[got:], e.rx[offContPayload:])
		}
		e.inc.Payload = e.payload[:n:n]
	}
	e.inc.Src = srcOf(e.lookup(epid))
	return e.deliver(h)
}

// onEager delivers a message whose payload is in the sender's bounce
// buffer, then releases the buffer.
func (e *Endpoint) onEager(h transport.Handler) int {
	b := e.rx[:]
	n := get64(b, offCellW4)
	i := int(get16(b, offCellShort))
	epid := e.header(n)
	p := e.sender(epid)
	if p == nil {
		return e.drop()
	}
	buf := p.seg.Buffer(i)
	if buf == nil {
		return e.drop()
	}
	if n > uint64(len(buf)) {
		e.release(p, i)
		return e.drop()
	}
	if b[offCellFlags]&cellStream != 0 && !e.awaitStream(p, get64(b, offCellW5), n) {
		e.stats.Faults++
		e.release(p, i)
		return e.drop()
	}
	e.inc.Payload = buf[:n:n]
	e.inc.Src = srcOf(p)
	ev := e.deliver(h)
	e.release(p, i)
	return ev
}

// onAnswerBuf delivers a message the sender wrote into one of our own
// bounce buffers (cellAnswerBuf): one we handed to that sender and have
// not got back. Then the buffer is ours again.
func (e *Endpoint) onAnswerBuf(h transport.Handler) int {
	b := e.rx[:]
	n := get64(b, offCellW4)
	i := int(get16(b, offCellShort))
	epid := e.header(n)
	p := e.sender(epid)
	if p == nil || i >= MaxBuffers || e.busy.Load()&e.allBufs&(1<<i) == 0 || e.holder[i] != p.idx {
		return e.drop()
	}
	buf := e.seg.Buffer(i)
	if buf == nil || n > uint64(len(buf)) {
		e.freeBuf(i)
		return e.drop()
	}
	e.inc.Payload = buf[:n:n]
	e.inc.Src = srcOf(p)
	ev := e.deliver(h)
	e.freeBuf(i)
	return ev
}

// awaitStream waits until sender p has filled the n bytes of its stream
// seq (cellStream): true once they are there, false if the stream broke
// (the sender's copy faulted) or p is gone, closed or has not finished
// within the connection timeout. The sender is inside one C call copying
// at memory speed, so this is normally a short spin; then it yields, and
// checks p every millisecond (and, past the connection timeout, sleeps
// between checks).
func (e *Endpoint) awaitStream(p *peer, seq, n uint64) bool {
	w := p.seg.Stream()
	var deadline, next int64
	for k := 0; ; k++ {
		v := w.Load()
		if v>>32 != seq&0xffffffff {
			// A later stream: ours was filled, unless it broke.
			b := p.seg.StreamBroken().Load()
			return b == 0 || b>>32 != seq&0xffffffff
		}
		if got := v & 0xffffffff; got == streamBroken {
			return false
		} else if got >= n {
			return true
		}
		if k < 4096 {
			continue
		}
		runtime.Gosched()
		now := e.now()
		if deadline == 0 {
			deadline = now + int64(e.cfg.ConnTimeout)
		}
		if now >= next {
			next = now + int64(time.Millisecond)
			if p.seg.Closed() {
				return false
			}
			if alive, err := processAlive(p.pid); err == nil && !alive {
				return false
			}
			// A live sender that has not finished within the
			// connection timeout (stopped, or starved of CPU) is
			// still waited for, as any live peer is; it would
			// report the send as done, so dropping it would lose it.
			if now >= deadline {
				time.Sleep(time.Millisecond)
			}
		}
	}
}

// release clears the busy bit of p's bounce buffer i and rings p's
// doorbell, in case it waits for a free buffer.
func (e *Endpoint) release(p *peer, i int) {
	p.busy.And(^(uint64(1) << i))
	e.ring2(p)
}

// onRTS delivers a rendezvous message.
func (e *Endpoint) onRTS(h transport.Handler) int {
	b := e.rx[:]
	n := get64(b, offCellW4)
	epid := e.header(n)
	p := e.sender(epid)
	if p == nil || n == 0 {
		return e.drop()
	}
	e.inc.Src = srcOf(p)
	e.inc.IsRndv = true
	e.inc.Rndv = transport.Rndv{W: [6]uint64{
		epid,
		get64(b, offCellW5), // address
		n,
		get64(b, offCellW6), // send id
		uint64(p.gen)<<32 | uint64(p.idx+1),
		e.token,
	}, Wire: transport.WireShm}
	return e.deliver(h)
}

// onFIN completes a rendezvous send: the receiver fetched, discarded or
// gave up.
func (e *Endpoint) onFIN(h transport.Handler) int {
	b := e.rx[:]
	id := get64(b, offCellW2)
	op := e.sendByID(id)
	if op == nil || e.peers[op.peer].epid != get64(b, offCellEPID) {
		return e.drop()
	}
	st := b[offCellFlags]
	err := sendError(st)
	switch st {
	case finOK:
	case finTimeout:
		e.stats.Timeouts++
	default:
		e.stats.Faults++
	}
	slot := int(slots.Index(id))
	if op.state == opStream {
		e.unstream(slot)
	}
	return e.finishSend(h, slot, err)
}

// finishSend reports send slot done with err and frees it.
func (e *Endpoint) finishSend(h transport.Handler, slot int, err error) int {
	op := e.sends.At(uint32(slot))
	if op.local {
		localDrop(e.epid, e.sends.ID(uint32(slot)))
	}
	cookie := op.cookie
	p := e.peers[op.peer]
	p.ops--
	p.sendsTo--
	e.pending--
	op.state = opFinished
	e.releaseSend(slot)
	h.SendDone(cookie, err)
	return 1
}

// onCTS starts streaming a rendezvous send to a receiver that cannot read
// this process's memory.
func (e *Endpoint) onCTS() {
	b := e.rx[:]
	id := get64(b, offCellW2)
	op := e.sendByID(id)
	if op == nil || op.state != opWait || e.peers[op.peer].epid != get64(b, offCellEPID) {
		e.drop()
		return
	}
	want := get64(b, offCellW4)
	op.state = opStream
	op.fetchID = get64(b, offCellW3)
	op.off = 0
	op.want = int(min(want, uint64(len(op.data))))
	slot := int(slots.Index(id))
	e.streams = append(e.streams, int32(slot))
}

// onData copies one chunk of a copy rendezvous into the fetch's
// destination and releases the sender's bounce buffer. A destination
// that cannot be written fails the fetch, and a FIN tells the sender.
func (e *Endpoint) onData(h transport.Handler) int {
	b := e.rx[:]
	epid := get64(b, offCellEPID)
	p := e.lookup(epid)
	if p == nil {
		return e.drop()
	}
	if b[offCellFlags] != finOK {
		return e.onAbort(h, p)
	}
	i := int(get16(b, offCellShort))
	buf := p.seg.Buffer(i)
	if buf == nil {
		return e.drop()
	}
	defer e.release(p, i)
	id := get64(b, offCellW2)
	off, n := get64(b, offCellW3), get64(b, offCellW4)
	op := e.fetchByID(id)
	if op == nil || e.peers[op.peer] != p || op.sendID != get64(b, offCellW5) ||
		n > uint64(len(buf)) || off > uint64(len(op.dst)) || n > uint64(len(op.dst))-off {
		return e.drop()
	}
	slot := int(slots.Index(id))
	if _, bad, _ := umem.Copy(op.dst[off:], buf[:n]); bad != umem.None {
		// Our destination, or (SIGBUS: a segment cut short) the
		// sender's bounce buffer. Later DATA cells of the stream find
		// no fetch and are dropped, releasing their buffers.
		st := byte(finDstFault)
		if bad == umem.Src {
			st = finFailed
		}
		return e.finishFetch(h, slot, 0, e.fetchFailed(p, op.sendID, st, nil))
	}
	op.got += int(n)
	op.last = e.now()
	if op.got < len(op.dst) {
		return 0
	}
	e.stats.RndvCopy++
	e.stats.FetchedBytes += uint64(len(op.dst))
	return e.finishFetch(h, slot, len(op.dst), nil)
}

// onAbort fails the fetch a DATA cell without data names: its sender
// could not read its own buffer (finSrcFault) or copy it (finFailed),
// and has ended the send.
func (e *Endpoint) onAbort(h transport.Handler, p *peer) int {
	b := e.rx[:]
	st := b[offCellFlags]
	id := get64(b, offCellW2)
	op := e.fetchByID(id)
	if (st != finSrcFault && st != finFailed) || get16(b, offCellShort) != noBuffer ||
		get64(b, offCellW3) != 0 || get64(b, offCellW4) != 0 ||
		op == nil || e.peers[op.peer] != p || op.sendID != get64(b, offCellW5) {
		return e.drop()
	}
	// Where our copy would have gone on: if our buffer is bad there too,
	// that is what we report, as the other protocols would.
	if st == finSrcFault && op.got < len(op.dst) && !umem.Writable(op.dst[op.got:]) {
		st = finBothFault
	}
	slot := int(slots.Index(id))
	e.stats.Faults++
	return e.finishFetch(h, slot, 0, fmt.Errorf("shm: fetch from %#x: %w", p.epid, fetchError(st, nil)))
}

// finishFetch reports fetch slot done and frees it.
func (e *Endpoint) finishFetch(h transport.Handler, slot, n int, err error) int {
	op := e.fetches.At(uint32(slot))
	cookie := op.cookie
	e.peers[op.peer].ops--
	e.pending--
	op.state = opFinished
	e.releaseFetch(slot)
	h.FetchDone(cookie, n, err)
	return 1
}

// pump streams the data of the sends in e.streams into bounce buffers,
// one DATA cell per buffer, as far as free buffers and room in the
// receivers' rings allow. A send whose data is all in buffers is done:
// its caller's memory is no longer needed.
func (e *Endpoint) pump(h transport.Handler) int {
	ev := 0
	for k := 0; k < len(e.streams); {
		slot := int(e.streams[k])
		op := e.sends.At(uint32(slot))
		p := e.peers[op.peer]
		if p.dead != nil {
			k++ // the liveness check fails it
			continue
		}
		failed := false
		for op.off < op.want {
			i, ok := e.allocBuf(e.reserve)
			if !ok {
				return ev
			}
			n := min(op.want-op.off, e.seg.BufferSize())
			if _, bad, _ := umem.Copy(e.seg.Buffer(i), op.data[op.off:op.off+n]); bad != umem.None {
				e.freeBuf(i)
				st := byte(finSrcFault)
				if bad == umem.Dst {
					st = finFailed // our own bounce buffer: not the application's doing
				}
				ev += e.abortStream(h, p, k, slot, st)
				failed = true
				break
			}
			c := e.tx[:ring.CellPayload]
			putCommon(c, cellData, 0, uint16(i), 0, e.epid)
			put64(c, offCellW2, op.fetchID)
			put64(c, offCellW3, uint64(op.off))
			put64(c, offCellW4, uint64(n))
			put64(c, offCellW5, e.sends.ID(uint32(slot)))
			put64(c, offCellW6, 0)
			if err := p.ring.TryPush(c); err != nil {
				e.freeBuf(i)
				if err != ring.ErrFull {
					e.kill(p, transport.ErrPeerDead, "ring corrupt")
				}
				break
			}
			e.holder[i] = p.idx
			op.off += n
			e.ring2(p)
		}
		if failed {
			continue // abortStream took it out of e.streams
		}
		if op.off < op.want {
			k++
			continue
		}
		e.streams = append(e.streams[:k], e.streams[k+1:]...)
		e.stats.RndvCopy++
		ev += e.finishSend(h, slot, nil)
	}
	return ev
}

// abortStream ends send slot, the k-th of e.streams, which could not copy
// its data into a bounce buffer: a DATA cell without data fails the
// receiver's fetch (status st: finSrcFault or finFailed), and the send
// fails here. Chunks already streamed are dropped by the receiver.
func (e *Endpoint) abortStream(h transport.Handler, p *peer, k, slot int, st byte) int {
	op := e.sends.At(uint32(slot))
	c := e.tx[:ring.CellPayload]
	putCommon(c, cellData, st, noBuffer, 0, e.epid)
	put64(c, offCellW2, op.fetchID)
	put64(c, offCellW3, 0)
	put64(c, offCellW4, 0)
	put64(c, offCellW5, e.sends.ID(uint32(slot)))
	put64(c, offCellW6, 0)
	e.control(p, c)
	e.streams = append(e.streams[:k], e.streams[k+1:]...)
	e.stats.Faults++
	err := errSendFault
	if st != finSrcFault {
		err = errCopyFailed
	}
	return e.finishSend(h, slot, err)
}

// unstream removes send slot from e.streams.
func (e *Endpoint) unstream(slot int) {
	for k, s := range e.streams {
		if int(s) == slot {
			e.streams = append(e.streams[:k], e.streams[k+1:]...)
			return
		}
	}
}

// control pushes control cell c to p, or queues it behind p's earlier
// control cells if it cannot go now; queued cells go out, in order, from
// Poll. Control cells are never dropped while p lives.
func (e *Endpoint) control(p *peer, c []byte) {
	if p.dead != nil {
		return
	}
	if p.ctlHead == len(p.ctl) {
		err := p.ring.TryPush(c)
		if err == nil {
			e.ring2(p)
			return
		}
		if err != ring.ErrFull {
			e.kill(p, transport.ErrPeerDead, "ring corrupt")
			return
		}
		if !p.inCtl {
			p.inCtl = true
			e.ctlPeers = append(e.ctlPeers, p.idx)
		}
	}
	p.ctl = append(p.ctl, cell(c))
	e.stats.Queued++
	if len(p.ctl)-p.ctlHead == 1 {
		e.syncFast(p) // C producers must not overtake the queue
	}
}

// flush pushes p's queued control cells; it reports whether none is left.
func (e *Endpoint) flush(p *peer) bool {
	pushed := false
	for p.ctlHead < len(p.ctl) {
		err := p.ring.TryPush(p.ctl[p.ctlHead][:])
		if err != nil {
			if err != ring.ErrFull {
				e.kill(p, transport.ErrPeerDead, "ring corrupt")
			}
			break
		}
		p.ctlHead++
		pushed = true
	}
	if pushed {
		e.ring2(p)
	}
	if p.ctlHead < len(p.ctl) {
		return false
	}
	p.ctl, p.ctlHead = p.ctl[:0], 0
	e.syncFast(p)
	return true
}

// flushAll flushes every peer with queued control cells.
func (e *Endpoint) flushAll() {
	k := 0
	for _, i := range e.ctlPeers {
		p := e.peers[i]
		if p.dead == nil && !e.flush(p) {
			e.ctlPeers[k] = i
			k++
		} else {
			p.inCtl = false
		}
	}
	e.ctlPeers = e.ctlPeers[:k]
}
