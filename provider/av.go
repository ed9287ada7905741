package provider

import (
	"encoding/binary"
	"strings"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Flags of fi_av_insert that are not capability bits.
const (
	avEvent   = fi.COMPLETION // FI_EVENT
	avSyncErr = fi.SYNC_ERR
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
	async  bool      // opened with FI_EVENT: every insert reports on the EQ
	shared *avShared // a named AV's shared table (avshare.go), or nil
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
	if attr.Flags&fi.READ != 0 && attr.Name == "" {
		return nil, fi.EINVAL // fi_av(3): a read-only AV is a named one that exists
	}
	if attr.RxCtxBits < 0 || attr.RxCtxBits > 12 {
		return nil, fi.EINVAL
	}
	if attr.Flags&^(fi.READ|avSymmetric|avEvent) != 0 {
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
	av := &AV{dom: d, typ: typ, bits: attr.RxCtxBits, async: attr.Flags&avEvent != 0,
		names: make([]EPName, 0, n), valid: make([]bool, 0, n), byEPID: make(map[uint64]uint64, n)}
	if attr.Name != "" {
		s, err := openAVShare(d.uuid, attr.Name, attr.Count, attr.Flags&fi.READ != 0)
		if err != nil {
			return nil, errnoOf(err)
		}
		av.shared = s
		d.lock()
		av.syncLocked()
		d.unlock()
	}
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

// StrNames reports whether fi_av_insert's names are strings (char *, the
// fi_addr_psmx2:// form EPName.String writes): the domain was opened for
// FI_ADDR_STR (fi_av(3)). Otherwise they are 16-byte binary names.
func (av *AV) StrNames() bool { return av.dom.addrFormat == fi.ADDR_STR }

// Insert inserts the 16-byte names in names (len(names)/EPNameLen of
// them). out (may be nil) receives each name's address, FI_ADDR_NOTAVAIL
// for a name that is not a valid endpoint name; with FI_SYNC_ERR, syncErr
// receives each one's errno (0 or FI_EINVAL). It returns the number
// inserted; with FI_EVENT it returns 0 and reports the count (and the
// failures) on the bound EQ.
func (av *AV) Insert(names []byte, out []uint64, syncErr []int32, flags uint64, ctx uintptr) (int, error) {
	return av.insert(len(names)/EPNameLen, func(i int) (EPName, bool) {
		n, err := UnmarshalEPName(names[i*EPNameLen:])
		return n, err == nil
	}, out, syncErr, flags, ctx)
}

// InsertStr is Insert for an AV whose names are strings (StrNames).
func (av *AV) InsertStr(names []string, out []uint64, syncErr []int32, flags uint64, ctx uintptr) (int, error) {
	return av.insert(len(names), func(i int) (EPName, bool) {
		n, err := ParseEPNameString(names[i])
		return n, err == nil
	}, out, syncErr, flags, ctx)
}

// insert inserts count names, name(i) giving each (false: unreadable).
func (av *AV) insert(count int, name func(int) (EPName, bool), out []uint64, syncErr []int32, flags uint64, ctx uintptr) (int, error) {
	if count > MaxAVCount || (out != nil && len(out) < count) {
		return 0, fi.EINVAL
	}
	if flags&^(avEvent|avSyncErr|fi.MORE) != 0 {
		return 0, fi.EBADFLAGS
	}
	if av.async {
		// fi_av(3): an AV opened with FI_EVENT inserts asynchronously:
		// the count and each failure on the bound EQ, none returned.
		// (FI_EVENT on one insert call does the same: our extension.)
		flags |= avEvent
	}
	if flags&avEvent != 0 && av.eq == nil {
		return 0, fi.ENOEQ
	}
	if flags&avSyncErr != 0 && len(syncErr) < count {
		return 0, fi.EINVAL
	}
	if flags&avSyncErr == 0 {
		syncErr = nil
	}
	if av.shared != nil && av.shared.readOnly {
		return 0, fi.EINVAL // FI_READ
	}
	av.dom.lock()
	defer av.dom.unlock()
	ok := 0
	for i := 0; i < count; i++ {
		n, readable := name(i)
		addr := fi.AddrUnspec
		errno := fi.SUCCESS
		if readable && validPeerName(n) {
			addr = av.insertLocked(n)
			if addr != fi.AddrUnspec && len(av.eps) > 0 {
				noteLocalName(av.eps[0].epid, n)
			}
		}
		if addr != fi.AddrUnspec {
			ok++
			if av.eager() {
				for _, ep := range av.eps {
					// Errors show at the address's first use, as
					// with a lazy connection.
					_, _ = ep.conn(addr)
				}
			}
		} else {
			errno = fi.EINVAL
			if flags&avEvent != 0 {
				av.eq.postError(av.Fid, ctx, uint64(i), fi.EINVAL, 0)
			}
		}
		if out != nil {
			out[i] = addr
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

// eager reports whether inserting an address connects the bound endpoints
// to it at once: fi_psm2(7)'s conditions for FI_PSM2_LAZY_CONN=0 (the
// default) are PSM2_MULTI_EP=0 and an FI_AV_MAP AV; otherwise an endpoint
// connects on an address's first use.
func (av *AV) eager() bool {
	p := &av.dom.prov.params
	return av.typ == fi.AV_MAP && !p.LazyConn && !p.MultiEP
}

// validPeerName reports whether n can name a peer endpoint: a regular
// endpoint or a scalable one (SepID its context count, sep.go).
func validPeerName(n EPName) bool {
	switch n.Type {
	case EPNameRegular:
	case EPNameScalable:
		// A count no SEP of ours has is refused: it would only make
		// the AV index that many ids.
		if _, ok := transport.ContextEPID(n.EPID, int(n.SepID)-1); n.SepID == 0 || n.SepID > getinfo.MaxSEPContexts || !ok {
			return false
		}
	default:
		return false
	}
	return n.EPID&7 == 2 && n.EPID>>32 != 0 && n.EPID != ReservedEPID
}

// contexts is how many contexts name n has: a scalable endpoint's count,
// else 1.
func (n EPName) contexts() int {
	if n.Type == EPNameScalable {
		return int(n.SepID)
	}
	return 1
}

// contextEPID is the id of n's context i (i < n.contexts()).
func (n EPName) contextEPID(i int) uint64 {
	id, _ := transport.ContextEPID(n.EPID, i)
	return id
}

// indexLocked records that fi_addr a holds n, for FI_SOURCE: each of a
// scalable endpoint's contexts is reported as its base address, as psm2
// does. The first address to hold an id keeps it.
func (av *AV) indexLocked(n EPName, a uint64) {
	for i := range n.contexts() {
		id := n.contextEPID(i)
		if _, dup := av.byEPID[id]; !dup {
			av.byEPID[id] = a
		}
	}
}

// unindexLocked undoes indexLocked for fi_addr a, which held n.
func (av *AV) unindexLocked(n EPName, a uint64) {
	for i := range n.contexts() {
		id := n.contextEPID(i)
		if got, ok := av.byEPID[id]; ok && got == a {
			delete(av.byEPID, id)
		}
	}
}

// rxIndex is the receive context fi_addr a names (fi_rx_addr's bits).
func (av *AV) rxIndex(a uint64) int {
	if av.bits > 0 && a != fi.AddrUnspec {
		return int(a >> (64 - av.bits))
	}
	return 0
}

// insertLocked adds n and returns its address (FI_ADDR_NOTAVAIL: a named
// AV's object is full).
func (av *AV) insertLocked(n EPName) uint64 {
	if s := av.shared; s != nil {
		i, ok := s.insert(n)
		if !ok {
			return fi.AddrUnspec
		}
		av.syncLocked()
		return i
	}
	addr := uint64(len(av.names))
	av.names = append(av.names, n)
	av.valid = append(av.valid, true)
	av.indexLocked(n, addr)
	return addr
}

// InsertSvc is fi_av_insertsvc. Node may be an FI_ADDR_STR address (the
// fi_addr_psmx2:// form) with no service, which inserts that endpoint
// (fi_av(3)); a host name and service, which would need a name server
// lookup per call, are not supported (-FI_ENOSYS, as in psm2).
func (av *AV) InsertSvc(node, service string, out []uint64, flags uint64, ctx uintptr) (int, error) {
	if service != "" || !strings.HasPrefix(strings.ToLower(node), "fi_addr_psmx2://") {
		return 0, fi.ENOSYS
	}
	return av.InsertStr([]string{node}, out, nil, flags&^avSyncErr, ctx)
}

// InsertSym is fi_av_insertsym: not supported.
func (av *AV) InsertSym(node string, nodecnt int, service string, svccnt int, out []uint64, flags uint64, ctx uintptr) (int, error) {
	return 0, fi.ENOSYS
}

// Remove removes count addresses. An address that is not in the AV makes
// the call fail with EINVAL after the valid ones are removed.
func (av *AV) Remove(list []uint64, flags uint64) error {
	if len(list) > MaxAVCount {
		return fi.EINVAL
	}
	if flags != 0 {
		return fi.EBADFLAGS
	}
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
		av.unindexLocked(av.names[a], a)
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

// syncLocked brings a named AV's local table up to its shared one: the
// entries other processes published since, in order, up to the first one
// still being written.
func (av *AV) syncLocked() {
	s := av.shared
	if s == nil {
		return
	}
	for i, n := uint64(len(av.names)), s.count(); i < n; i++ {
		name, ok := s.entry(i)
		if !ok {
			return
		}
		av.names = append(av.names, name)
		av.valid = append(av.valid, validPeerName(name))
		if validPeerName(name) {
			av.indexLocked(name, i)
		}
	}
}

// MapAddr is a named AV's map_addr (fi_av(3)): the address of its shared
// table of fi_addr_t values, entry i holding i once inserted; 0 for an
// AV without a name.
func (av *AV) MapAddr() uintptr {
	if av.shared == nil {
		return 0
	}
	return av.shared.mapAddr()
}

// nameLocked returns the name at fi_addr a.
func (av *AV) nameLocked(a uint64) (EPName, bool) {
	a = av.baseAddr(a)
	if a >= uint64(len(av.names)) {
		av.syncLocked()
	}
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

// Lookup copies the name at addr into buf, in the format the AV's names
// are inserted in (StrNames: the NUL-terminated string), and returns the
// name's full size. A short buffer truncates the name and still succeeds
// (fi_av(3); psm2 does the same).
func (av *AV) Lookup(addr uint64, buf []byte) (int, error) {
	av.dom.lock()
	n, ok := av.nameLocked(addr)
	av.dom.unlock()
	if !ok {
		return 0, fi.EINVAL
	}
	if av.StrNames() {
		s := n.StringAddr()
		copy(buf, s)
		return len(s), nil
	}
	var raw [EPNameLen]byte
	n.put(raw[:])
	copy(buf, raw[:])
	return EPNameLen, nil
}

// Straddr writes the string form of name into buf (NUL-terminated,
// truncated if short) and returns the length the full string needs, with
// its NUL. The caller reads name in the AV's format (StrNames).
func Straddr(n EPName, buf []byte) int {
	s := n.String()
	if len(buf) > 0 {
		c := copy(buf[:len(buf)-1], s)
		buf[c] = 0
	}
	return len(s) + 1
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
	if av.shared != nil {
		av.shared.close()
	}
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
