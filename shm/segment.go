//go:build linux

package shm

// Over 600 lines: a segment's whole life (layout, create, open, the checks of a
// peer's header, liveness word, unlink) is kept together, so that every check
// of hostile contents sits beside the layout it checks.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/atomicx"
	"github.com/gopsm2/libfabric-psm2/internal/ring"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// Dir is where POSIX shared memory objects live on Linux: shm_open(3)
// opens Dir/<name>, and so does this package, without libc.
const Dir = "/dev/shm"

// maxNameLen is NAME_MAX: a name is one path component of Dir.
const maxNameLen = 255

// Segment layout, version 4: a header of native-endian uint64 words, a
// doorbell line pair, a line pair for the bounce-buffer busy bits, one ring
// at the ring offset, optionally the split slots of shared rendezvous
// copies (split.go) right after the ring, and optionally a pool of bounce
// buffers at the pool offset. The object's size is a whole number of pages. Changing anything
// here means bumping segVersion; TestSegmentLayout pins the values.
//
// The header words up to offSegState are written once by Create, before
// the magic; a peer reads them once at Open. The state word, the doorbell
// and the busy bits change while the segment is in use and are only
// accessed atomically.
const (
	segMagic   = 0x70736d73 // "psms"
	segVersion = 5

	offSegIdent    = 0   // segMagic | segVersion<<32; stored last by Create
	offSegPID      = 8   // the owner's process id, for Reclaim
	offSegSize     = 16  // total size of the object in bytes
	offSegRingOff  = 24  // offset of the ring from the start of the segment
	offSegJob      = 32  // 16 bytes: the job key (UUID) of the owner
	offSegEPID     = 48  // the owner's endpoint id
	offSegPoolOff  = 56  // offset of the bounce buffers; 0 if there are none
	offSegPoolBufs = 64  // number of bounce buffers, at most MaxBuffers
	offSegPoolSize = 72  // bytes per bounce buffer, a multiple of ring.CellSize
	offSegState    = 80  // segOpen, or segClosed once the owner closed it
	offSegSplitOff = 88  // offset of the split slots; 0 if there are none
	offSegSplits   = 96  // number of split slots, at most MaxSplitSlots
	offSegStart    = 104 // the owner's start time (sys.ProcIdentity), for Reclaim

	// The doorbell: a 32-bit futex word the owner sleeps on and a 32-bit
	// count of sleepers, on their own line pair. Only the owner writes the
	// count; producers read it after every push and touch the sequence
	// only when it is nonzero.
	offSegBellSeq     = ring.LineSep     // uint32 futex word
	offSegBellWaiters = ring.LineSep + 4 // uint32: owner threads inside Wait

	// offSegBusy is a uint64 whose bit i is set while bounce buffer i
	// holds data a receiver has not copied out yet: the owner sets it, the
	// receiver clears it. Its own line pair keeps that ping-pong off the
	// header and the doorbell.
	offSegBusy = 2 * ring.LineSep

	// offSegStream is the owner's stream word: while the C fast path
	// fills a bounce buffer whose eager cell it already pushed (cell flag
	// cellStream), the stream's number in the high 32 bits and the bytes
	// filled so far in the low 32 (streamBroken: the copy faulted, the
	// message is void). Only one stream at a time: the owner writes it
	// under its domain lock, inside one send. It shares the busy word's
	// line pair: the same processes touch both.
	offSegStream = offSegBusy + 64
	// offSegStreamBroken names the last stream that broke, as
	// stream<<32 | (its bounce buffer + 1), 0 for none: the stream word
	// itself moves on with the next stream, and a receiver that reaches
	// the broken message later must still see it broken. The owner starts
	// no new stream while that buffer is still busy, so one word is enough.
	offSegStreamBroken = offSegStream + 8

	// segHeaderSize is where the ring starts. It is a multiple of ring.LineSep
	// so the ring's counters keep their own line pairs.
	segHeaderSize = 3 * ring.LineSep
)

// Values of the state word.
const (
	segOpen   = 0
	segClosed = 1
)

// Split slots: SplitSlotSize bytes each (a line pair, so two slots never
// share a prefetched pair), at most MaxSplitSlots of them.
const (
	SplitSlotSize = ring.LineSep
	MaxSplitSlots = 64
)

// Bounds on the bounce-buffer pool of a segment.
const (
	// MaxBuffers is the most bounce buffers a segment holds: one bit each
	// in the busy word.
	MaxBuffers = 64
	// MaxBufferSize bounds the size of one bounce buffer, and so what
	// Open accepts from a peer's header.
	MaxBufferSize = 1 << 20
)

// segIdent is the first header word of a valid segment.
const segIdent = uint64(segMagic) | uint64(segVersion)<<32

// ErrName is returned for a segment name that is empty, ".", "..",
// longer than 255 bytes or contains '/' or NUL.
var ErrName = errors.New("shm: invalid segment name")

// ErrPool is returned by CreateSegment for a bounce-buffer pool out of
// bounds: more than MaxBuffers buffers, or a buffer size that is not a
// positive multiple of CellSize up to MaxBufferSize.
var ErrPool = errors.New("shm: invalid bounce-buffer pool")

// Segment is a POSIX shared memory object under Dir, mapped into this
// process: a versioned header naming its owner (process, job and endpoint
// id), a doorbell, one Ring and an optional pool of bounce buffers. The
// owner makes it with Create or CreateSegment and consumes from its ring;
// peers map it with Open and push into it.
//
// A Segment holds no file descriptor, only the mapping. Close unmaps it;
// Unlink removes the name. Neither is done automatically.
type Segment struct {
	name    string
	mem     []byte
	owned   bool // made by CreateSegment: Close retires the range (vm.go)
	ring    *ring.Ring
	pid     int
	start   uint64 // the owner's start time (sys.ProcIdentity.Start), 0: unknown
	job     [16]byte
	epid    uint64
	pool    []byte // nbuf*bufSize bytes of bounce buffers; nil if none
	nbuf    int
	bufSize int
	path    string // where it is, for Replaced
	dev     uint64 // identity of the object, for Replaced
	ino     uint64

	splitOff int // offset of the split slots (0: none)
	splits   int // number of split slots
}

// SegmentConfig describes a segment to CreateSegment.
type SegmentConfig struct {
	// Cells is the ring's cell count, a power of two in [MinCells,
	// MaxCells].
	Cells int
	// Job and EPID are recorded in the header for peers to check.
	Job  [16]byte
	EPID uint64
	// Buffers bounce buffers of BufferSize bytes each follow the ring,
	// page-aligned. Buffers is at most MaxBuffers (0 for none);
	// BufferSize is a multiple of CellSize, at most MaxBufferSize.
	Buffers    int
	BufferSize int
	// SplitSlots split slots follow the ring (at most MaxSplitSlots).
	SplitSlots int
}

// Create makes a segment holding a ring of cells cells and nothing else:
// CreateSegment with a zero job, endpoint id and pool.
func Create(name string, cells int) (*Segment, error) {
	return CreateSegment(name, SegmentConfig{Cells: cells})
}

// CreateSegment makes the shared memory object Dir/<name> (O_CREAT|O_EXCL,
// mode 0600 whatever the umask), sizes it for cfg, maps it, and formats the
// header, the ring and the busy bits, storing the header's magic last so
// that a peer's Open never accepts a half-written segment. The caller owns
// the segment: it is the ring's consumer, it alone sets busy bits, and it
// unlinks the name when done.
//
// If the name exists, the error matches os.ErrExist; the caller can try
// Reclaim and then create again. On any error nothing is left behind.
func CreateSegment(name string, cfg SegmentConfig) (seg *Segment, err error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	ringSize := ring.RingSize(cfg.Cells)
	if ringSize == 0 {
		return nil, fmt.Errorf("create segment %q of %d cells: %w", name, cfg.Cells, ring.ErrCells)
	}
	if cfg.Buffers < 0 || cfg.Buffers > MaxBuffers || (cfg.Buffers > 0 &&
		(cfg.BufferSize <= 0 || cfg.BufferSize > MaxBufferSize || cfg.BufferSize%ring.CellSize != 0)) {
		return nil, fmt.Errorf("create segment %q: %d buffers of %d bytes: %w",
			name, cfg.Buffers, cfg.BufferSize, ErrPool)
	}
	if cfg.SplitSlots < 0 || cfg.SplitSlots > MaxSplitSlots {
		return nil, fmt.Errorf("create segment %q: %d split slots: %w", name, cfg.SplitSlots, ErrPool)
	}
	page := os.Getpagesize()
	splitOff := 0
	end := segHeaderSize + ringSize
	if cfg.SplitSlots > 0 {
		splitOff = roundUp(end, ring.LineSep)
		end = splitOff + cfg.SplitSlots*SplitSlotSize
	}
	size := roundUp(end, page)
	poolOff, poolSize := 0, 0
	if cfg.Buffers > 0 {
		poolOff, poolSize = size, cfg.BufferSize
		size = roundUp(poolOff+cfg.Buffers*poolSize, page)
	}

	path, err := segPath(name)
	if err != nil {
		return nil, fmt.Errorf("create segment %q: %w", name, err)
	}
	fd, err := createObject(path, size)
	if err != nil {
		return nil, fmt.Errorf("create segment %q: %w", name, err)
	}
	defer closeObject(fd)
	defer func() {
		if err != nil {
			_ = unlinkObject(path)
		}
	}()
	st, err := statObject(fd)
	if err != nil {
		return nil, fmt.Errorf("create segment %q: %w", name, err)
	}
	mem, err := mapOwned(fd, size) // the owner's mapping is retired, not unmapped (vm.go)
	if err != nil {
		return nil, fmt.Errorf("map segment %q: %w", name, err)
	}
	defer func() {
		if err != nil {
			_ = retire(mem)
		}
	}()

	id := sys.SelfIdentity()
	pid := id.PID
	atomicx.WordAt(mem, offSegPID).Store(uint64(pid))
	atomicx.WordAt(mem, offSegStart).Store(id.Start)
	atomicx.WordAt(mem, offSegSize).Store(uint64(size))
	atomicx.WordAt(mem, offSegRingOff).Store(segHeaderSize)
	atomicx.WordAt(mem, offSegJob).Store(binary.NativeEndian.Uint64(cfg.Job[0:]))
	atomicx.WordAt(mem, offSegJob+8).Store(binary.NativeEndian.Uint64(cfg.Job[8:]))
	atomicx.WordAt(mem, offSegEPID).Store(cfg.EPID)
	atomicx.WordAt(mem, offSegPoolOff).Store(uint64(poolOff))
	atomicx.WordAt(mem, offSegPoolBufs).Store(uint64(cfg.Buffers))
	atomicx.WordAt(mem, offSegPoolSize).Store(uint64(poolSize))
	atomicx.WordAt(mem, offSegState).Store(segOpen)
	atomicx.WordAt(mem, offSegSplitOff).Store(uint64(splitOff))
	atomicx.WordAt(mem, offSegSplits).Store(uint64(cfg.SplitSlots))
	atomicx.WordAt(mem, offSegBellSeq).Store(0) // seq and waiters
	atomicx.WordAt(mem, offSegBusy).Store(0)
	ringEnd := size
	if poolOff > 0 {
		ringEnd = poolOff
	}
	if splitOff > 0 {
		ringEnd = splitOff
	}
	r, err := ring.InitRing(mem[segHeaderSize:ringEnd], cfg.Cells)
	if err != nil {
		return nil, fmt.Errorf("create segment %q: %w", name, err)
	}
	atomicx.WordAt(mem, offSegIdent).Store(segIdent)
	seg = &Segment{name: name, path: path, mem: mem, owned: true, ring: r, pid: pid, job: cfg.Job, epid: cfg.EPID,
		nbuf: cfg.Buffers, bufSize: poolSize, dev: st.dev, ino: st.ino,
		splitOff: splitOff, splits: cfg.SplitSlots}
	if poolOff > 0 {
		seg.pool = mem[poolOff : poolOff+cfg.Buffers*poolSize : poolOff+cfg.Buffers*poolSize]
	}
	return seg, nil
}

// Open maps the existing segment Dir/<name>, made by Create in this or
// another process, and attaches to its ring. Its content is untrusted: the
// header and the ring are validated, and anything wrong is an error
// wrapping ErrCorrupt. A segment whose owner is still inside Create looks
// the same; the caller may retry. A missing name matches os.ErrNotExist.
// A segment its owner has closed opens fine; see Closed.
//
// Bounds are checked against the object's size at Open. A process of the
// same user that shrinks the object afterwards makes later accesses fault
// (SIGBUS); the mode 0600 keeps everyone else out.
func Open(name string) (seg *Segment, err error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	path, err := segPath(name)
	if err != nil {
		return nil, fmt.Errorf("open segment %q: %w", name, err)
	}
	fd, err := openObject(path, unix.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open segment %q: %w", name, err)
	}
	defer closeObject(fd)
	st, err := statObject(fd)
	if err != nil {
		return nil, fmt.Errorf("open segment %q: %w", name, err)
	}
	size := st.size
	if size < int64(segHeaderSize+ring.RingSize(ring.MinCells)) || size > maxSegmentSize() {
		return nil, fmt.Errorf("open segment %q: size %d out of range: %w", name, size, ErrCorrupt)
	}
	mem, err := mapObject(fd, int(size))
	if err != nil {
		return nil, fmt.Errorf("map segment %q: %w", name, err)
	}
	defer func() {
		if err != nil {
			_ = unmapObject(mem)
		}
	}()

	h := segHeader{ident: atomicx.WordAt(mem, offSegIdent).Load()} // first: acquire
	h.pid = atomicx.WordAt(mem, offSegPID).Load()
	h.size = atomicx.WordAt(mem, offSegSize).Load()
	h.ringOff = atomicx.WordAt(mem, offSegRingOff).Load()
	binary.NativeEndian.PutUint64(h.job[0:], atomicx.WordAt(mem, offSegJob).Load())
	binary.NativeEndian.PutUint64(h.job[8:], atomicx.WordAt(mem, offSegJob+8).Load())
	h.epid = atomicx.WordAt(mem, offSegEPID).Load()
	h.poolOff = atomicx.WordAt(mem, offSegPoolOff).Load()
	h.poolBufs = atomicx.WordAt(mem, offSegPoolBufs).Load()
	h.poolSize = atomicx.WordAt(mem, offSegPoolSize).Load()
	h.splitOff = atomicx.WordAt(mem, offSegSplitOff).Load()
	h.splits = atomicx.WordAt(mem, offSegSplits).Load()
	h.start = atomicx.WordAt(mem, offSegStart).Load()
	if err := h.check(size); err != nil {
		return nil, fmt.Errorf("open segment %q: %w", name, err)
	}
	r, err := ring.AttachRing(mem[h.ringOff:h.ringEnd()])
	if err != nil {
		return nil, fmt.Errorf("open segment %q: %w", name, err)
	}
	seg = &Segment{name: name, path: path, mem: mem, ring: r, pid: int(h.pid), start: h.start, job: h.job, epid: h.epid,
		nbuf: int(h.poolBufs), bufSize: int(h.poolSize), dev: st.dev, ino: st.ino,
		splitOff: int(h.splitOff), splits: int(h.splits)}
	if h.poolBufs > 0 {
		end := h.poolOff + h.poolBufs*h.poolSize
		seg.pool = mem[h.poolOff:end:end]
	}
	return seg, nil
}

// Name returns the segment's name, without Dir.
func (s *Segment) Name() string { return s.name }

// Owner returns the process id recorded by the segment's creator.
func (s *Segment) Owner() int { return s.pid }

// Job returns the job key recorded by the segment's creator.
func (s *Segment) Job() [16]byte { return s.job }

// EPID returns the endpoint id recorded by the segment's creator.
func (s *Segment) EPID() uint64 { return s.epid }

// Ring returns the segment's ring. It must not be used after Close.
func (s *Segment) Ring() *ring.Ring { return s.ring }

// Buffers returns the number of bounce buffers.
func (s *Segment) Buffers() int { return s.nbuf }

// BufferSize returns the size of one bounce buffer in bytes.
func (s *Segment) BufferSize() int { return s.bufSize }

// Buffer returns bounce buffer i, or nil if i is out of range. The memory
// is shared: its owner writes it while the buffer's busy bit is clear, and
// the receiver it was handed to reads it until it clears the bit.
func (s *Segment) Buffer(i int) []byte {
	if i < 0 || i >= s.nbuf {
		return nil
	}
	off := i * s.bufSize
	return s.pool[off : off+s.bufSize : off+s.bufSize]
}

// Busy returns the word of busy bits: bit i is set while bounce buffer i
// holds data a receiver has not released. The owner sets bits (Or), the
// receiver clears them (And); anyone may load it.
func (s *Segment) Busy() *atomic.Uint64 { return atomicx.WordAt(s.mem, offSegBusy) }

// Stream returns the segment's stream word (offSegStream).
func (s *Segment) Stream() *atomic.Uint64 { return atomicx.WordAt(s.mem, offSegStream) }

// StreamBroken returns the word naming the last broken stream
// (offSegStreamBroken).
func (s *Segment) StreamBroken() *atomic.Uint64 { return atomicx.WordAt(s.mem, offSegStreamBroken) }

// Closed reports whether the owner has marked the segment closed.
func (s *Segment) Closed() bool { return atomicx.WordAt(s.mem, offSegState).Load() != segOpen }

// MarkClosed records in the header that the owner is closing the
// segment, for peers that still map it. Only the owner calls it.
func (s *Segment) MarkClosed() { atomicx.WordAt(s.mem, offSegState).Store(segClosed) }

// bellSeq and bellWaiters are the doorbell's words.
func (s *Segment) bellSeq() *atomic.Uint32     { return atomicx.Word32At(s.mem, offSegBellSeq) }
func (s *Segment) bellWaiters() *atomic.Uint32 { return atomicx.Word32At(s.mem, offSegBellWaiters) }

// Replaced reports whether Dir/<name> no longer names the object this
// Segment maps: it was unlinked, or unlinked and made again. It costs one
// stat(2).
func (s *Segment) Replaced() (bool, error) {
	var st unix.Stat_t
	err := sys.IgnoringEINTR(func() error { return unix.Lstat(s.path, &st) })
	if errors.Is(err, unix.ENOENT) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("stat segment %q: %w", s.name, err)
	}
	return uint64(st.Dev) != s.dev || st.Ino != s.ino, nil
}

// Close unmaps the segment. The Ring and any memory obtained from it must
// not be used afterwards. (The owner's own segment is not unmapped but
// retired: its range reads as zeros until another segment of this process
// reuses it; see vm.go.) Close does not
// remove the name (see Unlink); calling it twice is a no-op.
func (s *Segment) Close() error {
	if s.mem == nil {
		return nil
	}
	mem := s.mem
	s.mem, s.ring, s.pool = nil, nil, nil
	unmap := unmapObject
	if s.owned {
		unmap = retire
	}
	if err := unmap(mem); err != nil {
		return fmt.Errorf("unmap segment %q: %w", s.name, err)
	}
	return nil
}

// Unlink removes the name Dir/<name>. Processes that have the segment
// mapped keep it until they unmap it; new Opens fail. A missing name
// matches os.ErrNotExist.
func Unlink(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	path, err := segPath(name)
	if err != nil {
		return err
	}
	if err := unlinkObject(path); err != nil {
		return fmt.Errorf("unlink segment %q: %w", name, err)
	}
	return nil
}

// Reclaim removes the segment Dir/<name> if it is stale: its header is not
// a valid segment header (including one whose creator died inside Create),
// or the owner pid it records no longer exists (kill(pid, 0) fails with
// ESRCH). It reads the header with pread, without mapping the object. It
// reports whether it removed the name; a missing name is (false, nil).
//
// It is meant for the process that wants to Create that name and got
// os.ErrExist, as libfabric's smr_retry_map does. Names must be unique
// among live owners (include the pid, for example): a header is also
// invalid while its live creator is still inside Create, and Reclaim would
// remove it. Liveness is judged by pid alone: a recycled pid keeps a stale
// segment (harmless), and owners in another pid namespace cannot be judged.
func Reclaim(name string) (removed bool, err error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	path, err := segPath(name)
	if err != nil {
		return false, fmt.Errorf("reclaim segment %q: %w", name, err)
	}
	fd, err := openObject(path, unix.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reclaim segment %q: %w", name, err)
	}
	defer closeObject(fd)
	size, err := objectSize(fd)
	if err != nil {
		return false, fmt.Errorf("reclaim segment %q: %w", name, err)
	}
	var buf [segHeaderSize]byte
	n, err := readObject(fd, buf[:])
	if err != nil {
		return false, fmt.Errorf("reclaim segment %q: %w", name, err)
	}
	if h, ok := decodeSegHeader(buf[:n]); ok && h.check(size) == nil {
		alive, err := h.ownerAlive()
		if err != nil {
			return false, fmt.Errorf("reclaim segment %q: owner %d: %w", name, h.pid, err)
		}
		if alive {
			return false, nil
		}
	}
	if err := unlinkObject(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		return false, fmt.Errorf("reclaim segment %q: %w", name, err)
	}
	return true, nil
}

// segHeader is a decoded copy of a segment header. It is never mapped over
// the memory: the words are loaded one by one and checked here.
type segHeader struct {
	ident, pid, size, ringOff   uint64
	job                         [16]byte
	epid                        uint64
	poolOff, poolBufs, poolSize uint64
	splitOff, splits            uint64
	start                       uint64 // the owner's start time; 0: unknown
}

// ownerAlive reports whether the process that made the segment still
// runs: its pid exists and, when the header records one, started at the
// recorded time. A pid reused by another process (this one, even) is not
// the owner.
func (h segHeader) ownerAlive() (bool, error) {
	if h.start != 0 && (sys.ProcIdentity{PID: int(h.pid), Start: h.start}).Gone() {
		return false, nil
	}
	return processAlive(int(h.pid))
}

// decodeSegHeader decodes a header read from the object's first bytes. It
// reports false if b is too short to hold one.
func decodeSegHeader(b []byte) (segHeader, bool) {
	if len(b) < offSegState {
		return segHeader{}, false
	}
	h := segHeader{
		ident:    binary.NativeEndian.Uint64(b[offSegIdent:]),
		pid:      binary.NativeEndian.Uint64(b[offSegPID:]),
		size:     binary.NativeEndian.Uint64(b[offSegSize:]),
		ringOff:  binary.NativeEndian.Uint64(b[offSegRingOff:]),
		epid:     binary.NativeEndian.Uint64(b[offSegEPID:]),
		poolOff:  binary.NativeEndian.Uint64(b[offSegPoolOff:]),
		poolBufs: binary.NativeEndian.Uint64(b[offSegPoolBufs:]),
		poolSize: binary.NativeEndian.Uint64(b[offSegPoolSize:]),
	}
	if len(b) >= offSegSplits+8 {
		h.splitOff = binary.NativeEndian.Uint64(b[offSegSplitOff:])
		h.splits = binary.NativeEndian.Uint64(b[offSegSplits:])
	}
	if len(b) >= offSegStart+8 {
		h.start = binary.NativeEndian.Uint64(b[offSegStart:])
	}
	copy(h.job[:], b[offSegJob:offSegJob+16])
	return h, true
}

// check validates h against the size of the object it came from. After it
// succeeds, ringOff is a line-aligned offset inside the object, before the
// pool if there is one; the pool, if any, lies inside the object; and pid
// is a positive pid_t, safe to pass to kill(2) (0 and negative values
// would address process groups).
func (h segHeader) check(objSize int64) error {
	switch {
	case uint32(h.ident) != segMagic:
		return fmt.Errorf("bad segment magic %#x: %w", uint32(h.ident), ErrCorrupt)
	case uint32(h.ident>>32) != segVersion:
		return fmt.Errorf("unsupported segment version %d: %w", uint32(h.ident>>32), ErrCorrupt)
	case h.size != uint64(objSize):
		return fmt.Errorf("segment header says %d bytes, object has %d: %w", h.size, objSize, ErrCorrupt)
	case h.pid == 0 || h.pid > 1<<31-1:
		return fmt.Errorf("bad owner pid %d: %w", h.pid, ErrCorrupt)
	}
	if h.poolBufs == 0 {
		if h.poolOff != 0 || h.poolSize != 0 {
			return fmt.Errorf("pool offset %d and size %d without buffers: %w", h.poolOff, h.poolSize, ErrCorrupt)
		}
	} else if h.poolBufs > MaxBuffers || h.poolSize == 0 || h.poolSize > MaxBufferSize ||
		h.poolSize%ring.CellSize != 0 || h.poolOff%ring.CellSize != 0 || h.poolOff < segHeaderSize ||
		h.poolOff > h.size || h.size-h.poolOff < h.poolBufs*h.poolSize {
		return fmt.Errorf("bad pool: %d buffers of %d bytes at %d: %w", h.poolBufs, h.poolSize, h.poolOff, ErrCorrupt)
	}
	if h.splits == 0 {
		if h.splitOff != 0 {
			return fmt.Errorf("split offset %d without slots: %w", h.splitOff, ErrCorrupt)
		}
	} else if h.splits > MaxSplitSlots || h.splitOff%ring.LineSep != 0 || h.splitOff < segHeaderSize ||
		h.splitOff > h.size || h.size-h.splitOff < h.splits*SplitSlotSize ||
		(h.poolBufs > 0 && (h.poolOff < h.splitOff || h.poolOff-h.splitOff < h.splits*SplitSlotSize)) {
		return fmt.Errorf("bad split slots: %d at %d: %w", h.splits, h.splitOff, ErrCorrupt)
	}
	if h.ringOff < segHeaderSize || h.ringOff%ring.LineSep != 0 || h.ringOff >= h.ringEnd() {
		return fmt.Errorf("bad ring offset %d: %w", h.ringOff, ErrCorrupt)
	}
	return nil
}

// ringEnd is where the ring's memory must end: the pool, or the end of the
// object.
func (h segHeader) ringEnd() uint64 {
	if h.splits > 0 {
		return h.splitOff
	}
	if h.poolBufs > 0 {
		return h.poolOff
	}
	return h.size
}

// maxSegmentSize is the largest object Open maps: a segment of MaxCells
// cells and MaxBuffers buffers of MaxBufferSize bytes.
func maxSegmentSize() int64 {
	return int64(roundUp(segHeaderSize+ring.RingSize(ring.MaxCells)+MaxSplitSlots*SplitSlotSize, os.Getpagesize()) +
		MaxBuffers*MaxBufferSize)
}

// createObject creates the object at path (O_EXCL: never an existing
// one) with mode 0600 and size bytes, every page allocated, and returns
// its descriptor; on an error nothing is left behind. It is how segments
// and shared objects (shared.go) are made.
func createObject(path string, size int) (fd int, err error) {
	fd, err = openObject(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return -1, err
	}
	defer func() {
		if err != nil {
			closeObject(fd)
			_ = unlinkObject(path)
		}
	}()
	// Peers of the same user open it read-write, so the umask must not
	// take permissions away; nobody else may open it at all.
	if err := fchmodObject(fd, 0o600); err != nil {
		return -1, fmt.Errorf("chmod: %w", err)
	}
	if err := truncateObject(fd, int64(size)); err != nil {
		return -1, fmt.Errorf("size: %w", err)
	}
	// Allocate every page now: with /dev/shm nearly full, ftruncate alone
	// succeeds and a later write to a page tmpfs cannot supply is SIGBUS.
	// This way the shortage is ENOSPC here.
	if err := allocateObject(fd, int64(size)); err != nil {
		return -1, fmt.Errorf("allocate %d bytes: %w", size, err)
	}
	return fd, nil
}

// roundUp rounds n up to a multiple of m.
func roundUp(n, m int) int { return (n + m - 1) / m * m }

// segPath returns where the segment name lives: in this user's private
// directory (dir.go).
func segPath(name string) (string, error) {
	dir, err := SegmentDir()
	if err != nil {
		return "", err
	}
	return dir + "/" + name, nil
}

// checkName validates a segment name: one path component of Dir.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > maxNameLen ||
		strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%w: %q", ErrName, name)
	}
	return nil
}
