package provider

import (
	"slices"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// Triggered operations (FI_TRIGGER): a send, receive, RMA or atomic call
// with FI_TRIGGER in its flags does not start; its context is a struct
// fi_triggered_context naming a counter and a threshold, and the call runs
// once the counter reaches the threshold. As in psm2, only threshold
// triggers exist. A counter's triggers run in threshold order (in posting
// order among equal thresholds), under the domain lock, after a progress
// pass or a fi_cntr_add/set, never inside a wire's callback. The call's
// completion carries the triggered context as its op_context. The iovec
// arrays are copied when the call is deferred; the buffers they name must
// stay valid until the operation completes, as for any call.

// TriggerOf resolves the triggered context of a call to its counter and
// threshold (EINVAL if it is not a threshold trigger on one of our
// counters). The C side sets it; nil means no triggered operations.
var TriggerOf func(ctx unsafe.Pointer) (*Cntr, uint64, error)

// Kinds of deferred call.
const (
	trigSend = iota
	trigRecv
	trigRMA
	trigAtomic
)

// trigger is a deferred call: the arguments it will run with.
type trigger struct {
	threshold uint64
	ep        *Endpoint
	kind      int
	iov       []Iovec // bytes; for atomics the operands
	cmp, res  []Iovec // atomics
	peer      uint64  // dest or src
	tag       uint64
	aux       uint64 // ignore (receives), data (sends, RMA)
	addr, key uint64
	dt, op    int
	akind     int
	ctx       uintptr
	flags     uint64
}

// deferCall queues t on the counter its context names, or runs it now if
// the counter is there already.
func (ep *Endpoint) deferCall(t *trigger, ctx unsafe.Pointer) error {
	if TriggerOf == nil {
		return fi.ENOSYS
	}
	c, thr, err := TriggerOf(ctx)
	if err != nil {
		return err
	}
	if c.dom != ep.dom {
		return fi.EINVAL
	}
	t.ep, t.threshold, t.ctx = ep, thr, uintptr(ctx)
	t.flags &^= fi.TRIGGER
	d := ep.dom
	d.lock()
	defer d.unlock()
	if !ep.enabled || ep.closed {
		return fi.EOPBADSTATE
	}
	// After every trigger with a threshold at most this one's.
	i, _ := slices.BinarySearchFunc(c.triggers, thr+1, func(x *trigger, v uint64) int {
		if x.threshold < v {
			return -1
		}
		return 1
	})
	c.triggers = slices.Insert(c.triggers, i, t)
	if len(c.triggers) == 1 {
		d.trigCntrs = append(d.trigCntrs, c)
	}
	d.trigPending++
	d.runTriggersLocked()
	d.refreshFast()
	return nil
}

// runTriggersLocked runs the triggers whose counter reached them. A call
// the wire cannot take now (EAGAIN) stays first in line for the next
// pass; one that fails completes with its error.
func (d *Domain) runTriggersLocked() {
	for i := 0; i < len(d.trigCntrs); {
		c := d.trigCntrs[i]
		for len(c.triggers) > 0 && c.val.Load() >= c.triggers[0].threshold {
			t := c.triggers[0]
			errno := t.run()
			if errno == fi.EAGAIN {
				break
			}
			c.triggers[0] = nil
			c.triggers = c.triggers[1:]
			d.trigPending--
			if errno != 0 {
				t.fail(errno)
			}
		}
		if len(c.triggers) == 0 {
			c.triggers = nil
			d.trigCntrs = slices.Delete(d.trigCntrs, i, i+1)
			continue
		}
		i++
	}
}

// run makes the deferred call (the caller holds the domain lock).
func (t *trigger) run() fi.Errno {
	ep := t.ep
	if ep.closed || !ep.enabled {
		return fi.ECANCELED
	}
	switch t.kind {
	case trigSend:
		return ep.sendLocked(t.iov, t.peer, t.tag, t.aux, t.ctx, t.flags)
	case trigRecv:
		return ep.recvLocked(t.iov, t.peer, t.tag, t.aux, t.ctx, t.flags)
	case trigRMA:
		return ep.rmaLocked(t.iov, t.peer, t.addr, t.key, t.aux, t.ctx, t.flags)
	default:
		return ep.atomicLocked(t.akind, t.iov, t.cmp, t.res, t.peer, t.addr, t.key, t.dt, t.op, t.ctx, t.flags)
	}
}

// fail reports a deferred call that could not start.
func (t *trigger) fail(errno fi.Errno) {
	ep := t.ep
	if ep.closed {
		return
	}
	cq, flags := ep.txCQ, fi.SEND|fi.MSG
	switch {
	case t.kind == trigRecv:
		cq, flags = ep.rxCQ, fi.RECV|fi.MSG
	case t.kind == trigRMA:
		flags = fi.RMA | fi.WRITE
		if t.flags&fi.READ != 0 {
			flags = fi.RMA | fi.READ
		}
	case t.kind == trigAtomic:
		flags = fi.ATOMIC | fi.WRITE
	}
	if t.flags&fi.TAGGED != 0 && t.kind <= trigRecv {
		flags = flags&^fi.MSG | fi.TAGGED
	}
	if cq != nil {
		cq.completeErr(t.ctx, flags, 0, 0, 0, t.tag, errno, 0, nil)
	}
	ep.events++
}

// dropTriggersLocked forgets the triggered calls of endpoint ep (nil:
// all) waiting on counter c (nil: every counter): they will never run.
// Endpoint and counter closes call it, so a closed object leaves no call
// behind to keep the domain busy.
func (d *Domain) dropTriggersLocked(ep *Endpoint, c *Cntr) {
	for i := 0; i < len(d.trigCntrs); {
		tc := d.trigCntrs[i]
		if c != nil && tc != c {
			i++
			continue
		}
		kept := tc.triggers[:0]
		for _, t := range tc.triggers {
			if ep != nil && t.ep != ep {
				kept = append(kept, t)
				continue
			}
			d.trigPending--
		}
		clear(tc.triggers[len(kept):])
		tc.triggers = kept
		if len(kept) == 0 {
			tc.triggers = nil
			d.trigCntrs = slices.Delete(d.trigCntrs, i, i+1)
			continue
		}
		i++
	}
}
