package sys

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// futex(2) operations, and the flag for a word only this process maps.
const (
	futexWait    = 0
	futexWake    = 1
	futexPrivate = 128
)

// FutexWait sleeps while the uint32 at addr holds val, until woken,
// interrupted, or timeout passes (forever if timeout is negative). Every
// outcome is a return: callers re-check their condition. private: the word
// is in memory only this process maps (the kernel then keys the wait by
// address, which is cheaper); otherwise it may be shared with others.
func FutexWait(addr unsafe.Pointer, val uint32, timeout time.Duration, private bool) {
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	op := uintptr(futexWait)
	if private {
		op |= futexPrivate
	}
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(addr), op, uintptr(val), uintptr(unsafe.Pointer(ts)), 0, 0)
}

// FutexWake wakes up to n threads sleeping on the uint32 at addr (n < 0:
// all of them).
func FutexWake(addr unsafe.Pointer, n int, private bool) {
	if n < 0 {
		n = 1<<31 - 1
	}
	op := uintptr(futexWake)
	if private {
		op |= futexPrivate
	}
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(addr), op, uintptr(n), 0, 0, 0)
}
