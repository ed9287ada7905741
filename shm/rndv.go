//go:build linux

package shm

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/gopsm2/libfabric-psm2/internal/ring"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// rndvPeer checks that r is a rendezvous this endpoint delivered and
// returns its sender.
func (e *Endpoint) rndvPeer(r *transport.Rndv) (*peer, error) {
	i := uint64(uint32(r.W[4])) - 1
	if r.W[5] != e.token || i >= uint64(len(e.peers)) || r.W[2] == 0 {
		return nil, ErrBadConn
	}
	p := e.peers[i]
	if p.epid != r.W[0] || p.gen != uint32(r.W[4]>>32) {
		return nil, ErrBadConn
	}
	return p, nil
}

// Fetch copies the data of rendezvous message r into dst: min(len(dst),
// length) bytes.
//
//   - Sender in this process: a plain copy from the sender's buffer, found
//     through an in-process registry (never through the address in the
//     cell).
//   - Sender in another process: process_vm_readv(2) from the sender's
//     address. The first refusal (EPERM, ENOSYS: ptrace restrictions,
//     seccomp, containers) turns it off for the endpoint's life.
//
// Both are complete when Fetch returns (done true, n bytes), and a FIN
// cell tells the sender. Without them (or with Config.DisableCMA), Fetch
// sends a CTS cell and returns done false: the sender streams the data
// through its bounce buffers as both sides poll, and FetchDone(cookie, n,
// nil) follows from Poll when the last chunk is in dst; dst must stay
// valid until then.
//
// A sender known dead gives done true and an error wrapping
// transport.ErrPeerDead. A copy the kernel refuses fails at once, never
// retried: a dst that cannot be written gives an error wrapping
// transport.ErrFault, a sender's buffer that cannot be read one wrapping
// transport.ErrPeerFault, and the FIN tells the sender which (fault.go).
// Fetch never calls the handler.
func (e *Endpoint) Fetch(r *transport.Rndv, dst []byte, cookie uint64) (bool, int, error) {
	if e.closed {
		return true, 0, errClosed
	}
	p, err := e.rndvPeer(r)
	if err != nil {
		return true, 0, err
	}
	if p.dead == nil && !p.self && p.seg.Closed() {
		e.kill(p, transport.ErrPeerDead, "closed")
	}
	if p.dead != nil {
		return true, 0, p.dead
	}
	id := r.W[3]
	want := int(min(uint64(len(dst)), r.W[2]))
	if want == 0 {
		e.fin(p, id, finOK)
		return true, 0, nil
	}
	dst = dst[:want:want]
	if e.splitOK(p, want) {
		if done, n, err := e.splitFetch(p, r, dst); done {
			return true, n, err
		}
		// Our half was refused (no CMA here): copy it all below.
	}
	if !e.cfg.DisableCMA {
		switch err := e.directRead(p, r, dst); {
		case err == nil:
			e.fin(p, id, finOK)
			e.stats.RndvCMA++
			e.stats.FetchedBytes += uint64(want)
			return true, want, nil
		case err == sys.EPERM || err == sys.ENOSYS:
			e.refuseCMA()
		case err == sys.ESRCH:
			e.kill(p, transport.ErrPeerDead, "gone")
			return true, 0, p.dead
		case err == errLocalGone:
			return true, 0, err
		case err != errNoDirect:
			f := err.(*copyFailure)
			return true, 0, e.fetchFailed(p, id, f.status, f.errno)
		}
	}

	slot := e.newFetch()
	op := e.fetches.At(uint32(slot))
	*op = fetchOp{state: opWait, peer: p.idx, cookie: cookie, sendID: id, dst: dst, last: e.now()}
	p.ops++
	e.pending++
	c := e.tx[:ring.CellPayload]
	putCommon(c, cellCTS, 0, 0, 0, e.epid)
	put64(c, offCellW2, id)
	put64(c, offCellW3, e.fetches.ID(uint32(slot)))
	put64(c, offCellW4, uint64(want))
	put64(c, offCellW5, 0)
	put64(c, offCellW6, 0)
	e.control(p, c)
	e.publishHint()
	return false, 0, nil
}

// fetchFailed tells the sender of send id that its rendezvous failed
// here with status st (cause: an errno, or nil) and returns the fetch's
// error.
func (e *Endpoint) fetchFailed(p *peer, id uint64, st byte, cause error) error {
	e.fin(p, id, st)
	e.stats.Faults++
	return fmt.Errorf("shm: fetch from %#x: %w", p.epid, fetchError(st, cause))
}

// copyFailure is a rendezvous copy that failed: whose buffer (a
// finStatus) and the errno, if the kernel gave one.
type copyFailure struct {
	status byte
	errno  error
}

func (f *copyFailure) Error() string {
	return fmt.Sprintf("shm: copy failed (status %d): %v", f.status, f.errno)
}

var (
	// errNoDirect says a direct read is not possible: use the copy
	// protocol.
	errNoDirect = errors.New("shm: no direct read")
	// errLocalGone: an in-process sender no longer has the data.
	errLocalGone = fmt.Errorf("shm: fetch: the send has ended at the sender: %w", transport.ErrPeerDead)
)

// directRead reads the data of r from the sender's memory: from the
// in-process registry or with process_vm_readv. It returns errNoDirect if
// neither applies, an errno of process_vm_readv that says it may not be
// used (EPERM, ENOSYS) or that the sender is gone (ESRCH), or a
// *copyFailure.
func (e *Endpoint) directRead(p *peer, r *transport.Rndv, dst []byte) error {
	if p.pid == e.pid && !e.noLocal {
		src, ok := localGet(p.epid, r.W[3])
		if !ok {
			// Published before the RTS and withdrawn only when the send
			// ends: the sender gave up on it, or the cell is forged.
			return errLocalGone
		}
		st := localCopy(dst, src)
		localDrop(p.epid, r.W[3])
		if st != finOK {
			return &copyFailure{status: st}
		}
		return nil
	}
	if e.cmaRefused {
		return errNoDirect
	}
	off, err := cmaRead(p.pid, r.W[1], dst)
	runtime.KeepAlive(dst)
	switch err {
	case nil, sys.EPERM, sys.ENOSYS, sys.ESRCH:
		return err
	}
	return &copyFailure{status: cmaStatus(p.pid, r.W[1], dst, off, err), errno: err}
}

// Discard drops rendezvous message r unread; a FIN cell completes the
// sender's send normally. It never calls the handler.
func (e *Endpoint) Discard(r *transport.Rndv) error {
	if e.closed {
		return errClosed
	}
	p, err := e.rndvPeer(r)
	if err != nil {
		return err
	}
	if p.pid == e.pid {
		localDrop(p.epid, r.W[3])
	}
	e.fin(p, r.W[3], finOK)
	return nil
}

// fin sends (or queues) a FIN cell for send id to p.
func (e *Endpoint) fin(p *peer, id uint64, status byte) {
	e.control(p, e.finCell(id, status))
	e.publishHint()
}

// finNow pushes a FIN cell for send id to p if its ring has room, even if
// p is marked dead; otherwise the FIN is lost.
func (e *Endpoint) finNow(p *peer, id uint64, status byte) {
	if p.ring != nil && p.ring.TryPush(e.finCell(id, status)) == nil {
		e.ring2(p)
	}
}

// finCell builds a FIN cell in e.tx.
func (e *Endpoint) finCell(id uint64, status byte) []byte {
	c := e.tx[:ring.CellPayload]
	putCommon(c, cellFIN, status, 0, 0, e.epid)
	put64(c, offCellW2, id)
	put64(c, offCellW3, 0)
	put64(c, offCellW4, 0)
	put64(c, offCellW5, 0)
	put64(c, offCellW6, 0)
	return c
}
