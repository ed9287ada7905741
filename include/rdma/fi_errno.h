/*
 * fi_errno.h -- libfabric 1.17 error codes, ABI-compatible rewrite for the
 * libfabric-psm2 project.
 *
 * Codes below 256 are plain system errno values; codes from 256 upward are
 * fabric-specific.  Routines return them negated (e.g. -FI_EAGAIN).
 */
#ifndef FI_ERRNO_H
#define FI_ERRNO_H

#include <errno.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FI_SUCCESS		0

/* Aliases of system errno values (only the subset libfabric exports). */
#define FI_EPERM		EPERM
#define FI_ENOENT		ENOENT
#define FI_EINTR		EINTR
#define FI_EIO			EIO
#define FI_E2BIG		E2BIG
#define FI_EBADF		EBADF
#define FI_EAGAIN		EAGAIN
#define FI_ENOMEM		ENOMEM
#define FI_EACCES		EACCES
#define FI_EFAULT		EFAULT
#define FI_EBUSY		EBUSY
#define FI_ENODEV		ENODEV
#define FI_EINVAL		EINVAL
#define FI_EMFILE		EMFILE
#define FI_ENOSPC		ENOSPC
#define FI_ENOSYS		ENOSYS
#define FI_EWOULDBLOCK		EWOULDBLOCK
#define FI_ENOMSG		ENOMSG
#define FI_ENODATA		ENODATA
#define FI_EOVERFLOW		EOVERFLOW
#define FI_EMSGSIZE		EMSGSIZE
#define FI_ENOPROTOOPT		ENOPROTOOPT
#define FI_EOPNOTSUPP		EOPNOTSUPP
#define FI_EADDRINUSE		EADDRINUSE
#define FI_EADDRNOTAVAIL	EADDRNOTAVAIL
#define FI_ENETDOWN		ENETDOWN
#define FI_ENETUNREACH		ENETUNREACH
#define FI_ECONNABORTED		ECONNABORTED
#define FI_ECONNRESET		ECONNRESET
#define FI_ENOBUFS		ENOBUFS
#define FI_EISCONN		EISCONN
#define FI_ENOTCONN		ENOTCONN
#define FI_ESHUTDOWN		ESHUTDOWN
#define FI_ETIMEDOUT		ETIMEDOUT
#define FI_ECONNREFUSED		ECONNREFUSED
#define FI_EHOSTDOWN		EHOSTDOWN
#define FI_EHOSTUNREACH		EHOSTUNREACH
#define FI_EALREADY		EALREADY
#define FI_EINPROGRESS		EINPROGRESS
#define FI_EREMOTEIO		EREMOTEIO
#define FI_ECANCELED		ECANCELED
#define FI_EKEYREJECTED		EKEYREJECTED

/* Fabric-specific codes start here. */
#define FI_ERRNO_OFFSET		256

enum {
	FI_EOTHER = FI_ERRNO_OFFSET,	/* 256: unclassified failure */
	FI_ETOOSMALL = 257,		/* caller's buffer too short */
	FI_EOPBADSTATE = 258,		/* object in the wrong state */
	FI_EAVAIL = 259,		/* an error entry can be read */
	FI_EBADFLAGS = 260,		/* unsupported flag bits */
	FI_ENOEQ = 261,			/* no usable event queue */
	FI_EDOMAIN = 262,		/* bad resource domain */
	FI_ENOCQ = 263,			/* no usable completion queue */
	FI_ECRC = 264,
	FI_ETRUNC = 265,		/* data was truncated */
	FI_ENOKEY = 266,
	FI_ENOAV = 267,			/* no usable address vector */
	FI_EOVERRUN = 268,		/* queue overran */
	FI_ENORX = 269,			/* peer had no receive posted */
	FI_ERRNO_MAX			/* one past the last code */
};

const char *fi_strerror(int errnum);

#ifdef __cplusplus
}
#endif

#endif /* FI_ERRNO_H */
