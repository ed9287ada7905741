//go:build linux

package shm

import (
	"errors"
	"fmt"

	"github.com/gopsm2/libfabric-psm2/internal/sys"
	"github.com/gopsm2/libfabric-psm2/internal/umem"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Buffers the kernel refuses. The application may hand over memory that
// cannot be read (a send) or written (a receive): unmapped, PROT_NONE,
// read-only. Where the kernel copies (process_vm_readv/writev) it answers
// EFAULT; where Go copies, internal/umem turns the fault into a result.
// Either way the transfer fails at once, on both sides, and nothing is
// retried: the side whose buffer it is gets transport.ErrFault, the other
// transport.ErrPeerFault. The FIN (or, from a streaming sender, a DATA
// cell without data) carries the verdict across as a finStatus.

// Errors of failed transfers, by the side that reports them.
var (
	// A send whose own buffer could not be read: by Send (inline, eager,
	// or a copied rendezvous payload), or by a receiver (FIN).
	errSendFault = fmt.Errorf("shm: the send buffer cannot be read: %w", transport.ErrFault)
	// The receiver's buffer could not be written (the sender's view).
	errRemoteDstFault = fmt.Errorf("shm: the receiver's buffer cannot be written: %w", transport.ErrPeerFault)
	// The receiver could not copy for another reason (the sender's view).
	errRemoteFailed = errors.New("shm: the receiver could not copy the data")

	// A fetch whose own buffer could not be written.
	errFetchFault = fmt.Errorf("shm: the receive buffer cannot be written: %w", transport.ErrFault)
	// The sender's buffer could not be read (the receiver's view).
	errRemoteSrcFault = fmt.Errorf("shm: the sender's buffer cannot be read: %w", transport.ErrPeerFault)
	// A copy failed for another reason than a refused buffer, or
	// without saying why.
	errCopyFailed = errors.New("shm: the copy of the data failed")
)

// sendError is the sender's view of FIN status st: nil for finOK.
func sendError(st byte) error {
	switch st {
	case finOK:
		return nil
	case finTimeout:
		return errRemoteTimeout
	case finSrcFault, finBothFault:
		return errSendFault
	case finDstFault:
		return errRemoteDstFault
	}
	return errRemoteFailed // finFailed, or a later version's status
}

// fetchError is the receiver's view of a failed copy with status st,
// whose cause (an errno) may be nil.
func fetchError(st byte, cause error) error {
	switch st {
	case finSrcFault:
		return errRemoteSrcFault
	case finDstFault, finBothFault:
		return errFetchFault
	}
	if cause != nil {
		return fmt.Errorf("shm: fetch: the copy failed: %w", cause)
	}
	return errCopyFailed
}

// faultStatus is the status of a copy that faulted on either buffer.
func faultStatus(srcBad, dstBad bool) byte {
	switch {
	case srcBad && dstBad:
		return finBothFault
	case dstBad:
		return finDstFault
	case srcBad:
		return finSrcFault
	}
	return finFailed
}

// cmaStatus finds out whose buffer a process_vm_readv from addr in
// process pid into dst refused, which failed with err at offset off of
// dst: the kernel answers EFAULT for either side, so it probes both at
// that offset, the sender's with a one-byte process_vm_readv, ours with a
// guarded load and store. Any other errno is a plain failure.
func cmaStatus(pid int, addr uint64, dst []byte, off int, err error) byte {
	if err != sys.EFAULT || off < 0 || off >= len(dst) {
		return finFailed
	}
	return faultStatus(!readable(pid, addr+uint64(off)), !umem.Writable(dst[off:]))
}

// localCopy is a rendezvous copy within this process: from the sender's
// src into dst, both the applications'. It returns finOK or the status of
// the fault: the buffer that faulted, and the other one too if it is bad
// at the same offset.
func localCopy(dst, src []byte) byte {
	_, bad, off := umem.Copy(dst, src)
	switch bad {
	case umem.Dst:
		return faultStatus(!umem.Readable(src[off:]), true)
	case umem.Src:
		return faultStatus(true, !umem.Writable(dst[off:]))
	}
	return finOK
}

// readAll gathers from g into each of parts in turn. It reports false if
// reading the iov faulted: its memory is not the application's to give.
// The parts are then partly filled.
func (g *gather) readAll(parts ...[]byte) bool {
	a := g.guardedRead(parts)
	if a == 0 {
		return true
	}
	for _, b := range g.iov {
		if _, ok := umem.Offset(a, b); ok {
			return false
		}
	}
	panic(fmt.Sprintf("shm: gather: fault at %#x, outside the payload", a))
}

func (g *gather) guardedRead(parts [][]byte) (fault uintptr) {
	defer umem.Catch(umem.Guard(), &fault)
	for _, p := range parts {
		g.read(p)
	}
	return 0
}
