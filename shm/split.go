//go:build linux

package shm

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/atomicx"
	"github.com/gopsm2/libfabric-psm2/internal/ring"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Split copies. A large rendezvous between two processes is otherwise one
// process_vm_readv by the receiver, on one core, while the sender's core
// spins waiting for the FIN. Instead the receiver cuts the message into
// chunks and asks the sender to help: both take chunks from a shared claim
// counter, the receiver reading with process_vm_readv, the sender writing
// with process_vm_writev, and each counts the chunks it finished. Two cores
// copy 1 MiB in about two thirds of the time one takes. A sender that is
// not polling simply never helps, and the receiver copies every chunk.
//
// The counters live in one of the receiver's split slots (SplitSlotSize
// bytes in its segment, after the ring):
//
//	+0   claim: generation<<32 | chunks claimed
//	+8   done:  generation<<32 | chunks finished
//	+16  fault: the generation, if the sender failed a chunk it claimed
//
// The receiver fills the slot with a new generation, sends a SPLIT cell
// (send id, split id, its address of the data, bytes wanted, chunk size),
// claims chunks until none is left, waits until every claimed chunk is
// finished (a chunk the sender is writing takes microseconds), and only
// then completes: after that no write into its buffer can come, because a
// late sender's claim fails on the counter (all claimed) or on the
// generation (slot reused). If the sender failed a chunk, the receiver
// reads the whole message again itself.
const (
	splitSlots = 16

	// DefaultSplitThreshold is the smallest rendezvous always copied by
	// both sides. fi_pingpong here (pinned, medians of 6 alternating
	// runs, split against not): 256 KiB 17.2 against 24.4 us, 512 KiB
	// 29.7 against 48.8 (Debian's shm 46.5). bench/msgrate.c (64 in
	// flight): 512 KiB 34.6-36.2 K against 30.9-33.4 K messages/s, but
	// 256 KiB 48-53 K against 60-63 K: in a stream, a receiver copying
	// alone beats two sides sharing each message below 512 KiB.
	DefaultSplitThreshold = 512 << 10
	// DefaultSplitAloneThreshold is the smallest rendezvous split when it
	// is alone in the ring (Config.SplitAloneThreshold), and
	// PinnedSplitAloneThreshold the same for a process bound to one CPU
	// (as MPI launchers bind ranks): the helper then stays on its own
	// CPU. fi_pingpong, medians of 8 alternating runs, split against not:
	// pinned, 64 KiB 8.9 against 10.0 us, 128 KiB 13.0 against 16.7, 256
	// KiB 19.2 against 30.2; unpinned, 64 KiB 13.5 against 9.8 (a 32 KiB
	// half is too short to pay for a helper the scheduler moves), 128 KiB
	// 15.4 against 16.2, 256 KiB 25.6 against 28.6.
	DefaultSplitAloneThreshold = 128 << 10
	PinnedSplitAloneThreshold  = 64 << 10
	// maxSplitChunks bounds the chunks a SPLIT cell may ask for.
	maxSplitChunks = 64

	slotClaim = 0
	slotDone  = 8
	slotFault = 16
)

// splitWords returns the counters of split slot i of segment s, or nils if
// s has no such slot.
func (s *Segment) splitWords(i int) (claim, done, fault *atomic.Uint64) {
	if i < 0 || i >= s.splits {
		return nil, nil, nil
	}
	off := s.splitOff + i*SplitSlotSize
	return atomicx.WordAt(s.mem, off+slotClaim), atomicx.WordAt(s.mem, off+slotDone), atomicx.WordAt(s.mem, off+slotFault)
}

// splitOK reports whether a fetch of want bytes from p should be split:
// from SplitThreshold up always, from SplitAloneThreshold up when nothing
// waits in the ring behind the request (a lone, latency-bound message);
// never while p has a rendezvous of ours to fetch (sendsTo).
//
// A peer that fetches from us while we fetch from it (MPI_Sendrecv,
// exchanges, the steps of an allreduce) has its own copy to make on its
// own core: its help delays that copy by about what it saves ours, and
// both sides pay a second kernel copy and the SPLIT cell. Open MPI
// cm/ofi, 2 ranks, bench/patterns.c -t 0.3, medians of 6 alternating
// runs, before -> after: Sendrecv 256 KiB 39.7 -> 38.9 us, 1 MiB 131.0
// -> 126.1; Allreduce 256 KiB 76.5 -> 72.5, 1 MiB 227.7 -> 219.2. A
// ping-pong, whose sender only waits, keeps its split (1 MiB: 61-73 us
// split, 122-149 not).
//
// Tried and dropped: no split where the job's ranks outnumber the CPUs
// (a sender that claimed its half may lose its CPU before it copied it,
// and the receiver waits for it). 4 ranks on 2 cores, Open MPI cm/ofi,
// bench/patterns.c, medians of 5-8 alternating runs in three sweeps,
// split -> not: Exchange 256 KiB 0.84-0.86x, Sendrecv 256 KiB 0.85-1.00x,
// but PingPong 4 MiB (2 ranks busy, 2 waiting) 1.03-1.65x and 1 MiB
// 0.95-1.23x, Allreduce 1 MiB 0.95-1.24x: no better on the whole.
func (e *Endpoint) splitOK(p *peer, want int) bool {
	if e.cfg.SplitThreshold <= 0 || want < e.splitMin() || p.sendsTo > 0 {
		return false
	}
	if want < e.cfg.SplitThreshold && !e.ring.Empty() {
		return false
	}
	return !e.cfg.DisableCMA && !e.cmaRefused && !p.self && (p.pid != e.pid || e.noLocal) &&
		e.seg.splits > 0 && e.splitBusy != 1<<splitSlots-1
}

// defaultSplitAlone is Config.SplitAloneThreshold's default for this
// process: PinnedSplitAloneThreshold if it may run on one CPU only.
func defaultSplitAlone() int {
	if sys.AffinityCount() == 1 {
		return PinnedSplitAloneThreshold
	}
	return DefaultSplitAloneThreshold
}

// splitMin is the smallest fetch splitOK may split.
func (e *Endpoint) splitMin() int {
	if a := e.cfg.SplitAloneThreshold; a > 0 && a < e.cfg.SplitThreshold {
		return a
	}
	return e.cfg.SplitThreshold
}

// splitGeometry cuts want bytes into n chunks of chunk bytes (the last
// one shorter), page multiples: two halves, one for each side. More and
// smaller chunks balance better in theory and cost more in practice: both
// processes pin pages of the same (often huge) folios, and every extra
// pin contends on their reference counts (1 MiB in 4 chunks took 55 us,
// in 2 chunks 40 us, in 8 chunks 70 us).
func splitGeometry(want int) (n, chunk int) {
	chunk = roundUp((want+1)/2, 4096)
	return (want + chunk - 1) / chunk, chunk
}

// splitFetch copies the rendezvous r from p into dst together with p.
// done false means this process may not read p's memory after all
// (process_vm_readv refused): every chunk is finished, none by us, and the
// caller copies the message another way.
func (e *Endpoint) splitFetch(p *peer, r *transport.Rndv, dst []byte) (done bool, n int, err error) {
	want := len(dst)
	slot := 0
	for e.splitBusy&(1<<slot) != 0 {
		slot++
	}
	e.splitBusy |= 1 << slot
	defer func() { e.splitBusy &^= 1 << slot }()
	gen := e.splitGen[slot] + 1
	if gen == 0 {
		gen = 1
	}
	e.splitGen[slot] = gen
	claim, fin, fault := e.seg.splitWords(slot)
	base := uint64(gen) << 32
	fault.Store(0)
	fin.Store(base)
	claim.Store(base)

	chunks, chunk := splitGeometry(want)
	c := e.tx[:ring.CellPayload]
	putCommon(c, cellSplit, 0, 0, 0, e.epid)
	put64(c, offCellW2, r.W[3])
	put64(c, offCellW3, makeID(gen, slot))
	put64(c, offCellW4, addrOf(dst))
	put64(c, offCellW5, uint64(want))
	put64(c, offCellW6, uint64(chunk))
	e.control(p, c)
	if e.splitHook != nil {
		e.splitHook()
	}

	var ours error
	oursAt := 0 // where in dst our first failed chunk stopped
	for {
		k := claim.Add(1) - 1 - base
		if k >= uint64(chunks) {
			break
		}
		off := int(k) * chunk
		end := min(off+chunk, want)
		if n, err := cmaRead(p.pid, r.W[1]+uint64(off), dst[off:end]); err != nil && ours == nil {
			ours, oursAt = err, off+n
		}
		fin.Add(1)
	}
	runtime.KeepAlive(dst)
	// Chunks the sender claimed are being written now; wait for them.
	if err := e.splitWait(p, fin, base+uint64(chunks)); err != nil {
		return true, 0, err
	}
	if ours == sys.EPERM || ours == sys.ENOSYS {
		e.refuseCMA()
		return false, 0, nil
	}
	if ours == nil && fault.Load() == uint64(gen) {
		// The sender failed a chunk: its buffer, ours, or its
		// process_vm_writev. Read it all again, which tells.
		oursAt, ours = cmaRead(p.pid, r.W[1], dst)
		runtime.KeepAlive(dst)
	}
	switch {
	case ours == nil:
		e.fin(p, r.W[3], finOK)
		e.stats.RndvCMA++
		e.stats.RndvSplit++
		e.stats.FetchedBytes += uint64(want)
		return true, want, nil
	case ours == sys.ESRCH:
		e.kill(p, transport.ErrPeerDead, "gone")
		return true, 0, p.dead
	default:
		st := cmaStatus(p.pid, r.W[1], dst, oursAt, ours)
		return true, 0, e.fetchFailed(p, r.W[3], st, ours)
	}
}

// splitWait waits until fin reaches target: the sender finishing the
// chunks it claimed. It gives up, with an error, only if the sender dies.
func (e *Endpoint) splitWait(p *peer, fin *atomic.Uint64, target uint64) error {
	start := time.Now()
	for spins := 0; fin.Load() != target; spins++ {
		if spins < 1000 {
			continue
		}
		runtime.Gosched()
		if spins%1000 == 0 && time.Since(start) > time.Millisecond {
			if alive, _ := processAlive(p.pid); !alive {
				e.kill(p, transport.ErrPeerDead, "died during a split copy")
				return p.dead
			}
		}
	}
	return nil
}

// onSplit helps a receiver copy a rendezvous send of ours: it writes the
// chunks it can claim into the receiver's memory.
func (e *Endpoint) onSplit() {
	b := e.rx[:]
	id := get64(b, offCellW2)
	op := e.sendByID(id)
	if op == nil || op.state != opWait || e.peers[op.peer].epid != get64(b, offCellEPID) {
		e.drop() // a send that has ended, or a forged cell
		return
	}
	p := e.peers[op.peer]
	gen, slot := splitID(get64(b, offCellW3))
	claim, fin, fault := p.seg.splitWords(slot)
	addr, want, chunk := get64(b, offCellW4), get64(b, offCellW5), get64(b, offCellW6)
	if claim == nil || want > uint64(len(op.data)) || chunk == 0 || chunk > want ||
		(want+chunk-1)/chunk > maxSplitChunks {
		e.drop()
		return
	}
	if e.writeRefused || p.dead != nil {
		return // the receiver copies everything itself
	}
	chunks := (want + chunk - 1) / chunk
	base := uint64(gen) << 32
	for {
		w := claim.Load()
		if w>>32 != uint64(gen) || w-base >= chunks {
			return // done, or the slot has moved on
		}
		if !claim.CompareAndSwap(w, w+1) {
			continue
		}
		off := (w - base) * chunk
		end := min(off+chunk, want)
		_, err := cmaWrite(p.pid, addr+off, op.data[off:end])
		if err != nil {
			// EFAULT: our buffer or the receiver's; the receiver
			// reads the message again and finds out whose.
			fault.Store(uint64(gen))
			if err == sys.EPERM || err == sys.ENOSYS {
				e.writeRefused = true
			}
		}
		fin.Add(1)
		if err != nil {
			return
		}
		e.stats.SplitHelped++
	}
}
