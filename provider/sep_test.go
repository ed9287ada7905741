package provider

import (
	"errors"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
)

// sepSide is a scalable endpoint with a CQ per context, every role open
// and enabled.
type sepSide struct {
	s   *SEP
	cqs []*CQ
}

func openSEPSide(t *testing.T, d *Domain, av *AV, n int) *sepSide {
	t.Helper()
	info := &fi.Info{Caps: fi.TAGGED | fi.SOURCE | fi.DIRECTED_RECV | fi.NAMED_RX_CTX,
		EP: &fi.EPAttr{Type: fi.EP_RDM, TxCtxCnt: uint64(n), RxCtxCnt: 1}}
	s, err := d.OpenSEP(info)
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != n {
		t.Fatalf("%d contexts, want %d (the greater of tx_ctx_cnt and rx_ctx_cnt)", s.Len(), n)
	}
	if err := s.Bind(av, 0); err != nil {
		t.Fatal(err)
	}
	side := &sepSide{s: s}
	for i := range n {
		cq, err := d.OpenCQ(&CQAttr{Format: fi.CQ_FORMAT_TAGGED, WaitObj: fi.WAIT_UNSPEC})
		if err != nil {
			t.Fatal(err)
		}
		side.cqs = append(side.cqs, cq)
		tx, err := s.Context(i, RoleTx)
		if err != nil {
			t.Fatal(err)
		}
		rx, err := s.Context(i, RoleRx)
		if err != nil || rx != tx {
			t.Fatalf("rx context %d: %v (the same endpoint serves both roles)", i, err)
		}
		// The transmit role first, as fabtests do: the endpoint waits
		// for its receive role before it enables.
		for _, err := range []error{tx.Bind(cq, fi.TRANSMIT), tx.EnableRole(RoleTx)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if tx.enabled {
			t.Fatal("context enabled before its receive role")
		}
		for _, err := range []error{rx.Bind(cq, fi.RECV), rx.EnableRole(RoleRx)} {
			if err != nil {
				t.Fatal(err)
			}
		}
		if !tx.enabled {
			t.Fatal("context not enabled with both roles")
		}
	}
	if err := s.Enable(); err != nil {
		t.Fatal(err)
	}
	return side
}

func (side *sepSide) close(t *testing.T) {
	t.Helper()
	for i, ep := range side.s.Contexts() {
		if err := ep.ReleaseContext(); err != nil {
			t.Fatal(err)
		}
		// Released, the context lets go of its CQ, which can close.
		if err := side.cqs[i].Close(); err != nil {
			t.Fatalf("CQ of a released context: %v", err)
		}
	}
	if err := side.s.Close(); err != nil {
		t.Fatal(err)
	}
}

func rxAddr(a uint64, i, bits int) uint64 { return a | uint64(i)<<(64-bits) }

// TestSEPContextsAddressed: fi_rx_addr(peer, i) reaches context i of a
// scalable peer, a plain address its context 0; the receiver sees the
// sender's base address as the source, and a directed receive from
// fi_rx_addr(peer, j) takes only what context j sent.
func TestSEPContextsAddressed(t *testing.T) {
	p := New(newFakeHost(nil))
	p.wire = newLoopNet(64).open
	info := &fi.Info{Caps: fi.TAGGED, EP: &fi.EPAttr{Type: fi.EP_RDM}}
	f, err := p.OpenFabric(&fi.FabricAttr{Name: "psm2"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.OpenDomain(info)
	if err != nil {
		t.Fatal(err)
	}
	const bits = 2
	av, err := d.OpenAV(&AVAttr{Type: fi.AV_TABLE, RxCtxBits: bits})
	if err != nil {
		t.Fatal(err)
	}
	a, b := openSEPSide(t, d, av, 3), openSEPSide(t, d, av, 3)
	var names [2 * EPNameLen]byte
	if _, err := a.s.Name(names[:EPNameLen]); err != nil {
		t.Fatal(err)
	}
	if _, err := b.s.Name(names[EPNameLen:]); err != nil {
		t.Fatal(err)
	}
	if n, _ := UnmarshalEPName(names[:]); n.Type != EPNameScalable || n.SepID != 3 || n.EPID != a.s.Contexts()[0].epid {
		t.Fatalf("SEP name %+v", n)
	}
	var addrs [2]uint64
	if n, err := av.Insert(names[:], addrs[:], nil, 0, 0); n != 2 || err != nil {
		t.Fatalf("Insert = %d, %v", n, err)
	}
	aAddr, bAddr := addrs[0], addrs[1]
	pr := &pair{t: t, dom: d}

	// Context i of a to context i of b, and a plain address to context 0.
	for i := range 3 {
		if err := pr.send(a.s.Contexts()[i], rxAddr(bAddr, i, bits), []byte{byte(i)}, uint64(10+i), 0, fi.TAGGED); err != nil {
			t.Fatal(err)
		}
	}
	if err := pr.send(a.s.Contexts()[2], bAddr, []byte{9}, 19, 0, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		buf := make([]byte, 4)
		if err := pr.recv(b.s.Contexts()[i], buf, fi.AddrUnspec, uint64(10+i), 0, uintptr(0x100+i), fi.TAGGED|fi.COMPLETION); err != nil {
			t.Fatal(err)
		}
		// Context i's own sends completed on its CQ.
		if c, err := pr.read(a.cqs[i]); err != nil || c.flags&fi.SEND == 0 {
			t.Fatalf("send completion of context %d: %+v %v", i, c, err)
		}
		var e cqTagged
		var src uint64
		for range 100 {
			if n, _ := b.cqs[i].Read(words(&e), 1, words(&src)); n == 1 {
				break
			}
		}
		if e.ctx != uintptr(0x100+i) || e.tag != uint64(10+i) || buf[0] != byte(i) || src != aAddr {
			t.Fatalf("context %d got %+v %v from %d, want tag %d from %d", i, e, buf, src, 10+i, aAddr)
		}
	}
	buf := make([]byte, 4)
	pr.recv(b.s.Contexts()[0], buf, fi.AddrUnspec, 19, 0, 0x200, fi.TAGGED|fi.COMPLETION)
	if c, err := pr.read(b.cqs[0]); err != nil || c.ctx != 0x200 || buf[0] != 9 {
		t.Fatalf("plain address did not reach context 0: %+v %v", c, err)
	}
	pr.read(a.cqs[2])

	// Directed receive: from a's context 2 only.
	bx := b.s.Contexts()[1]
	if err := pr.recv(bx, buf, rxAddr(aAddr, 2, bits), 30, 0, 0x300, fi.TAGGED|fi.COMPLETION); err != nil {
		t.Fatal(err)
	}
	pr.send(a.s.Contexts()[1], rxAddr(bAddr, 1, bits), []byte{1}, 30, 0, fi.TAGGED)
	if c, err := pr.read(b.cqs[1]); !errors.Is(err, fi.EAGAIN) {
		t.Fatalf("context 1's message matched a receive directed at context 2: %+v %v", c, err)
	}
	pr.send(a.s.Contexts()[2], rxAddr(bAddr, 1, bits), []byte{2}, 30, 0, fi.TAGGED)
	if c, err := pr.read(b.cqs[1]); err != nil || c.ctx != 0x300 || buf[0] != 2 {
		t.Fatalf("directed receive: %+v %v %v", c, err, buf[0])
	}

	// An index past the peer's contexts, and one on a regular name.
	if err := pr.send(a.s.Contexts()[0], rxAddr(bAddr, 3, bits), []byte{1}, 1, 0, fi.TAGGED); !errors.Is(err, fi.EINVAL) {
		t.Fatalf("send to context 3 of 3: %v", err)
	}
	ep, _ := openBoundEP(t, d, av, info)
	var reg [EPNameLen]byte
	ep.name().put(reg[:])
	var regAddr [1]uint64
	av.Insert(reg[:], regAddr[:], nil, 0, 0)
	if err := pr.send(a.s.Contexts()[0], rxAddr(regAddr[0], 1, bits), []byte{1}, 1, 0, fi.TAGGED); !errors.Is(err, fi.EINVAL) {
		t.Fatalf("send to context 1 of a regular endpoint: %v", err)
	}
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	a.close(t)
	b.close(t)
}

// TestSEPRules: the context count, PSM2_MULTI_EP=0, an SEP without an AV,
// and the context numbers an SEP takes and gives back.
func TestSEPRules(t *testing.T) {
	p := New(newFakeHost(nil))
	p.wire = newLoopNet(64).open
	info := &fi.Info{Caps: fi.TAGGED, EP: &fi.EPAttr{Type: fi.EP_RDM}}
	_, d, av := openDomainAV(t, p, info)
	for _, c := range []struct{ tx, rx uint64 }{{fi.SHARED_CONTEXT, 1}, {1, fi.SHARED_CONTEXT}, {65, 1}} {
		info := &fi.Info{EP: &fi.EPAttr{Type: fi.EP_RDM, TxCtxCnt: c.tx, RxCtxCnt: c.rx}}
		if _, err := d.OpenSEP(info); !errors.Is(err, fi.EINVAL) {
			t.Fatalf("tx %d rx %d: %v", c.tx, c.rx, err)
		}
	}
	before := p.freeContexts()
	s, err := d.OpenSEP(&fi.Info{EP: &fi.EPAttr{Type: fi.EP_RDM, TxCtxCnt: 2, RxCtxCnt: 4}})
	if err != nil || s.Len() != 4 || p.freeContexts() != before-4 {
		t.Fatalf("SEP: %v, %d contexts, %d free of %d", err, s.Len(), p.freeContexts(), before)
	}
	for i, ep := range s.Contexts() {
		if ep.ctxNum != s.Contexts()[0].ctxNum+i {
			t.Fatalf("context %d has number %d", i, ep.ctxNum)
		}
	}
	if _, err := s.Context(4, RoleTx); !errors.Is(err, fi.EINVAL) {
		t.Fatalf("context 4 of 4: %v", err)
	}
	if _, err := s.Context(0, RoleTx); err != nil {
		t.Fatal(err)
	}
	if err := s.Enable(); !errors.Is(err, fi.ENOAV) {
		t.Fatalf("enable without an AV: %v", err)
	}
	if err := s.Bind(av, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Enable(); err != nil {
		t.Fatal(err)
	}
	if !s.Contexts()[0].enabled || s.Contexts()[1].enabled {
		t.Fatal("SEP enable: only contexts with an open role are enabled")
	}
	if err := s.Close(); err != nil || p.freeContexts() != before {
		t.Fatalf("close: %v, %d free of %d", err, p.freeContexts(), before)
	}

	// Scalable names with a count no SEP has (0, past the limit) or
	// whose last context's id cannot exist are not inserted.
	for _, n := range []EPName{
		{EPID: makeEPID(4242, 1, 0), Type: EPNameScalable, SepID: 0},
		{EPID: makeEPID(4242, 1, 0), Type: EPNameScalable, SepID: getinfo.MaxSEPContexts + 1},
		{EPID: makeEPID(4242, 1, 250), Type: EPNameScalable, SepID: 8},
	} {
		var raw [EPNameLen]byte
		n.put(raw[:])
		var out [1]uint64
		if got, _ := av.Insert(raw[:], out[:], nil, 0, 0); got != 0 || out[0] != fi.AddrUnspec {
			t.Fatalf("scalable name with count %d at context %d inserted: %d, %#x", n.SepID, n.EPID>>8&0xff, got, out[0])
		}
	}

	off := New(newFakeHost(map[string]string{"PSM2_MULTI_EP": "0"}))
	off.wire = newLoopNet(64).open
	_, d2, _ := openDomainAV(t, off, info)
	if _, err := d2.OpenSEP(&fi.Info{EP: &fi.EPAttr{Type: fi.EP_RDM, TxCtxCnt: 2}}); !errors.Is(err, fi.EINVAL) {
		t.Fatalf("PSM2_MULTI_EP=0, 2 contexts: %v", err)
	}
	if off.maxSEPContexts() != 1 {
		t.Fatalf("PSM2_MULTI_EP=0: max_ep_tx_ctx %d", off.maxSEPContexts())
	}
	s1, err := d2.OpenSEP(&fi.Info{EP: &fi.EPAttr{Type: fi.EP_RDM}})
	if err != nil || s1.Len() != 1 {
		t.Fatalf("PSM2_MULTI_EP=0, 1 context: %v", err)
	}
	s1.Close()
}

// TestSEPLateRole: MPICH opens, binds and enables a context's transmit
// role before it opens the receive role; the receive CQ then binds to the
// running endpoint, and messages reach it. An ordinary enabled endpoint
// still refuses a bind.
func TestSEPLateRole(t *testing.T) {
	p := New(newFakeHost(nil))
	p.wire = newLoopNet(64).open
	info := &fi.Info{Caps: fi.TAGGED, EP: &fi.EPAttr{Type: fi.EP_RDM}}
	_, d, _ := openDomainAV(t, p, info)
	av, err := d.OpenAV(&AVAttr{Type: fi.AV_TABLE, RxCtxBits: 1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.OpenSEP(&fi.Info{Caps: fi.TAGGED, EP: &fi.EPAttr{Type: fi.EP_RDM, TxCtxCnt: 2, RxCtxCnt: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Bind(av, 0); err != nil {
		t.Fatal(err)
	}
	txcq, _ := d.OpenCQ(&CQAttr{Format: fi.CQ_FORMAT_TAGGED, WaitObj: fi.WAIT_UNSPEC})
	rxcq, _ := d.OpenCQ(&CQAttr{Format: fi.CQ_FORMAT_TAGGED, WaitObj: fi.WAIT_UNSPEC})
	ep, _ := s.Context(1, RoleTx)
	for _, err := range []error{ep.Bind(txcq, fi.TRANSMIT), ep.EnableRole(RoleTx)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if !ep.enabled {
		t.Fatal("the only opened role is enabled: the context should be")
	}
	ep, _ = s.Context(1, RoleRx)
	for _, err := range []error{ep.Bind(rxcq, fi.RECV), ep.EnableRole(RoleRx)} {
		if err != nil {
			t.Fatalf("late receive role: %v", err)
		}
	}
	var name [EPNameLen]byte
	s.Name(name[:])
	var a [1]uint64
	av.Insert(name[:], a[:], nil, 0, 0)
	pr := &pair{t: t, dom: d}
	buf := make([]byte, 4)
	pr.recv(ep, buf, fi.AddrUnspec, 7, 0, 0x77, fi.TAGGED|fi.COMPLETION)
	if err := pr.send(ep, rxAddr(a[0], 1, 1), []byte("late"), 7, 0, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	if c, err := pr.read(rxcq); err != nil || c.ctx != 0x77 || string(buf) != "late" {
		t.Fatalf("receive on the late role: %+v %v %q", c, err, buf)
	}
	plain, _ := openBoundEP(t, d, av, info)
	if err := plain.Bind(rxcq, fi.RECV); !errors.Is(err, fi.EOPBADSTATE) {
		t.Fatalf("bind to an enabled endpoint: %v", err)
	}
	plain.Close()
	ep.ReleaseContext()
	s.Close()
}
