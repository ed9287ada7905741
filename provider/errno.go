package provider

import (
	"errors"
	"syscall"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// The provider's one map from the errors of the layers below it (the
// wires, the operating system) to libfabric's codes. What reaches the ABI
// unmapped becomes FI_EOTHER there (fi.ToErrno).

// errnoOr maps err: nil to 0; an FI_E* code (itself, or anywhere in its
// chain) to itself; a wire's error to its libfabric meaning; an operating
// system's errno to the code for it; anything else to fallback.
func errnoOr(err error, fallback fi.Errno) fi.Errno {
	if err == nil {
		return fi.SUCCESS
	}
	if e, ok := err.(fi.Errno); ok {
		return e
	}
	switch {
	case errors.Is(err, transport.ErrAgain):
		return fi.EAGAIN
	case errors.Is(err, transport.ErrUnreachable):
		return fi.EHOSTUNREACH
	case errors.Is(err, transport.ErrPeerDead):
		return fi.ECONNRESET
	case errors.Is(err, transport.ErrTimeout):
		return fi.ETIMEDOUT
	case errors.Is(err, transport.ErrTooLong):
		return fi.EMSGSIZE
	case errors.Is(err, transport.ErrClosed):
		return fi.ECANCELED
	case errors.Is(err, transport.ErrFault):
		// The application's own buffer: FI_EFAULT, as a system call
		// would answer.
		return fi.EFAULT
	case errors.Is(err, transport.ErrPeerFault):
		// The peer's buffer: nothing wrong here, the transfer failed.
		return fi.EIO
	}
	var e fi.Errno
	if errors.As(err, &e) {
		return e
	}
	var sys syscall.Errno
	if errors.As(err, &sys) {
		switch sys {
		case syscall.EACCES, syscall.EPERM, syscall.EROFS:
			return fi.EACCES
		case syscall.EMFILE, syscall.ENFILE:
			return fi.EMFILE
		case syscall.ENOSPC, syscall.EDQUOT:
			return fi.ENOSPC
		case syscall.EEXIST, syscall.EADDRINUSE:
			// libfabric has no FI_EEXIST: the endpoint's name is in use.
			return fi.EADDRINUSE
		}
	}
	return fallback
}

// errnoOf is the code of an operation that failed on the wire (FI_EIO
// when nothing says more).
func errnoOf(err error) fi.Errno { return errnoOr(err, fi.EIO) }

// wireErrno is the code of a failure to open an endpoint's wire: the
// operating system's reason where there is one (a full /dev/shm is
// -FI_ENOSPC, a segment directory taken by another user -FI_EACCES, no
// descriptors left -FI_EMFILE), -FI_ENOMEM otherwise.
func wireErrno(err error) fi.Errno { return errnoOr(err, fi.ENOMEM) }
