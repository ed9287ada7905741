package provider

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// ctlFake is a waitable whose readiness the test sets; it counts the
// ready() calls.
type ctlFake struct {
	r     atomic.Bool
	calls atomic.Int32
}

func (f *ctlFake) ready() bool {
	f.calls.Add(1)
	return f.r.Load()
}

func ctlTestFabric(t *testing.T) *Fabric {
	t.Helper()
	p, _ := newTestProvider(t, nil)
	f, err := p.OpenFabric(&fi.FabricAttr{Name: "psm2"})
	if err != nil {
		t.Fatalf("OpenFabric: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// fdReadable polls fd without blocking.
func fdReadable(t *testing.T, fd int) bool {
	t.Helper()
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(pfd, 0)
	if err != nil {
		t.Fatalf("poll: %v", err)
	}
	return n > 0 && pfd[0].Revents&unix.POLLIN != 0
}

func TestOpenWaitSet(t *testing.T) {
	f := ctlTestFabric(t)
	tests := []struct {
		name    string
		attr    *WaitAttr
		wantErr error
		wantObj int32
		hasFD   bool
	}{
		{"unspec is fd", &WaitAttr{WaitObj: fi.WAIT_UNSPEC}, nil, fi.WAIT_FD, true},
		{"fd", &WaitAttr{WaitObj: fi.WAIT_FD}, nil, fi.WAIT_FD, true},
		{"pollfd", &WaitAttr{WaitObj: fi.WAIT_POLLFD}, nil, fi.WAIT_POLLFD, true},
		{"mutex_cond", &WaitAttr{WaitObj: fi.WAIT_MUTEX_COND}, nil, fi.WAIT_MUTEX_COND, false},
		{"none", &WaitAttr{WaitObj: fi.WAIT_NONE}, fi.EINVAL, 0, false},
		{"set", &WaitAttr{WaitObj: fi.WAIT_SET}, fi.EINVAL, 0, false},
		{"yield", &WaitAttr{WaitObj: fi.WAIT_YIELD}, fi.EINVAL, 0, false},
		{"unknown", &WaitAttr{WaitObj: 42}, fi.EINVAL, 0, false},
		{"flags", &WaitAttr{WaitObj: fi.WAIT_FD, Flags: 1}, fi.EINVAL, 0, false},
		{"nil attr", nil, fi.EINVAL, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, err := f.OpenWaitSet(tt.attr)
			if tt.wantErr != nil {
				if err != tt.wantErr || ws != nil {
					t.Fatalf("OpenWaitSet = %v, %v; want nil, %v", ws, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenWaitSet: %v", err)
			}
			defer ws.Close()
			if got := ws.WaitObj(); got != tt.wantObj {
				t.Errorf("WaitObj = %d, want %d", got, tt.wantObj)
			}
			fd, err := ws.WaitFD()
			if tt.hasFD && (err != nil || fd < 0) {
				t.Errorf("WaitFD = %d, %v; want an fd", fd, err)
			}
			if !tt.hasFD && err != fi.ENODATA {
				t.Errorf("WaitFD = %d, %v; want ENODATA", fd, err)
			}
		})
	}
}

func TestWaitSetWait(t *testing.T) {
	f := ctlTestFabric(t)
	ws, err := f.OpenWaitSet(&WaitAttr{WaitObj: fi.WAIT_UNSPEC})
	if err != nil {
		t.Fatal(err)
	}
	a, b := &ctlFake{}, &ctlFake{}
	ws.add(a)
	ws.add(b)
	if err := ws.Wait(0); err != fi.ETIMEDOUT {
		t.Errorf("Wait(0) with nothing ready = %v, want ETIMEDOUT", err)
	}
	if a.calls.Load() == 0 || b.calls.Load() == 0 {
		t.Errorf("Wait did not poll every member: %d, %d calls", a.calls.Load(), b.calls.Load())
	}
	start := time.Now()
	if err := ws.Wait(30); err != fi.ETIMEDOUT {
		t.Errorf("Wait(30) = %v, want ETIMEDOUT", err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("Wait(30) returned after %v", d)
	}
	b.r.Store(true)
	if err := ws.Wait(-1); err != nil {
		t.Errorf("Wait with a ready member = %v", err)
	}
	if err := ws.Close(); err != fi.EBUSY {
		t.Errorf("Close with members = %v, want EBUSY", err)
	}
	ws.remove(a)
	ws.remove(a) // not a member any more: a no-op
	ws.remove(b)
	if err := ws.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := ws.Close(); err != fi.EINVAL {
		t.Errorf("second Close = %v, want EINVAL", err)
	}
}

// A signal wakes a blocked Wait without waiting for the periodic re-check.
func TestWaitSetSignalWakes(t *testing.T) {
	old := waitRecheck
	waitRecheck = time.Hour
	defer func() { waitRecheck = old }()

	f := ctlTestFabric(t)
	ws, err := f.OpenWaitSet(&WaitAttr{WaitObj: fi.WAIT_MUTEX_COND})
	if err != nil {
		t.Fatal(err)
	}
	m := &ctlFake{}
	ws.add(m)
	defer func() { ws.remove(m); ws.Close() }()

	done := make(chan error, 1)
	go func() { done <- ws.Wait(-1) }()
	time.Sleep(20 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before any event", err)
	default:
	}
	m.r.Store(true)
	ws.signal()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Wait = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not wake on signal")
	}
}

// Without a signal, Wait still finds a member that became ready (it drives
// progress through ready()).
func TestWaitSetRecheck(t *testing.T) {
	old := waitRecheck
	waitRecheck = 5 * time.Millisecond
	defer func() { waitRecheck = old }()

	f := ctlTestFabric(t)
	ws, _ := f.OpenWaitSet(&WaitAttr{WaitObj: fi.WAIT_FD})
	m := &ctlFake{}
	ws.add(m)
	defer func() { ws.remove(m); ws.Close() }()
	go func() {
		time.Sleep(20 * time.Millisecond)
		m.r.Store(true)
	}()
	if err := ws.Wait(5000); err != nil {
		t.Errorf("Wait = %v", err)
	}
}

func TestWaitSetFD(t *testing.T) {
	f := ctlTestFabric(t)
	ws, _ := f.OpenWaitSet(&WaitAttr{WaitObj: fi.WAIT_FD})
	m := &ctlFake{}
	ws.add(m)
	defer func() { ws.remove(m); ws.Close() }()
	fd, err := ws.WaitFD()
	if err != nil {
		t.Fatal(err)
	}
	if fdReadable(t, fd) {
		t.Error("fd readable before any signal")
	}
	ws.signal()
	ws.signal()
	if !fdReadable(t, fd) {
		t.Error("fd not readable after a signal")
	}
	// fi_trywait resets the fd before it looks at the members.
	if err := f.TryWait([]Waitable{ws}); err != nil {
		t.Errorf("TryWait with nothing ready = %v", err)
	}
	if fdReadable(t, fd) {
		t.Error("fd still readable after trywait")
	}
	ws.signal()
	if !fdReadable(t, fd) {
		t.Error("fd not readable after the next signal")
	}
}

func TestTryWait(t *testing.T) {
	f := ctlTestFabric(t)
	a, b := &ctlFake{}, &ctlFake{}
	if err := f.TryWait(nil); err != nil {
		t.Errorf("TryWait() = %v", err)
	}
	if err := f.TryWait([]Waitable{a, b}); err != nil {
		t.Errorf("TryWait with nothing ready = %v", err)
	}
	b.r.Store(true)
	if err := f.TryWait([]Waitable{a, b}); err != fi.EAGAIN {
		t.Errorf("TryWait with b ready = %v, want EAGAIN", err)
	}
	ws, _ := f.OpenWaitSet(&WaitAttr{WaitObj: fi.WAIT_FD})
	ws.add(b)
	if err := f.TryWait([]Waitable{a, ws}); err != fi.EAGAIN {
		t.Errorf("TryWait with a ready wait set member = %v, want EAGAIN", err)
	}
	ws.remove(b)
	if err := f.TryWait([]Waitable{a, ws}); err != nil {
		t.Errorf("TryWait with an empty wait set = %v", err)
	}
	ws.Close()
	if err := f.TryWait([]Waitable{nil}); err != fi.EINVAL {
		t.Errorf("TryWait(nil member) = %v, want EINVAL", err)
	}
}

// Members signal from many goroutines while others wait, add and remove.
func TestWaitSetConcurrent(t *testing.T) {
	f := ctlTestFabric(t)
	ws, _ := f.OpenWaitSet(&WaitAttr{WaitObj: fi.WAIT_FD})
	m := &ctlFake{}
	ws.add(m)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ws.signal()
			}
		}()
	}
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 200; j++ {
				x := &ctlFake{}
				ws.add(x)
				ws.Wait(0)
				f.TryWait([]Waitable{ws})
				ws.remove(x)
			}
		}()
	}
	m.r.Store(true)
	for i := 0; i < 100; i++ {
		if err := ws.Wait(1000); err != nil {
			t.Errorf("Wait = %v", err)
			break
		}
	}
	close(stop)
	wg.Wait()
	ws.remove(m)
	if err := ws.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
}

func TestWaitSetWithEQ(t *testing.T) {
	old := waitRecheck
	waitRecheck = time.Hour
	defer func() { waitRecheck = old }()

	f := ctlTestFabric(t)
	ws, _ := f.OpenWaitSet(&WaitAttr{WaitObj: fi.WAIT_UNSPEC})
	eq, err := f.OpenEQ(&EQAttr{WaitObj: fi.WAIT_SET, WaitSet: ws})
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Close(); !errors.Is(err, fi.EBUSY) {
		t.Errorf("closing a wait set with an EQ on it = %v, want EBUSY", err)
	}
	done := make(chan error, 1)
	go func() { done <- ws.Wait(-1) }()
	time.Sleep(10 * time.Millisecond)
	eq.postEvent(fi.AV_COMPLETE, 1, 2, 3)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Wait = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an EQ event did not wake the wait set")
	}
	if err := eq.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ws.Close(); err != nil {
		t.Errorf("Close after the EQ closed = %v", err)
	}
}
