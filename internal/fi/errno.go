package fi

import (
	"errors"
	"syscall"
)

// Errno is a positive libfabric error number (FI_E*). Functions in the C
// ABI return its negation. Values below ErrnoOffset are the Linux errno
// values; values from ErrnoOffset up are libfabric's own.
type Errno int32

// ErrnoOffset is FI_ERRNO_OFFSET.
const ErrnoOffset = 256

// The FI_E* codes.
const (
	SUCCESS       Errno = 0
	EPERM               = Errno(syscall.EPERM)
	ENOENT              = Errno(syscall.ENOENT)
	EINTR               = Errno(syscall.EINTR)
	EIO                 = Errno(syscall.EIO)
	E2BIG               = Errno(syscall.E2BIG)
	EBADF               = Errno(syscall.EBADF)
	EAGAIN              = Errno(syscall.EAGAIN)
	ENOMEM              = Errno(syscall.ENOMEM)
	EACCES              = Errno(syscall.EACCES)
	EFAULT              = Errno(syscall.EFAULT)
	EBUSY               = Errno(syscall.EBUSY)
	ENODEV              = Errno(syscall.ENODEV)
	EINVAL              = Errno(syscall.EINVAL)
	EMFILE              = Errno(syscall.EMFILE)
	ENOSPC              = Errno(syscall.ENOSPC)
	ENOSYS              = Errno(syscall.ENOSYS)
	EWOULDBLOCK         = Errno(syscall.EWOULDBLOCK)
	ENOMSG              = Errno(syscall.ENOMSG)
	ENODATA             = Errno(syscall.ENODATA)
	EOVERFLOW           = Errno(syscall.EOVERFLOW)
	EMSGSIZE            = Errno(syscall.EMSGSIZE)
	ENOPROTOOPT         = Errno(syscall.ENOPROTOOPT)
	EOPNOTSUPP          = Errno(syscall.EOPNOTSUPP)
	EADDRINUSE          = Errno(syscall.EADDRINUSE)
	EADDRNOTAVAIL       = Errno(syscall.EADDRNOTAVAIL)
	ENETDOWN            = Errno(syscall.ENETDOWN)
	ENETUNREACH         = Errno(syscall.ENETUNREACH)
	ECONNABORTED        = Errno(syscall.ECONNABORTED)
	ECONNRESET          = Errno(syscall.ECONNRESET)
	ENOBUFS             = Errno(syscall.ENOBUFS)
	EISCONN             = Errno(syscall.EISCONN)
	ENOTCONN            = Errno(syscall.ENOTCONN)
	ESHUTDOWN           = Errno(syscall.ESHUTDOWN)
	ETIMEDOUT           = Errno(syscall.ETIMEDOUT)
	ECONNREFUSED        = Errno(syscall.ECONNREFUSED)
	EHOSTDOWN           = Errno(syscall.EHOSTDOWN)
	EHOSTUNREACH        = Errno(syscall.EHOSTUNREACH)
	EALREADY            = Errno(syscall.EALREADY)
	EINPROGRESS         = Errno(syscall.EINPROGRESS)
	EREMOTEIO           = Errno(syscall.EREMOTEIO)
	ECANCELED           = Errno(syscall.ECANCELED)
	EKEYREJECTED        = Errno(syscall.EKEYREJECTED)

	EOTHER      Errno = ErrnoOffset
	ETOOSMALL   Errno = 257
	EOPBADSTATE Errno = 258
	EAVAIL      Errno = 259
	EBADFLAGS   Errno = 260
	ENOEQ       Errno = 261
	EDOMAIN     Errno = 262
	ENOCQ       Errno = 263
	ECRC        Errno = 264
	ETRUNC      Errno = 265
	ENOKEY      Errno = 266
	ENOAV       Errno = 267
	EOVERRUN    Errno = 268
	ENORX       Errno = 269
	ErrnoMax    Errno = 270
)

// libfabric's own messages for the codes from ErrnoOffset on.
var fabricErrText = [...]string{
	EOTHER - ErrnoOffset:      "Unspecified error",
	ETOOSMALL - ErrnoOffset:   "Provided buffer is too small",
	EOPBADSTATE - ErrnoOffset: "Operation not permitted in current state",
	EAVAIL - ErrnoOffset:      "Error available",
	EBADFLAGS - ErrnoOffset:   "Flags not supported",
	ENOEQ - ErrnoOffset:       "Missing or unavailable event queue",
	EDOMAIN - ErrnoOffset:     "Invalid resource domain",
	ENOCQ - ErrnoOffset:       "Missing or unavailable completion queue",
	ECRC - ErrnoOffset:        "CRC error",
	ETRUNC - ErrnoOffset:      "Truncation error",
	ENOKEY - ErrnoOffset:      "Required key not available",
	ENOAV - ErrnoOffset:       "Missing or unavailable address vector",
	EOVERRUN - ErrnoOffset:    "Queue has been overrun",
	ENORX - ErrnoOffset:       "Receiver not ready, no receive buffers available",
}

// FabricText returns libfabric's message for a code at or above
// ErrnoOffset (codes past the table read as EOTHER), and ok=false for
// system errno values, whose text comes from the C library's strerror.
func FabricText(e Errno) (string, bool) {
	if e < 0 {
		e = -e
	}
	if e < ErrnoOffset {
		return "", false
	}
	if e >= ErrnoMax {
		e = EOTHER
	}
	return fabricErrText[e-ErrnoOffset], true
}

// Error implements error.
func (e Errno) Error() string {
	if s, ok := FabricText(e); ok {
		return s
	}
	return syscall.Errno(e).Error()
}

// ToErrno maps any error to the FI_E* code that crosses the ABI: an Errno
// found anywhere in the chain, EOTHER otherwise, SUCCESS for nil.
func ToErrno(err error) Errno {
	if err == nil {
		return SUCCESS
	}
	var e Errno
	if errors.As(err, &e) {
		return e
	}
	return EOTHER
}
