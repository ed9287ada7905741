package provider

import (
	"encoding/binary"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// Flags of fi_av_insert that are not capability bits.
const (
	avEvent   = fi.COMPLETION   // FI_EVENT
	avSyncErr = uint64(1) << 58 // FI_SYNC_ERR
)

// MaxAVCount bounds the count of one fi_av_insert or fi_av_remove: far
// above any job, and low enough that count times a name's or an address's
// size cannot overflow. A larger count is -FI_EINVAL.
const MaxAVCount = 1 << 30

// AVAttr is struct fi_av_attr.
type AVAttr struct {
	Type      fi.AVType
	RxCtxBits int
	Count     uint64
	EPPerNode uint64
	Name      string
	MapAddr   uintptr
	Flags     uint64
}

// AV is an address vector. An fi_addr_t is the index of the name in the
// table, for FI_AV_TABLE and FI_AV_MAP alike (an FI_AV_MAP address is
// opaque to the application, so the index serves). Endpoints resolve names
// to wire connections lazily, on first use, and cache the result per
// address.
type AV struct {
	dom    *Domain
	typ    fi.AVType
	bits   int
	eq     *EQ
	closed bool

	// Fid is the C fid of the AV, reported in EQ events.
	Fid uintptr

	names  []EPName
	valid  []bool
	byEPID map[uint64]uint64 // epid -> fi_addr, for FI_SOURCE
	eps    []*Endpoint       // endpoints bound to the AV
}

// OpenAV opens an address vector.
func (d *Domain) OpenAV(attr *AVAttr) (*AV, error) {
	if attr == nil {
		return nil, fi.EINVAL
	}
	switch attr.Type {
	case fi.AV_UNSPEC:
	case fi.AV_MAP, fi.AV_TABLE:
	default:
		return nil, fi.EINVAL
	}
	if d.avType != fi.AV_UNSPEC && attr.Type != fi.AV_UNSPEC && attr.Type != d.avType {
		return nil, fi.EINVAL
	}
	if attr.Name != "" {
		// Named (shared) AVs are not supported; MPICH probes for them and
		// must see a failure.
		return nil, fi.ENOSYS
	}
	if attr.RxCtxBits < 0 || attr.RxCtxBits > 12 {
		return nil, fi.EINVAL
	}
	if attr.Flags&^(fi.READ|avSymmetric) != 0 {
		return nil, fi.EBADFLAGS
	}
	if attr.Flags&avSymmetric != 0 {
		return nil, fi.ENOSYS
	}
	typ := attr.Type
	if typ == fi.AV_UNSPEC {
		typ = fi.AV_TABLE
	}
	n := attr.Count
	if n > 1<<16 {
		n = 1 << 16
	}
	av := &AV{dom: d, typ: typ, bits: attr.RxCtxBits,
		names: make([]EPName, 0, n), valid: make([]bool, 0, n), byEPID: make(map[uint64]uint64, n)}
	d.refs.Add(1)
	return av, nil
}

// avSymmetric is FI_SYMMETRIC.
const avSymmetric = uint64(1) << 59

// Type is the AV's type (FI_AV_UNSPEC resolves to FI_AV_TABLE).
func (av *AV) Type() fi.AVType { return av.typ }

// Bind binds an event queue for FI_EVENT completions.
func (av *AV) Bind(eq *EQ, flags uint64) error {
	if eq == nil {
		return fi.EINVAL
	}
	if flags != 0 {
		return fi.EBADFLAGS
	}
	av.dom.lock()
	defer av.dom.unlock()
	if len(av.eps) > 0 || av.eq != nil {
		return fi.EINVAL
	}
	av.eq = eq
	return nil
}

// Insert inserts count 16-byte names from names. out (fi_addr_t *, may be
// nil) receives each name's address, FI_ADDR_NOTAVAIL for a name that is
// not a valid endpoint name. It returns the number inserted; with FI_EVENT
// it returns 0 and reports the count (and the failures) on the bound EQ.
func (av *AV) Insert(names unsafe.Pointer, count int, out unsafe.Pointer, flags uint64, ctx uintptr) (int, error) {
	if count < 0 || count > MaxAVCount || (count > 0 && names == nil) {
		return 0, fi.EINVAL
	}
	if flags&^(avEvent|avSyncErr|fi.MORE) != 0 {
		return 0, fi.EBADFLAGS
	}
	if flags&avEvent != 0 && av.eq == nil {
		return 0, fi.ENOEQ
	}
	var syncErr []int32
	if flags&avSyncErr != 0 {
		if ctx == 0 {
			return 0, fi.EINVAL
		}
		syncErr = unsafe.Slice((*int32)(cptr(ctx)), count)
	}
	var outs []uint64
	if out != nil {
		outs = unsafe.Slice((*uint64)(out), count)
	}
	raw := unsafe.Slice((*byte)(names), count*EPNameLen)
	av.dom.lock()
	defer av.dom.unlock()
	ok := 0
	for i := 0; i < count; i++ {
		name, _ := UnmarshalEPName(raw[i*EPNameLen:])
		addr := fi.AddrUnspec
		errno := fi.SUCCESS
		if validPeerName(name) {
			addr = av.insertLocked(name)
			ok++
		} else {
			errno = fi.EINVAL
			if flags&avEvent != 0 {
				av.eq.postError(av.Fid, ctx, uint64(i), fi.EINVAL, 0)
			}
		}
		if outs != nil {
			outs[i] = addr
		}
		if syncErr != nil {
			syncErr[i] = int32(errno)
		}
	}
	if flags&avEvent != 0 {
		av.eq.postEvent(fi.AV_COMPLETE, av.Fid, ctx, uint64(ok))
		return 0, nil
	}
	return ok, nil
}

// validPeerName reports whether n can name a peer endpoint.
func validPeerName(n EPName) bool {
	return n.Type == EPNameRegular && n.EPID&7 == 2 && n.EPID>>32 != 0 && n.EPID != ReservedEPID
}

func (av *AV) insertLocked(n EPName) uint64 {
	addr := uint64(len(av.names))
	av.names = append(av.names, n)
	av.valid = append(av.valid, true)
	if _, dup := av.byEPID[n.EPID]; !dup {
		av.byEPID[n.EPID] = addr
	}
	return addr
}

// InsertSvc and InsertSym are not supported by psm2 either.
func (av *AV) InsertSvc(node, service string, out unsafe.Pointer, flags uint64, ctx uintptr) (int, error) {
	return 0, fi.ENOSYS
}

// InsertSym is fi_av_insertsym: not supported.
func (av *AV) InsertSym(node string, nodecnt int, service string, svccnt int, out unsafe.Pointer, flags uint64, ctx uintptr) (int, error) {
	return 0, fi.ENOSYS
}

// Remove removes count addresses. An address that is not in the AV makes
// the call fail with EINVAL after the valid ones are removed.
func (av *AV) Remove(addrs unsafe.Pointer, count int, flags uint64) error {
	if count < 0 || count > MaxAVCount || (count > 0 && addrs == nil) {
		return fi.EINVAL
	}
	if flags != 0 {
		return fi.EBADFLAGS
	}
	list := unsafe.Slice((*uint64)(addrs), count)
	av.dom.lock()
	defer av.dom.unlock()
	var err error
	for _, a := range list {
		a = av.baseAddr(a)
		if a >= uint64(len(av.names)) || !av.valid[a] {
			err = fi.EINVAL
			continue
		}
		av.valid[a] = false
		n := av.names[a]
		if got, ok := av.byEPID[n.EPID]; ok && got == a {
			delete(av.byEPID, n.EPID)
		}
		for _, ep := range av.eps {
			ep.forgetAddr(a)
		}
	}
	return err
}

// baseAddr strips the receive-context bits of an fi_addr.
func (av *AV) baseAddr(a uint64) uint64 {
	if av.bits > 0 && a != fi.AddrUnspec {
		return a & (uint64(1)<<(64-av.bits) - 1)
	}
	return a
}

// nameLocked returns the name at fi_addr a.
func (av *AV) nameLocked(a uint64) (EPName, bool) {
	a = av.baseAddr(a)
	if a >= uint64(len(av.names)) || !av.valid[a] {
		return EPName{}, false
	}
	return av.names[a], true
}

// addrOfLocked returns the fi_addr of the endpoint with id epid.
func (av *AV) addrOfLocked(epid uint64) (uint64, bool) {
	a, ok := av.byEPID[epid]
	return a, ok
}

// Lookup copies the name at addr into buf (at most *addrlen bytes) and sets
// *addrlen to the full size. A short buffer truncates the name and still
// succeeds (fi_av(3); psm2 does the same).
func (av *AV) Lookup(addr uint64, buf unsafe.Pointer, addrlen *uint64) error {
	if addrlen == nil {
		return fi.EINVAL
	}
	av.dom.lock()
	n, ok := av.nameLocked(addr)
	av.dom.unlock()
	if !ok {
		return fi.EINVAL
	}
	var raw [EPNameLen]byte
	n.put(raw[:])
	want := *addrlen
	*addrlen = EPNameLen
	if buf != nil && want > 0 {
		copy(unsafe.Slice((*byte)(buf), want), raw[:])
	}
	return nil
}

// Straddr writes the string form of the 16-byte name at addr into buf (len
// bytes, NUL-terminated, truncated if short) and sets *len to the length
// the full string needs, with its NUL.
func (av *AV) Straddr(addr unsafe.Pointer, buf unsafe.Pointer, length *uint64) {
	if addr == nil || length == nil {
		return
	}
	n, _ := UnmarshalEPName(unsafe.Slice((*byte)(addr), EPNameLen))
	s := n.String()
	if buf != nil && *length > 0 {
		dst := unsafe.Slice((*byte)(buf), *length)
		c := copy(dst[:len(dst)-1], s)
		dst[c] = 0
	}
	*length = uint64(len(s) + 1)
}

// Close closes the AV; it fails with EBUSY while endpoints are bound.
func (av *AV) Close() error {
	av.dom.lock()
	defer av.dom.unlock()
	if av.closed {
		return fi.EINVAL
	}
	if len(av.eps) > 0 {
		return fi.EBUSY
	}
	av.closed = true
	av.dom.refs.Add(-1)
	return nil
}

// put writes the 16-byte form of n into b.
func (n EPName) put(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], n.EPID)
	b[8] = n.Type
	b[9] = n.SepID
	b[10] = n.Port
	b[11] = 0
	binary.LittleEndian.PutUint32(b[12:], n.Service)
}
