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
