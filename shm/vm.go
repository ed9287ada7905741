//go:build linux

package shm

import (
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Retired address ranges. Code outside Go reads an endpoint's own ring
// without the owner's lock: the library's C idle check loads a ring's
// probe word (RingProbe) and then reads two words of the ring. An endpoint
// closing on another thread in between must not leave that reader facing
// unmapped memory, and there is no cheap way to know when every such
// reader has left. So the owner's segment is never unmapped: Close maps
// anonymous, read-only zero pages over its range in one mmap(MAP_FIXED)
// (the shared pages are released; the range reads as zeros, which a probe
// takes for "nothing arrived"), and the range goes to a pool that the next
// segment of the same size is mapped over. Stale readers then read zeros
// or another live ring of this process, never a fault.
//
// The pool holds at most the number of own segments this process had open
// at its peak, for each size used (one size in practice); past
// maxRetired ranges the oldest is unmapped for real.
const maxRetired = 256

var retired struct {
	mu     sync.Mutex
	ranges []vmRange
}

type vmRange struct {
	addr unsafe.Pointer
	size uintptr
}

// mapOwned maps size bytes of fd shared, read-write, over a retired range
// of that size if there is one.
func mapOwned(fd, size int) ([]byte, error) {
	var at unsafe.Pointer
	retired.mu.Lock()
	for i, r := range retired.ranges {
		if r.size == uintptr(size) {
			at = r.addr
			retired.ranges = append(retired.ranges[:i], retired.ranges[i+1:]...)
			break
		}
	}
	retired.mu.Unlock()
	flags := unix.MAP_SHARED
	if at != nil {
		flags |= unix.MAP_FIXED
	}
	p, err := unix.MmapPtr(fd, 0, at, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, flags)
	if err != nil && at != nil {
		putRetired(vmRange{at, uintptr(size)}) // still the zero pages
		p, err = unix.MmapPtr(fd, 0, nil, uintptr(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	}
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*byte)(p), size), nil
}

// retire replaces a mapping made by mapOwned with read-only zero pages and
// keeps its range for reuse. If the replacement fails, it unmaps.
func retire(mem []byte) error {
	r := vmRange{unsafe.Pointer(unsafe.SliceData(mem)), uintptr(len(mem))}
	_, err := unix.MmapPtr(-1, 0, r.addr, r.size, unix.PROT_READ,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
	if err != nil {
		return unix.MunmapPtr(r.addr, r.size)
	}
	putRetired(r)
	return nil
}

func putRetired(r vmRange) {
	retired.mu.Lock()
	defer retired.mu.Unlock()
	retired.ranges = append(retired.ranges, r)
	if len(retired.ranges) > maxRetired {
		old := retired.ranges[0]
		retired.ranges = retired.ranges[1:]
		_ = unix.MunmapPtr(old.addr, old.size)
	}
}
