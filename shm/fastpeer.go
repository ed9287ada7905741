package shm

import (
	"math"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/atomicx"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Fast-peer descriptors: what code outside Go (the library's C side) needs
// to push an inline message into a peer's ring by itself. The endpoint
// keeps one descriptor per peer, in memory it maps outside the Go
// heap, at index*FastPeerSize (128); FastPeer hands out its address.
// Layout (native-endian uint64 words):
//
//	+0   ok: 1 while a C producer may push inline cells to this peer (it
//	     is connected, not dead, and has no queued control cells that a
//	     new message would overtake); 0 sends everything through Go
//	+8   address of the peer's receive ring (a Ring, version 3)
//	+16  address of the peer's doorbell waiter count (uint32)
//	+24  address of the peer's doorbell sequence (uint32, a shared futex)
//	+32  address of the peer's segment state word (segOpen = 0)
//	+40  the sender id to put in cells: this endpoint's id
//	+48  messages the C producer sent (folded into Stats.Sent/Inline)
//	+56  1 if the producer must fence (a full barrier) between publishing
//	     its cells and reading the waiter count, 0 if membarrier covers
//	     it (fence.go)
//	+64  the peer's endpoint id (what its cells carry as sender id)
//	+72  the ring's cell count minus one, as validated when the segment
//	     was mapped: the only cell count a producer may use (the count in
//	     the ring's header is the peer's to rewrite)
//	+80  address of this endpoint's producer slot in that ring (internal/ring/slots.go):
//	     the pos word, with n at +8; written before every reservation
//
// For eager messages (one cell naming a bounce buffer, as sendEager and
// onEager do), as a sender:
//
//	+88  longest eager message this endpoint sends (its threshold)
//	+96  address of this endpoint's busy word (its segment's)
//	+104 address of its bounce buffer 0
//	+112 size of each of its bounce buffers
//	+120 mask of its bounce buffers (bit i: buffer i exists)
//	+128 address of its holder table (int32 per buffer: the peer index
//	     a buffer was handed to), which the producer writes with +136
//	+136 this peer's index
//	+144 eager messages the C producer sent (folded into Stats.Sent/Eager)
//
// and as a receiver of the peer's eager cells:
//
//	+152 address of the peer's busy word, whose bit a receiver clears
//	+160 address of the peer's bounce buffer 0 in our mapping
//	+168 size of each of the peer's bounce buffers (as validated)
//	+176 number of the peer's bounce buffers (as validated)
//
// and as a receiver of the peer's rendezvous (RTS) cells, which C fetches
// itself with process_vm_readv as Fetch does, then pushes the FIN:
//
//	+184 the peer's pid, or 0 when C must leave its RTS cells to Go (the
//	     peer is in this process, or single copy is off or refused here)
//	+192 the longest rendezvous C may fetch (below SplitThreshold when
//	     split copies are on: those take Go's split protocol)
//	+200 rendezvous C fetched (folded into Stats.RndvCMA)
//	+208 the shortest rendezvous C leaves to Go when no cell follows it
//	     in the ring (SplitAloneThreshold: a lone message Go splits)
//	+216 address of our segment's stream word (offSegStream; the
//	     broken-stream word follows it), for a C sender that streams an
//	     eager message (cellStream)
//	+224 address of the peer's stream word (and broken-stream word), for
//	     a C receiver
//	+232 bytes of the inline messages the C producer sent, +240 of its
//	     eager ones, +248 of the rendezvous C fetched (folded into
//	     Stats' byte counts)
//
// A C producer holds the endpoint owner's lock (the provider's domain
// lock) while it reads a descriptor and uses the memory it points to: the
// endpoint changes descriptors and unmaps peer segments only under that
// lock too. It must build cells exactly as sendInline and sendEager do
// (cell.go), push them as TryPushCells does (ring.go), take and hand over
// a bounce buffer as allocBuf and sendEager do, ring the doorbell as ring2
// does, and leave everything else (a full ring, a closed peer, no free
// buffer, a long message) to Send. A C receiver of an eager cell clears
// the buffer's bit and rings the peer's doorbell as release does.
const (
	FastPeerSize = 256
	maxFastPeers = 1024

	fpOK    = 0
	fpRing  = 8
	fpWait  = 16
	fpSeq   = 24
	fpState = 32
	fpEPID  = 40
	fpSent  = 48
	fpFence = 56
	fpPeer  = 64
	fpMask  = 72
	fpSlot  = 80

	fpEagerMax   = 88
	fpBusy       = 96
	fpBufs       = 104
	fpBufSize    = 112
	fpAllBufs    = 120
	fpHolder     = 128
	fpIdx        = 136
	fpEagerSent  = 144
	fpPeerBusy   = 152
	fpPeerBufs   = 160
	fpPeerBufSz  = 168
	fpPeerNBufs  = 176
	fpPeerPID    = 184
	fpRndvMax    = 192
	fpRndvCMA    = 200
	fpRndvAlone  = 208
	fpStream     = 216
	fpPeerStream = 224
	fpSentBytes  = 232
	fpEagerBytes = 240
	fpFetchBytes = 248
	fastHolders  = maxFastPeers * FastPeerSize // the holder table's offset in e.fast
	fastMapBytes = fastHolders + MaxBuffers*4
)

// FastPeer implements transport.FastSender.
func (e *Endpoint) FastPeer(c transport.Conn) unsafe.Pointer {
	p := e.conn(c)
	if p == nil || e.closed || int(p.idx) >= maxFastPeers {
		return nil
	}
	if e.fast == nil {
		b, err := sys.MapAnon(fastMapBytes)
		if err != nil {
			return nil
		}
		e.fast = b
		// The holder table moves next to the descriptors, where C
		// producers record the buffers they hand out.
		h := (*[MaxBuffers]int32)(unsafe.Pointer(&b[fastHolders]))
		*h = *e.holder
		e.holder = h
		for _, q := range e.peers {
			e.syncFast(q)
		}
	}
	return unsafe.Pointer(&e.fast[int(p.idx)*FastPeerSize])
}

// syncFast rewrites p's descriptor from p's state. Every change to a
// peer's connection, liveness, control queue or mapping calls it.
func (e *Endpoint) syncFast(p *peer) {
	if e.fast == nil || int(p.idx) >= maxFastPeers {
		return
	}
	d := e.fast[int(p.idx)*FastPeerSize:][:FastPeerSize]
	ok := p.connected && p.dead == nil && p.ctlHead == len(p.ctl) && p.ring != nil && !e.closed &&
		p.ring.SlotAddr() != 0
	if !ok {
		atomicx.WordAt(d, fpOK).Store(0)
		return
	}
	atomicx.WordAt(d, fpRing).Store(uint64(p.ring.Base()))
	atomicx.WordAt(d, fpWait).Store(uint64(uintptr(unsafe.Pointer(p.bellWait))))
	atomicx.WordAt(d, fpSeq).Store(uint64(uintptr(unsafe.Pointer(p.bellSeq))))
	atomicx.WordAt(d, fpState).Store(uint64(uintptr(unsafe.Pointer(atomicx.WordAt(p.seg.mem, offSegState)))))
	atomicx.WordAt(d, fpEPID).Store(e.epid)
	atomicx.WordAt(d, fpPeer).Store(p.epid)
	atomicx.WordAt(d, fpFence).Store(b2u(!asymFences()))
	atomicx.WordAt(d, fpMask).Store(uint64(p.ring.Cells() - 1))
	atomicx.WordAt(d, fpSlot).Store(uint64(p.ring.SlotAddr()))
	e.syncFastEager(p, d)
	e.syncFastRndv(p, d)
	atomicx.WordAt(d, fpOK).Store(1)
}

// syncFastEager writes the eager words of p's descriptor d: 0 for
// whatever side has no bounce buffers, so C leaves that side to Go.
func (e *Endpoint) syncFastEager(p *peer, d []byte) {
	var eagerMax, bufs, bufSize uint64
	if e.nbuf > 0 && e.threshold > 0 {
		if b := e.seg.Buffer(0); b != nil {
			eagerMax = uint64(min(e.threshold, len(b)))
			bufs = uint64(uintptr(unsafe.Pointer(&b[0])))
			bufSize = uint64(e.seg.BufferSize())
		}
	}
	atomicx.WordAt(d, fpEagerMax).Store(eagerMax)
	atomicx.WordAt(d, fpBusy).Store(uint64(uintptr(unsafe.Pointer(e.busy))))
	atomicx.WordAt(d, fpBufs).Store(bufs)
	atomicx.WordAt(d, fpBufSize).Store(bufSize)
	atomicx.WordAt(d, fpAllBufs).Store(e.allBufs)
	atomicx.WordAt(d, fpHolder).Store(uint64(uintptr(unsafe.Pointer(&e.fast[fastHolders]))))
	atomicx.WordAt(d, fpIdx).Store(uint64(p.idx))
	var pbufs, psize, pn uint64
	if b := p.seg.Buffer(0); b != nil && p.busy != nil {
		pbufs = uint64(uintptr(unsafe.Pointer(&b[0])))
		psize, pn = uint64(p.seg.BufferSize()), uint64(p.seg.Buffers())
	}
	atomicx.WordAt(d, fpStream).Store(uint64(uintptr(unsafe.Pointer(e.seg.Stream()))))
	atomicx.WordAt(d, fpPeerStream).Store(uint64(uintptr(unsafe.Pointer(p.seg.Stream()))))
	atomicx.WordAt(d, fpPeerBusy).Store(uint64(uintptr(unsafe.Pointer(p.busy))))
	atomicx.WordAt(d, fpPeerBufs).Store(pbufs)
	atomicx.WordAt(d, fpPeerBufSz).Store(psize)
	atomicx.WordAt(d, fpPeerNBufs).Store(pn)
}

// syncFastRndv writes the rendezvous words of p's descriptor d: a pid only
// where Fetch would read p's memory with process_vm_readv.
func (e *Endpoint) syncFastRndv(p *peer, d []byte) {
	pid := uint64(0)
	if !p.self && p.pid != e.pid && p.pid > 0 && !e.cfg.DisableCMA && !e.cmaRefused {
		pid = uint64(p.pid)
	}
	rmax, alone := uint64(math.MaxUint64), uint64(math.MaxUint64)
	if e.cfg.SplitThreshold > 0 && e.seg.splits > 0 {
		rmax = uint64(e.cfg.SplitThreshold - 1)
		alone = uint64(e.splitMin())
	}
	atomicx.WordAt(d, fpPeerPID).Store(pid)
	atomicx.WordAt(d, fpRndvMax).Store(rmax)
	atomicx.WordAt(d, fpRndvAlone).Store(alone)
}

// refuseCMA turns single copy off for the endpoint's life (the kernel
// refused it) and tells the descriptors, so C stops fetching too.
func (e *Endpoint) refuseCMA() {
	e.cmaRefused = true
	for _, q := range e.peers {
		e.syncFast(q)
	}
}

// fastSent is what C producers sent through the descriptors: inline and
// eager messages, and rendezvous C fetched.
func (e *Endpoint) fastSent() (c fastCounts) {
	for i := 0; i < len(e.fast) && i < fastHolders; i += FastPeerSize {
		for k, off := range fastCountWords {
			c[k] += atomicx.WordAt(e.fast, i+off).Load()
		}
	}
	return c
}

// fastCounts are the C producers' and receivers' counters, summed over
// the descriptors: those of fastCountWords, in its order.
type fastCounts [6]uint64

// fastCountWords are the descriptor words fastCounts sums: inline sent,
// eager sent, rendezvous fetched, and their bytes.
var fastCountWords = [6]int{fpSent, fpEagerSent, fpRndvCMA, fpSentBytes, fpEagerBytes, fpFetchBytes}

// add adds c's counts into s.
func (c fastCounts) add(s *Stats) {
	s.Sent += c[0] + c[1]
	s.Inline += c[0]
	s.Eager += c[1]
	s.RndvCMA += c[2]
	s.InlineBytes += c[3]
	s.EagerBytes += c[4]
	s.FetchedBytes += c[5]
}

// closeFast turns every descriptor off and unmaps them; Close calls it
// under the owner's lock, so no C producer is using one.
func (e *Endpoint) closeFast() {
	if e.fast == nil {
		return
	}
	c := e.fastSent()
	for k := range c {
		e.fastClosed[k] += c[k]
	}
	e.holders = *e.holder
	e.holder = &e.holders
	_ = sys.Unmap(e.fast)
	e.fast = nil
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}
