//go:build linux

package shm

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// This file holds the endpoint's system calls that pass memory to the
// kernel: the doorbell futex and cross-memory attach.

// Futex operations. The doorbell lives in shared memory mapped by other
// processes, so these are the shared (not FUTEX_PRIVATE_FLAG) variants:
// the kernel keys them by the page, not by this process's address.
const (
	futexWaitOp = 0 // FUTEX_WAIT
	futexWakeOp = 1 // FUTEX_WAKE
)

// futexWait sleeps while *word == val, until woken, interrupted or timeout
// passes (forever if timeout is negative). Every outcome is a return:
// callers re-check their condition.
func futexWait(word *atomic.Uint32, val uint32, timeout time.Duration) {
	var ts *unix.Timespec
	if timeout >= 0 {
		t := unix.NsecToTimespec(int64(timeout))
		ts = &t
	}
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWaitOp,
		uintptr(val), uintptr(unsafe.Pointer(ts)), 0, 0)
}

// futexWake wakes every thread sleeping on word.
func futexWake(word *atomic.Uint32) {
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWakeOp,
		1<<31-1, 0, 0, 0)
}

// addrOf returns the address of b's first byte, as the number a peer
// passes back to process_vm_readv. b must not be empty.
func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// cmaRead copies len(dst) bytes from address addr of process pid into dst
// with process_vm_readv(2), looping over partial reads. It returns the
// errno of the first failure; a read that makes no progress is EFAULT.
func cmaRead(pid int, addr uint64, dst []byte) error {
	return cmaCopy(unix.SYS_PROCESS_VM_READV, pid, addr, dst)
}

// cmaWrite copies src to address addr of process pid with
// process_vm_writev(2), like cmaRead.
func cmaWrite(pid int, addr uint64, src []byte) error {
	return cmaCopy(unix.SYS_PROCESS_VM_WRITEV, pid, addr, src)
}

// cmaCopy is process_vm_readv or process_vm_writev (trap) between buf here
// and addr in process pid, looping over partial copies.
func cmaCopy(trap uintptr, pid int, addr uint64, dst []byte) error {
	var local [1]unix.Iovec
	var remote [1]unix.RemoteIovec
	for done := 0; done < len(dst); {
		local[0].Base = &dst[done]
		local[0].SetLen(len(dst) - done)
		remote[0] = unix.RemoteIovec{Base: uintptr(addr) + uintptr(done), Len: len(dst) - done}
		// A raw system call: the copy takes tens of microseconds, long
		// enough for the Go scheduler to hand this thread's P away
		// during an ordinary one and make it wait to get one back.
		r, _, e := unix.RawSyscall6(trap, uintptr(pid),
			uintptr(unsafe.Pointer(&local[0])), 1, uintptr(unsafe.Pointer(&remote[0])), 1, 0)
		n := int(r)
		var err error
		if e != 0 {
			err = e
		}
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return err
		case n <= 0:
			return unix.EFAULT
		}
		done += n
	}
	return nil
}
