package match

import "github.com/gopsm2/libfabric-psm2/transport"

// Engine is one endpoint's matching state: its ops, posted receives and
// unexpected messages. It is not safe for concurrent use: the provider
// calls it under the endpoint's domain lock.
type Engine[X any] struct {
	posted  [2]opQueue[X]
	unexp   [2]uxQueue
	claimed uxQueue // set aside by FI_PEEK|FI_CLAIM for their receive

	ops     []*Op[X] // by ID
	freeOps []*Op[X]
	freeUx  []*Unexpected
	bufs    [bufClasses][][]byte

	queued int    // messages on the unexpected queues
	kept   int    // unexpected messages kept: queued or claimed
	bytes  uint64 // their payload bytes
	total  uint64 // messages ever queued as unexpected
}

// New returns a fresh op of kind (not Free) with its own ID; a reused
// entry's Gen is one more than before.
func (e *Engine[X]) New(kind uint8) *Op[X] {
	var o *Op[X]
	if n := len(e.freeOps); n > 0 {
		o = e.freeOps[n-1]
		e.freeOps = e.freeOps[:n-1]
	} else {
		o = &Op[X]{ID: uint64(len(e.ops))}
		e.ops = append(e.ops, o)
	}
	id, gen := o.ID, o.Gen+1
	*o = Op[X]{ID: id, Kind: kind, Gen: gen}
	return o
}

// Free returns o to the table. Freeing a free op does nothing: a second
// free would hand it out twice.
func (e *Engine[X]) Free(o *Op[X]) {
	if o.Kind == Free {
		return
	}
	o.Kind = Free
	e.freeOps = append(e.freeOps, o)
}

// ByCookie is the op in use with ID c, or nil: c comes from the wire
// and is checked here.
func (e *Engine[X]) ByCookie(c uint64) *Op[X] {
	if c >= uint64(len(e.ops)) || e.ops[c].Kind == Free {
		return nil
	}
	return e.ops[c]
}

// Ops is every entry of the table, free ones included, by ID. The caller
// must not change the slice.
func (e *Engine[X]) Ops() []*Op[X] { return e.ops }

// Post queues receive o (its Space, Tag, Ign and Src set, from Key) behind
// the receives posted before it.
func (e *Engine[X]) Post(o *Op[X]) { e.posted[o.Space].push(o) }

// Match finds the first posted receive of space sp that takes a message
// with tag from src. It leaves the queue, unless it is a multi-receive
// buffer, which stays until Release.
func (e *Engine[X]) Match(sp uint8, tag, src uint64) *Op[X] {
	q := &e.posted[sp]
	var prev *Op[X]
	for o := q.head; o != nil; prev, o = o, o.next {
		if o.Matches(tag, src) {
			if !o.multi() {
				q.remove(prev, o)
			}
			return o
		}
	}
	return nil
}

// WouldMatch reports whether a posted receive of space sp takes a message
// with tag from src, and changes nothing.
func (e *Engine[X]) WouldMatch(sp uint8, tag, src uint64) bool {
	for o := e.posted[sp].head; o != nil; o = o.next {
		if o.Matches(tag, src) {
			return true
		}
	}
	return false
}

// Unpost takes o off its posted queue, and reports whether it was on it.
func (e *Engine[X]) Unpost(o *Op[X]) bool {
	q := &e.posted[o.Space]
	var prev *Op[X]
	for x := q.head; x != nil; prev, x = x, x.next {
		if x == o {
			q.remove(prev, o)
			return true
		}
	}
	return false
}

// IsPosted reports whether o is on a posted queue.
func (e *Engine[X]) IsPosted(o *Op[X]) bool {
	for x := e.posted[o.Space].head; x != nil; x = x.next {
		if x == o {
			return true
		}
	}
	return false
}

// Cancel takes the first posted receive with context ctx (untagged ones
// first) off its queue and returns it, or nil.
func (e *Engine[X]) Cancel(ctx uintptr) *Op[X] {
	for sp := range e.posted {
		q := &e.posted[sp]
		var prev *Op[X]
		for o := q.head; o != nil; prev, o = o, o.next {
			if o.Ctx == ctx {
				q.remove(prev, o)
				return o
			}
		}
	}
	return nil
}

// NonePosted reports whether no receive is posted.
func (e *Engine[X]) NonePosted() bool {
	return e.posted[0].head == nil && e.posted[1].head == nil
}

// AddUnexpected queues a message of space sp that no posted receive took:
// a rendezvous (rndv not nil), or an eager payload, which is copied.
func (e *Engine[X]) AddUnexpected(sp uint8, h *transport.Header, src uint64, payload []byte, rndv *transport.Rndv) {
	u := e.newUx()
	u.Hdr, u.Src = *h, src
	if rndv != nil {
		u.IsRndv, u.Rndv = true, *rndv
	} else {
		u.Payload = e.getBuf(len(payload))
		copy(u.Payload, payload)
		e.bytes += uint64(len(u.Payload))
	}
	e.kept++
	e.queued++
	e.total++
	e.unexp[sp].push(u)
}

// TakeUnexpected takes the first unexpected message receive o matches
// off its queue, or returns nil.
func (e *Engine[X]) TakeUnexpected(o *Op[X]) *Unexpected {
	q := &e.unexp[o.Space]
	var prev *Unexpected
	for u := q.head; u != nil; prev, u = u, u.next {
		if o.Matches(u.Hdr.Tag, u.Src) {
			q.remove(prev, u)
			e.queued--
			return u
		}
	}
	return nil
}

// Peek is the first unexpected message of space sp that a receive with
// src, tag and ign (from Key) would take, left on its queue; nil if none.
func (e *Engine[X]) Peek(sp uint8, src, tag, ign uint64) *Unexpected {
	probe := Op[X]{Src: src, Tag: tag, Ign: ign}
	for u := e.unexp[sp].head; u != nil; u = u.next {
		if probe.Matches(u.Hdr.Tag, u.Src) {
			return u
		}
	}
	return nil
}

// Take removes u, which Peek found, from queue sp.
func (e *Engine[X]) Take(sp uint8, u *Unexpected) {
	q := &e.unexp[sp]
	var prev *Unexpected
	for x := q.head; x != nil; prev, x = x, x.next {
		if x == u {
			q.remove(prev, u)
			e.queued--
			return
		}
	}
}

// SetAside keeps u, taken off its queue, for the FI_CLAIM receive with
// context ctx.
func (e *Engine[X]) SetAside(u *Unexpected, ctx uintptr) {
	u.Claim = ctx
	e.claimed.push(u)
}

// Claimed takes the message set aside for context ctx, or returns nil.
func (e *Engine[X]) Claimed(ctx uintptr) *Unexpected {
	var prev *Unexpected
	for u := e.claimed.head; u != nil; prev, u = u, u.next {
		if u.Claim == ctx {
			e.claimed.remove(prev, u)
			return u
		}
	}
	return nil
}

// NoneClaimed reports whether no message is set aside.
func (e *Engine[X]) NoneClaimed() bool { return e.claimed.head == nil }

// Unexpected is the first message on unexpected queue sp (Next walks
// on), nil when it is empty.
func (e *Engine[X]) Unexpected(sp uint8) *Unexpected { return e.unexp[sp].head }

// Queued is the number of messages on the unexpected queues.
func (e *Engine[X]) Queued() int { return e.queued }

// Kept is the number of unexpected messages kept, queued or set aside,
// and their payload bytes.
func (e *Engine[X]) Kept() (int, uint64) { return e.kept, e.bytes }

// Total is the number of messages ever queued as unexpected.
func (e *Engine[X]) Total() uint64 { return e.total }

// FreeUnexpected releases u, taken off its queue, and its payload.
func (e *Engine[X]) FreeUnexpected(u *Unexpected) {
	e.kept--
	if u.Payload != nil {
		e.bytes -= uint64(len(u.Payload))
		e.putBuf(u.Payload)
	}
	*u = Unexpected{}
	e.freeUx = append(e.freeUx, u)
}

func (e *Engine[X]) newUx() *Unexpected {
	if n := len(e.freeUx); n > 0 {
		u := e.freeUx[n-1]
		e.freeUx = e.freeUx[:n-1]
		return u
	}
	return &Unexpected{}
}

// Unexpected payload buffers come in power-of-two classes from 64 B, at
// most bufKeep of each kept for reuse.
const (
	bufMinShift = 6
	bufClasses  = 13 // up to 256 KiB (hfi's eager threshold); larger ones are not pooled
	bufKeep     = 64
)

func bufClass(n int) int {
	c := 0
	for (1 << (bufMinShift + c)) < n {
		c++
	}
	return c
}

func (e *Engine[X]) getBuf(n int) []byte {
	c := bufClass(n)
	if c >= bufClasses {
		return make([]byte, n)
	}
	if l := e.bufs[c]; len(l) > 0 {
		b := l[len(l)-1]
		e.bufs[c] = l[:len(l)-1]
		return b[:n]
	}
	return make([]byte, n, 1<<(bufMinShift+c))
}

func (e *Engine[X]) putBuf(b []byte) {
	c := bufClass(cap(b))
	if c < bufClasses && cap(b) == 1<<(bufMinShift+c) && len(e.bufs[c]) < bufKeep {
		e.bufs[c] = append(e.bufs[c], b[:0])
	}
}
