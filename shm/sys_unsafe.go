//go:build linux

package shm

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/sys"
	"github.com/gopsm2/libfabric-psm2/internal/umem"
)

// This file holds the endpoint's system calls that pass memory to the
// kernel: the doorbell futex and cross-memory attach.

// The doorbell lives in shared memory mapped by other processes, so its
// futex calls are the shared (not FUTEX_PRIVATE_FLAG) variants: the
// kernel keys them by the page, not by this process's address.

// futexWait sleeps while *word == val, until woken, interrupted or timeout
// passes (forever if timeout is negative). Every outcome is a return:
// callers re-check their condition.
func futexWait(word *atomic.Uint32, val uint32, timeout time.Duration) {
	sys.FutexWait(unsafe.Pointer(word), val, timeout, false)
}

// futexWake wakes every thread sleeping on word.
func futexWake(word *atomic.Uint32) { sys.FutexWake(unsafe.Pointer(word), -1, false) }

// addrOf returns the address of b's first byte, as the number a peer
// passes back to process_vm_readv. b must not be empty.
func addrOf(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// cmaRead copies len(dst) bytes from address addr of process pid into dst
// with process_vm_readv(2), looping over partial reads. It returns the
// bytes copied and, if it stopped short, the errno of the failure (a read
// that makes no progress is EFAULT).
func cmaRead(pid int, addr uint64, dst []byte) (int, error) {
	return cmaCopy(false, pid, addr, dst)
}

// cmaWrite copies src to address addr of process pid with
// process_vm_writev(2), like cmaRead.
func cmaWrite(pid int, addr uint64, src []byte) (int, error) {
	return cmaCopy(true, pid, addr, src)
}

// cmaCopy is process_vm_readv or process_vm_writev (write) between buf here
// and addr in process pid, looping over partial copies: every round
// either moves at least a byte or ends the copy, so a buffer the kernel
// refuses ends it at once (EFAULT) and is never retried.
func cmaCopy(write bool, pid int, addr uint64, buf []byte) (int, error) {
	if len(buf) >= aliasSpan {
		here, there := uintptr(unsafe.Pointer(unsafe.SliceData(buf))), uintptr(addr)
		if write {
			here, there = there, here // (destination, source)
		}
		if rel := (here - there) & (aliasSpan - 1); rel != 0 && rel < aliasNear {
			return cmaStaged(write, pid, addr, buf)
		}
	}
	return cmaDirect(write, pid, addr, buf)
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
func cmaStaged(write bool, pid int, addr uint64, buf []byte) (int, error) {
	sp := cmaStages.Get().(*[]byte)
	defer cmaStages.Put(sp)
	off := int((uintptr(addr) - uintptr(unsafe.Pointer(&(*sp)[0]))) & 4095)
	stage := (*sp)[off : off+cmaStageChunk]
	for done := 0; done < len(buf); {
		k := min(len(buf)-done, cmaStageChunk)
		a := addr + uint64(done) // at stage's page offset: done is a multiple of the chunk
		if !write {
			n, err := cmaDirect(write, pid, a, stage[:k])
			if _, bad, o := umem.Copy(buf[done:done+n], stage[:n]); bad != umem.None {
				return done + o, sys.EFAULT
			}
			done += n
			if err != nil {
				return done, err
			}
			continue
		}
		if _, bad, o := umem.Copy(stage[:k], buf[done:done+k]); bad != umem.None {
			n, err := cmaDirect(write, pid, a, stage[:o])
			if err == nil {
				err = sys.EFAULT
			}
			return done + n, err
		}
		n, err := cmaDirect(write, pid, a, stage[:k])
		done += n
		if err != nil {
			return done, err
		}
	}
	return len(buf), nil
}

// cmaDirect is cmaCopy by the kernel alone.
func cmaDirect(write bool, pid int, addr uint64, buf []byte) (int, error) {
	return sys.CMA(write, pid, addr, buf)
}

// readable reports whether the byte at addr of process pid can be read,
// asking the kernel (fault.go); an answer other than EFAULT (the process
// is gone, CMA is refused) counts as readable.
func readable(pid int, addr uint64) bool {
	var b [1]byte
	_, err := cmaRead(pid, addr, b[:])
	return err != sys.EFAULT
}
