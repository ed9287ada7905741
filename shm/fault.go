//go:build linux

package shm

import (
	"fmt"

	"github.com/gopsm2/libfabric-psm2/internal/umem"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Buffers the kernel refuses. The application may hand over memory that
// cannot be read (a send) or written (a receive): unmapped, PROT_NONE,
// read-only. Where Go copies it, internal/umem turns the fault into a
// result, and the operation fails with transport.ErrFault instead of the
// process dying.

// A send whose own buffer could not be read (inline, eager, or a copied
// rendezvous payload).
var errSendFault = fmt.Errorf("shm: the send buffer cannot be read: %w", transport.ErrFault)

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
