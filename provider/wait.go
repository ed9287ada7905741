package provider

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// Waitable is waitable under an exported name, so the C shim can hand the
// objects behind fids to TryWait and to poll sets. Every CQ, counter, EQ and
// wait set is one.
type Waitable = waitable

// WaitAttr is struct fi_wait_attr.
type WaitAttr struct {
	WaitObj int32
	Flags   uint64
}

// waitRecheck bounds how long Wait sleeps before it polls its members
// again. Members signal the set when they get an event; the re-check is
// the safety net for a member whose events only appear when someone drives
// progress (its ready() does).
var waitRecheck = 50 * time.Millisecond

// WaitSet is a wait set (fi_wait_open): the CQs, counters and EQs opened
// with FI_WAIT_SET and this set as wait_set are its members. A member
// calls signal() when it gets an event; fi_wait blocks until one does or a
// member is ready.
//
// As in libfabric's util wait set, which psm2 uses, FI_WAIT_UNSPEC means
// FI_WAIT_FD: the set has an eventfd that signal() makes readable and that
// fi_trywait and fi_wait reset before they look at the members.
type WaitSet struct {
	fabric  *Fabric
	waitObj int32
	efd     sys.EventFD // for FD and POLLFD wait sets, sys.NoEventFD otherwise

	mu      sync.Mutex
	members []waitable    // replaced, never modified in place, so a copy of the header is a snapshot
	gen     uint64        // bumped by every signal
	waiters int           // threads blocked in Wait
	wake    chan struct{} // closed (and replaced) by a signal when waiters > 0
	closed  bool

	fdRaised atomic.Bool // efd holds a count
}

// OpenWaitSet opens a wait set. The wait object must be FI_WAIT_UNSPEC
// (which becomes FI_WAIT_FD), FI_WAIT_FD, FI_WAIT_POLLFD or
// FI_WAIT_MUTEX_COND; flags must be 0.
func (f *Fabric) OpenWaitSet(attr *WaitAttr) (*WaitSet, error) {
	if f == nil || attr == nil {
		return nil, fi.EINVAL
	}
	if attr.Flags != 0 {
		return nil, fi.EINVAL
	}
	ws := &WaitSet{fabric: f, waitObj: attr.WaitObj, efd: sys.NoEventFD, wake: make(chan struct{})}
	switch attr.WaitObj {
	case fi.WAIT_UNSPEC:
		ws.waitObj = fi.WAIT_FD
	case fi.WAIT_FD, fi.WAIT_POLLFD, fi.WAIT_MUTEX_COND:
	default:
		return nil, fi.EINVAL
	}
	if ws.waitObj != fi.WAIT_MUTEX_COND {
		e, err := sys.NewEventFD()
		if err != nil {
			return nil, fi.ENOMEM
		}
		ws.efd = e
	}
	return ws, nil
}

// WaitObj is the set's wait object (FI_GETWAITOBJ); FI_WAIT_UNSPEC reads
// as FI_WAIT_FD.
func (ws *WaitSet) WaitObj() int32 { return ws.waitObj }

// WaitFD is the set's file descriptor (FI_GETWAIT) for FD and POLLFD sets;
// ENODATA for the others.
func (ws *WaitSet) WaitFD() (int, error) {
	if ws.efd == sys.NoEventFD {
		return -1, fi.ENODATA
	}
	return int(ws.efd), nil
}

// add makes w a member. Called by CQs, counters and EQs opened on the set.
func (ws *WaitSet) add(w waitable) {
	ws.mu.Lock()
	m := make([]waitable, len(ws.members), len(ws.members)+1)
	copy(m, ws.members)
	ws.members = append(m, w)
	ws.mu.Unlock()
}

// remove drops w from the members (a no-op if it is not one).
func (ws *WaitSet) remove(w waitable) {
	ws.mu.Lock()
	m := make([]waitable, 0, len(ws.members))
	for _, x := range ws.members {
		if x != w {
			m = append(m, x)
		}
	}
	ws.members = m
	ws.mu.Unlock()
}

// signal tells the set that a member has a new event. It may be called
// with the member's locks held: it takes only the set's own lock.
func (ws *WaitSet) signal() {
	ws.mu.Lock()
	ws.gen++
	if ws.waiters > 0 {
		close(ws.wake)
		ws.wake = make(chan struct{})
	}
	ws.mu.Unlock()
	if ws.efd != sys.NoEventFD && !ws.fdRaised.Swap(true) {
		ws.efd.Raise()
	}
}

// resetFD clears the set's fd, so it becomes readable again only on the
// next signal.
func (ws *WaitSet) resetFD() {
	if ws.efd != sys.NoEventFD && ws.fdRaised.Swap(false) {
		ws.efd.Lower()
	}
}

func (ws *WaitSet) snapshot() []waitable {
	ws.mu.Lock()
	m := ws.members
	ws.mu.Unlock()
	return m
}

// ready resets the fd, then asks every member (which drives their
// progress) whether it has an event. A wait set passed to fi_trywait
// answers for its members.
func (ws *WaitSet) ready() bool {
	ws.resetFD()
	for _, w := range ws.snapshot() {
		if w.ready() {
			return true
		}
	}
	return false
}

// Wait is fi_wait: it returns nil once a member is ready, or fi.ETIMEDOUT
// after timeout milliseconds (negative: never). A timeout of 0 checks the
// members once.
func (ws *WaitSet) Wait(timeout int) error {
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	for {
		ws.mu.Lock()
		gen := ws.gen
		ws.mu.Unlock()
		if ws.ready() {
			return nil
		}
		wait := waitRecheck
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return fi.ETIMEDOUT
			}
			wait = min(wait, left)
		}
		ws.mu.Lock()
		if ws.gen != gen {
			// A member signalled while we looked: look again.
			ws.mu.Unlock()
			continue
		}
		ws.waiters++
		ch := ws.wake
		ws.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
		ws.mu.Lock()
		ws.waiters--
		ws.mu.Unlock()
	}
}

// Close closes the set: EBUSY while members remain.
func (ws *WaitSet) Close() error {
	ws.mu.Lock()
	if ws.closed {
		ws.mu.Unlock()
		return fi.EINVAL
	}
	if len(ws.members) > 0 {
		ws.mu.Unlock()
		return fi.EBUSY
	}
	ws.closed = true
	ws.mu.Unlock()
	if ws.efd != sys.NoEventFD {
		ws.efd.Close()
		ws.efd = sys.NoEventFD
	}
	return nil
}

// TryWait is fi_trywait: fi.EAGAIN if any of objs has an event to read
// (a wait set answers for its members), nil if it is safe to block on
// their wait objects.
func (f *Fabric) TryWait(objs []Waitable) error {
	for _, w := range objs {
		if w == nil {
			return fi.EINVAL
		}
		if w.ready() {
			return fi.EAGAIN
		}
	}
	return nil
}
