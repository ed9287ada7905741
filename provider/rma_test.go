package provider

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/atomicop"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// rmaCall starts an RMA from ep on buf (one iovec).
func (p *pair) rma(ep *Endpoint, buf []byte, dest, addr, key, data uint64, ctx uintptr, flags uint64) error {
	p.keep = append(p.keep, buf)
	v := Iovec{Len: uint64(len(buf))}
	if len(buf) > 0 {
		v.Base = unsafe.Pointer(&buf[0])
	}
	return ep.RMA([]Iovec{v}, dest, addr, key, data, cptr(ctx), flags)
}

// settle progresses the domain until a's CQ has an entry (success or
// error) and returns it: the entry, or the error entry's errno.
func (p *pair) settle() (cqTagged, fi.Errno) {
	p.t.Helper()
	for i := 0; i < 1000; i++ {
		var e cqTagged
		n, err := p.cqa.Read(words(&e), 1, nil)
		if n == 1 {
			return e, 0
		}
		if errors.Is(err, fi.EAVAIL) {
			return cqTagged{}, fi.Errno(p.readErr(p.cqa).err)
		}
	}
	p.t.Fatal("no RMA completion")
	return cqTagged{}, 0
}

func (p *pair) region(n int, access uint64) ([]byte, *MR) {
	p.t.Helper()
	mem := make([]byte, n)
	p.keep = append(p.keep, mem)
	mr, err := p.dom.RegMR([]MRIov{{Base: uintptr(unsafe.Pointer(&mem[0])), Len: uint64(n)}}, access, 0, uint64(len(p.keep)), 0, 0)
	if err != nil {
		p.t.Fatal(err)
	}
	p.t.Cleanup(func() { mr.Close() })
	return mem, mr
}

// Every size over a wire that sends by rendezvous above 1000 bytes:
// short writes, long writes fetched by the target, reads answered eager
// and by rendezvous, each checked at both ends.
func TestRMAWriteReadSizes(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.RMA, 1000)
	mem, mr := p.region(300000, fi.REMOTE_READ|fi.REMOTE_WRITE)
	for _, n := range []int{0, 1, 999, 1001, rmaShortMax, rmaShortMax + 1, 200000} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i*13 + n)
		}
		clear(mem)
		if err := p.rma(p.a, src, p.bAddr, 5, mr.Key(), 0, 0xA1, fi.RMA|fi.WRITE); err != nil {
			t.Fatalf("write %d: %v", n, err)
		}
		if e, errno := p.settle(); errno != 0 || e.ctx != 0xA1 || e.flags != fi.RMA|fi.WRITE {
			t.Fatalf("write %d: completion %+v, errno %v", n, e, errno)
		}
		if !bytes.Equal(mem[5:5+n], src) || mem[4] != 0 || mem[5+n] != 0 {
			t.Fatalf("write %d: the region does not hold exactly the bytes", n)
		}
		got := make([]byte, n)
		if err := p.rma(p.a, got, p.bAddr, 5, mr.Key(), 0, 0xA2, fi.RMA|fi.READ); err != nil {
			t.Fatalf("read %d: %v", n, err)
		}
		if e, errno := p.settle(); errno != 0 || e.ctx != 0xA2 || e.flags != fi.RMA|fi.READ {
			t.Fatalf("read %d: completion %+v, errno %v", n, e, errno)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("read %d: wrong bytes", n)
		}
	}
	if p.a.engine.pending != 0 || p.b.engine.pending != 0 || p.b.engine.rma.wait != nil {
		t.Fatalf("left over: pending %d/%d, waiting %v", p.a.engine.pending, p.b.engine.pending, p.b.engine.rma.wait)
	}
}

// A key nobody registered, a range past the region and a region without
// the access fail at the initiator; the target's memory stays as it was.
func TestRMAErrors(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.RMA, 1000)
	mem, mr := p.region(4096, fi.REMOTE_READ)
	for i := range mem {
		mem[i] = 0x5a
	}
	buf := bytes.Repeat([]byte{1}, 30000)
	for _, c := range []struct {
		name      string
		n         int
		addr, key uint64
		flags     uint64
		want      fi.Errno
	}{
		// One error for every refusal: it tells nothing of which keys
		// exist (docs/hfi.md, "Threat model").
		{"bad key", 10, 0, mr.Key() + 99, fi.WRITE, fi.EACCES},
		{"key 0", 10, 0, 0, fi.WRITE, fi.EACCES},
		{"read-only region", 10, 0, mr.Key(), fi.WRITE, fi.EACCES},
		{"long write to a read-only region", 30000, 0, mr.Key(), fi.WRITE, fi.EACCES},
		{"read past the end", 100, 4000, mr.Key(), fi.READ, fi.EACCES},
		{"read with a bad key", 100, 0, 12345, fi.READ, fi.EACCES},
	} {
		if err := p.rma(p.a, buf[:c.n], p.bAddr, c.addr, c.key, 0, 0, fi.RMA|c.flags); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, errno := p.settle(); errno != c.want {
			t.Errorf("%s: errno %v, want %v", c.name, errno, c.want)
		}
	}
	if !bytes.Equal(mem, bytes.Repeat([]byte{0x5a}, 4096)) {
		t.Fatal("a failed access changed the region")
	}
}

// Answers the wire refuses wait in the target's outbox and go out on a
// later poll; new operations wait (EAGAIN) while the outbox is not empty.
func TestRMAOutbox(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.RMA, 1000)
	mem, mr := p.region(100, fi.REMOTE_READ|fi.REMOTE_WRITE)
	copy(mem, "remote bytes")
	got := make([]byte, 12)
	if err := p.rma(p.a, got, p.bAddr, 0, mr.Key(), 0, 7, fi.RMA|fi.READ); err != nil {
		t.Fatal(err)
	}
	wa := p.a.tp.(*loopWire)
	wa.full = true // b's answer to a is refused
	p.dom.progress()
	if len(p.b.engine.rma.out) != 1 {
		t.Fatalf("outbox holds %d, want the answer", len(p.b.engine.rma.out))
	}
	if err := p.rma(p.b, got, p.aAddr, 0, mr.Key(), 0, 8, fi.RMA|fi.READ); !errors.Is(err, fi.EAGAIN) {
		t.Fatalf("a new op while the outbox holds one: %v, want EAGAIN", err)
	}
	wa.full = false
	if e, errno := p.settle(); errno != 0 || e.ctx != 7 || string(got) != "remote bytes" {
		t.Fatalf("after the outbox drained: %+v %v %q", e, errno, got)
	}
}

// The remote CQ data of a write reaches the target's CQ, and the
// counters count: local reads and writes, remote writes, errors.
func TestRMAEventsAndCounters(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.RMA|fi.RMA_EVENT, 1000)
	mem, mr := p.region(100000, fi.REMOTE_READ|fi.REMOTE_WRITE)
	cr, _ := p.dom.OpenCntr(&CntrAttr{})
	cw, _ := p.dom.OpenCntr(&CntrAttr{})
	crw, _ := p.dom.OpenCntr(&CntrAttr{})
	p.a.readCntr, p.a.writeCntr, p.b.remWriteCntr = cr, cw, crw
	for _, n := range []int{8, 50000} {
		if err := p.rma(p.a, make([]byte, n), p.bAddr, 0, mr.Key(), 0xDA7A, 1, fi.RMA|fi.WRITE|fi.REMOTE_CQ_DATA); err != nil {
			t.Fatal(err)
		}
		if _, errno := p.settle(); errno != 0 {
			t.Fatal(errno)
		}
		e, err := p.read(p.cqb)
		want := cqTagged{flags: fi.REMOTE_WRITE | fi.RMA | fi.REMOTE_CQ_DATA, len: uint64(n), data: 0xDA7A,
			buf: uintptr(unsafe.Pointer(&mem[0]))}
		if err != nil || e != want {
			t.Fatalf("target entry %+v, %v; want %+v", e, err, want)
		}
	}
	if err := p.rma(p.a, make([]byte, 8), p.bAddr, 0, mr.Key(), 0, 1, fi.RMA|fi.READ); err != nil {
		t.Fatal(err)
	}
	p.settle()
	if err := p.rma(p.a, make([]byte, 8), p.bAddr, 0, 999, 0, 1, fi.RMA|fi.READ); err != nil {
		t.Fatal(err)
	}
	p.settle()
	if cw.Read() != 2 || cr.Read() != 1 || cr.ReadErr() != 1 || crw.Read() != 2 {
		t.Fatalf("counters: write %d, read %d (errors %d), remote write %d", cw.Read(), cr.Read(), cr.ReadErr(), crw.Read())
	}
	p.a.readCntr, p.a.writeCntr, p.b.remWriteCntr = nil, nil, nil
	for _, c := range []*Cntr{cr, cw, crw} {
		c.Close()
	}
}

// An answer for an op that completed and was reused is dropped.
func TestRMAStaleAnswer(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.RMA, 1000)
	e := &p.a.engine
	o := e.New(opRMA)
	id := rmaID(o)
	e.Free(o)
	o2 := e.New(opRMA)
	if o2 != o || e.rmaByID(id) != nil || e.rmaByID(rmaID(o2)) != o2 {
		t.Fatal("a reused op answers to its old id")
	}
	e.Free(o2)
}

// Atomics over the loop wire: a fetch-add and a compare-swap land and
// return the old values; an unknown key, a read-only region and a pair
// the table refuses fail.
func TestAtomicOverLoopWire(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.ATOMIC, 1000)
	mem, mr := p.region(80000, fi.REMOTE_READ|fi.REMOTE_WRITE)
	words := unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), 10000)
	const n = 9000 // past the chunk: the request and the answer go by rendezvous
	opnd, old := make([]uint64, n), make([]uint64, n)
	for i := range opnd {
		words[i], opnd[i] = uint64(i), 3
	}
	ioc := func(s []uint64) Iovec { return Iovec{Base: unsafe.Pointer(&s[0]), Len: uint64(len(s))} }
	b, r := ioc(opnd), ioc(old)
	if err := p.a.Atomic(AtomicFetch, []Iovec{b}, nil, []Iovec{r}, p.bAddr, 0, mr.Key(),
		atomicop.Uint64, atomicop.Sum, cptr(5), fi.ATOMIC|fi.READ); err != nil {
		t.Fatal(err)
	}
	if e, errno := p.settle(); errno != 0 || e.flags != fi.ATOMIC|fi.READ || e.ctx != 5 {
		t.Fatalf("fetch-add: %+v %v", e, errno)
	}
	for i := 0; i < n; i++ {
		if words[i] != uint64(i)+3 || old[i] != uint64(i) {
			t.Fatalf("element %d: %d (old %d)", i, words[i], old[i])
		}
	}
	cmp := []uint64{3, 99}
	sw := []uint64{7, 8}
	b, c, r := ioc(sw), ioc(cmp), ioc(old[:2])
	if err := p.a.Atomic(AtomicCompare, []Iovec{b}, []Iovec{c}, []Iovec{r}, p.bAddr, 0,
		mr.Key(), atomicop.Uint64, atomicop.Cswap, nil, fi.ATOMIC|fi.READ); err != nil {
		t.Fatal(err)
	}
	if _, errno := p.settle(); errno != 0 || words[0] != 7 || words[1] != 4 || old[0] != 3 || old[1] != 4 {
		t.Fatalf("cswap: errno %v, words %d %d, old %d %d", errno, words[0], words[1], old[0], old[1])
	}
	b = ioc(opnd[:1])
	if err := p.a.Atomic(AtomicWrite, []Iovec{b}, nil, nil, p.bAddr, 0, mr.Key()+9,
		atomicop.Uint64, atomicop.Sum, nil, fi.ATOMIC|fi.WRITE); err != nil {
		t.Fatal(err)
	}
	if _, errno := p.settle(); errno != fi.EACCES {
		t.Fatalf("bad key: %v", errno)
	}
	if err := p.a.Atomic(AtomicWrite, []Iovec{b}, nil, nil, p.bAddr, 0, mr.Key(),
		atomicop.Float, atomicop.Bor, nil, fi.ATOMIC|fi.WRITE); !errors.Is(err, fi.EOPNOTSUPP) {
		t.Fatalf("BOR on float: %v", err)
	}
}

// The element ops against their definitions, for a few types.
func TestAtomicApply(t *testing.T) {
	type c struct {
		op, dt    int
		x, y, cmp int64
		want      int64
	}
	for _, k := range []c{
		{atomicop.Min, atomicop.Int32, 5, -2, 0, -2}, {atomicop.Max, atomicop.Int32, 5, -2, 0, 5}, {atomicop.Sum, atomicop.Int8, 127, 1, 0, -128},
		{atomicop.Prod, atomicop.Int16, 300, 3, 0, 900}, {atomicop.Lor, atomicop.Uint8, 0, 7, 0, 1}, {atomicop.Land, atomicop.Uint8, 2, 0, 0, 0},
		{atomicop.Bor, atomicop.Uint32, 5, 2, 0, 7}, {atomicop.Band, atomicop.Uint32, 6, 3, 0, 2}, {atomicop.Lxor, atomicop.Int64, 4, 4, 0, 0},
		{atomicop.Bxor, atomicop.Int64, 6, 3, 0, 5}, {atomicop.Write, atomicop.Int64, 6, 3, 0, 3}, {atomicop.Cswap, atomicop.Int64, 6, 3, 6, 3},
		{atomicop.CswapNe, atomicop.Int64, 6, 3, 6, 6}, {atomicop.CswapLe, atomicop.Int64, 6, 3, 5, 3}, {atomicop.CswapLt, atomicop.Int64, 6, 3, 6, 6},
		{atomicop.CswapGe, atomicop.Int64, 6, 3, 6, 3}, {atomicop.CswapGt, atomicop.Int64, 6, 3, 7, 3}, {atomicop.Mswap, atomicop.Uint64, 0xf0, 0x0f, 0x3c, 0xcc},
	} {
		size := atomicop.Size[k.dt]
		x, y, cm, res := make([]byte, 8), make([]byte, 8), make([]byte, 8), make([]byte, 8)
		putN(x, k.x, size)
		putN(y, k.y, size)
		putN(cm, k.cmp, size)
		if errno := atomicApply(k.op, k.dt, x[:size], y[:size], cm[:size], res[:size]); errno != 0 {
			t.Fatalf("op %d: %v", k.op, errno)
		}
		want := make([]byte, 8)
		putN(want, k.want, size)
		if !bytes.Equal(x[:size], want[:size]) || !bytes.Equal(res[:size], func() []byte { b := make([]byte, 8); putN(b, k.x, size); return b[:size] }()) {
			t.Errorf("op %d dt %d: %x, want %x", k.op, k.dt, x[:size], want[:size])
		}
	}
	if errno := atomicApply(atomicop.Bor, atomicop.Double, make([]byte, 8), make([]byte, 8), nil, nil); errno != fi.EOPNOTSUPP {
		t.Fatalf("BOR on double: %v", errno)
	}
}

func putN(b []byte, v int64, size int) {
	for i := 0; i < size; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

// A triggered write runs when its counter reaches the threshold, in
// threshold order; one whose counter closes first is dropped, so the
// domain is not kept busy for it.
func TestTriggeredCalls(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.RMA|fi.TRIGGER, 1000)
	mem, mr := p.region(64, fi.REMOTE_READ|fi.REMOTE_WRITE)
	c, err := p.dom.OpenCntr(&CntrAttr{})
	if err != nil {
		t.Fatal(err)
	}
	thresholds := map[uintptr]uint64{1: 2, 2: 1, 3: 5}
	old := TriggerOf
	TriggerOf = func(ctx unsafe.Pointer) (*Cntr, uint64, error) { return c, thresholds[uintptr(ctx)], nil }
	defer func() { TriggerOf = old }()
	one, two := []byte{1}, []byte{2}
	if err := p.rma(p.a, one, p.bAddr, 0, mr.Key(), 0, 1, fi.RMA|fi.WRITE|fi.TRIGGER); err != nil {
		t.Fatal(err)
	}
	if err := p.rma(p.a, two, p.bAddr, 0, mr.Key(), 0, 2, fi.RMA|fi.WRITE|fi.TRIGGER); err != nil {
		t.Fatal(err)
	}
	if err := p.rma(p.b, two, p.aAddr, 0, mr.Key(), 0, 3, fi.RMA|fi.WRITE|fi.TRIGGER); err != nil {
		t.Fatal(err)
	}
	p.dom.progress()
	if mem[0] != 0 || p.dom.trigPending != 3 {
		t.Fatalf("ran early: %d, %d pending", mem[0], p.dom.trigPending)
	}
	c.Add(1) // threshold 1: the write of 2
	if e, errno := p.settle(); errno != 0 || e.ctx != 2 || mem[0] != 2 {
		t.Fatalf("threshold 1: %+v %v, mem %d", e, errno, mem[0])
	}
	c.Add(1) // threshold 2: the write of 1
	if e, errno := p.settle(); errno != 0 || e.ctx != 1 || mem[0] != 1 {
		t.Fatalf("threshold 2: %+v %v, mem %d", e, errno, mem[0])
	}
	// The third waits for 5; closing its counter drops it.
	if p.dom.trigPending != 1 {
		t.Fatalf("%d pending, want 1", p.dom.trigPending)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if p.dom.trigPending != 0 || len(p.dom.trigCntrs) != 0 {
		t.Fatalf("a closed counter's trigger stays: %d", p.dom.trigPending)
	}
}

// A request whose header claims more bytes than any RMA carries (the
// length is the peer's word) is dropped, not staged.
func TestRMAHugeRequestDropped(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.RMA, 1000)
	wa, wb := p.a.tp.(*loopWire), p.b.tp.(*loopWire)
	wb.mu.Lock()
	wb.in = append(wb.in, loopMsg{hdr: transport.Header{Flags: hfRMA | rmaWrite<<rmaKindShift, Len: 1 << 62},
		src: wa.epid, rndv: true, sender: wa, cookie: 77})
	wb.mu.Unlock()
	p.dom.progress()
	wa.mu.Lock()
	defer wa.mu.Unlock()
	if len(wa.done) != 1 || wa.done[0] != 77 || p.b.engine.pending != 0 {
		t.Fatalf("the request was not discarded: done %v, pending %d", wa.done, p.b.engine.pending)
	}
}

// A write-long request whose initiator dies before sending the bytes does
// not stay at the target: the sweep lets it go, and the wire stops
// watching that peer.
func TestRMAWriteLongInitiatorDies(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.RMA, 1000)
	wa, wb := p.a.tp.(*loopWire), p.b.tp.(*loopWire)
	prefix := make([]byte, rmaPrefix)
	binary.LittleEndian.PutUint64(prefix[16:], 1<<20)
	wb.mu.Lock()
	wb.in = append(wb.in, loopMsg{hdr: transport.Header{Flags: hfRMA | rmaWriteLong<<rmaKindShift, Tag: 5, Len: rmaPrefix},
		src: wa.epid, payload: prefix})
	wb.mu.Unlock()
	p.dom.progress()
	e := &p.b.engine
	if e.rma.wait == nil || e.rma.watched != 1 || wb.watched != 1 {
		t.Fatalf("the request does not wait watched: wait %v, watched %d/%d", e.rma.wait != nil, e.rma.watched, wb.watched)
	}
	for range 200 {
		p.dom.progress()
	}
	if e.rma.wait == nil {
		t.Fatal("a live initiator's request was dropped")
	}
	wa.mu.Lock()
	wa.dead = true
	wa.mu.Unlock()
	for i := 0; i < 200 && e.rma.wait != nil; i++ {
		p.dom.progress()
	}
	if e.rma.wait != nil || e.rma.watched != 0 || wb.watched != 0 {
		t.Fatalf("the dead initiator's request stays: wait %v, watched %d/%d", e.rma.wait != nil, e.rma.watched, wb.watched)
	}
}
