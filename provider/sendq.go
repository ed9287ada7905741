package provider

import (
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
// The same goroutine polls an endpoint whose wire keeps packets of sends
// it already reported complete, packets that only a poll sends (the hfi
// wire: a burst held for the next poll, an eager message past the flow
// window, whose rest waits for an ACK the poll reads; unsenter), once a
// tick passes without the application's own progress. An application
// that sends and then waits outside libfabric (an out-of-band barrier, as
// fabtests do between phases) for a peer that waits for those packets
// would otherwise hang both.

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
				e.freeOp(o)
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
			done, err := ep.tp.Send(p.c, &s.h, s.iov, s.o.id, s.tflags)
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
				e.freeOp(o)
			case done:
				ep.completeSend(o, 0)
				e.freeOp(o)
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
			e.freeOp(p.q[i].o)
			e.pending--
		}
	}
	e.sendQ = sendQueue{}
}

// unsenter is a wire that may keep packets only a later poll sends
// (route.Endpoint, over hfi).
type unsenter interface{ Unsent() bool }

// sendQMover is the domain goroutine that moves queued sends.
type sendQMover struct {
	stop chan struct{}
	done chan struct{}
	kick chan struct{} // queued sends came while it ticked slowly
	// queued: sends wait in a queue (tick sendQTick); else only a wire's
	// unsent packets (tick unsentTick).
	queued atomic.Bool
}

// unsentTick is the mover's period while only a wire's unsent packets
// keep it: a safety net for an application that stopped polling, whose
// wake-ups every millisecond cost a stream of small messages across hosts
// 2-5% of its rate on a 2-core machine.
const unsentTick = 10 * time.Millisecond

// armSendQLocked starts the domain's send-queue goroutine unless it runs,
// or the progress goroutine (which polls anyway) does, or the domain is
// unlocked (FI_PSM2_LOCK_LEVEL=0: no second thread may touch it; the
// application's own calls move the queue). The caller holds the lock.
func (d *Domain) armSendQLocked() { d.armMoverLocked(true) }

// armUnsentLocked is armSendQLocked for a wire's unsent packets
// (hfi.Config.Stalled).
func (d *Domain) armUnsentLocked() { d.armMoverLocked(false) }

func (d *Domain) armMoverLocked(queued bool) {
	if d.prog != nil || !d.locking || d.closed {
		return
	}
	if m := d.sendQMover; m != nil {
		if queued && !m.queued.Load() {
			m.queued.Store(true)
			select {
			case m.kick <- struct{}{}:
			default:
			}
		}
		return
	}
	m := &sendQMover{stop: make(chan struct{}), done: make(chan struct{}), kick: make(chan struct{}, 1)}
	m.queued.Store(queued)
	d.sendQMover = m
	go d.runSendQ(m)
}

func (d *Domain) runSendQ(m *sendQMover) {
	defer close(m.done)
	t := time.NewTimer(sendQTick)
	defer t.Stop()
	seen := d.passes.Load()
	for {
		select {
		case <-m.stop:
			return
		case <-m.kick:
			t.Reset(sendQTick) // (Go 1.23+: no stale tick to drain)
			continue
		case <-t.C:
		}
		if m.queued.Load() {
			t.Reset(sendQTick)
		} else {
			t.Reset(unsentTick)
		}
		// An application that makes progress passes moves its wires
		// itself: poll one only after a tick without a pass, and while
		// only wires keep the goroutine, do not even take the lock
		// before then (it stays, ticking slowly, until such a tick).
		passes := d.passes.Load()
		idle := passes == seen
		seen = passes
		if !idle && !m.queued.Load() {
			continue
		}
		d.lock()
		if idle && d.passes.Load() != seen {
			idle = false // a pass came meanwhile: the application polls
		}
		left, queued, polled := 0, 0, false
		for _, ep := range d.eps {
			if ep.sendQ.n > 0 {
				ep.flushSendQ()
				queued += ep.sendQ.n
			}
			if u, ok := ep.tp.(unsenter); ok && u.Unsent() {
				// A thread asleep on the wire (it reads the wire's
				// timers without the lock) makes passes of its own.
				if idle && ep.waiters.Load() == 0 {
					ep.poll()
					polled = true
				}
				if u.Unsent() {
					left++
				}
			}
		}
		if polled && d.trigPending > 0 {
			d.runTriggersLocked()
		}
		m.queued.Store(queued > 0)
		left += queued
		if left == 0 {
			d.sendQMover = nil
		}
		d.refreshFast()
		d.unlock()
		if left == 0 {
			return
		}
	}
}

// stopSendQ stops the send-queue goroutine, if it runs, and waits for it.
func (d *Domain) stopSendQ() {
	d.lock()
	m := d.sendQMover
	d.sendQMover = nil
	d.unlock()
	if m != nil {
		close(m.stop)
		<-m.done
	}
}
