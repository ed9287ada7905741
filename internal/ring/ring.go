package ring

import (
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/gopsm2/libfabric-psm2/internal/atomicx"
	"github.com/gopsm2/libfabric-psm2/internal/cabi"
)

// Cell geometry.
const (
	// CellSize is the size of one ring cell: one cache line, so a producer
	// filling a cell never invalidates the line of the cell the consumer is
	// reading.
	CellSize = 64
	// CellPayload is what a cell carries: the cell minus its 8-byte
	// sequence word.
	CellPayload = CellSize - seqSize

	seqSize = 8
)

// Bounds on the number of cells of a ring.
const (
	// MinCells is the smallest ring. The sequence protocol needs two
	// cells: with one, "published in this lap" and "free for the next lap"
	// are the same sequence value.
	MinCells = 2
	// MaxCells bounds what AttachRing accepts from a peer's header: 64 MiB
	// of cells, far more than a receive queue needs, and small enough that
	// RingSize cannot overflow.
	MaxCells = 1 << 20
)

// Ring layout, version 3. Offsets are bytes from the start of the ring's
// memory. Every field is a native-endian uint64 at an 8-byte aligned offset
// and is only read or written with sync/atomic (ring_unsafe.go). There are
// no pointers in the memory: cells are addressed by position & (N-1).
// Changing anything here means bumping ringVersion; TestRingLayout pins the
// values.
const (
	ringMagic   = 0x70736d72 // "psmr"
	ringVersion = 4

	// LineSep separates words written by different parties. It is two
	// 64-byte lines, not one, because x86's adjacent-line prefetcher moves
	// lines in 128-byte pairs, so 64-byte separation still false-shares.
	LineSep = 128

	offRingIdent   = 0            // ringMagic | ringVersion<<32; stored last by InitRing
	offRingCells   = 8            // N, the number of cells; immutable
	offRingProd    = LineSep      // producer reservation counter: next position to reserve
	offRingSeen    = LineSep + 8  // producers' copy of cons, refreshed when the ring looks full
	offRingProdCPU = LineSep + 16 // the latest C producer's CPU + 1, 0: none (a hint: see CLayout)
	offRingCons    = 2 * LineSep  // consumer counter: next position to consume
	ringHeaderSize = 3 * LineSep  // cell i starts at ringHeaderSize + i*CellSize

	offCellSeq     = 0       // in a cell: the sequence word
	offCellPayload = seqSize // in a cell: CellPayload bytes of payload

	// Producer slots follow the cells (ringHeaderSize + N*CellSize): one
	// per producer, each announcing the positions its producer is
	// reserving, so a consumer stalled behind a dead producer can tell
	// (slots.go).
	RingSlots     = 512 // slots of a ring
	slotSize      = 32
	offSlotPID    = 0  // owner's process id; 0: free
	offSlotStart  = 8  // owner's start time (/proc/<pid>/stat field 22)
	offSlotPos    = 16 // first position of the owner's latest reservation
	offSlotN      = 24 // its number of cells
	ringSlotsSize = RingSlots * slotSize
)

// Errors of the ring. The hot-path ones are allocated once, here.
var (
	// ErrFull is returned by TryPush when every cell holds a message the
	// consumer has not taken yet.
	ErrFull = errors.New("ring: ring full")
	// ErrTooBig is returned by TryPush for a payload longer than
	// CellPayload.
	ErrTooBig = errors.New("ring: payload larger than a cell")
	// ErrCorrupt means the shared memory does not hold a valid ring (or
	// segment): a bad header on attach, or counters that contradict each
	// other. The memory is written by other processes, so this is a fault
	// of that peer; stop using the ring rather than the process.
	ErrCorrupt = errors.New("shared memory corrupt")
	// ErrCells is returned for a cell count that is not a power of two
	// in [MinCells, MaxCells].
	ErrCells = errors.New("ring: cell count must be a power of two in [MinCells, MaxCells]")
	// ErrMemory is returned when the memory given for a ring is shorter
	// than RingSize or not 8-byte aligned.
	ErrMemory = errors.New("ring: ring memory too short or misaligned")
)

// Ring is a bounded multi-producer, single-consumer queue of fixed cells in
// a []byte that several processes map. Each cell has a sequence word that
// the producer of position pos sets to pos+1 when the cell is published;
// the consumer takes position pos once it reads that value. Producers
// reserve positions with a CAS on the producer counter, and may reserve
// pos only when the consumer has taken pos-N (cons > pos-N).
//
// The consumer writes nothing but its own counter, cons, which lives on a
// line producers rarely read: they keep a copy of it, seen, on the line of
// the producer counter they CAS anyway, and load cons only when seen says
// the ring is full. So a message costs the cross-core transfer of its
// cells' lines and nothing else; in particular the consumer never writes a
// cell line (which would make the next producer of that cell wait for the
// line to come back) and producers never read one before writing it.
//
// All counters are uint64 positions compared with wrap-safe arithmetic. They
// start just below 2^64, so every ring crosses the overflow within its first
// lap, in tests as in production. A cell's sequence word holds the
// position it was last published for plus one (or, before its first use,
// its first position), so "published for pos" is never confused with a
// lap-old value.
//
// A producer that dies (or is stopped) between reserving a position and
// publishing it leaves a cell whose sequence stays at pos; the consumer
// cannot pass it, and once the ring fills, every producer gets ErrFull.
// A slow producer and a dead one look the same from the cell, so each
// producer announces what it reserves in a producer slot of its own
// (Claim; slots.go) before it reserves it. The consumer, stalled at pos
// (Stalled), asks SkipDead to look up the slots that cover pos: when every
// one of them belongs to a process that is gone, nobody will ever publish
// pos, and SkipDead publishes an empty cell there itself (kind 0, which
// every consumer drops). A producer without a slot (Claim was never
// called) can still wedge the ring; the endpoint never pushes without one.
//
// Concurrency. TryPush may be called by any number of goroutines and
// processes at once, through any Ring attached to the same memory.
// TryPop, Empty and Stalled belong to the single consumer: one thread at a
// time. They are thread-compatible, not thread-safe. The consumer keeps no
// private state (its position is cons), so the consumer may be code outside
// Go taking turns with the Go side under a lock they share: the library's
// C side pops inline messages itself (shm/fastpeer.go).
//
// Trust. The memory is shared with other processes, so everything read from
// it is untrusted. The cell count is read and validated once, at
// InitRing/AttachRing; every index is masked with it, and every payload
// copy has a fixed size. Corrupt memory can make a ring deliver garbage or
// refuse work (ErrFull, ErrCorrupt, Empty forever), never index out of
// bounds.
type Ring struct {
	// Immutable after InitRing/AttachRing; read by producers and consumer.
	mem  []byte // exactly RingSize(cells) bytes
	mask uint64 // cells - 1
	n    uint64 // cells
	prod *atomic.Uint64
	seen *atomic.Uint64
	cons *atomic.Uint64
	// consWord is cons as a plain word, for the consumer's release
	// stores (atomicx.StoreRel64); every other access goes through cons.
	consWord *uint64

	// slot is the producer slot this view announces its reservations
	// in (Claim), or -1; slotPos and slotN are its words.
	slot    int
	slotPos *uint64
	slotN   *uint64
}

// RingSize returns the bytes a ring of cells cells needs: the header,
// cells*CellSize and the producer slots. It returns 0 if cells is not a power of two in
// [MinCells, MaxCells].
func RingSize(cells int) int {
	if cells < 0 || !validCells(uint64(cells)) {
		return 0
	}
	return ringHeaderSize + cells*CellSize + ringSlotsSize
}

// InitRing formats mem as an empty ring of cells cells and returns it. Only
// the memory's owner calls it, once, before any peer attaches; peers
// attaching concurrently see ErrCorrupt until the header is complete
// (the magic is stored last). mem must be 8-byte aligned (64 is better:
// cells are then cache lines) and at least RingSize(cells) long; bytes past
// RingSize are not touched.
func InitRing(mem []byte, cells int) (*Ring, error) {
	if cells < 0 || !validCells(uint64(cells)) {
		return nil, fmt.Errorf("init ring of %d cells: %w", cells, ErrCells)
	}
	size := RingSize(cells)
	if len(mem) < size || !atomicx.Aligned8(mem) {
		return nil, fmt.Errorf("init ring of %d cells in %d bytes: %w", cells, len(mem), ErrMemory)
	}
	r := newRing(mem[:size:size], uint64(cells))

	// Invalidate first, so a peer never sees the old magic over new words.
	atomicx.WordAt(r.mem, offRingIdent).Store(0)
	start := initialPos(r.n)
	for i := range r.n {
		pos := start + i
		r.seq(r.cellOff(pos)).Store(pos)
		clear(r.payload(r.cellOff(pos)))
	}
	clear(r.mem[r.slotsOff():])
	atomicx.WordAt(r.mem, offRingCells).Store(r.n)
	r.prod.Store(start)
	r.seen.Store(start)
	r.cons.Store(start)
	atomicx.WordAt(r.mem, offRingIdent).Store(ringIdent)
	return r, nil
}

// AttachRing returns a Ring over memory that InitRing formatted, possibly
// in another process. The memory is untrusted: AttachRing checks the magic,
// the version, that the cell count is valid and that mem holds that many
// cells, and returns an error wrapping ErrCorrupt otherwise (ErrMemory if
// mem is misaligned). The returned Ring can push; it can pop only if its
// caller is the ring's single consumer, and it resumes at the consumer
// counter stored in the header.
func AttachRing(mem []byte) (*Ring, error) {
	if len(mem) < ringHeaderSize {
		return nil, fmt.Errorf("attach ring: %d bytes, shorter than the %d-byte header: %w",
			len(mem), ringHeaderSize, ErrCorrupt)
	}
	if !atomicx.Aligned8(mem) {
		return nil, fmt.Errorf("attach ring: %w", ErrMemory)
	}
	ident := atomicx.WordAt(mem, offRingIdent).Load()
	if magic := uint32(ident); magic != ringMagic {
		return nil, fmt.Errorf("attach ring: bad magic %#x: %w", magic, ErrCorrupt)
	}
	if version := uint32(ident >> 32); version != ringVersion {
		return nil, fmt.Errorf("attach ring: unsupported version %d: %w", version, ErrCorrupt)
	}
	cells := atomicx.WordAt(mem, offRingCells).Load()
	if !validCells(cells) {
		return nil, fmt.Errorf("attach ring: bad cell count %d: %w", cells, ErrCorrupt)
	}
	size := RingSize(int(cells))
	if len(mem) < size {
		return nil, fmt.Errorf("attach ring: %d cells need %d bytes, have %d: %w",
			cells, size, len(mem), ErrCorrupt)
	}
	return newRing(mem[:size:size], cells), nil
}

// Cells returns the number of cells, N.
func (r *Ring) Cells() int { return int(r.n) }

// TryPush copies payload into the next free cell and publishes it. Any
// producer may call it, concurrently with other producers and with the
// consumer. It never blocks and never overwrites: when every cell holds an
// unconsumed message it returns ErrFull and the caller retries later. A
// payload longer than CellPayload gets ErrTooBig; a shorter one is padded
// with zeros to CellPayload bytes (the length, if the caller needs it, is
// part of the caller's framing). It returns ErrCorrupt if the ring's
// counters contradict each other, which only a misbehaving peer causes. It
// does not allocate.
//
// Ordering: the payload is written before the cell's sequence is stored
// (release), and the consumer loads the sequence (acquire) before reading
// the payload, so a consumer that sees the cell published sees the whole
// payload. The sequence store is atomicx.StoreRel64, not a sequentially
// consistent store: the producer does not wait for the cell's cache line
// to arrive from the consumer's core before returning.
// Messages pushed by one producer are popped in the order it pushed them.
//
// A peer that keeps rewriting the producer counter can make TryPush retry
// for as long as it keeps doing so; that is the same denial of service as
// keeping the ring full, and the ring does not defend against it.
func (r *Ring) TryPush(payload []byte) error {
	if len(payload) > CellPayload {
		return ErrTooBig
	}
	off, pos, err := r.reserve()
	if err != nil {
		return err
	}
	r.publish(off, pos, payload)
	return nil
}

// MaxPushCells is the most cells TryPushCells takes at once, and so the
// longest inline message a receiver takes (4377 bytes): enough for an
// atomic request or answer of 4 KiB of operands, which C sends and serves
// as inline messages (cmd/libfabric-psm2/fast/atomic.h: ATOMIC_MAX).
const MaxPushCells = 80

// TryPushCells pushes len(cells)/CellPayload consecutive cells as one
// unit: they occupy consecutive positions, so no other producer's cell
// falls between them, and the consumer finds them all published once it
// finds the first one published. len(cells) must be a positive multiple of
// CellPayload, for at most MaxPushCells cells and at most the ring's cell
// count; otherwise it returns ErrTooBig. It returns ErrFull if the ring has
// fewer free cells than that, and ErrCorrupt like TryPush. It does not
// allocate.
//
// The cells after the first are published first and the first one last,
// so a consumer that pops the first cell can pop the others at once; a
// consumer only needs to know, from the first cell's content, how many
// follow.
func (r *Ring) TryPushCells(cells []byte) error {
	n := uint64(len(cells) / CellPayload)
	if len(cells)%CellPayload != 0 || n == 0 || n > MaxPushCells || n > r.n {
		return ErrTooBig
	}
	if n == 1 {
		return r.TryPush(cells)
	}
	pos, err := r.reserveN(n)
	if err != nil {
		return err
	}
	for k := n - 1; k > 0; k-- {
		r.publish(r.cellOff(pos+k), pos+k, cells[k*CellPayload:(k+1)*CellPayload])
	}
	r.publish(r.cellOff(pos), pos, cells[:CellPayload])
	return nil
}

// reserveN claims n consecutive positions starting at the returned one.
// It reserves pos..pos+n-1 only if the consumer has taken every position a
// lap before them: cons > pos+n-1-N. The check uses seen, the producers'
// copy of cons, and reloads cons only when seen says there is no room;
// seen is only ever behind cons, so a stale copy can refuse room, never
// grant it.
func (r *Ring) reserveN(n uint64) (pos uint64, err error) {
	pos = r.prod.Load()
	for {
		if pos+n-r.seen.Load() > r.n {
			cons := r.cons.Load()
			if pos+n-cons > r.n {
				if int64(pos-cons) > int64(r.n) || int64(cons-pos) > 0 {
					// More reserved than the ring holds, or the consumer
					// past the producers: only a writer outside the
					// protocol does that.
					if cur := r.prod.Load(); cur != pos {
						pos = cur // we read a stale pos; look again
						continue
					}
					return 0, ErrCorrupt
				}
				return 0, ErrFull
			}
			r.seen.Store(cons)
		}
		if r.slotPos != nil {
			// Announce before reserving: the CAS below orders these
			// stores before the reservation becomes visible.
			atomicx.StoreRel64(r.slotN, n)
			atomicx.StoreRel64(r.slotPos, pos)
		}
		if r.prod.CompareAndSwap(pos, pos+n) {
			return pos, nil
		}
		pos = r.prod.Load()
	}
}

// reserve claims the next position for a producer and returns it with its
// cell's offset. The caller must publish it.
func (r *Ring) reserve() (off int, pos uint64, err error) {
	pos, err = r.reserveN(1)
	if err != nil {
		return 0, 0, err
	}
	return r.cellOff(pos), pos, nil
}

// publish fills the reserved cell at off for position pos and hands it to
// the consumer.
func (r *Ring) publish(off int, pos uint64, payload []byte) {
	cell := r.payload(off)
	n := copy(cell, payload)
	clear(cell[n:])
	atomicx.StoreRel64(r.seqWord(off), pos+1)
}

// TryPop takes the next message: it copies the cell's CellPayload bytes
// into dst (or the first len(dst) of them, if dst is shorter; the rest are
// lost), frees the cell (by advancing cons) and returns the number of bytes copied with ok
// true. If the next cell is not published, it returns 0, false at once;
// that is an empty ring, or one stalled behind a producer that has not
// published yet (see Stalled). Only the single consumer may call it. It
// does not allocate.
//
// TryPop copies rather than lending the cell out: the bytes in dst are
// private, so the caller can validate and then use them without a producer
// changing them in between.
//
// Ordering: the sequence is loaded (acquire) before the payload is read,
// and the payload is read before cons is stored (release), so a producer
// reusing the cell a lap later, which must first see cons past it, cannot
// overwrite a message still being copied.
func (r *Ring) TryPop(dst []byte) (n int, ok bool) {
	pos := r.cons.Load()
	off := r.cellOff(pos)
	if r.seq(off).Load() != pos+1 {
		return 0, false
	}
	n = copy(dst, r.payload(off))
	atomicx.StoreRel64(r.consWord, pos+1)
	return n, true
}

// Peek returns the first payload byte of the next cell, without taking
// it, and true if that cell is published; 0, false otherwise. Only the
// single consumer may call it. A consumer of TryPushCells units uses it to
// check that the cell it is about to take as part of a unit is one.
func (r *Ring) Peek() (b byte, ok bool) {
	pos := r.cons.Load()
	off := r.cellOff(pos)
	if r.seq(off).Load() != pos+1 {
		return 0, false
	}
	return r.mem[off+offCellPayload], true
}

// Empty reports whether TryPop would find nothing: one atomic load
// (acquire) of the next cell's sequence word, which is all an idle poll
// costs. Only the single consumer may call it. A ring stalled behind an
// unpublished reservation also reports Empty.
func (r *Ring) Empty() bool {
	pos := r.cons.Load()
	return r.seq(r.cellOff(pos)).Load() != pos+1
}

// PeekCell returns the payload of the cell k positions after the
// consumer's, without taking it, and true if that cell is published. The
// bytes are the ring's, not a copy: a consumer that must trust them copies
// them first (TryPop). Only the single consumer may call it.
func (r *Ring) PeekCell(k uint64) ([]byte, bool) {
	pos := r.cons.Load() + k
	off := r.cellOff(pos)
	if r.seq(off).Load() != pos+1 {
		return nil, false
	}
	return r.payload(off), true
}

// Reserved reports whether producers hold positions not yet consumed
// (some perhaps not yet published). One load of the producer counter,
// whose line stays shared while nobody pushes.
func (r *Ring) Reserved() bool { return r.prod.Load() != r.cons.Load() }

// EmptyShared is Empty for any goroutine or process: it reads the
// consumer's position from the shared consumer counter (which TryPop
// keeps current) instead of the consumer's private copy. It costs two
// atomic loads.
func (r *Ring) EmptyShared() bool {
	pos := r.cons.Load()
	return r.seq(r.cellOff(pos)).Load() != pos+1
}

// Counters returns the consumer's and the producers' counters: the next
// position to consume and the next to reserve. A producer watching
// whether its peer consumes (liveness) compares successive values.
func (r *Ring) Counters() (cons, prod uint64) { return r.cons.Load(), r.prod.Load() }

// Base returns the address of the ring's memory, for code outside Go.
func (r *Ring) Base() uintptr { return atomicx.Addr(atomicx.RawWordAt(r.mem, 0)) }

// ProbeLog2Mask is the part of a probe word that holds log2 of the cell
// count; the rest is the ring's base address (64-byte aligned).
const ProbeLog2Mask = 63

// Probe returns the ring's probe word (transport.Prober): its base
// address with log2 of its cell count in the low 6 bits. The ring holds
// an arrived cell iff the sequence word of cell cons&(N-1) equals cons+1
// (all loads atomic, native-endian).
func (r *Ring) Probe() uint64 {
	return uint64(r.Base()) | uint64(bits.TrailingZeros64(r.n))
}

// Stalled reports whether the consumer is held up at position pos by a
// producer that reserved pos (the producer counter is past it) but has not
// published it (its cell's sequence is not pos+1). Only the single
// consumer may call it, typically when Empty has been true for a while.
//
// One true answer means nothing: a live producer is between its two steps
// for a few nanoseconds. The caller remembers pos and the time it first saw
// it stuck; if Stalled still reports the same pos stuck after a timeout,
// the producer is dead or stopped and the ring cannot make progress again.
func (r *Ring) Stalled() (pos uint64, stuck bool) {
	pos = r.cons.Load()
	if r.seq(r.cellOff(pos)).Load() == pos+1 {
		return pos, false // published
	}
	return pos, int64(r.prod.Load()-pos) > 0
}

// newRing builds the Go-side view of a ring of cells cells over mem, which
// the caller has checked holds RingSize(cells) aligned bytes.
func newRing(mem []byte, cells uint64) *Ring {
	return &Ring{
		mem:  mem,
		mask: cells - 1,
		n:    cells,
		prod: atomicx.WordAt(mem, offRingProd),
		seen: atomicx.WordAt(mem, offRingSeen),
		cons: atomicx.WordAt(mem, offRingCons),

		consWord: atomicx.RawWordAt(mem, offRingCons),
		slot:     -1,
	}
}

// cellOff returns the byte offset of the cell for position pos.
func (r *Ring) cellOff(pos uint64) int {
	return ringHeaderSize + int(pos&r.mask)*CellSize
}

// seq returns the sequence word of the cell at off.
func (r *Ring) seq(off int) *atomic.Uint64 { return atomicx.WordAt(r.mem, off+offCellSeq) }

// seqWord is seq as a plain word, for release stores.
func (r *Ring) seqWord(off int) *uint64 { return atomicx.RawWordAt(r.mem, off+offCellSeq) }

// payload returns the payload bytes of the cell at off.
func (r *Ring) payload(off int) []byte {
	return r.mem[off+offCellPayload : off+CellSize : off+CellSize]
}

// ringIdent is the first header word of a valid ring.
const ringIdent = uint64(ringMagic) | uint64(ringVersion)<<32

// initialPos is where the counters of a fresh ring of n cells start: half a
// lap below 2^64, so the uint64 counters overflow before the ring has been
// filled once.
func initialPos(n uint64) uint64 { return ^uint64(0) - n/2 }

// validCells reports whether n is a power of two in [MinCells, MaxCells].
func validCells(n uint64) bool {
	return n >= MinCells && n <= MaxCells && n&(n-1) == 0
}

// CLayout describes the ring for the C side's generated layout.h
// (cmd/libfabric-psm2/fast/ring.h pushes and pops the same cells).
func CLayout() cabi.Group {
	return cabi.Group{Title: "Ring, bytes", Source: "internal/ring/ring.go", Consts: []cabi.Const{
		cabi.Value("RING_PROD", offRingProd, "uint64: producers' reservation counter"),
		cabi.Value("RING_SEEN", offRingSeen, "uint64: producers' copy of cons"),
		// The C fast path's producers store sched_getcpu()+1 when they
		// reserve; Go's leave it. Any producer may write anything, and it
		// is read only by a consumer asking whether the peer it waits for
		// shares its CPU (cmd/libfabric-psm2/cq.c, cq_unshare): a wrong
		// value costs at most a rate-limited move of that thread.
		cabi.Value("RING_PROD_CPU", offRingProdCPU, "uint64: the latest C producer's CPU + 1 (0: none), a hint"),
		cabi.Value("RING_CONS", offRingCons, "uint64: consumer counter"),
		cabi.Value("RING_HDR", ringHeaderSize, "cell i starts at RING_HDR + i*CELL_SIZE"),
		cabi.Value("CELL_SIZE", CellSize, ""),
		cabi.Value("CELL_SEQ", offCellSeq, "in a cell: the uint64 sequence word"),
		cabi.Value("CELL_PAYLOAD_OFF", offCellPayload, "in a cell: where the payload starts"),
		cabi.Value("CELL_PAYLOAD", CellPayload, "payload bytes in a cell"),
		cabi.Value("PROBE_LOG2_MASK", ProbeLog2Mask, "probe word: log2 of the cell count; the rest is the ring"),
		cabi.Word("SLOT_POS", 0, "a producer slot, from its pos word (FP_SLOT): first position reserved"),
		cabi.Word("SLOT_N", offSlotN-offSlotPos, "... its number of cells"),
	}}
}
