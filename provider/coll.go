package provider

// Over 600 lines: fi_collective(3) whole: AV sets, joins, and each collective
// as a small state machine over the tagged path; they share one op table.

import (
	"encoding/binary"
	"hash/fnv"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/atomicop"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Collectives (fi_collective(3)): AV sets, fi_join_collective and the
// collective operations, over the endpoint's wire as RMA-protocol messages
// of kind rmaColl, so they work alike over shm, hfi and to self.
//
// A group is the ordered member list of an AV set. Every operation has a
// hub: its root for the rooted ones (broadcast, scatter, gather, reduce),
// else the first member. Each other member sends the hub its part (a
// contribution), the hub combines them with its own and sends each member
// its part of the result, and each member completes when that comes (the
// hub when it has sent them). Two round trips' latency at most, n-1
// messages each way: a simple scheme for the small groups and counts a
// provider-level collective is used for (fabtests' fi_multinode_coll; MPI
// libraries bring their own algorithms over the tagged path).
//
// A message's Tag is the group id, a hash of the member ids and of how many
// times this endpoint joined that member list before (every member joins
// the same lists in the same order, so all agree); Data is the operation's
// sequence number in the group (32 bits), whether it is a result (bit 32)
// and a failed one (bit 33), the operation (bits 34-37: members that
// posted different ones fail it) and the sender's index in the group
// (bits 40-63). A contribution or result whose length is not the one the
// operation's count makes fails the operation (FI_EIO) where it arrives,
// and a failure at the hub is sent to every member, so none waits for a
// result that will not come. Messages that arrive
// before the member joined or posted the operation wait in the
// endpoint's collIn until it does. A contribution or result is at most
// collMaxBytes: larger operations are refused with FI_EINVAL.
const (
	rmaColl = 20

	collMaxBytes  = 16 << 10
	collResult    = 1 << 32 // a result (else a contribution)
	collError     = 1 << 33 // a result: the hub failed the operation
	collKindShift = 34      // bits 34-37: the operation (a mismatch fails it)
	collIdxShift  = 40

	collInMaxBytes = 64 << 20 // arrived messages kept waiting, at most

	collAddrBase = 1 << 62 // fi_mc_addr values: collAddrBase + group slot
)

// Collective operations (enum fi_collective_op).
const (
	CollBarrier = iota
	CollBroadcast
	CollAlltoall
	CollAllreduce
	CollAllgather
	CollReduceScatter
	CollReduce
	CollScatter
	CollGather
)

// AVSet is an fi_av_set: an ordered list of an AV's addresses.
type AVSet struct {
	av    *AV
	addrs []uint64
}

// NewSet makes the set of attr: the AV's addresses from start to end
// (inclusive) every stride, at most count of them if count is not 0.
func (av *AV) NewSet(count, start, end, stride uint64) (*AVSet, error) {
	s := &AVSet{av: av}
	if start == fi.AddrUnspec {
		return s, nil
	}
	if stride == 0 || end < start {
		return nil, fi.EINVAL
	}
	av.dom.lock()
	defer av.dom.unlock()
	for a := start; a <= end && (count == 0 || uint64(len(s.addrs)) < count); a += stride {
		if _, ok := av.nameLocked(a); !ok {
			return nil, fi.EINVAL
		}
		s.addrs = append(s.addrs, a)
		if a+stride < a {
			break
		}
	}
	return s, nil
}

func (s *AVSet) has(a uint64) bool {
	for _, x := range s.addrs {
		if x == a {
			return true
		}
	}
	return false
}

// Union adds o's members that s lacks, in o's order.
func (s *AVSet) Union(o *AVSet) error {
	if o == nil || o.av != s.av {
		return fi.EINVAL
	}
	for _, a := range o.addrs {
		if !s.has(a) {
			s.addrs = append(s.addrs, a)
		}
	}
	return nil
}

// Intersect keeps the members that o has too.
func (s *AVSet) Intersect(o *AVSet) error { return s.filter(o, true) }

// Diff removes the members that o has.
func (s *AVSet) Diff(o *AVSet) error { return s.filter(o, false) }

// filter keeps the members for which o.has is in.
func (s *AVSet) filter(o *AVSet, in bool) error {
	if o == nil || o.av != s.av {
		return fi.EINVAL
	}
	k := s.addrs[:0]
	for _, a := range s.addrs {
		if o.has(a) == in {
			k = append(k, a)
		}
	}
	s.addrs = k
	return nil
}

// Insert adds address a at the end (FI_EINVAL if already there or not in
// the AV).
func (s *AVSet) Insert(a uint64) error {
	s.av.dom.lock()
	_, ok := s.av.nameLocked(a)
	s.av.dom.unlock()
	if !ok || s.has(a) {
		return fi.EINVAL
	}
	s.addrs = append(s.addrs, a)
	return nil
}

// Remove takes address a out (FI_EINVAL if not there).
func (s *AVSet) Remove(a uint64) error {
	for i, x := range s.addrs {
		if x == a {
			s.addrs = append(s.addrs[:i], s.addrs[i+1:]...)
			return nil
		}
	}
	return fi.EINVAL
}

// Addr is fi_av_set_addr: an address naming the set for fi_join (the
// join reads the set itself).
func (s *AVSet) Addr() uint64 { return collAddrBase - 1 }

// Members returns the set's addresses in order.
func (s *AVSet) Members() []uint64 { return append([]uint64(nil), s.addrs...) }

// collState is an endpoint's collectives: the joined groups (fi_mc_addr
// slots), joins per member list, and arrived messages waiting for their
// operation.
type collState struct {
	groups  []*group
	joins   map[uint64]uint64
	in      map[collKey]collMsg
	inBytes int
	left    map[uint64]bool // groups left: their late messages are dropped
}

// group is a joined collective group of an endpoint (an fid_mc).
type group struct {
	id    uint64
	slot  int
	addrs []uint64         // members' AV addresses
	epids []uint64         // members' endpoint ids
	conns []transport.Conn // to each member (0 for this endpoint)
	me    int              // this endpoint's index
	seq   uint32           // operations posted so far
	ops   []*collOp        // posted, not yet complete, in order
	watch bool             // the wire watches the other members (ops posted)
}

// collOp is a posted collective operation.
type collOp struct {
	kind, dt, op int
	seq          uint32
	count        uint64
	buf, result  uintptr
	hub          int
	ctx          uintptr
	got          [][]byte // hub: each member's contribution (nil: not yet)
	all          []byte   // hub: the combined result (reductions, gathers, broadcast)
	n            int      // hub: contributions received
	sent         bool     // a member: its contribution went out
}

// part is the bytes of one member's share of o: count elements of its
// datatype (none for a barrier).
func (o *collOp) part() uint64 {
	if o.kind == CollBarrier {
		return 0
	}
	return o.count * uint64(atomicop.Size[o.dt])
}

// collKey names a waiting message: group, and Data's sequence, result bit
// and sender (its place in the group); collMsg is the message: the rest
// of Data (the operation, the error bit) and the payload.
type collKey struct {
	id   uint64
	data uint64
}

type collMsg struct {
	data uint64
	b    []byte
}

// collPlace is the part of Data that names a message's place.
const collPlace = ^(uint64(0xf)<<collKindShift | collError)

// Join is fi_join_collective: the group of set's members, which must
// include this endpoint. It completes at once: messages of members that
// are ahead wait until this one posts the same operation. Returns the
// group's fi_mc_addr and posts FI_JOIN_COMPLETE (fid, ctx) on the bound EQ.
func (ep *Endpoint) Join(set *AVSet, fid, ctx uintptr, setAddr func(uint64)) (uint64, error) {
	if set == nil || set.av != ep.av {
		return 0, fi.EINVAL
	}
	d := ep.dom
	d.lock()
	defer d.unlock()
	if !ep.enabled {
		return 0, fi.EOPBADSTATE
	}
	if ep.eq == nil {
		return 0, fi.ENOEQ
	}
	g := &group{me: -1, addrs: append([]uint64(nil), set.addrs...)}
	h := fnv.New64a()
	var w [8]byte
	for i, a := range g.addrs {
		name, ok := ep.av.nameLocked(a)
		if !ok {
			return 0, fi.EINVAL
		}
		for _, x := range g.epids {
			if x == name.EPID {
				return 0, fi.EINVAL // one endpoint twice: it would wait for itself
			}
		}
		g.epids = append(g.epids, name.EPID)
		if name.EPID == ep.epid && g.me < 0 {
			g.me = i
		}
		binary.LittleEndian.PutUint64(w[:], name.EPID)
		h.Write(w[:])
	}
	if g.me < 0 || len(g.addrs) > CollMaxMembers {
		return 0, fi.EINVAL
	}
	for i, a := range g.addrs {
		var c transport.Conn
		if i != g.me {
			var errno fi.Errno
			if c, errno = ep.conn(a); errno != 0 {
				return 0, errno
			}
		}
		g.conns = append(g.conns, c)
	}
	base := h.Sum64()
	if ep.coll.joins == nil {
		ep.coll.joins = map[uint64]uint64{}
	}
	binary.LittleEndian.PutUint64(w[:], ep.coll.joins[base])
	ep.coll.joins[base]++
	h.Write(w[:])
	g.id = h.Sum64()
	g.slot = -1
	for i, x := range ep.coll.groups {
		if x == nil {
			g.slot = i
			break
		}
	}
	if g.slot < 0 {
		g.slot = len(ep.coll.groups)
		ep.coll.groups = append(ep.coll.groups, nil)
	}
	ep.coll.groups[g.slot] = g
	addr := collAddrBase + uint64(g.slot)
	if setAddr != nil {
		setAddr(addr) // the fid_mc's address, before anyone reads the event
	}
	ep.eq.postEvent(fi.JOIN_COMPLETE, fid, ctx, 0)
	return addr, nil
}

// Leave is fi_close on the group's fid_mc. Operations still posted fail.
func (ep *Endpoint) Leave(addr uint64) error {
	d := ep.dom
	d.lock()
	defer d.unlock()
	g := ep.group(addr)
	if g == nil {
		return fi.EINVAL
	}
	for _, o := range g.ops {
		ep.collDone(o, fi.ECANCELED)
	}
	ep.collWatch(g, false)
	ep.coll.groups[g.slot] = nil
	// Its waiting messages go, and any that come later are dropped (a
	// group id is never joined twice).
	for k, m := range ep.coll.in {
		if k.id == g.id {
			ep.coll.inBytes -= len(m.b)
			delete(ep.coll.in, k)
		}
	}
	if ep.coll.left == nil {
		ep.coll.left = map[uint64]bool{}
	}
	ep.coll.left[g.id] = true
	return nil
}

func (ep *Endpoint) group(addr uint64) *group {
	if addr < collAddrBase || addr-collAddrBase >= uint64(len(ep.coll.groups)) {
		return nil
	}
	return ep.coll.groups[addr-collAddrBase]
}

// CollValid is fi_query_collective: whether operation kind runs with op
// on datatype dt.
func CollValid(kind, dt, op int) error {
	switch kind {
	case CollBarrier:
		return nil
	case CollBroadcast, CollAllgather, CollScatter, CollGather:
		if dt < 0 || dt >= atomicop.NumTypes || dt == atomicop.LongDouble || dt == atomicop.LongDoubleComplex {
			return fi.EOPNOTSUPP
		}
		return nil
	case CollAllreduce, CollReduce:
		if dt == atomicop.LongDouble || dt == atomicop.LongDoubleComplex || op > atomicop.Bxor || !atomicop.Valid(dt, op) {
			return fi.EOPNOTSUPP
		}
		return nil
	}
	return fi.ENOSYS // alltoall, reduce_scatter
}

// CollMaxMembers is the most members a group may have.
const CollMaxMembers = 1 << 20

// CollQuery answers fi_query_collective: the most elements of dt one
// operation takes, and the element size.
func CollQuery(kind, dt, op int) (count, size int, err error) {
	if err := CollValid(kind, dt, op); err != nil {
		return 0, 0, err
	}
	if kind == CollBarrier || dt < 0 || dt >= atomicop.NumTypes {
		return 0, 0, nil
	}
	return collMaxBytes / atomicop.Size[dt], atomicop.Size[dt], nil
}

// Collective posts operation kind on group addr: count elements of dt at
// buf (the input, or for broadcast the buffer itself), the output at
// result, root the rooted operations' root (an AV address), op the
// reduction.
func (ep *Endpoint) Collective(kind int, buf, result unsafe.Pointer, count uint64, addr, root uint64, dt, op int, ctx unsafe.Pointer) error {
	if err := CollValid(kind, dt, op); err != nil {
		return err
	}
	d := ep.dom
	d.lock()
	defer d.unlock()
	g := ep.group(addr)
	if g == nil || !ep.enabled {
		return fi.EINVAL
	}
	n := uint64(len(g.addrs))
	o := &collOp{kind: kind, dt: dt, op: op, count: count, buf: uintptr(buf), result: uintptr(result), ctx: uintptr(ctx)}
	// The largest message the operation sends, and the buffers it needs.
	part := o.part()
	msg := part
	switch kind {
	case CollAllgather, CollGather:
		msg = part * n
	case CollScatter:
		msg = part * n
	}
	if count > collMaxBytes || msg > collMaxBytes ||
		(part > 0 && buf == nil && kind != CollScatter) || (part > 0 && result == nil && kind != CollBroadcast && kind != CollReduce && kind != CollGather) {
		return fi.EINVAL
	}
	switch kind {
	case CollBroadcast, CollScatter, CollGather, CollReduce:
		o.hub = -1
		for i, a := range g.addrs {
			if a == root {
				o.hub = i
			}
		}
		if o.hub < 0 {
			return fi.EINVAL
		}
		if o.hub == g.me && part > 0 && ((kind == CollScatter && buf == nil) || ((kind == CollGather || kind == CollReduce) && result == nil)) {
			return fi.EINVAL
		}
	}
	o.seq = g.seq
	g.seq++
	g.ops = append(g.ops, o)
	ep.collWatch(g, true)
	if o.hub == g.me {
		o.got = make([][]byte, n)
		o.got[g.me] = ep.collMine(g, o)
		o.n = 1
	}
	ep.collAdvance(g)
	return nil
}

// collMine is this member's contribution to o (a copy).
func (ep *Endpoint) collMine(g *group, o *collOp) []byte {
	part := o.part()
	switch o.kind {
	case CollBarrier:
		return []byte{}
	case CollBroadcast:
		if g.me != o.hub {
			return []byte{}
		}
	case CollScatter:
		if g.me != o.hub {
			return []byte{}
		}
		part *= uint64(len(g.addrs))
	}
	if part == 0 {
		return []byte{}
	}
	out := make([]byte, part)
	copy(out, cbytes(o.buf, part))
	return out
}

// collAdvance moves the group's operations on, in order: members send
// their contributions, and take their results; the hub combines once it
// has every contribution.
func (ep *Endpoint) collAdvance(g *group) {
	for len(g.ops) > 0 {
		o := g.ops[0]
		if o.hub == g.me {
			failed := false
			for i := range g.addrs {
				if o.got[i] != nil {
					continue
				}
				if b, errno, ok := ep.collTakeIn(g, o, uint64(i)<<collIdxShift); ok {
					o.got[i] = b
					o.n++
					failed = failed || errno != 0
				}
			}
			switch {
			case failed:
				// A member posted another operation here: fail it
				// everywhere.
				ep.collFail(g, o)
				ep.collDone(o, fi.EIO)
			case o.n < len(g.addrs):
				return
			default:
				ep.collDone(o, ep.collCombine(g, o))
			}
		} else {
			if !o.sent {
				o.sent = true
				mine := ep.collMine(g, o)
				ep.collSend(g, o.hub, o, uint64(g.me)<<collIdxShift, mine)
			}
			b, errno, ok := ep.collTakeIn(g, o, collResult|uint64(o.hub)<<collIdxShift)
			if !ok {
				return
			}
			if errno == 0 {
				errno = ep.collTake(g, o, b)
			}
			ep.collDone(o, errno)
		}
		g.ops = g.ops[1:]
		if len(g.ops) == 0 {
			g.ops = nil
		}
	}
	ep.collWatch(g, false)
}

// collWatch starts (on) or stops the wire watching g's other members: a
// member that dies while operations are posted fails them (collSweep)
// instead of leaving them waiting. Counted in rmaWatched, which makes the
// polls sweep.
func (ep *Endpoint) collWatch(g *group, on bool) {
	w, ok := ep.tp.(transport.Watcher)
	if !ok || g.watch == on {
		return
	}
	d := 1
	if !on {
		d = -1
	}
	for i, c := range g.conns {
		if i != g.me {
			w.Watch(c, d)
			ep.engine.rma.watched += d
		}
	}
	g.watch = on
}

// collSweep fails the posted operations of every group a member of which
// the wire reports dead (from rmaSweep).
func (ep *Endpoint) collSweep(w transport.Watcher) {
	for _, g := range ep.coll.groups {
		if g == nil || !g.watch {
			continue
		}
		for i, c := range g.conns {
			if i == g.me {
				continue
			}
			if err := w.PeerErr(c); err != nil {
				for _, o := range g.ops {
					ep.collDone(o, errnoOf(err))
				}
				g.ops = nil
				ep.collWatch(g, false)
				break
			}
		}
	}
}

// collCombine is the hub's part: the result from every contribution,
// written where the hub wants it and sent to each member.
func (ep *Endpoint) collCombine(g *group, o *collOp) fi.Errno {
	if errno := ep.collCompute(g, o); errno != 0 {
		ep.collFail(g, o)
		return errno
	}
	return ep.collAnswer(g, o)
}

// collFail sends every other member a failed result for o.
func (ep *Endpoint) collFail(g *group, o *collOp) {
	for i := range g.addrs {
		if i != g.me {
			ep.collSend(g, i, o, collResult|collError|uint64(g.me)<<collIdxShift, nil)
		}
	}
}

// collCompute checks the contributions' lengths and combines them into
// o.all (reductions, gathers), or picks the root's data.
func (ep *Endpoint) collCompute(g *group, o *collOp) fi.Errno {
	n := len(g.addrs)
	part := o.part()
	var all []byte // the same result for every member, if any
	switch o.kind {
	case CollAllreduce, CollReduce:
		all = append([]byte(nil), o.got[0]...)
		if uint64(len(all)) != part {
			return fi.EIO
		}
		for i := 1; i < n; i++ {
			if uint64(len(o.got[i])) != part {
				return fi.EIO
			}
			if errno := atomicApply(o.op, o.dt, all, o.got[i], nil, nil); errno != 0 {
				return errno
			}
		}
	case CollAllgather, CollGather:
		for i := 0; i < n; i++ {
			if uint64(len(o.got[i])) != part {
				return fi.EIO
			}
			all = append(all, o.got[i]...)
		}
	case CollBroadcast:
		all = o.got[g.me]
	}
	o.all = all
	for i := 0; i < n; i++ {
		if i != g.me && (o.kind == CollBarrier || o.kind == CollBroadcast || o.kind == CollScatter) && len(o.got[i]) != 0 {
			return fi.EIO // a member sent data where none belongs
		}
	}
	return 0
}

// collAnswer sends each member its result and writes the hub's own.
func (ep *Endpoint) collAnswer(g *group, o *collOp) fi.Errno {
	n := len(g.addrs)
	part := o.part()
	all := o.all
	if o.kind == CollScatter && uint64(len(o.got[g.me])) != part*uint64(n) {
		return fi.EIO
	}
	for i := 0; i < n; i++ {
		if i == g.me {
			continue
		}
		var b []byte
		switch o.kind {
		case CollAllreduce, CollAllgather, CollBroadcast:
			b = all
		case CollScatter:
			b = o.got[g.me][uint64(i)*part : uint64(i+1)*part]
		}
		ep.collSend(g, i, o, collResult|uint64(g.me)<<collIdxShift, b)
	}
	switch o.kind {
	case CollAllreduce, CollAllgather, CollReduce, CollGather:
		return copyIn(cbytes(o.result, uint64(len(all))), all)
	case CollScatter:
		return copyIn(cbytes(o.result, part), o.got[g.me][uint64(g.me)*part:uint64(g.me+1)*part])
	}
	return 0
}

// collTake is a member's part: its result, from the hub, of exactly the
// length the operation makes.
func (ep *Endpoint) collTake(g *group, o *collOp, b []byte) fi.Errno {
	want := o.part()
	switch o.kind {
	case CollBarrier, CollReduce, CollGather:
		want = 0
	case CollAllgather:
		want *= uint64(len(g.addrs))
	}
	if uint64(len(b)) != want {
		return fi.EIO
	}
	if want == 0 {
		return 0
	}
	if o.kind == CollBroadcast {
		return copyIn(cbytes(o.buf, want), b)
	}
	return copyIn(cbytes(o.result, want), b)
}

// collTakeIn takes the waiting message at o's place with the rest of
// Data's place in bits (sender, result bit), if it came; FI_EIO if it
// failed at the hub or belongs to another operation (members disagree).
func (ep *Endpoint) collTakeIn(g *group, o *collOp, bits uint64) ([]byte, fi.Errno, bool) {
	k := collKey{g.id, uint64(o.seq) | bits}
	m, ok := ep.coll.in[k]
	if !ok {
		return nil, 0, false
	}
	delete(ep.coll.in, k)
	ep.coll.inBytes -= len(m.b)
	if m.data&collError != 0 || int(m.data>>collKindShift&0xf) != o.kind {
		return m.b, fi.EIO, true
	}
	return m.b, 0, true
}

// collSend sends data to member i of g (copied by the wire or the
// outbox: nothing waits for it).
func (ep *Endpoint) collSend(g *group, i int, o *collOp, bits uint64, b []byte) {
	data := uint64(o.seq) | uint64(o.kind)<<collKindShift | bits
	h := transport.Header{Flags: hfRMA | rmaColl<<rmaKindShift, Tag: g.id, Data: data, Len: uint64(len(b))}
	ep.rmaPost(g.conns[i], h, [][]byte{b}, rmaReplyCookie, transport.SendCopy)
}

// collDone completes o: an entry on the transmit CQ (FI_COLLECTIVE).
func (ep *Endpoint) collDone(o *collOp, errno fi.Errno) {
	if ep.txCQ != nil {
		if errno != 0 {
			ep.txCQ.completeErr(o.ctx, fi.COLLECTIVE, 0, 0, 0, 0, errno, 0, nil)
		} else {
			ep.txCQ.complete(o.ctx, fi.COLLECTIVE, 0, 0, 0, 0, 0, nil)
		}
	}
	ep.events++
}

// collDeliver takes an arrived collective message (from rmaDeliver): it
// waits in collIn until its operation takes it. One the wire sent by
// rendezvous is fetched into a staging buffer first (rmaFetchDone calls
// collStore).
func (ep *Endpoint) collDeliver(h *transport.Header, m *transport.Incoming) {
	if h.Len > collMaxBytes || ep.coll.left[h.Tag] {
		ep.rmaDrop(m)
		return
	}
	if m.IsRndv {
		t := ep.engine.New(opRMATarget)
		t.Proto.hdr, t.Proto.src = *h, m.SrcEPID
		ep.rmaStage(t, h.Len)
		ep.rmaWire(t, 1)
		if done, n, err := ep.tp.Fetch(&m.Rndv, t.Proto.stage, t.ID); done || err != nil {
			ep.rmaFetchDone(t, n, err)
		}
		return
	}
	if h.Len != uint64(len(m.Payload)) {
		return // malformed
	}
	ep.collStore(h, m.Payload)
}

// collStore keeps an arrived message (a copy) for its operation.
func (ep *Endpoint) collStore(h *transport.Header, payload []byte) {
	if ep.coll.in == nil {
		ep.coll.in = map[collKey]collMsg{}
	}
	k := collKey{h.Tag, h.Data & collPlace}
	if _, dup := ep.coll.in[k]; dup || ep.coll.left[h.Tag] || len(ep.coll.in) >= 1<<16 ||
		ep.coll.inBytes+len(payload) > collInMaxBytes {
		// A second copy, one for a group left, or far more than any
		// group posts: the reliable wires send none of these, so only
		// a misbehaving peer does.
		ep.dom.log.Warnf(fi.LOG_EP_DATA, "collective message dropped (group %#x, %#x): duplicate, group left, or %d (%d bytes) waiting",
			h.Tag, h.Data, len(ep.coll.in), ep.coll.inBytes)
		return
	}
	ep.coll.in[k] = collMsg{data: h.Data, b: append([]byte{}, payload...)}
	ep.coll.inBytes += len(payload)
	for _, g := range ep.coll.groups {
		if g != nil && g.id == h.Tag {
			ep.collAdvance(g)
		}
	}
}
