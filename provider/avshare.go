package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/atomicx"
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
	"github.com/gopsm2/libfabric-psm2/shm"
)

// A named AV (fi_av_attr.name, fi_av(3)) keeps its addresses in a shared
// memory object in this user's private directory (shm.CreateShared),
// named from the job key and the AV's name, so that the processes of a
// job on a node that open the same name share them: an fi_addr_t one
// inserts is the same endpoint in every other, and a process may open
// the AV read-only (FI_READ) to use what others inserted. Layout, in
// native-endian words:
//
//	+0   magic | version<<32, stored last by the creator
//	+8   capacity: entries the object holds
//	+16  count: entries reserved so far (a CAS reserves the next)
//	+24  the creator's pid, +32 its start time (a dead creator's object
//	     is reclaimed by the next creator)
//	+64  the fi_addr_t table, one word per entry: FI_ADDR_NOTAVAIL until
//	     the entry's name is written, then its index. map_addr points
//	     here (fi_av(3): map_addr returned when the caller gives 0).
//	+64+8*capacity  the names, 16 bytes each
//
// Every process of the user may write it, so a reader trusts nothing:
// the capacity is checked against the object's size once, every index is
// bounded by it, and a name is used only if it is a valid peer name.
type avShared struct {
	obj      string
	mem      []byte
	cap      uint64
	creator  bool // made the object: unlinks it at close
	readOnly bool // opened with FI_READ
}

const (
	avShareMagic   = 0x76617370 // "psav"
	avShareVersion = 1
	avShareHdr     = 64
	avShareEntry   = 8 + EPNameLen
	// avShareMax bounds a named AV's entries (and so what a hostile
	// header can make a reader map): 1 MiB of addresses and names.
	avShareMax     = 1 << 16
	avShareDefault = 1024
)

// avShareName is the object of AV name in job: a hash, so that any name
// is one safe path component and two jobs never meet.
func avShareName(job UUID, name string) string {
	h := sha256.New()
	h.Write(job[:])
	h.Write([]byte{0})
	h.Write([]byte(name))
	return "psm2av-" + hex.EncodeToString(h.Sum(nil)[:16])
}

// openAVShare creates or opens (readOnly: only opens) the object of AV
// name for job, with room for count entries when it creates it.
func openAVShare(job UUID, name string, count uint64, readOnly bool) (*avShared, error) {
	obj := avShareName(job, name)
	if readOnly {
		return attachAVShare(obj, true)
	}
	capacity := min(max(count, avShareDefault), avShareMax)
	for try := 0; ; try++ {
		mem, err := shm.CreateShared(obj, avShareHdr+int(capacity)*avShareEntry)
		if err == nil {
			s := &avShared{obj: obj, mem: mem, cap: capacity, creator: true}
			s.init()
			return s, nil
		}
		if !errors.Is(err, os.ErrExist) || try > 0 {
			return nil, err
		}
		s, err := attachAVShare(obj, false)
		if err == nil {
			id := sys.ProcIdentity{PID: int(s.word(24).Load()), Start: s.word(32).Load()}
			if !id.Gone() {
				return s, nil // another live process of the job made it
			}
			_ = shm.UnmapShared(s.mem)
		}
		// Left by a process that is gone (or unreadable): start afresh.
		_ = shm.UnlinkShared(obj)
	}
}

// attachAVShare maps an existing object and checks its header, waiting a
// little for a creator still writing it.
func attachAVShare(obj string, readOnly bool) (*avShared, error) {
	mem, err := shm.OpenShared(obj, avShareHdr)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fi.ENOENT
	}
	if err != nil {
		return nil, err
	}
	s := &avShared{obj: obj, mem: mem, readOnly: readOnly}
	for deadline := time.Now().Add(time.Second); s.word(0).Load() != avShareMagic|avShareVersion<<32; {
		if time.Now().After(deadline) {
			_ = shm.UnmapShared(mem)
			return nil, fi.EINVAL
		}
		time.Sleep(time.Millisecond)
	}
	s.cap = s.word(8).Load()
	if s.cap == 0 || s.cap > avShareMax || uint64(len(mem)) < avShareHdr+s.cap*avShareEntry {
		_ = shm.UnmapShared(mem)
		return nil, fi.EINVAL
	}
	return s, nil
}

func (s *avShared) word(off int) *atomic.Uint64 { return atomicx.WordAt(s.mem, off) }

// init formats a new object: every address unavailable, the creator's
// identity, the magic last.
func (s *avShared) init() {
	for i := range s.cap {
		s.word(avShareHdr + int(i)*8).Store(fi.AddrUnspec)
	}
	s.word(8).Store(s.cap)
	id := sys.SelfIdentity()
	s.word(24).Store(uint64(id.PID))
	s.word(32).Store(id.Start)
	s.word(0).Store(avShareMagic | avShareVersion<<32)
}

// count is how many entries are reserved (at most the capacity).
func (s *avShared) count() uint64 { return min(s.word(16).Load(), s.cap) }

// insert reserves the next entry, writes n there and publishes it; false
// when the object is full.
func (s *avShared) insert(n EPName) (uint64, bool) {
	c := s.word(16)
	for {
		i := c.Load()
		if i >= s.cap {
			return 0, false
		}
		if c.CompareAndSwap(i, i+1) {
			off := avShareHdr + int(s.cap)*8 + int(i)*EPNameLen
			n.put(s.mem[off : off+EPNameLen])
			atomicx.StoreRel64(atomicx.RawWordAt(s.mem, avShareHdr+int(i)*8), i)
			return i, true
		}
	}
}

// entry reads entry i: its name, and whether it is published.
func (s *avShared) entry(i uint64) (EPName, bool) {
	if i >= s.cap || s.word(avShareHdr+int(i)*8).Load() != i {
		return EPName{}, false
	}
	off := avShareHdr + int(s.cap)*8 + int(i)*EPNameLen
	n, err := UnmarshalEPName(s.mem[off : off+EPNameLen])
	return n, err == nil
}

// mapAddr is the address of the fi_addr_t table (fi_av_attr.map_addr).
func (s *avShared) mapAddr() uintptr {
	return uintptr(unsafe.Pointer(&s.mem[avShareHdr]))
}

// close unmaps the object; its creator removes it (mappings of other
// processes stay valid).
func (s *avShared) close() {
	if s.creator {
		_ = shm.UnlinkShared(s.obj)
	}
	_ = shm.UnmapShared(s.mem)
}
