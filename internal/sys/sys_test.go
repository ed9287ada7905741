package sys

import (
	"os"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

func TestEventFD(t *testing.T) {
	e, err := NewEventFD()
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	f := os.NewFile(uintptr(e), "eventfd") // only to read it without blocking
	var b [8]byte
	e.Raise()
	e.Raise()
	if n, err := f.Read(b[:]); n != 8 || err != nil || b[0] != 2 {
		t.Fatalf("read %d %v %v, want a count of 2", n, err, b)
	}
	e.Raise()
	e.Lower()
	e.Raise()
	if _, err := f.Read(b[:]); err != nil || b[0] != 1 {
		t.Fatalf("after lower and raise: %v %v, want 1", err, b)
	}
}

// A futex sleeper wakes on FutexWake, and FutexWait with a timeout
// returns by itself.
func TestFutex(t *testing.T) {
	for _, private := range []bool{true, false} {
		var w atomic.Uint32
		// A timed wait sleeps: waits of what is left of 20 ms return a
		// few times at most. (One may return early: a signal, such as the
		// Go runtime's preemption, interrupts it, and callers loop.)
		t0, calls := time.Now(), 0
		for d := time.Since(t0); d < 20*time.Millisecond; d = time.Since(t0) {
			FutexWait(unsafe.Pointer(&w), 0, 20*time.Millisecond-d, private)
			calls++
		}
		if calls > 10 {
			t.Errorf("private %v: a 20 ms wait took %d calls: it does not sleep", private, calls)
		}
		done := make(chan struct{})
		go func() {
			for w.Load() == 0 {
				FutexWait(unsafe.Pointer(&w), 0, -1, private)
			}
			close(done)
		}()
		w.Store(1)
		FutexWake(unsafe.Pointer(&w), -1, private)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("private %v: the sleeper did not wake", private)
		}
	}
}

// CMA reads and writes this process's own memory, and a refused address
// ends the copy with EFAULT at once.
func TestCMA(t *testing.T) {
	src := []byte("cross-memory attach")
	dst := make([]byte, len(src))
	pid := os.Getpid()
	if n, err := CMA(false, pid, uint64(uintptr(unsafe.Pointer(&src[0]))), dst); n != len(src) || err != nil || string(dst) != string(src) {
		t.Fatalf("read: %d %v %q", n, err, dst)
	}
	out := make([]byte, 5)
	if n, err := CMA(true, pid, uint64(uintptr(unsafe.Pointer(&out[0]))), []byte("write")); n != 5 || err != nil || string(out) != "write" {
		t.Fatalf("write: %d %v %q", n, err, out)
	}
	if n, err := CMA(false, pid, 8, dst); n != 0 || err != EFAULT {
		t.Fatalf("address 8: %d %v, want EFAULT", n, err)
	}
}

func TestMapAnon(t *testing.T) {
	b, err := MapAnon(PageSize())
	if err != nil || len(b) != PageSize() {
		t.Fatal(len(b), err)
	}
	b[0], b[len(b)-1] = 1, 2
	if err := Unmap(b); err != nil {
		t.Fatal(err)
	}
	if AffinityCount() < 1 {
		t.Error("no CPU to run on")
	}
}
