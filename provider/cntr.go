package provider

import (
	"sync/atomic"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// CntrAttr is struct fi_cntr_attr.
type CntrAttr struct {
	Events  int32
	WaitObj int32
	WaitSet *WaitSet
	Flags   uint64
}

// FI_CNTR_EVENTS_COMP, the only counter event psm2 supports.
const cntrEventsComp = 0

// Cntr is a completion counter.
type Cntr struct {
	dom *Domain
	waiter

	val    atomic.Uint64
	errVal atomic.Uint64

	bound  atomic.Int32 // endpoints and MRs bound to it
	closed atomic.Bool

	sleepers atomic.Int32
	wakeCh   chan struct{}

	triggers []*trigger  // deferred calls by threshold (trigger.go); domain lock
	fdArmed  atomic.Bool // a waiter may block on efd: signal it on the next count
}

// OpenCntr opens a counter.
func (d *Domain) OpenCntr(attr *CntrAttr) (*Cntr, error) {
	if attr == nil {
		return nil, fi.EINVAL
	}
	if attr.Events != cntrEventsComp {
		return nil, fi.ENOSYS
	}
	if attr.Flags != 0 {
		return nil, fi.EBADFLAGS
	}
	c := &Cntr{dom: d, wakeCh: make(chan struct{}, 1)}
	w, err := openWaiter(attr.WaitObj, attr.WaitSet, false)
	if err != nil {
		return nil, err
	}
	c.waiter = w
	if c.ws != nil {
		c.ws.add(c)
	}
	if c.hasFD() || c.ws != nil {
		d.startProgress(true)
	}
	d.refs.Add(1)
	return c, nil
}

// inc and incErr count a completion; called with the domain lock held.
func (c *Cntr) inc() {
	c.val.Add(1)
	c.notify()
}

func (c *Cntr) incErr() {
	c.errVal.Add(1)
	c.notify()
}

func (c *Cntr) notify() {
	if c.sleepers.Load() > 0 {
		select {
		case c.wakeCh <- struct{}{}:
		default:
		}
		c.dom.wakeAllLocked()
	}
	if c.hasFD() && c.fdArmed.Swap(false) {
		c.efd.Raise()
	}
	if c.ws != nil {
		c.ws.signal()
	}
}

// Read drives progress and returns the success count.
func (c *Cntr) Read() uint64 {
	c.dom.progress()
	return c.val.Load()
}

// ReadErr returns the error count.
func (c *Cntr) ReadErr() uint64 { return c.errVal.Load() }

// Add, Set, AddErr and SetErr change the counts (and wake waiters).
func (c *Cntr) Add(v uint64) error    { c.val.Add(v); c.notifyUnlocked(); return nil }
func (c *Cntr) Set(v uint64) error    { c.val.Store(v); c.notifyUnlocked(); return nil }
func (c *Cntr) AddErr(v uint64) error { c.errVal.Add(v); c.notifyUnlocked(); return nil }
func (c *Cntr) SetErr(v uint64) error { c.errVal.Store(v); c.notifyUnlocked(); return nil }

func (c *Cntr) notifyUnlocked() {
	d := c.dom
	d.lock()
	defer d.unlock()
	c.notify()
	if d.trigPending > 0 {
		d.runTriggersLocked()
		d.refreshFast()
	}
}

// Wait blocks until the count reaches threshold, an error is counted, or
// timeout milliseconds pass (negative: forever): nil, fi.EAVAIL or
// fi.ETIMEDOUT.
func (c *Cntr) Wait(threshold uint64, timeout int) error {
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	errs := c.errVal.Load()
	// Poll first for FI_PSM2_SREAD_SPIN, as fi_cq_sread does: waking a
	// thread that slept in the kernel costs more than most waits last.
	spinEnd := time.Now().Add(c.dom.sreadSpin())
	if !deadline.IsZero() && deadline.Before(spinEnd) {
		spinEnd = deadline
	}
	for {
		c.dom.progress()
		if c.val.Load() >= threshold {
			return nil
		}
		if c.errVal.Load() != errs {
			return fi.EAVAIL
		}
		if time.Now().Before(spinEnd) {
			continue
		}
		wait := 50 * time.Millisecond
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return fi.ETIMEDOUT
			}
			wait = min(wait, left)
		}
		c.sleepers.Add(1)
		c.dom.waitArrival(c.wakeCh, wait)
		c.sleepers.Add(-1)
	}
}

// WaitFD is fi_control(FI_GETWAIT) of a counter opened with FI_WAIT_FD.
func (c *Cntr) WaitFD() (int, error) {
	fd, err := c.waitFD()
	if err == nil {
		c.fdArmed.Store(true)
	}
	return fd, err
}

// ready reports whether the counter has any count (for wait and poll sets).
func (c *Cntr) ready() bool {
	if c.hasFD() {
		c.fdArmed.Store(true)
	}
	c.dom.progress()
	return c.val.Load() > 0 || c.errVal.Load() > 0
}

// Close closes the counter; EBUSY while bound.
func (c *Cntr) Close() error {
	if c.bound.Load() > 0 {
		return fi.EBUSY
	}
	if !c.closed.CompareAndSwap(false, true) {
		return fi.EINVAL
	}
	d := c.dom
	d.lock()
	if len(c.triggers) > 0 {
		d.dropTriggersLocked(nil, c)
		d.refreshFast()
	}
	d.unlock()
	if c.ws != nil {
		c.ws.remove(c)
	}
	c.closeWaiter()
	c.dom.refs.Add(-1)
	return nil
}
