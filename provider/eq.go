package provider

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// EQAttr is struct fi_eq_attr.
type EQAttr struct {
	Size            uint64
	Flags           uint64
	WaitObj         int32
	SignalingVector int32
	WaitSet         *WaitSet
}

// EQErr is the fi_eq_write flag that makes the written event an error
// entry: buf is then a struct fi_eq_err_entry. libfabric has no public
// name for it; its util EQ (which psm2 uses) takes UTIL_FLAG_ERROR, bit 60.
const EQErr uint64 = 1 << 60

// Sizes of struct fi_eq_entry and struct fi_eq_err_entry in C (LP64).
const (
	EQEntrySize    = 24
	EQErrEntrySize = 48
)

// EQErrEntry is struct fi_eq_err_entry in Go. Fid and Context are C
// pointers, carried only. ErrData is the provider's error data (a copy).
type EQErrEntry struct {
	Fid       uintptr
	Context   uintptr
	Data      uint64
	Err       int32
	ProvErrno int32
	ErrData   []byte
}

type eqEvent struct {
	event uint32
	data  []byte      // the bytes fi_eq_read copies out
	err   *EQErrEntry // non-nil: an error entry, for fi_eq_readerr
}

// EQ is an event queue (fi_eq_open). Events and errors share one FIFO, as
// in libfabric's util EQ: a read that meets an error at the head fails with
// EAVAIL, and fi_eq_readerr takes only an error at the head. The queue is
// not bounded (attr.Size is a minimum).
//
// With an fd wait object (FI_WAIT_FD, FI_WAIT_POLLFD, and FI_WAIT_UNSPEC,
// which becomes FI_WAIT_FD) the EQ's eventfd is readable exactly while
// entries are queued.
type EQ struct {
	fabric *Fabric
	waiter

	mu       sync.Mutex
	q        []eqEvent
	head     int
	waiters  int           // threads in SRead
	wake     chan struct{} // closed (and replaced) by a post when waiters > 0
	fdRaised bool
	holds    int // objects bound to the EQ
	closed   bool
}

// OpenEQ opens an event queue. flags may hold FI_WRITE only; the wait
// object may be NONE, UNSPEC, FD, POLLFD, MUTEX_COND, YIELD or SET (with a
// wait set).
func (f *Fabric) OpenEQ(attr *EQAttr) (*EQ, error) {
	if f == nil || attr == nil {
		return nil, fi.EINVAL
	}
	if attr.Flags&^fi.WRITE != 0 {
		return nil, fi.EINVAL
	}
	eq := &EQ{fabric: f, wake: make(chan struct{})}
	w, err := openWaiter(attr.WaitObj, attr.WaitSet, true)
	if err != nil {
		return nil, err
	}
	eq.waiter = w
	if eq.ws != nil {
		eq.ws.add(eq)
	}
	return eq, nil
}

// WaitObj is the EQ's wait object (FI_GETWAITOBJ); FI_WAIT_UNSPEC reads as
// FI_WAIT_FD.
func (eq *EQ) WaitObj() int32 { return eq.kind }

// WaitFD is the EQ's eventfd (FI_GETWAIT); ENODATA without an fd wait
// object.
func (eq *EQ) WaitFD() (int, error) {
	return eq.waitFD()
}

// hold and drop count the objects bound to the EQ (AVs, endpoints):
// Close fails with EBUSY while any is.
func (eq *EQ) hold() {
	eq.mu.Lock()
	eq.holds++
	eq.mu.Unlock()
}

func (eq *EQ) drop() {
	eq.mu.Lock()
	eq.holds--
	eq.mu.Unlock()
}

// push queues e and wakes whoever waits for it.
func (eq *EQ) push(e eqEvent) {
	eq.mu.Lock()
	if eq.closed {
		eq.mu.Unlock()
		return
	}
	eq.q = append(eq.q, e)
	if eq.hasFD() && !eq.fdRaised {
		eq.efd.Raise()
		eq.fdRaised = true
	}
	if eq.waiters > 0 {
		close(eq.wake)
		eq.wake = make(chan struct{})
	}
	eq.mu.Unlock()
	if eq.ws != nil {
		eq.ws.signal()
	}
}

// popLocked removes the head entry.
func (eq *EQ) popLocked() {
	eq.q[eq.head] = eqEvent{}
	eq.head++
	if eq.head == len(eq.q) {
		eq.q, eq.head = eq.q[:0], 0
		if eq.fdRaised {
			eq.efd.Lower()
			eq.fdRaised = false
		}
	} else if eq.head >= 64 && eq.head*2 >= len(eq.q) {
		n := copy(eq.q, eq.q[eq.head:])
		clear(eq.q[n:])
		eq.q, eq.head = eq.q[:n], 0
	}
}

// postEvent queues a struct fi_eq_entry {fid, context, data} under event:
// the provider's own completions, such as FI_AV_COMPLETE.
func (eq *EQ) postEvent(event uint32, fid, context uintptr, data uint64) {
	b := make([]byte, EQEntrySize)
	binary.NativeEndian.PutUint64(b[0:], uint64(fid))
	binary.NativeEndian.PutUint64(b[8:], uint64(context))
	binary.NativeEndian.PutUint64(b[16:], data)
	eq.push(eqEvent{event: event, data: b})
}

// postError queues an error entry.
func (eq *EQ) postError(fid, context uintptr, data uint64, err fi.Errno, provErrno int32) {
	eq.push(eqEvent{err: &EQErrEntry{Fid: fid, Context: context, Data: data, Err: int32(err), ProvErrno: provErrno}})
}

// Read is fi_eq_read: it copies the head event's data into buf (as much
// as fits) and returns the bytes copied and the event. FI_PEEK leaves the
// event queued. EAGAIN: the queue is empty; EAVAIL: an error entry is at
// the head.
func (eq *EQ) Read(buf []byte, flags uint64) (int, uint32, error) {
	eq.mu.Lock()
	defer eq.mu.Unlock()
	if eq.head == len(eq.q) {
		return 0, 0, fi.EAGAIN
	}
	e := &eq.q[eq.head]
	if e.err != nil {
		return 0, 0, fi.EAVAIL
	}
	n := copy(buf, e.data)
	event := e.event
	if flags&fi.PEEK == 0 {
		eq.popLocked()
	}
	return n, event, nil
}

// ReadErr is fi_eq_readerr: it fills out with the error entry at the head
// and returns its size in C (EQErrEntrySize). EAGAIN when the head is not
// an error entry. out.ErrData shares the entry's buffer.
func (eq *EQ) ReadErr(out *EQErrEntry, flags uint64) (int, error) {
	if out == nil {
		return 0, fi.EINVAL
	}
	eq.mu.Lock()
	defer eq.mu.Unlock()
	if eq.head == len(eq.q) || eq.q[eq.head].err == nil {
		return 0, fi.EAGAIN
	}
	*out = *eq.q[eq.head].err
	if flags&fi.PEEK == 0 {
		eq.popLocked()
	}
	return EQErrEntrySize, nil
}

// SRead is fi_eq_sread: Read, blocking up to timeout milliseconds
// (negative: forever) for an event. EAGAIN when the time passes; ENOSYS
// for an EQ without its own wait object (FI_WAIT_NONE or FI_WAIT_SET).
func (eq *EQ) SRead(buf []byte, flags uint64, timeout int) (int, uint32, error) {
	if eq.kind == fi.WAIT_NONE || eq.kind == fi.WAIT_SET {
		return 0, 0, fi.ENOSYS
	}
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	for {
		n, event, err := eq.Read(buf, flags)
		if err != fi.EAGAIN {
			return n, event, err
		}
		var t *time.Timer
		var tc <-chan time.Time
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return 0, 0, fi.EAGAIN
			}
			t = time.NewTimer(left)
			tc = t.C
		}
		eq.mu.Lock()
		if eq.head != len(eq.q) || eq.closed {
			eq.mu.Unlock()
			if t != nil {
				t.Stop()
			}
			if eq.closed {
				return 0, 0, fi.EAGAIN
			}
			continue
		}
		eq.waiters++
		ch := eq.wake
		eq.mu.Unlock()
		select {
		case <-ch:
		case <-tc:
		}
		if t != nil {
			t.Stop()
		}
		eq.mu.Lock()
		eq.waiters--
		eq.mu.Unlock()
	}
}

// Write is fi_eq_write: it queues buf as the data of event and returns
// len(buf). With EQErr, buf is a struct fi_eq_err_entry (EQErrEntrySize
// bytes, native layout) and an error entry is queued; its err_data pointer
// cannot be followed from Go, so the entry carries no error data (the C
// shim uses WriteErr, which does).
func (eq *EQ) Write(event uint32, buf []byte, flags uint64) (int, error) {
	if flags&EQErr != 0 {
		if len(buf) < EQErrEntrySize {
			return 0, fi.EINVAL
		}
		e := &EQErrEntry{
			Fid:       uintptr(binary.NativeEndian.Uint64(buf[0:])),
			Context:   uintptr(binary.NativeEndian.Uint64(buf[8:])),
			Data:      binary.NativeEndian.Uint64(buf[16:]),
			Err:       int32(binary.NativeEndian.Uint32(buf[24:])),
			ProvErrno: int32(binary.NativeEndian.Uint32(buf[28:])),
		}
		eq.push(eqEvent{event: event, err: e})
		return len(buf), nil
	}
	eq.push(eqEvent{event: event, data: append([]byte(nil), buf...)})
	return len(buf), nil
}

// WriteErr queues an error entry written by the application (fi_eq_write
// with EQErr); the entry's ErrData is copied.
func (eq *EQ) WriteErr(event uint32, e *EQErrEntry) (int, error) {
	if e == nil {
		return 0, fi.EINVAL
	}
	c := *e
	c.ErrData = append([]byte(nil), e.ErrData...)
	eq.push(eqEvent{event: event, err: &c})
	return EQErrEntrySize, nil
}

// StrError is fi_eq_strerror: the text of a provider errno.
func (eq *EQ) StrError(provErrno int) string {
	if provErrno < 0 {
		provErrno = -provErrno
	}
	return fi.Errno(provErrno).Error()
}

// ready reports whether an entry (event or error) is queued.
func (eq *EQ) ready() bool {
	eq.mu.Lock()
	defer eq.mu.Unlock()
	return eq.head != len(eq.q)
}

// Close closes the EQ, dropping the entries still queued. EBUSY while
// objects are bound to it.
func (eq *EQ) Close() error {
	eq.mu.Lock()
	if eq.closed {
		eq.mu.Unlock()
		return fi.EINVAL
	}
	if eq.holds > 0 {
		eq.mu.Unlock()
		return fi.EBUSY
	}
	eq.closed = true
	eq.q, eq.head = nil, 0
	if eq.waiters > 0 {
		close(eq.wake)
		eq.wake = make(chan struct{})
	}
	eq.mu.Unlock()
	if eq.ws != nil {
		eq.ws.remove(eq)
	}
	eq.closeWaiter()
	return nil
}
