//go:build linux

package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is where POSIX shared memory objects live on Linux: shm_open(3)
// opens Dir/<name>, and so does this package, without libc.
const Dir = "/dev/shm"

// maxNameLen is NAME_MAX: a name is one path component of Dir.
const maxNameLen = 255

// Segment layout, version 1: a header of native-endian uint64 words, then
// one ring at the ring offset. The object's size is a whole number of
// pages. Changing anything here means bumping segVersion;
// TestSegmentLayout pins the values.
const (
	segMagic   = 0x70736d73 // "psms"
	segVersion = 1

	offSegIdent   = 0  // segMagic | segVersion<<32; stored last by Create
	offSegPID     = 8  // the owner's process id, for Reclaim
	offSegSize    = 16 // total size of the object in bytes
	offSegRingOff = 24 // offset of the ring from the start of the segment

	// segHeaderSize is where the ring starts. It is lineSep so the ring's
	// counters keep their own line pairs.
	segHeaderSize = lineSep
)

// segIdent is the first header word of a valid segment.
const segIdent = uint64(segMagic) | uint64(segVersion)<<32

// ErrName is returned for a segment name that is empty, ".", "..",
// longer than 255 bytes or contains '/' or NUL.
var ErrName = errors.New("shm: invalid segment name")

// Segment is a POSIX shared memory object under Dir, mapped into this
// process: a versioned header naming its owner, then one Ring. The owner
// makes it with Create and consumes from its ring; peers map it with Open
// and push into it.
//
// A Segment holds no file descriptor, only the mapping. Close unmaps it;
// Unlink removes the name. Neither is done automatically.
type Segment struct {
	name string
	mem  []byte
	ring *Ring
	pid  int
}

// Create makes the shared memory object Dir/<name> (O_CREAT|O_EXCL, mode
// 0600 whatever the umask), sizes it for a ring of cells cells, maps it,
// and formats the header and the ring, storing the header's magic last so
// that a peer's Open never accepts a half-written segment. The caller
// owns the segment: it is the ring's consumer, and it unlinks the name when
// done.
//
// If the name exists, the error matches os.ErrExist; the caller can try
// Reclaim and then Create again. On any error nothing is left behind.
func Create(name string, cells int) (seg *Segment, err error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	ringSize := RingSize(cells)
	if ringSize == 0 {
		return nil, fmt.Errorf("create segment %q of %d cells: %w", name, cells, ErrCells)
	}
	page := os.Getpagesize()
	size := (segHeaderSize + ringSize + page - 1) / page * page

	path := Dir + "/" + name
	fd, err := openObject(path, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create segment %q: %w", name, err)
	}
	defer closeObject(fd)
	defer func() {
		if err != nil {
			_ = unlinkObject(path)
		}
	}()
	// Peers of the same user open it read-write, so the umask must not
	// take permissions away; nobody else may open it at all.
	if err := fchmodObject(fd, 0o600); err != nil {
		return nil, fmt.Errorf("chmod segment %q: %w", name, err)
	}
	if err := truncateObject(fd, int64(size)); err != nil {
		return nil, fmt.Errorf("size segment %q: %w", name, err)
	}
	mem, err := mapObject(fd, size)
	if err != nil {
		return nil, fmt.Errorf("map segment %q: %w", name, err)
	}
	defer func() {
		if err != nil {
			_ = unmapObject(mem)
		}
	}()

	pid := os.Getpid()
	wordAt(mem, offSegPID).Store(uint64(pid))
	wordAt(mem, offSegSize).Store(uint64(size))
	wordAt(mem, offSegRingOff).Store(segHeaderSize)
	ring, err := InitRing(mem[segHeaderSize:], cells)
	if err != nil {
		return nil, fmt.Errorf("create segment %q: %w", name, err)
	}
	wordAt(mem, offSegIdent).Store(segIdent)
	return &Segment{name: name, mem: mem, ring: ring, pid: pid}, nil
}

// Open maps the existing segment Dir/<name>, made by Create in this or
// another process, and attaches to its ring. Its content is untrusted: the
// header and the ring are validated, and anything wrong is an error
// wrapping ErrCorrupt. A segment whose owner is still inside Create looks
// the same; the caller may retry. A missing name matches os.ErrNotExist.
//
// Bounds are checked against the object's size at Open. A process of the
// same user that shrinks the object afterwards makes later accesses fault
// (SIGBUS); the mode 0600 keeps everyone else out.
func Open(name string) (seg *Segment, err error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	fd, err := openObject(Dir+"/"+name, unix.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open segment %q: %w", name, err)
	}
	defer closeObject(fd)
	size, err := objectSize(fd)
	if err != nil {
		return nil, fmt.Errorf("open segment %q: %w", name, err)
	}
	if size < int64(segHeaderSize+RingSize(MinCells)) || size > maxSegmentSize() {
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

	h := segHeader{ident: wordAt(mem, offSegIdent).Load()} // first: acquire
	h.pid = wordAt(mem, offSegPID).Load()
	h.size = wordAt(mem, offSegSize).Load()
	h.ringOff = wordAt(mem, offSegRingOff).Load()
	if err := h.check(size); err != nil {
		return nil, fmt.Errorf("open segment %q: %w", name, err)
	}
	ring, err := AttachRing(mem[h.ringOff:])
	if err != nil {
		return nil, fmt.Errorf("open segment %q: %w", name, err)
	}
	return &Segment{name: name, mem: mem, ring: ring, pid: int(h.pid)}, nil
}

// Name returns the segment's name, without Dir.
func (s *Segment) Name() string { return s.name }

// Owner returns the process id recorded by the segment's creator.
func (s *Segment) Owner() int { return s.pid }

// Ring returns the segment's ring. It must not be used after Close.
func (s *Segment) Ring() *Ring { return s.ring }

// Close unmaps the segment. The Ring and any memory obtained from it must
// not be used afterwards: they refer to unmapped memory. Close does not
// remove the name (see Unlink); calling it twice is a no-op.
func (s *Segment) Close() error {
	if s.mem == nil {
		return nil
	}
	mem := s.mem
	s.mem, s.ring = nil, nil
	if err := unmapObject(mem); err != nil {
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
	if err := unlinkObject(Dir + "/" + name); err != nil {
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
	path := Dir + "/" + name
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
		alive, err := processAlive(int(h.pid))
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
	ident, pid, size, ringOff uint64
}

// decodeSegHeader decodes a header read from the object's first bytes. It
// reports false if b is too short to hold one.
func decodeSegHeader(b []byte) (segHeader, bool) {
	if len(b) < offSegRingOff+8 {
		return segHeader{}, false
	}
	return segHeader{
		ident:   binary.NativeEndian.Uint64(b[offSegIdent:]),
		pid:     binary.NativeEndian.Uint64(b[offSegPID:]),
		size:    binary.NativeEndian.Uint64(b[offSegSize:]),
		ringOff: binary.NativeEndian.Uint64(b[offSegRingOff:]),
	}, true
}

// check validates h against the size of the object it came from. After it
// succeeds, ringOff is a line-aligned offset inside the object and pid is a
// positive pid_t, safe to pass to kill(2) (0 and negative values would
// address process groups).
func (h segHeader) check(objSize int64) error {
	switch {
	case uint32(h.ident) != segMagic:
		return fmt.Errorf("bad segment magic %#x: %w", uint32(h.ident), ErrCorrupt)
	case uint32(h.ident>>32) != segVersion:
		return fmt.Errorf("unsupported segment version %d: %w", uint32(h.ident>>32), ErrCorrupt)
	case h.size != uint64(objSize):
		return fmt.Errorf("segment header says %d bytes, object has %d: %w", h.size, objSize, ErrCorrupt)
	case h.ringOff < segHeaderSize || h.ringOff%lineSep != 0 || h.ringOff >= h.size:
		return fmt.Errorf("bad ring offset %d: %w", h.ringOff, ErrCorrupt)
	case h.pid == 0 || h.pid > 1<<31-1:
		return fmt.Errorf("bad owner pid %d: %w", h.pid, ErrCorrupt)
	}
	return nil
}

// maxSegmentSize is the largest object Open maps: a segment of MaxCells
// cells.
func maxSegmentSize() int64 {
	page := os.Getpagesize()
	return int64((segHeaderSize + RingSize(MaxCells) + page - 1) / page * page)
}

// checkName validates a segment name: one path component of Dir.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || len(name) > maxNameLen ||
		strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("%w: %q", ErrName, name)
	}
	return nil
}
