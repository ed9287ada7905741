package provider

import (
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/internal/umem"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// The send queue. A wire refuses a send it has no room for right now (shm:
// the peer's ring is full or every bounce buffer is out; hfi: its queue
// is at its bound) and says so with ErrAgain. psm2 never refuses one:
// psm2_mq_isend queues it, and the provider reports an unlimited transmit
// queue (tx_attr.size). An MPI library that is told -FI_EAGAIN polls until
// the send goes, so its MPI_Isend to a peer that is not polling (one busy
// computing, or asleep) would block until that peer polls (MPICH's
// pt2pt/sendrecv3 test fails on that). So the provider queues such a send,
// in posting order per peer, and hands it to the wire when there is room;
// its completion comes then, as for any send.
//
// Queued sends move on every progress call (fi_cq_read and the like), on
// every later send, and, for an application that does neither for a while
// (a thread that only injects), from a domain goroutine every
// sendQTick while anything is queued: PSM2's receive thread does the same
// for psm2. While an endpoint has sends queued, C posts none for it (they
// could overtake the queue) and its domain is busy, so fi_cq_read comes to
// Go.
//
// The same goroutine polls an endpoint whose network wire has work
// (netWire), once a tick passes without the application's own progress:
// packets of sends it already reported complete that only a poll sends
// (the hfi wire: a burst held for the next poll, an eager message past
// the flow window, whose rest waits for an ACK the poll reads), ACKs it
// owes, probes to answer, timers to run. An application that sends and
// then waits outside libfabric (an out-of-band barrier, as fabtests do
// between phases) for a peer that waits for those packets would otherwise
// hang both; one that computes for longer than FI_PSM2_CONN_TIMEOUT
// without a call would be declared dead by a peer that sent to it. While
// a network wire is open the goroutine stays, ticking slowly (idleTick).

// sendQMax bounds the queued sends of an endpoint; past it a send is
// answered -FI_EAGAIN, which libfabric allows for a full transmit queue.
const sendQMax = 1 << 16

// sendQTick is the period of the domain goroutine that moves queued sends
// nobody else moves.
const sendQTick = time.Millisecond

// queuedSend is a send waiting for room on the wire.
type queuedSend struct {
	o      *op
	h      transport.Header
	iov    [][]byte
	tflags uint32
}

// peerQ is one peer's queued sends, oldest first from head.
type peerQ struct {
	c    transport.Conn
	q    []queuedSend
	head int
}

// sendQueue is an endpoint's queued sends, per peer.
type sendQueue struct {
	n     int // queued sends
	peers []*peerQ
	free  []*peerQ
}

// holds reports whether sends to c are queued.
func (sq *sendQueue) holds(c transport.Conn) bool { return sq.find(c) != nil }

func (sq *sendQueue) find(c transport.Conn) *peerQ {
	for _, p := range sq.peers {
		if p.c == c {
			return p
		}
	}
	return nil
}

// sendQCopyMax: a queued send up to this long is copied (see queueSend).
const sendQCopyMax = 64 << 10

// queueSend queues send o to c with the header in the engine and iov.
// Its bytes are copied now if it is an inject (its buffer is the caller's
// again when the call returns) or short enough to travel eagerly: psm2
// copies an eager message at the call, and programs written against
// providers that send such messages at once reuse the buffer before the
// completion. A longer send's buffer stays the caller's until its
// completion, as always, so the queue keeps only the iov.
func (ep *Endpoint) queueSend(o *op, c transport.Conn, iov [][]byte, tflags uint32) fi.Errno {
	e := &ep.engine
	q := queuedSend{o: o, h: e.hdr, tflags: tflags}
	if tflags&transport.SendCopy != 0 || e.hdr.Len <= sendQCopyMax {
		var b []byte
		for _, v := range iov {
			n := len(b)
			b = append(b, make([]byte, len(v))...)
			if _, bad, _ := umem.Copy(b[n:], v); bad != umem.None {
				// The caller's buffer is unreadable: failed, as the wire
				// fails such a send.
				ep.completeSend(o, fi.EFAULT)
				e.Free(o)
				return 0
			}
		}
		q.iov = [][]byte{b}
	} else {
		q.iov = slices.Clone(iov)
	}
	sq := &e.sendQ
	p := sq.find(c)
	if p == nil {
		if k := len(sq.free); k > 0 {
			p, sq.free = sq.free[k-1], sq.free[:k-1]
		} else {
			p = &peerQ{}
		}
		p.c = c
		sq.peers = append(sq.peers, p)
	}
	p.q = append(p.q, q)
	sq.n++
	e.pending++ // the domain is busy: polls come to Go
	if sq.n == 1 {
		ep.syncFastLocked() // C stops posting sends
		ep.dom.armSendQLocked()
	}
	return 0
}

// flushSendQ hands queued sends to the wire, each peer's in order, until
// the wire refuses one of that peer's. The caller holds the domain lock.
func (ep *Endpoint) flushSendQ() {
	e := &ep.engine
	sq := &e.sendQ
	for i := 0; i < len(sq.peers); {
		p := sq.peers[i]
		for p.head < len(p.q) {
			s := &p.q[p.head]
			done, err := ep.tp.Send(p.c, &s.h, s.iov, s.o.ID, s.tflags)
			if err != nil && errnoOf(err) == fi.EAGAIN {
				break
			}
			o := s.o
			p.q[p.head] = queuedSend{}
			p.head++
			sq.n--
			e.pending--
			switch {
			case err != nil:
				ep.completeSend(o, errnoOf(err))
				e.Free(o)
			case done:
				ep.completeSend(o, 0)
				e.Free(o)
			default:
				e.pending++ // a rendezvous: SendDone completes it
			}
		}
		if p.head < len(p.q) {
			i++
			continue
		}
		p.q, p.head = p.q[:0], 0
		sq.free = append(sq.free, p)
		sq.peers[i] = sq.peers[len(sq.peers)-1]
		sq.peers[len(sq.peers)-1] = nil
		sq.peers = sq.peers[:len(sq.peers)-1]
	}
	if sq.n == 0 {
		ep.syncFastLocked() // C may post sends again
	}
}

// dropSendQ forgets the queued sends of a closing endpoint (without
// completions, as for its other pending operations).
func (ep *Endpoint) dropSendQ() {
	e := &ep.engine
	for _, p := range e.sendQ.peers {
		for i := p.head; i < len(p.q); i++ {
			e.Free(p.q[i].o)
			e.pending--
		}
	}
	e.sendQ = sendQueue{}
}

// netWire is a wire with a network under it (route.Endpoint over hfi):
// its network may have work only a poll does (NetIdle false) even when
// the application makes no calls, and it may keep packets of sends it
// reported complete (Unsent). Only that work makes the mover poll: with
// manual progress, a same-host message waits for the application's call.
type netWire interface {
	Networked() bool
	NetIdle() bool
	Unsent() bool
}

// sendQMover is the domain goroutine that moves queued sends and polls
// network wires the application leaves alone.
type sendQMover struct {
	stop chan struct{}
	done chan struct{}
	kick chan struct{} // work came while it ticked slowly or was parked
	// queued: sends wait in a queue (tick sendQTick); else the tick is
	// between unsentTick and idleTick.
	queued atomic.Bool
	// slow: the tick is longer than unsentTick (a send that leaves
	// network work kicks it back).
	slow atomic.Bool
	// parked: no timer runs; the goroutine waits for a kick: from a send
	// that leaves network work (Stalled), from arrived packets (the
	// receive thread, without the lock), or from a queued send.
	parked atomic.Bool
}

// The mover's period while no send is queued: unsentTick after a tick
// that found a wire's work to do (or after a kick), doubling up to
// idleTick while the application polls by itself. A tick without the
// application's calls and without work parks it: nothing wakes an idle
// process. It stays while a network wire is open: a peer sends to an
// application that computes for seconds without a call, and that peer
// must hear the ACKs and probe answers only a poll makes (or it would
// declare this one dead after FI_PSM2_CONN_TIMEOUT), as psm2's receive
// thread answers them. Wake-ups every millisecond cost a stream of small
// messages across hosts 2-5% of its rate on a 2-core machine; these cost
// nothing measurable.
const (
	unsentTick = 10 * time.Millisecond
	idleTick   = 160 * time.Millisecond
)

// armSendQLocked starts the domain's mover unless it runs, or the
// progress goroutine (which polls anyway) does, or the domain is
// unlocked (FI_PSM2_LOCK_LEVEL=0: no second thread may touch it; the
// application's own calls move the queue). The caller holds the lock.
func (d *Domain) armSendQLocked() { d.armMoverLocked(true) }

// armUnsentLocked is armSendQLocked for a wire's work after a completed
// send (hfi.Config.Stalled), and for a network wire being enabled.
func (d *Domain) armUnsentLocked() { d.armMoverLocked(false) }

func (d *Domain) armMoverLocked(queued bool) {
	if d.prog != nil || !d.locking || d.closed {
		return
	}
	if m := d.sendQMover; m != nil {
		switch {
		case queued && !m.queued.Load():
			m.queued.Store(true)
			m.parked.Store(false)
			m.poke()
		case m.slow.Load():
			m.slow.Store(false)
			m.parked.Store(false)
			m.poke()
		}
		return
	}
	m := &sendQMover{stop: make(chan struct{}), done: make(chan struct{}), kick: make(chan struct{}, 1)}
	m.queued.Store(queued)
	d.sendQMover = m
	d.moverRef.Store(m)
	go d.runSendQ(m)
}

// netArrived runs on a network wire's receive thread after packets came:
// it wakes a parked mover.
func (d *Domain) netArrived() {
	// The CAS alone, no plain load first: a locked instruction orders
	// the ring's publishing store (a plain store on amd64) before the
	// read of parked, as the mover's exchange orders its parked store
	// before its look at the ring. About 20 ns a received batch.
	if m := d.moverRef.Load(); m != nil && m.parked.CompareAndSwap(true, false) {
		m.poke()
	}
}

func (m *sendQMover) poke() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

func (d *Domain) runSendQ(m *sendQMover) {
	defer close(m.done)
	tick := unsentTick
	if m.queued.Load() {
		tick = sendQTick
	}
	t := time.NewTimer(tick)
	defer t.Stop()
	seen := d.passes.Load()
	for {
		select {
		case <-m.stop:
			return
		case <-m.kick:
			tick = unsentTick
			if m.queued.Load() {
				tick = sendQTick
			}
			t.Reset(tick) // (Go 1.23+: no stale tick to drain)
			seen = d.passes.Load()
			continue
		case <-t.C:
		}
		// An application that makes progress passes moves its wires
		// itself: poll one only after a tick without a pass, and while
		// no send is queued, do not even take the lock before then.
		passes := d.passes.Load()
		idle := passes == seen
		seen = passes
		if !idle && !m.queued.Load() {
			tick = min(2*tick, idleTick)
			m.slow.Store(tick > unsentTick)
			t.Reset(tick)
			continue
		}
		stop, park := d.moverPass(m, idle, seen, &tick)
		if stop {
			return
		}
		if park {
			t.Stop() // no timer: only a kick (or stop) wakes it
			continue
		}
		t.Reset(tick)
	}
}

// moverPass is one look of the mover at the domain's endpoints, under
// the lock: move queued sends, poll network wires with work (when the
// application made no pass since seen), and choose the next tick. stop:
// nothing left to keep it (no network wire, nothing queued); park: wait
// for a kick, no timer. A panic in a poll is recovered (the lock does not
// stay held) and reported, as the progress thread's are.
func (d *Domain) moverPass(m *sendQMover, idle bool, seen uint64, tick *time.Duration) (stop, park bool) {
	defer func() {
		if v := recover(); v != nil {
			d.prov.Recovered("the send-queue goroutine", v, debug.Stack())
			stop, park, *tick = false, false, unsentTick
		}
	}()
	d.lock()
	defer d.unlock()
	if idle && d.passes.Load() != seen {
		idle = false // a pass came meanwhile: the application polls
	}
	// Parked before looking (a locked exchange: a full fence): a packet
	// published after the look finds it parked and kicks it (netArrived).
	m.parked.Store(idle)
	nets, queued, work := 0, 0, false
	for _, ep := range d.eps {
		if ep.sendQ.n > 0 {
			ep.flushSendQ()
			queued += ep.sendQ.n
		}
		w, ok := ep.tp.(netWire)
		if !ok || !w.Networked() {
			continue
		}
		nets++
		if ep.waiters.Load() > 0 {
			// A thread asleep on the wire (it reads the wire's timers
			// without the lock) makes passes of its own; new work
			// after it wakes kicks the mover as any other.
			continue
		}
		if !w.NetIdle() {
			if idle {
				ep.poll()
			}
			work = true
		}
		if w.Unsent() {
			work = true
		}
	}
	if work && d.trigPending > 0 {
		d.runTriggersLocked()
	}
	m.queued.Store(queued > 0)
	stop = nets == 0 && queued == 0
	if stop {
		d.sendQMover = nil
		d.moverRef.Store(nil)
	}
	park = idle && !work && queued == 0
	if !park {
		m.parked.Store(false)
	}
	switch {
	case queued > 0:
		*tick = sendQTick
	case work:
		*tick = unsentTick
	default:
		*tick = min(2**tick, idleTick)
	}
	m.slow.Store(park || *tick > unsentTick)
	d.refreshFast()
	return stop, park
}

// stopSendQ stops the send-queue goroutine, if it runs, and waits for it.
func (d *Domain) stopSendQ() {
	d.lock()
	m := d.sendQMover
	d.sendQMover = nil
	d.moverRef.Store(nil)
	d.unlock()
	if m != nil {
		close(m.stop)
		<-m.done
	}
}
