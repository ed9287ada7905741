package provider

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// progressThread is a domain's progress goroutine, locked to its OS thread
// and pinned per FI_PSM2_PROG_AFFINITY. It runs for FI_PROGRESS_AUTO, and
// also when a CQ or counter has an fd or wait-set wait object: whoever
// blocks on such an object relies on someone moving data meanwhile.
type progressThread struct {
	stop chan struct{}
	done chan struct{}
}

// interval is the sleep between passes that found nothing:
// FI_PSM2_PROG_INTERVAL, or 1 us with an affinity and 1 ms without.
func (d *Domain) interval() time.Duration {
	us := d.params.ProgInterval
	if us < 0 {
		us = 1000
		if len(d.params.ProgAffinity) > 0 {
			us = 1
		}
	}
	return time.Duration(us) * time.Microsecond
}

// startProgress starts the domain's progress goroutine if it is not
// running.
func (d *Domain) startProgress(blocking bool) {
	d.mu.lock()
	defer d.mu.unlock()
	if d.prog != nil {
		return
	}
	// A second thread now touches the data path: locking is no longer
	// optional, for C either.
	d.locking = true
	if d.fastLock {
		atomic.StoreUint32(fastWord32(d.fast, domLocking), 1)
	}
	t := &progressThread{stop: make(chan struct{}), done: make(chan struct{})}
	d.prog = t
	go d.runProgress(t)
}

// stopProgress stops the progress goroutine and waits for it.
func (d *Domain) stopProgress() {
	d.lock()
	t := d.prog
	d.prog = nil
	d.unlock()
	if t == nil {
		return
	}
	close(t.stop)
	d.wakeAll()
	<-t.done
}

func (d *Domain) runProgress(t *progressThread) {
	defer close(t.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cpus := d.params.ProgAffinity; len(cpus) > 0 {
		if err := sys.SetAffinity(cpus); err != nil {
			d.log.Warnf(fi.LOG_CORE, "progress thread affinity %v: %v", cpus, err)
		}
	}
	iv := d.interval()
	for {
		select {
		case <-t.stop:
			return
		default:
		}
		if d.progressGuarded() == 0 {
			d.waitArrival(nil, iv)
		}
	}
}

// progressGuarded is one progress pass whose panic, if any, is reported
// and survived: the goroutine runs inside the application's process, and
// an unrecovered panic on it would end that process. After a panic the
// thread waits 10 ms, so a pass that fails every time does not spin.
func (d *Domain) progressGuarded() (n int) {
	defer func() {
		if v := recover(); v != nil {
			d.prov.Recovered("the progress thread", v, debug.Stack())
			time.Sleep(10 * time.Millisecond)
			n = 0
		}
	}()
	return d.progress()
}

// waitArrival blocks until an arrival on one of the domain's endpoints,
// a wake-up (ch, or the endpoints' Wake), or wait passes. It sleeps on the
// first endpoint's wire (a futex in its shared segment); with several
// endpoints it sleeps at most 1 ms at a time.
func (d *Domain) waitArrival(ch chan struct{}, wait time.Duration) {
	d.lock()
	var ep *Endpoint
	if len(d.eps) > 0 {
		ep = d.eps[0]
		ep.waiters.Add(1)
		if len(d.eps) > 1 {
			wait = min(wait, time.Millisecond)
		}
	}
	d.unlock()
	if ep == nil {
		if ch == nil {
			time.Sleep(wait)
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
		return
	}
	if ep.tp != nil {
		ep.tp.Wait(wait)
	}
	ep.waiters.Add(-1)
	if ch != nil {
		select {
		case <-ch:
		default:
		}
	}
}

// wakeAll wakes every thread sleeping in waitArrival.
func (d *Domain) wakeAll() {
	d.lock()
	d.wakeAllLocked()
	d.unlock()
}

func (d *Domain) wakeAllLocked() {
	for _, ep := range d.eps {
		if ep.tp != nil {
			ep.tp.Wake()
		}
	}
}
