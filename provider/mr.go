package provider

import (
	"crypto/rand"
	"encoding/binary"
	"slices"
	"sync"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// MRIov is one registered segment (struct iovec): a C address and length.
type MRIov struct {
	Base uintptr
	Len  uint64
}

// mrAccess is every access bit a registration may ask for.
const mrAccess = fi.SEND | fi.RECV | fi.READ | fi.WRITE | fi.REMOTE_READ | fi.REMOTE_WRITE

// MR is a memory region (fi_mr_reg). It is bookkeeping: a key, the access
// it grants and the segments it covers; RMA looks it up by key and
// validates the target range with mrTable.validate.
//
// Keys: with FI_MR_BASIC or FI_MR_PROV_KEY in the domain's mr_mode the
// provider assigns them and RMA addresses are virtual addresses, as in
// psm2; but where psm2 counts from 1, a key here is random (never 0), so
// that a peer cannot find a region by trying keys: 60 random bits, and the
// low 4 pick a free slot of the C side's MR table (fastrma.go), as keys
// counted from 1 did, so that random keys do not collide there and send
// those regions' requests to Go. Otherwise
// ("scalable") the requested key is used (ENOKEY if it is taken in the
// domain): the application's choice, which only the job key protects
// (docs/hfi.md, "Threat model"); an RMA address is then an offset:
// address 0 is the lowest registered byte, or what the registration's
// offset argument says.
type MR struct {
	dom     *Domain
	key     uint64
	access  uint64
	offset  uint64  // added to an RMA address to get a virtual address
	iov     []MRIov // sorted, merged, without empty segments
	context uintptr

	mu     sync.Mutex
	cntr   *Cntr // bound with FI_REMOTE_WRITE: counts remote writes
	closed bool

	published bool // in the domain's C table (fastrma.go); under the domain lock
}

// RegMR registers iov (fi_mr_reg, fi_mr_regv, fi_mr_regattr). access must
// be within FI_SEND|FI_RECV|FI_READ|FI_WRITE|FI_REMOTE_READ|FI_REMOTE_WRITE
// (EINVAL otherwise), flags must be 0 (EBADFLAGS) and iov must not be
// empty (EINVAL). ctx is the fid's context, carried only.
func (d *Domain) RegMR(iov []MRIov, access, offset, requestedKey, flags uint64, ctx uintptr) (*MR, error) {
	if d == nil || len(iov) == 0 {
		return nil, fi.EINVAL
	}
	if access&^mrAccess != 0 {
		return nil, fi.EINVAL
	}
	if flags != 0 {
		return nil, fi.EBADFLAGS
	}
	segs, first := normalizeIov(iov)
	mr := &MR{dom: d, access: access, iov: segs, context: ctx}
	provKey := d.MRMode()&(fi.MR_BASIC|fi.MR_PROV_KEY) != 0
	if !provKey {
		mr.offset = uint64(first) - offset
	}
	key, err := d.mrs.reserve(mr, requestedKey, provKey, d.freeMRSlot())
	if err != nil {
		return nil, err
	}
	mr.key = key
	d.refs.Add(1)
	d.lock()
	d.publishMR(mr)
	d.unlock()
	return mr, nil
}

// normalizeIov sorts the segments by address, merges the ones that
// overlap or touch and drops the empty ones, as psm2 does. first is the
// lowest base address, also when every segment is empty.
func normalizeIov(iov []MRIov) (segs []MRIov, first uintptr) {
	s := slices.Clone(iov)
	slices.SortStableFunc(s, func(a, b MRIov) int {
		switch {
		case a.Base < b.Base:
			return -1
		case a.Base > b.Base:
			return 1
		}
		return 0
	})
	first = s[0].Base
	out := s[:0]
	for _, v := range s {
		if v.Len == 0 {
			continue
		}
		if n := len(out); n > 0 {
			last := &out[n-1]
			end := uint64(last.Base) + last.Len
			if uint64(v.Base) <= end {
				if e := uint64(v.Base) + v.Len; e > end {
					last.Len = e - uint64(last.Base)
				}
				continue
			}
		}
		out = append(out, v)
	}
	return out, first
}

// Key is the MR's remote key (fi_mr_key).
func (mr *MR) Key() uint64 { return mr.key }

// Desc is the MR's local descriptor value: its key, which the domain can
// look the MR up by. (The C shim hands out its own struct as fi_mr_desc,
// as psm2 does.)
func (mr *MR) Desc() uint64 { return mr.key }

// Access is the access the registration grants.
func (mr *MR) Access() uint64 { return mr.access }

// Context is the fid context given at registration.
func (mr *MR) Context() uintptr { return mr.context }

// Iov returns the registered segments, sorted and merged.
func (mr *MR) Iov() []MRIov { return slices.Clone(mr.iov) }

// Cntr is the counter bound with FI_REMOTE_WRITE (nil if none): remote
// writes into the MR count on it.
func (mr *MR) Cntr() *Cntr {
	mr.mu.Lock()
	defer mr.mu.Unlock()
	return mr.cntr
}

// Bind is fi_mr_bind. An endpoint may be bound (nothing to do); a counter
// bound with FI_REMOTE_WRITE counts remote writes into the region (flags 0
// binds nothing; other flags: EINVAL; a second, different counter: EBUSY).
// Other objects: ENOSYS.
func (mr *MR) Bind(obj any, flags uint64) error {
	if _, ok := obj.(*Cntr); ok && flags == fi.REMOTE_WRITE {
		// Writes must count now: C leaves this MR's requests to Go.
		mr.dom.lock()
		mr.dom.unpublishMR(mr)
		mr.dom.unlock()
	}
	mr.mu.Lock()
	defer mr.mu.Unlock()
	if mr.closed {
		return fi.EINVAL
	}
	switch o := obj.(type) {
	case *Endpoint:
		if o == nil {
			return fi.EINVAL
		}
		return nil
	case *Cntr:
		if o == nil {
			return fi.EINVAL
		}
		if mr.cntr != nil && mr.cntr != o {
			return fi.EBUSY
		}
		if flags != 0 {
			if flags != fi.REMOTE_WRITE {
				return fi.EINVAL
			}
			mr.cntr = o
		}
		return nil
	case nil:
		return fi.EINVAL
	}
	return fi.ENOSYS
}

// Close deregisters the region and frees its key.
func (mr *MR) Close() error {
	mr.mu.Lock()
	if mr.closed {
		mr.mu.Unlock()
		return fi.EINVAL
	}
	mr.closed = true
	mr.cntr = nil
	mr.mu.Unlock()
	mr.dom.lock()
	mr.dom.unpublishMR(mr)
	mr.dom.unlock()
	mr.dom.mrs.release(mr.key, mr)
	mr.dom.refs.Add(-1)
	return nil
}

// mrTable is a domain's registry of MRs by key.
type mrTable struct {
	mu    sync.RWMutex
	byKey map[uint64]*MR
}

func (t *mrTable) init() {
	t.mu.Lock()
	if t.byKey == nil {
		t.byKey = make(map[uint64]*MR)
	}
	t.mu.Unlock()
}

// reserve enters mr under a key: the requested one (ENOKEY if taken), or
// with provKey a random one that is free and not 0, whose slot (key mod
// domMRCap) is slot if that is not negative.
func (t *mrTable) reserve(mr *MR, requested uint64, provKey bool, slot int) (uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byKey == nil {
		t.byKey = make(map[uint64]*MR)
	}
	if !provKey {
		if _, used := t.byKey[requested]; used {
			return 0, fi.ENOKEY
		}
		t.byKey[requested] = mr
		return requested, nil
	}
	for {
		var r [8]byte
		if _, err := rand.Read(r[:]); err != nil {
			return 0, fi.ENOMEM
		}
		key := binary.LittleEndian.Uint64(r[:])
		if slot >= 0 {
			key = key - key%domMRCap + uint64(slot)
		}
		if _, used := t.byKey[key]; key != 0 && !used {
			t.byKey[key] = mr
			return key, nil
		}
	}
}

// release frees key if mr holds it.
func (t *mrTable) release(key uint64, mr *MR) {
	t.mu.Lock()
	if t.byKey[key] == mr {
		delete(t.byKey, key)
	}
	t.mu.Unlock()
}

// lookup returns the MR registered under key, or nil.
func (t *mrTable) lookup(key uint64) *MR {
	t.mu.RLock()
	mr := t.byKey[key]
	t.mu.RUnlock()
	return mr
}

// count is the number of registered MRs.
func (t *mrTable) count() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byKey)
}

// validate checks an RMA access of length bytes at addr (an RMA address:
// an offset for scalable MRs) through key, as psm2 does: EINVAL if no MR
// has the key or the address translates to 0; EACCES if the MR does not
// grant access or no segment holds the whole range.
func (t *mrTable) validate(key, addr, length, access uint64) error {
	if _, _, errno := t.resolve(key, addr, length, access); errno != 0 {
		return errno
	}
	return nil
}

// resolve is validate that also returns the virtual address and the MR.
func (t *mrTable) resolve(key, addr, length, access uint64) (uintptr, *MR, fi.Errno) {
	mr := t.lookup(key)
	if mr == nil {
		return 0, nil, fi.EINVAL
	}
	addr += mr.offset
	if addr == 0 {
		return 0, nil, fi.EINVAL
	}
	if access&mr.access != access {
		return 0, nil, fi.EACCES
	}
	end := addr + length
	if end < addr {
		return 0, nil, fi.EACCES
	}
	for _, s := range mr.iov {
		base := uint64(s.Base)
		if base <= addr && end <= base+s.Len {
			return uintptr(addr), mr, 0
		}
	}
	return 0, nil, fi.EACCES
}

// mrLookup returns the domain's MR with key, or nil.
func (d *Domain) mrLookup(key uint64) *MR { return d.mrs.lookup(key) }
