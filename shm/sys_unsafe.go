//go:build linux

package shm

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/umem"
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
// bytes copied and, if it stopped short, the errno of the failure (a read
// that makes no progress is EFAULT).
func cmaRead(pid int, addr uint64, dst []byte) (int, error) {
	return cmaCopy(unix.SYS_PROCESS_VM_READV, pid, addr, dst)
}

// cmaWrite copies src to address addr of process pid with
// process_vm_writev(2), like cmaRead.
func cmaWrite(pid int, addr uint64, src []byte) (int, error) {
	return cmaCopy(unix.SYS_PROCESS_VM_WRITEV, pid, addr, src)
}

// cmaRetries bounds the EINTR or EAGAIN answers in a row, without
// progress, that cmaCopy retries before it gives up with that errno.
const cmaRetries = 100

// cmaCopy is process_vm_readv or process_vm_writev (trap) between buf here
// and addr in process pid, looping over partial copies: every round
// either moves at least a byte or ends the copy, so a buffer the kernel
// refuses ends it at once (EFAULT) and is never retried.
func cmaCopy(trap uintptr, pid int, addr uint64, buf []byte) (int, error) {
	if len(buf) >= aliasSpan {
		here, there := uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(addr)
		if trap == unix.SYS_PROCESS_VM_WRITEV {
			here, there = there, here // (destination, source)
		}
		if rel := (here - there) & (aliasSpan - 1); rel != 0 && rel < aliasNear {
			return cmaStaged(trap, pid, addr, buf)
		}
	}
	return cmaDirect(trap, pid, addr, buf)
}

// A copy whose destination lies 1 to aliasNear-1 bytes past its source
// modulo aliasSpan runs several times slower in the kernel's string-move
// copy (x86 compares load and store addresses modulo 4 KiB): cmaCopy, and
// the C fast path's CMA read (deliver.c), stage those.
const (
	aliasSpan = 4096
	aliasNear = 64
)

// pageBytes is the smallest page of the platforms the library runs on: a
// copy inside one such page faults on its first byte or not at all (the C
// fast path's atomics, serve.c, rely on it).
const pageBytes = 4096

// cmaStageChunk is the part of a copy cmaStaged moves at a time.
const cmaStageChunk = 64 << 10

// cmaStages holds cmaStaged's buffers (cmaStageChunk bytes and a page of
// slack, so that any page offset fits).
var cmaStages = sync.Pool{New: func() any {
	b := make([]byte, cmaStageChunk+4096)
	return &b
}}

// cmaStaged is cmaCopy for a copy whose destination lies 1 to 63 bytes
// past its source modulo 4 KiB, which the kernel's string-move copy does
// several times slower (64 KiB: 23 us against 5.4 here): it moves the
// bytes through a buffer at the remote address's page offset, the kernel
// copying between equal offsets and Go's copy (which has no such stall)
// doing the rest. A fault in buf ends it with EFAULT where the kernel
// would have.
func cmaStaged(trap uintptr, pid int, addr uint64, buf []byte) (int, error) {
	sp := cmaStages.Get().(*[]byte)
	defer cmaStages.Put(sp)
	off := int((uintptr(addr) - uintptr(unsafe.Pointer(&(*sp)[0]))) & 4095)
	stage := (*sp)[off : off+cmaStageChunk]
	for done := 0; done < len(buf); {
		k := min(len(buf)-done, cmaStageChunk)
		a := addr + uint64(done) // at stage's page offset: done is a multiple of the chunk
		if trap == unix.SYS_PROCESS_VM_READV {
			n, err := cmaDirect(trap, pid, a, stage[:k])
			if _, bad, o := umem.Copy(buf[done:done+n], stage[:n]); bad != umem.None {
				return done + o, unix.EFAULT
			}
			done += n
			if err != nil {
				return done, err
			}
			continue
		}
		if _, bad, o := umem.Copy(stage[:k], buf[done:done+k]); bad != umem.None {
			n, err := cmaDirect(trap, pid, a, stage[:o])
			if err == nil {
				err = unix.EFAULT
			}
			return done + n, err
		}
		n, err := cmaDirect(trap, pid, a, stage[:k])
		done += n
		if err != nil {
			return done, err
		}
	}
	return len(buf), nil
}

// cmaDirect is cmaCopy by the kernel alone.
func cmaDirect(trap uintptr, pid int, addr uint64, buf []byte) (int, error) {
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

// readable reports whether the byte at addr of process pid can be read,
// asking the kernel (fault.go); an answer other than EFAULT (the process
// is gone, CMA is refused) counts as readable.
func readable(pid int, addr uint64) bool {
	var b [1]byte
	_, err := cmaRead(pid, addr, b[:])
	return err != unix.EFAULT
}
