package provider

import (
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/atomicop"
)

// collNet is n endpoints of one domain over a loopback wire, each with a
// CQ and an EQ, sharing one AV (address i is endpoint i).
type collNet struct {
	t   *testing.T
	eps []*Endpoint
	cqs []*CQ
	eqs []*EQ
	av  *AV
	ctx [16]byte // member i's operations have context &ctx[i]
}

func (c *collNet) ctxOf(i int) unsafe.Pointer { return unsafe.Pointer(&c.ctx[i]) }

// post posts operation kind at member i of group g (its addresses by
// member), context ctxOf(i); nil buffers pass as NULL.
func (c *collNet) post(g []uint64, i, kind int, buf, res []byte, count, root uint64, dt, op int) {
	c.t.Helper()
	var b, r unsafe.Pointer
	if buf != nil {
		b = unsafe.Pointer(&buf[0])
	}
	if res != nil {
		r = unsafe.Pointer(&res[0])
	}
	if err := c.eps[i].Collective(kind, b, r, count, g[i], root, dt, op, c.ctxOf(i)); err != nil {
		c.t.Fatalf("member %d kind %d: %v", i, kind, err)
	}
}

func newCollNet(t *testing.T, n int) *collNet {
	t.Helper()
	p := New(newFakeHost(nil))
	net := newLoopNet(1000)
	net.copyRndv = true // parts over 1000 bytes come by rendezvous
	p.wire = net.open
	info := &fi.Info{Caps: fi.MSG | fi.COLLECTIVE, Domain: &fi.DomainAttr{}, EP: &fi.EPAttr{Type: fi.EP_RDM}}
	f, d, av := openDomainAV(t, p, info)
	c := &collNet{t: t, av: av}
	names := make([]byte, n*EPNameLen)
	for i := 0; i < n; i++ {
		ep, err := d.OpenEndpoint(info, 0)
		if err != nil {
			t.Fatal(err)
		}
		cq, err := d.OpenCQ(&CQAttr{Format: fi.CQ_FORMAT_TAGGED})
		if err != nil {
			t.Fatal(err)
		}
		eq, err := f.OpenEQ(&EQAttr{})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range []struct {
			obj   any
			flags uint64
		}{{av, 0}, {cq, fi.TRANSMIT | fi.RECV}, {eq, 0}} {
			if err := ep.Bind(b.obj, b.flags); err != nil {
				t.Fatal(err)
			}
		}
		if err := ep.Enable(); err != nil {
			t.Fatal(err)
		}
		ep.name().put(names[i*EPNameLen:])
		c.eps, c.cqs, c.eqs = append(c.eps, ep), append(c.cqs, cq), append(c.eqs, eq)
	}
	out := make([]uint64, n)
	if k, err := av.Insert(names[:n*EPNameLen], out, nil, 0, 0); k != n || err != nil {
		t.Fatalf("Insert = %d, %v", k, err)
	}
	return c
}

// join makes the set start..end/stride and joins it from each member;
// it returns each member's group address (0 for the others).
func (c *collNet) join(start, end, stride uint64) []uint64 {
	c.t.Helper()
	addrs := make([]uint64, len(c.eps))
	for i, ep := range c.eps {
		if uint64(i) < start || uint64(i) > end || (uint64(i)-start)%stride != 0 {
			continue
		}
		set, err := c.av.NewSet(0, start, end, stride)
		if err != nil {
			c.t.Fatal(err)
		}
		var set2 uint64
		a, err := ep.Join(set, 0xF00+uintptr(i), 0xC0+uintptr(i), func(x uint64) { set2 = x })
		if err != nil {
			c.t.Fatalf("Join %d: %v", i, err)
		}
		buf := make([]byte, EQEntrySize)
		if n, ev, err := c.eqs[i].Read(buf, 0); n != EQEntrySize || ev != fi.JOIN_COMPLETE || err != nil ||
			binary.NativeEndian.Uint64(buf) != 0xF00+uint64(i) || binary.NativeEndian.Uint64(buf[8:]) != 0xC0+uint64(i) {
			c.t.Fatalf("join %d: EQ read %d, event %d, %v, entry %x", i, n, ev, err, buf)
		}
		if set2 != a {
			c.t.Fatalf("join %d: the address set before the event %#x, returned %#x", i, set2, a)
		}
		addrs[i] = a
	}
	return addrs
}

// wait polls every member until each in who has its completion, context
// ctxOf(i); it returns their errnos.
func (c *collNet) wait(who []int) []fi.Errno {
	c.t.Helper()
	got := make([]fi.Errno, len(c.eps))
	done := map[int]bool{}
	for round := 0; round < 10000 && len(done) < len(who); round++ {
		for _, i := range who {
			if done[i] {
				continue
			}
			var e cqTagged
			n, err := c.cqs[i].Read(words(&e), 1, nil)
			switch {
			case n == 1:
				if e.ctx != uintptr(c.ctxOf(i)) || e.flags != fi.COLLECTIVE {
					c.t.Fatalf("member %d: completion %+v", i, e)
				}
				done[i] = true
			case errors.Is(err, fi.EAVAIL):
				var x cqErrEntry
				if k, err := readErrC(c.cqs[i], &x); k != 1 || err != nil {
					c.t.Fatalf("member %d: ReadErr %d, %v", i, k, err)
				}
				got[i], done[i] = fi.Errno(x.err), true
			}
		}
	}
	if len(done) < len(who) {
		c.t.Fatalf("completions of %v: only %v came", who, done)
	}
	return got
}

func u64s(b []byte) []uint64 { return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), len(b)/8) }

// Every operation over 4 members, with roots other than the first, posted
// in an order that makes messages arrive before their operation.
func TestCollectives(t *testing.T) {
	const n = 4
	c := newCollNet(t, n)
	g := c.join(0, n-1, 1)
	all := []int{0, 1, 2, 3}
	post := func(i, kind int, buf, res []byte, count, root uint64, dt, op int) {
		t.Helper()
		c.post(g, i, kind, buf, res, count, root, dt, op)
	}
	// Barrier: nobody completes before the last member enters.
	for _, i := range []int{3, 1, 2} {
		post(i, CollBarrier, nil, nil, 0, 0, 0, 0)
	}
	for k := 0; k < 50; k++ {
		for i := 1; i < n; i++ {
			var e cqTagged
			if m, _ := c.cqs[i].Read(words(&e), 1, nil); m != 0 {
				t.Fatalf("member %d left the barrier before member 0 entered", i)
			}
		}
	}
	post(0, CollBarrier, nil, nil, 0, 0, 0, 0)
	c.wait(all)

	// Allreduce: a sum of uint64, the last member first.
	in, out := make([][]byte, n), make([][]byte, n)
	for _, i := range []int{3, 2, 1, 0} {
		in[i], out[i] = make([]byte, 3*8), make([]byte, 3*8)
		for k := range u64s(in[i]) {
			u64s(in[i])[k] = uint64(1000*k + i)
		}
		post(i, CollAllreduce, in[i], out[i], 3, 0, atomicop.Uint64, atomicop.Sum)
	}
	c.wait(all)
	for i := 0; i < n; i++ {
		for k, v := range u64s(out[i]) {
			if want := uint64(4*1000*k + 6); v != want {
				t.Fatalf("allreduce: member %d element %d = %d, want %d", i, k, v, want)
			}
		}
	}

	// Allgather, broadcast, scatter, gather and reduce rooted at member 2.
	for i := 0; i < n; i++ {
		in[i], out[i] = make([]byte, 16), make([]byte, n*16)
		u64s(in[i])[0], u64s(in[i])[1] = uint64(10+i), uint64(20+i)
		post(i, CollAllgather, in[i], out[i], 2, 0, atomicop.Uint64, 0)
	}
	c.wait(all)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if a, b := u64s(out[i])[2*j], u64s(out[i])[2*j+1]; a != uint64(10+j) || b != uint64(20+j) {
				t.Fatalf("allgather: member %d slot %d = %d,%d", i, j, a, b)
			}
		}
	}
	const root = 2
	for _, i := range []int{0, 3, 2, 1} {
		in[i] = make([]byte, 5*4)
		if i == root {
			for k := range in[i] {
				in[i][k] = byte(k + 7)
			}
		}
		post(i, CollBroadcast, in[i], nil, 5, root, atomicop.Uint32, 0)
	}
	c.wait(all)
	for i := 0; i < n; i++ {
		for k := range in[i] {
			if in[i][k] != byte(k+7) {
				t.Fatalf("broadcast: member %d byte %d = %d", i, k, in[i][k])
			}
		}
	}
	src := make([]byte, n*8)
	for j := 0; j < n; j++ {
		u64s(src)[j] = uint64(100 + j)
	}
	for i := 0; i < n; i++ {
		out[i] = make([]byte, 8)
		var b []byte
		if i == root {
			b = src
		}
		post(i, CollScatter, b, out[i], 1, root, atomicop.Uint64, 0)
	}
	c.wait(all)
	for i := 0; i < n; i++ {
		if v := u64s(out[i])[0]; v != uint64(100+i) {
			t.Fatalf("scatter: member %d got %d", i, v)
		}
	}
	gath := make([]byte, n*8)
	for i := 0; i < n; i++ {
		in[i] = make([]byte, 8)
		u64s(in[i])[0] = uint64(i * i)
		var r []byte
		if i == root {
			r = gath
		}
		post(i, CollGather, in[i], r, 1, root, atomicop.Uint64, 0)
	}
	c.wait(all)
	for j := 0; j < n; j++ {
		if v := u64s(gath)[j]; v != uint64(j*j) {
			t.Fatalf("gather: slot %d = %d", j, v)
		}
	}
	red := make([]byte, 8)
	for i := 0; i < n; i++ {
		in[i] = make([]byte, 8)
		u64s(in[i])[0] = uint64(3 + i)
		var r []byte
		if i == root {
			r = red
		}
		post(i, CollReduce, in[i], r, 1, root, atomicop.Uint64, atomicop.Max)
	}
	c.wait(all)
	if v := u64s(red)[0]; v != 6 {
		t.Fatalf("reduce max = %d, want 6", v)
	}
}

// A set with a stride (members 1 and 3): the others take no part, and two
// groups of the same members (two joins) keep their operations apart.
func TestCollectiveStrideAndRejoin(t *testing.T) {
	c := newCollNet(t, 4)
	g1 := c.join(1, 3, 2)
	g2 := c.join(1, 3, 2)
	if g1[0] != 0 || g1[2] != 0 || g1[1] == 0 || g2[1] == g1[1] {
		t.Fatalf("group addresses %v %v", g1, g2)
	}
	bufs := map[[2]int][]byte{}
	for _, i := range []int{3, 1} {
		for gi, g := range [][]uint64{g2, g1} {
			in, out := make([]byte, 8), make([]byte, 8)
			u64s(in)[0] = uint64(10*(gi+1) + i)
			bufs[[2]int{gi, i}] = out
			if err := c.eps[i].Collective(CollAllreduce, unsafe.Pointer(&in[0]), unsafe.Pointer(&out[0]), 1, g[i], 0, atomicop.Uint64, atomicop.Sum, c.ctxOf(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.wait([]int{1, 3})
	c.wait([]int{1, 3})
	for _, i := range []int{1, 3} {
		if a, b := u64s(bufs[[2]int{0, i}])[0], u64s(bufs[[2]int{1, i}])[0]; a != 24 || b != 44 {
			t.Fatalf("member %d: sums %d (group 2) and %d (group 1), want 24 and 44", i, a, b)
		}
	}
	if err := c.eps[1].Leave(g1[1]); err != nil {
		t.Fatal(err)
	}
	if err := c.eps[1].Collective(CollBarrier, nil, nil, 0, g1[1], 0, 0, 0, nil); !errors.Is(err, fi.EINVAL) {
		t.Fatalf("barrier on a group left: %v", err)
	}
}

// Bad arguments are refused at once.
func TestCollectiveErrors(t *testing.T) {
	c := newCollNet(t, 3)
	g := c.join(0, 2, 1)
	ep := c.eps[0]
	b := make([]byte, collMaxBytes+8)
	p := unsafe.Pointer(&b[0])
	for _, tt := range []struct {
		name     string
		kind     int
		buf, res unsafe.Pointer
		count    uint64
		addr     uint64
		root     uint64
		dt, op   int
		want     error
	}{
		{"no such group", CollBarrier, nil, nil, 0, g[0] + 5, 0, 0, 0, fi.EINVAL},
		{"alltoall", CollAlltoall, p, p, 1, g[0], 0, atomicop.Uint64, 0, fi.ENOSYS},
		{"reduce_scatter", CollReduceScatter, p, p, 1, g[0], 0, atomicop.Uint64, atomicop.Sum, fi.ENOSYS},
		{"compare op", CollAllreduce, p, p, 1, g[0], 0, atomicop.Uint64, atomicop.Cswap, fi.EOPNOTSUPP},
		{"bitwise op on floats", CollAllreduce, p, p, 1, g[0], 0, atomicop.Double, atomicop.Bor, fi.EOPNOTSUPP},
		{"too large", CollAllreduce, p, p, collMaxBytes/8 + 1, g[0], 0, atomicop.Uint64, atomicop.Sum, fi.EINVAL},
		{"allgather too large", CollAllgather, p, p, collMaxBytes / 8 / 2, g[0], 0, atomicop.Uint64, 0, fi.EINVAL},
		{"no result", CollAllreduce, p, nil, 1, g[0], 0, atomicop.Uint64, atomicop.Sum, fi.EINVAL},
		{"root not a member", CollBroadcast, p, nil, 1, g[0], 7, atomicop.Uint64, 0, fi.EINVAL},
		{"scatter root without data", CollScatter, nil, p, 1, g[0], 0, atomicop.Uint64, 0, fi.EINVAL},
	} {
		if err := ep.Collective(tt.kind, tt.buf, tt.res, tt.count, tt.addr, tt.root, tt.dt, tt.op, nil); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	// Joining a set this endpoint is not in, or another AV's set.
	set, err := c.av.NewSet(0, 1, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ep.Join(set, 0, 0, nil); !errors.Is(err, fi.EINVAL) {
		t.Errorf("join without being a member: %v", err)
	}
	if _, err := c.av.NewSet(0, 0, 9, 1); !errors.Is(err, fi.EINVAL) {
		t.Errorf("set past the AV: %v", err)
	}
	if err := set.Insert(1); !errors.Is(err, fi.EINVAL) {
		t.Errorf("insert of a member: %v", err)
	}
	if err := set.Insert(0); err != nil || len(set.Members()) != 3 {
		t.Errorf("insert: %v, %v", err, set.Members())
	}
	if err := set.Remove(2); err != nil || len(set.Members()) != 2 || set.Remove(2) == nil {
		t.Errorf("remove: %v", set.Members())
	}
}

// What the review found: members that disagree on the count or the
// operation fail it everywhere (FI_EIO) and nothing is written past a
// result buffer; a message sent by rendezvous arrives; leaving purges the
// group's messages; an endpoint with a group open refuses to close; one
// endpoint twice in a set is refused.
func TestCollectiveDisagreements(t *testing.T) {
	c := newCollNet(t, 3)
	g := c.join(0, 2, 1)
	all := []int{0, 1, 2}
	post := func(i, kind int, buf, res []byte, count, root uint64, dt, op int) {
		t.Helper()
		c.post(g, i, kind, buf, res, count, root, dt, op)
	}
	want := func(got []fi.Errno, w ...fi.Errno) {
		t.Helper()
		for i, e := range w {
			if got[i] != e {
				t.Fatalf("errnos %v, want %v", got, w)
			}
		}
	}
	// The root scatters 4 elements each while member 1 expects 1: member
	// 1 fails, and the 8 bytes after its one element stay untouched.
	src := make([]byte, 3*4*8)
	res := [][]byte{make([]byte, 32), make([]byte, 16), make([]byte, 32)}
	for i := 0; i < 3; i++ {
		n := uint64(4)
		if i == 1 {
			n = 1
		}
		var b []byte
		if i == 0 {
			b = src
		}
		post(i, CollScatter, b, res[i], n, 0, atomicop.Uint64, 0)
	}
	want(c.wait(all), 0, fi.EIO, 0)
	if u64s(res[1])[1] != 0 {
		t.Fatal("scatter wrote past member 1's result")
	}
	// Allreduce of 4 at the hub and 1 at member 2: the hub fails it and
	// tells everyone.
	in, out := make([]byte, 32), make([]byte, 32)
	post(1, CollAllreduce, in, out, 4, 0, atomicop.Uint64, atomicop.Sum)
	post(2, CollAllreduce, in[:8], out[:8], 1, 0, atomicop.Uint64, atomicop.Sum)
	post(0, CollAllreduce, in, out, 4, 0, atomicop.Uint64, atomicop.Sum)
	want(c.wait(all), fi.EIO, fi.EIO, fi.EIO)
	// Another operation at the same place: a barrier where the others
	// allreduce.
	post(2, CollBarrier, nil, nil, 0, 0, 0, 0)
	post(1, CollAllreduce, in, out, 4, 0, atomicop.Uint64, atomicop.Sum)
	post(0, CollAllreduce, in, out, 4, 0, atomicop.Uint64, atomicop.Sum)
	want(c.wait(all), fi.EIO, fi.EIO, fi.EIO)
	// Operations whose parts have the same length: only the operation
	// in the message tells them apart. Member 1 allgathers where the
	// others allreduce one element; then member 2 reduces where the others
	// enter a barrier, so member 1 learns of the failure only from the
	// hub's failed (empty) result.
	post(0, CollAllreduce, in[:8], out[:8], 1, 0, atomicop.Uint64, atomicop.Sum)
	post(1, CollAllgather, in[:8], out[:24], 1, 0, atomicop.Uint64, 0)
	post(2, CollAllreduce, in[:8], out[:8], 1, 0, atomicop.Uint64, atomicop.Sum)
	want(c.wait(all), fi.EIO, fi.EIO, fi.EIO)
	post(0, CollBarrier, nil, nil, 0, 0, 0, 0)
	post(1, CollBarrier, nil, nil, 0, 0, 0, 0)
	post(2, CollReduce, in[:8], nil, 1, 0, atomicop.Uint64, atomicop.Sum)
	want(c.wait(all), fi.EIO, fi.EIO, fi.EIO)
	// Still in step: a large allreduce (the loop wire sends it by
	// rendezvous).
	big := make([][]byte, 3)
	bigOut := make([][]byte, 3)
	for i := 0; i < 3; i++ {
		big[i], bigOut[i] = make([]byte, 512*8), make([]byte, 512*8)
		for k := range u64s(big[i]) {
			u64s(big[i])[k] = uint64(k*3 + i)
		}
		post(i, CollAllreduce, big[i], bigOut[i], 512, 0, atomicop.Uint64, atomicop.Sum)
	}
	want(c.wait(all), 0, 0, 0)
	for i := 0; i < 3; i++ {
		for k, v := range u64s(bigOut[i]) {
			if v != uint64(9*k+3) {
				t.Fatalf("large allreduce: member %d element %d = %d", i, k, v)
			}
		}
	}
	// A group open: the endpoint does not close; after leaving it does,
	// and the group's waiting messages are gone.
	post(1, CollBarrier, nil, nil, 0, 0, 0, 0)
	post(2, CollBarrier, nil, nil, 0, 0, 0, 0)
	for k := 0; k < 20; k++ {
		c.cqs[0].Read(words(&cqTagged{}), 1, nil) // the contributions arrive at the hub
	}
	if len(c.eps[0].coll.in) == 0 {
		t.Fatal("no contribution waits at the hub")
	}
	if err := c.eps[0].Close(); !errors.Is(err, fi.EBUSY) {
		t.Fatalf("Close with a group open: %v", err)
	}
	if err := c.eps[0].Leave(g[0]); err != nil || len(c.eps[0].coll.in) != 0 || c.eps[0].coll.inBytes != 0 {
		t.Fatalf("Leave: %v, %d messages (%d bytes) left", err, len(c.eps[0].coll.in), c.eps[0].coll.inBytes)
	}
	if err := c.eps[0].Close(); err != nil {
		t.Fatalf("Close after leaving: %v", err)
	}
}

// One endpoint at two addresses of a set: refused.
func TestCollectiveDuplicateMember(t *testing.T) {
	c := newCollNet(t, 2)
	name := make([]byte, EPNameLen)
	c.eps[1].name().put(name)
	var a [1]uint64
	if k, err := c.av.Insert(name, a[:], nil, 0, 0); k != 1 || err != nil {
		t.Fatalf("Insert = %d, %v", k, err)
	}
	set, err := c.av.NewSet(0, 0, a[0], 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.eps[0].Join(set, 0, 0, nil); !errors.Is(err, fi.EINVAL) {
		t.Fatalf("Join of a set with one endpoint twice: %v", err)
	}
}

// A member that dies while an operation waits for it: the others' posted
// operations fail (the wire reports it dead), and nothing stays watched.
func TestCollectiveMemberDies(t *testing.T) {
	c := newCollNet(t, 3)
	g := c.join(0, 2, 1)
	for _, i := range []int{0, 1} {
		if err := c.eps[i].Collective(CollBarrier, nil, nil, 0, g[i], 0, 0, 0, c.ctxOf(i)); err != nil {
			t.Fatal(err)
		}
	}
	w2 := c.eps[2].tp.(*loopWire)
	w0 := c.eps[0].tp.(*loopWire)
	if c.eps[0].rma.watched != 2 || w0.watched != 2 {
		t.Fatalf("the hub watches %d members (wire %d), want 2", c.eps[0].rma.watched, w0.watched)
	}
	for k := 0; k < 100; k++ {
		for _, i := range []int{0, 1} {
			var e cqTagged
			if n, _ := c.cqs[i].Read(words(&e), 1, nil); n != 0 {
				t.Fatalf("member %d left the barrier without member 2", i)
			}
		}
	}
	w2.mu.Lock()
	w2.dead = true
	w2.mu.Unlock()
	got := c.wait([]int{0, 1})
	if got[0] == 0 || got[1] == 0 {
		t.Fatalf("errnos %v: both survivors should fail", got)
	}
	for _, i := range []int{0, 1} {
		if w := c.eps[i].tp.(*loopWire); c.eps[i].rma.watched != 0 || w.watched != 0 {
			t.Fatalf("member %d still watches %d (wire %d)", i, c.eps[i].rma.watched, w.watched)
		}
	}
}
