package sys

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmaRetries bounds the EINTR or EAGAIN answers in a row, without
// progress, that CMA retries before it gives up with that errno.
const cmaRetries = 100

// CMA copies between buf here and address addr of process pid with
// process_vm_readv(2) (write false: into buf) or process_vm_writev(2),
// looping over partial copies: every round either moves at least a byte
// or ends the copy, so a buffer the kernel refuses ends it at once
// (EFAULT) and is never retried. It returns the bytes moved and, if it
// stopped short, the errno (a round that moves nothing is EFAULT).
func CMA(write bool, pid int, addr uint64, buf []byte) (int, error) {
	trap := uintptr(unix.SYS_PROCESS_VM_READV)
	if write {
		trap = unix.SYS_PROCESS_VM_WRITEV
	}
	var local [1]unix.Iovec
	var remote [1]unix.RemoteIovec
	retries := 0
	for done := 0; done < len(buf); {
		local[0].Base = &buf[done]
		local[0].SetLen(len(buf) - done)
		remote[0] = unix.RemoteIovec{Base: uintptr(addr) + uintptr(done), Len: len(buf) - done}
		// A raw system call: the copy takes tens of microseconds, long
		// enough for the Go scheduler to hand this thread's P away
		// during an ordinary one and make it wait to get one back.
		r, _, e := unix.RawSyscall6(trap, uintptr(pid),
			uintptr(unsafe.Pointer(&local[0])), 1, uintptr(unsafe.Pointer(&remote[0])), 1, 0)
		n := int(r)
		switch {
		case (e == unix.EINTR || e == unix.EAGAIN) && retries < cmaRetries:
			retries++
			continue
		case e != 0:
			return done, e
		case n <= 0:
			return done, unix.EFAULT
		}
		done += n
		retries = 0
	}
	return len(buf), nil
}
