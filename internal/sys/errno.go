package sys

import "golang.org/x/sys/unix"

// The errno values callers compare results with.
const (
	EACCES     = unix.EACCES
	EADDRINUSE = unix.EADDRINUSE
	EAGAIN     = unix.EAGAIN
	EEXIST     = unix.EEXIST
	EFAULT     = unix.EFAULT
	EINTR      = unix.EINTR
	EINVAL     = unix.EINVAL
	ELOOP      = unix.ELOOP
	ENOENT     = unix.ENOENT
	ENOSYS     = unix.ENOSYS
	ENOTDIR    = unix.ENOTDIR
	EPERM      = unix.EPERM
	ESRCH      = unix.ESRCH
)

// Errno is a system call's error number.
type Errno = unix.Errno

// IgnoringEINTR calls f again while it fails with EINTR: a system call a
// signal interrupted before it did anything.
func IgnoringEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// RawCall is a non-blocking system call made without telling the Go
// scheduler (unix.RawSyscall6), again while a signal interrupts it.
func RawCall(trap, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, Errno) {
	for {
		r, _, e := unix.RawSyscall6(trap, a1, a2, a3, a4, a5, a6)
		if e != unix.EINTR {
			return r, e
		}
	}
}
