package provider

import (
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// waiter is the wait object a CQ, a counter or an EQ was opened with, the
// part the three share: its kind (FI_GETWAITOBJ), the eventfd of an fd
// wait object (FI_GETWAIT), and the wait set of FI_WAIT_SET. When each
// raises and lowers its eventfd is the object's own rule (a CQ or counter
// raises it once a waiter armed it, an EQ while it holds events).
type waiter struct {
	kind int32
	efd  sys.EventFD // sys.NoEventFD without an fd wait object
	ws   *WaitSet
}

// openWaiter sets up a wait object of kind (with set for FI_WAIT_SET):
// FI_WAIT_FD gets an eventfd, and so, where eq says (an EQ's rule), do
// FI_WAIT_POLLFD and FI_WAIT_UNSPEC, which then reads as FI_WAIT_FD.
// fi.EINVAL for a kind the object does not take, fi.ENOMEM without an
// eventfd.
func openWaiter(kind int32, set *WaitSet, eq bool) (waiter, error) {
	w := waiter{kind: kind, efd: sys.NoEventFD}
	switch {
	case kind == fi.WAIT_FD || eq && (kind == fi.WAIT_UNSPEC || kind == fi.WAIT_POLLFD):
		if kind == fi.WAIT_UNSPEC {
			w.kind = fi.WAIT_FD
		}
		e, err := sys.NewEventFD()
		if err != nil {
			return w, fi.ENOMEM
		}
		w.efd = e
	case kind == fi.WAIT_SET:
		if set == nil {
			return w, fi.EINVAL
		}
		w.ws = set
	case kind == fi.WAIT_NONE, kind == fi.WAIT_UNSPEC, kind == fi.WAIT_MUTEX_COND, kind == fi.WAIT_YIELD:
	default:
		return w, fi.EINVAL
	}
	return w, nil
}

// hasFD says whether the object has an eventfd.
func (w *waiter) hasFD() bool { return w.efd != sys.NoEventFD }

// waitFD is the eventfd for FI_GETWAIT: fi.ENODATA without one.
func (w *waiter) waitFD() (int, error) {
	if !w.hasFD() {
		return -1, fi.ENODATA
	}
	return int(w.efd), nil
}

// closeWaiter closes the eventfd; the owner leaves its wait set itself
// (before, so that the set never looks at a closed object).
func (w *waiter) closeWaiter() {
	if w.hasFD() {
		w.efd.Close()
		w.efd = sys.NoEventFD
	}
}
