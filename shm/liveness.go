//go:build linux

package shm

import (
	"errors"
	"fmt"
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// kill marks p unusable: Send and Fetch to it fail with p.dead, which
// wraps base (transport.ErrPeerDead or transport.ErrTimeout); its queued
// control cells are dropped, the bounce buffers it holds return to the
// pool, and the next Poll fails the operations waiting on it.
func (e *Endpoint) kill(p *peer, base error, why string) {
	if p.dead != nil || p.self {
		return
	}
	p.dead = fmt.Errorf("shm: peer %#x %s: %w", p.epid, why, base)
	p.ctl, p.ctlHead = nil, 0
	e.syncFast(p)
	if p.ops > 0 {
		e.doomed = true
	}
	e.reclaimBufs()
}

// check runs the periodic liveness checks, at most once per interval:
// every peer that an operation or a queued control cell waits on, whose
// ring refused a send, or that holds bounce buffers we are short of, is
// probed; with StuckTimeout set, fetches without progress for that long
// are failed. Then the operations of dead peers
// are failed.
func (e *Endpoint) check(h transport.Handler) int {
	ev := 0
	now := e.now()
	if now >= e.nextCheck {
		e.nextCheck = now + e.interval
		starved := e.starved
		e.starved, e.blocked = false, false
		for _, p := range e.peers {
			if p.self || p.dead != nil {
				continue
			}
			if p.ops > 0 || p.watch > 0 || p.ctlHead < len(p.ctl) || p.full || (starved && e.holds(p)) {
				e.probe(p, now)
			} else {
				p.consSince = 0 // not watched: start afresh next time
			}
			p.full = false
		}
		for slot := range e.fetches.Len() {
			op := e.fetches.At(uint32(slot))
			if op.state != opWait || e.stuck <= 0 || now-op.last <= e.stuck {
				continue
			}
			p := e.peers[op.peer]
			if p.dead != nil {
				continue // reaped below
			}
			e.fin(p, op.sendID, finTimeout)
			e.stats.Timeouts++
			err := fmt.Errorf("shm: no data from %#x for %v: %w", p.epid, e.cfg.StuckTimeout, transport.ErrTimeout)
			ev += e.finishFetch(h, slot, 0, err)
		}
	}
	if e.doomed {
		ev += e.reap(h)
	}
	return ev
}

// holds reports whether p holds one of our bounce buffers.
func (e *Endpoint) holds(p *peer) bool {
	held := e.busy.Load() & e.allBufs
	for i := range e.nbuf {
		if held&(1<<i) != 0 && e.holder[i] == p.idx {
			return true
		}
	}
	return false
}

// probe checks whether p is gone (closed, its process dead, its segment
// removed or replaced) or, with StuckTimeout set, stuck (its ring holds
// cells but its consumer counter has not moved for that long), and kills
// it if so.
func (e *Endpoint) probe(p *peer, now int64) {
	if p.seg.Closed() {
		e.killAfterDrain(p, "closed")
		return
	}
	if alive, err := processAlive(p.pid); err == nil && !alive {
		e.killAfterDrain(p, "died")
		return
	}
	if replaced, err := p.seg.Replaced(); err == nil && replaced {
		e.killAfterDrain(p, "segment removed")
		return
	}
	cons, prod := p.ring.Counters()
	switch {
	case p.consSince == 0 || cons != p.lastCons || prod == cons:
		p.lastCons, p.consSince = cons, now
	case e.stuck > 0 && now-p.consSince > e.stuck:
		e.kill(p, transport.ErrTimeout, fmt.Sprintf("not polling for %v", e.cfg.StuckTimeout))
	}
}

// killAfterDrain kills p, found gone, once our ring has given up the
// cells it held when p was found so. A peer whose send completed and
// which then closed or exited may have left its last eager messages and
// copy-rendezvous chunks there, in its bounce buffers, which our mapping
// keeps readable: they are delivered, not failed. A ring that does not
// move between two checks (a stalled one, or a caller that stopped
// polling it) does not hold the kill back any longer.
func (e *Endpoint) killAfterDrain(p *peer, why string) {
	cons, prod := e.ring.Counters()
	if !p.draining {
		p.draining, p.drainTo = true, prod
	} else if cons == p.drainCons {
		e.kill(p, transport.ErrPeerDead, why)
		return
	}
	p.drainCons = cons
	if int64(cons-p.drainTo) >= 0 {
		e.kill(p, transport.ErrPeerDead, why)
	}
}

// reap fails the operations whose peer is dead.
func (e *Endpoint) reap(h transport.Handler) int {
	e.doomed = false
	ev := 0
	for slot := range e.sends.Len() {
		op := e.sends.At(uint32(slot))
		if op.state != opWait && op.state != opStream {
			continue
		}
		if p := e.peers[op.peer]; p.dead != nil {
			if op.state == opStream {
				e.unstream(slot)
			}
			e.countFailure(p.dead)
			ev += e.finishSend(h, slot, p.dead)
		}
	}
	for slot := range e.fetches.Len() {
		op := e.fetches.At(uint32(slot))
		if op.state != opWait {
			continue
		}
		if p := e.peers[op.peer]; p.dead != nil {
			if errors.Is(p.dead, transport.ErrTimeout) {
				// Alive but slow: tell it, if its ring has room, so
				// its send does not complete as if all went well.
				e.finNow(p, op.sendID, finTimeout)
			}
			e.countFailure(p.dead)
			ev += e.finishFetch(h, slot, 0, p.dead)
		}
	}
	return ev
}

func (e *Endpoint) countFailure(err error) {
	if errors.Is(err, transport.ErrTimeout) {
		e.stats.Timeouts++
	} else {
		e.stats.PeerDead++
	}
}

// failAll fails every pending operation with err (after Close).
func (e *Endpoint) failAll(h transport.Handler, err error) int {
	if e.pending == 0 {
		return 0
	}
	ev := 0
	for slot := range e.sends.Len() {
		if s := e.sends.At(uint32(slot)).state; s == opWait || s == opStream {
			ev += e.finishSend(h, slot, err)
		}
	}
	for slot := range e.fetches.Len() {
		if e.fetches.At(uint32(slot)).state == opWait {
			ev += e.finishFetch(h, slot, 0, err)
		}
	}
	e.streams = e.streams[:0]
	return ev
}

// Close closes the endpoint:
//
//  1. it marks the segment closed, so peers fail what waits on it and
//     stop sending (Send to it returns ErrPeerDead);
//  2. it lingers, up to min(ConnTimeout, 1s), while live peers still
//     hold its bounce buffers, i.e. have eager messages or
//     copy-rendezvous chunks from it not yet taken out of their rings
//     (they may not have mapped the segment yet, and once its name is
//     gone they cannot); it does not poll meanwhile, so a peer served
//     by the same thread is waited for in vain;
//  3. it unlinks the segment's name and unmaps everything.
//
// Operations still pending are not reported by Close: the next Poll
// reports each as failed with an error wrapping transport.ErrClosed.
// Rendezvous data this endpoint published stays readable by receivers
// that already have the RTS (they read the caller's memory), so a caller
// that reuses that memory after the ErrClosed report may have it read.
// Close is idempotent.
func (e *Endpoint) Close() error {
	if e.closed {
		return nil
	}
	e.seg.MarkClosed()
	e.linger()
	// Get every goroutine out of Wait before the doorbell is unmapped.
	e.closing.Store(true)
	e.wakeMu.Lock()
	e.closed = true
	e.bellSeq.Add(1)
	futexWake(e.bellSeq)
	for e.waiting > 0 {
		e.waitDone.Wait()
	}
	e.wakeMu.Unlock()

	for slot := range e.sends.Len() {
		if op := e.sends.At(uint32(slot)); op.local && (op.state == opWait || op.state == opStream) {
			localDrop(e.epid, e.sends.ID(uint32(slot)))
			op.local = false
		}
	}
	e.ctlPeers = nil
	e.last = nil
	e.closeFast()
	err := Unlink(e.seg.Name())
	for _, p := range e.peers {
		e.detach(p)
		p.busy, p.bellSeq, p.bellWait = nil, nil, nil
		p.ctl, p.inCtl = nil, false
		if p.dead == nil {
			p.dead = errClosed
		}
	}
	if cerr := e.seg.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("shm: close endpoint %#x: %w", e.epid, err)
	}
	return nil
}

// lingerMax bounds how long Close waits for peers to release bounce
// buffers.
const lingerMax = time.Second

// linger waits until no live peer holds one of our bounce buffers, or
// min(ConnTimeout, lingerMax) passes.
func (e *Endpoint) linger() {
	deadline := time.Now().Add(min(e.cfg.ConnTimeout, lingerMax))
	for {
		held := e.busy.Load() & e.allBufs
		for i := range e.nbuf {
			if held&(1<<i) == 0 {
				continue
			}
			if hi := e.holder[i]; hi < 0 {
				e.freeBuf(i)
			} else if p := e.peers[hi]; p.self || p.dead != nil || p.seg.Closed() {
				e.freeBuf(i)
			} else if alive, err := processAlive(p.pid); err == nil && !alive {
				e.freeBuf(i)
			}
		}
		if e.busy.Load()&e.allBufs == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Watch implements transport.Watcher: a watched peer is probed at every
// liveness check, as one an operation waits on.
func (e *Endpoint) Watch(c transport.Conn, delta int) {
	p := e.conn(c)
	if p == nil || p.self {
		return
	}
	p.watch += delta
	e.watched += delta
}

// PeerErr implements transport.Watcher.
func (e *Endpoint) PeerErr(c transport.Conn) error {
	if c == 0 || uint64(c) > uint64(len(e.peers)) {
		return ErrBadConn
	}
	p := e.peers[c-1]
	if p.dead == nil && !p.self && p.seg.Closed() {
		e.kill(p, transport.ErrPeerDead, "closed")
	}
	return p.dead
}
