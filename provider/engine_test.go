package provider

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
)

// cqTagged is struct fi_cq_tagged_entry.
type cqTagged struct {
	ctx   uintptr
	flags uint64
	len   uint64
	buf   uintptr
	data  uint64
	tag   uint64
}

// cqErrEntry is struct fi_cq_err_entry (API >= 1.5).
type cqErrEntry struct {
	ctx       uintptr
	flags     uint64
	len       uint64
	buf       uintptr
	data      uint64
	tag       uint64
	olen      uint64
	err       int32
	provErrno int32
	errData   uintptr
	errSize   uint64
}

// words views v, an entry struct or an array of them, as the words a CQ
// read fills (what the shim's cqView does with the application's buffer).
func words[T any](v *T) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(v)), unsafe.Sizeof(*v)/8)
}

// readErrC is what the shim's fi_cq_readerr does at API 1.5: ReadErr into
// a struct fi_cq_err_entry, into the caller's err_data buffer if it gives
// one.
func readErrC(cq *CQ, e *cqErrEntry) (int, error) {
	var errBuf []byte
	if e.errData != 0 && e.errSize > 0 {
		errBuf = cbytes(e.errData, e.errSize)
	}
	var x CQErr
	n, err := cq.ReadErr(&x, errBuf)
	if err != nil {
		return n, err
	}
	e.ctx, e.flags, e.len, e.buf, e.data, e.tag, e.olen = x.Ctx, x.Flags, x.Len, x.Buf, x.Data, x.Tag, x.OLen
	e.err, e.provErrno = x.Err, x.ProvErr
	if errBuf == nil {
		e.errData = x.ErrDataAddr
	}
	e.errSize = uint64(x.ErrDataLen)
	return n, nil
}

func TestCQLayouts(t *testing.T) {
	if unsafe.Sizeof(cqTagged{}) != cqTaggedSize || unsafe.Sizeof(cqErrEntry{}) != cqErrSize {
		t.Fatalf("entry sizes %d, %d", unsafe.Sizeof(cqTagged{}), unsafe.Sizeof(cqErrEntry{}))
	}
}

// pair is two enabled endpoints of one domain on a loop network, each
// with its own CQ, sharing one AV that holds both names (a=0, b=1).
type pair struct {
	t     testing.TB
	dom   *Domain
	av    *AV
	a, b  *Endpoint
	cqa   *CQ
	cqb   *CQ
	keep  [][]byte
	net   *loopNet
	aAddr uint64
	bAddr uint64
}

func newPair(t *testing.T, caps uint64, thresh int) *pair {
	t.Helper()
	p := New(newFakeHost(nil))
	net := newLoopNet(thresh)
	p.wire = net.open
	return buildPair(t, p, caps, net)
}

// newBenchPair is a pair over the real shared-memory wire.
func newBenchPair(b *testing.B) *pair {
	return buildPair(b, New(newFakeHost(nil)), fi.TAGGED, nil)
}

func buildPair(t testing.TB, p *Provider, caps uint64, net *loopNet) *pair {
	return buildPairProgress(t, p, caps, net, fi.PROGRESS_UNSPEC)
}

// openDomainAV opens a fabric of p, a domain for info and an AV table in
// it.
func openDomainAV(t testing.TB, p *Provider, info *fi.Info) (*Fabric, *Domain, *AV) {
	t.Helper()
	f, err := p.OpenFabric(&fi.FabricAttr{Name: "psm2"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := f.OpenDomain(info)
	if err != nil {
		t.Fatal(err)
	}
	av, err := d.OpenAV(&AVAttr{Type: fi.AV_TABLE})
	if err != nil {
		t.Fatal(err)
	}
	return f, d, av
}

// openBoundEP opens an endpoint of d with a tagged CQ for both directions,
// bound to av, and enables it.
func openBoundEP(t testing.TB, d *Domain, av *AV, info *fi.Info) (*Endpoint, *CQ) {
	t.Helper()
	ep, err := d.OpenEndpoint(info, 0)
	if err != nil {
		t.Fatal(err)
	}
	cq, err := d.OpenCQ(&CQAttr{Format: fi.CQ_FORMAT_TAGGED, WaitObj: fi.WAIT_UNSPEC})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{ep.Bind(av, 0), ep.Bind(cq, fi.TRANSMIT|fi.RECV), ep.Enable()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return ep, cq
}

func buildPairProgress(t testing.TB, p *Provider, caps uint64, net *loopNet, prog fi.Progress) *pair {
	info := &fi.Info{Caps: caps, Domain: &fi.DomainAttr{CQDataSize: 4, DataProgress: prog}, EP: &fi.EPAttr{Type: fi.EP_RDM}}
	f, d, av := openDomainAV(t, p, info)
	pr := &pair{t: t, dom: d, av: av, net: net}
	pr.a, pr.cqa = openBoundEP(t, d, av, info)
	pr.b, pr.cqb = openBoundEP(t, d, av, info)
	var names [2 * EPNameLen]byte
	pr.a.name().put(names[:])
	pr.b.name().put(names[EPNameLen:])
	var out [2]uint64
	if n, err := av.Insert(names[:], out[:], nil, 0, 0); n != 2 || err != nil {
		t.Fatalf("Insert = %d, %v", n, err)
	}
	pr.aAddr, pr.bAddr = out[0], out[1]
	t.Cleanup(func() {
		for _, c := range []interface{ Close() error }{pr.a, pr.b, pr.cqa, pr.cqb, pr.av, d, f} {
			if err := c.Close(); err != nil {
				t.Errorf("close %T: %v", c, err)
			}
		}
	})
	return pr
}

func (p *pair) send(ep *Endpoint, dest uint64, data []byte, tag uint64, ctx uintptr, flags uint64) error {
	p.keep = append(p.keep, data)
	v := Iovec{Len: uint64(len(data))}
	if len(data) > 0 {
		v.Base = unsafe.Pointer(&data[0])
	}
	return ep.Send([]Iovec{v}, dest, tag, 0xD47A, cptr(ctx), flags)
}

func (p *pair) recv(ep *Endpoint, buf []byte, src, tag, ignore uint64, ctx uintptr, flags uint64) error {
	p.keep = append(p.keep, buf)
	v := Iovec{Len: uint64(len(buf))}
	if len(buf) > 0 {
		v.Base = unsafe.Pointer(&buf[0])
	}
	return ep.Recv([]Iovec{v}, src, tag, ignore, cptr(ctx), flags)
}

// read takes one completion from cq, driving progress a few times.
func (p *pair) read(cq *CQ) (cqTagged, error) {
	var e cqTagged
	for i := 0; i < 100; i++ {
		n, err := cq.Read(words(&e), 1, nil)
		if n == 1 {
			return e, nil
		}
		if !errors.Is(err, fi.EAGAIN) {
			return e, err
		}
	}
	return e, fi.EAGAIN
}

func (p *pair) readErr(cq *CQ) cqErrEntry {
	p.t.Helper()
	var e cqErrEntry
	if n, err := readErrC(cq, &e); n != 1 || err != nil {
		p.t.Fatalf("ReadErr = %d, %v", n, err)
	}
	return e
}

func TestEngineEmptyCQIsEAGAIN(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.MSG, 64)
	var e cqTagged
	if n, err := p.cqa.Read(words(&e), 1, nil); n != 0 || !errors.Is(err, fi.EAGAIN) {
		t.Fatalf("Read on empty = %d, %v; want 0, EAGAIN", n, err)
	}
	var ee cqErrEntry
	if _, err := readErrC(p.cqa, &ee); !errors.Is(err, fi.EAGAIN) {
		t.Fatalf("ReadErr on empty = %v", err)
	}
}

func TestEngineTaggedSizesAndKinds(t *testing.T) {
	for _, size := range []int{0, 1, 63, 64, 65, 4096, 16000, 16001, 100000} {
		p := newPair(t, fi.TAGGED|fi.MSG, 16000)
		msg := make([]byte, size)
		for i := range msg {
			msg[i] = byte(i*7 + size)
		}
		got := make([]byte, size)
		// Posted first (expected) for even sizes, after (unexpected) for odd.
		if size%2 == 0 {
			if err := p.recv(p.b, got, fi.AddrUnspec, 42, 0, 0xB0, fi.TAGGED|fi.COMPLETION); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.send(p.a, p.bAddr, msg, 42, 0xA0, fi.TAGGED|fi.COMPLETION|fi.REMOTE_CQ_DATA); err != nil {
			t.Fatalf("size %d: send: %v", size, err)
		}
		if size%2 == 1 {
			p.dom.progress()
			if err := p.recv(p.b, got, fi.AddrUnspec, 42, 0, 0xB0, fi.TAGGED|fi.COMPLETION); err != nil {
				t.Fatal(err)
			}
		}
		rc, err := p.read(p.cqb)
		if err != nil {
			t.Fatalf("size %d: recv completion: %v", size, err)
		}
		want := cqTagged{ctx: 0xB0, flags: fi.RECV | fi.TAGGED | fi.REMOTE_CQ_DATA, len: uint64(size), data: 0xD47A, tag: 42}
		if size > 0 {
			want.buf = uintptr(unsafe.Pointer(&got[0]))
		}
		if rc != want {
			t.Errorf("size %d: completion %+v, want %+v", size, rc, want)
		}
		if !bytes.Equal(got, msg) {
			t.Errorf("size %d: payload differs", size)
		}
		sc, err := p.read(p.cqa)
		if err != nil || sc.ctx != 0xA0 || sc.flags != fi.SEND|fi.TAGGED {
			t.Errorf("size %d: send completion %+v, %v", size, sc, err)
		}
	}
}

func TestEngineMatchingOrderAndIgnore(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.DIRECTED_RECV, 64)
	// Three receives; the wildcard one posted first wins for tag 7.
	b1, b2, b3 := make([]byte, 8), make([]byte, 8), make([]byte, 8)
	p.recv(p.b, b1, fi.AddrUnspec, 0x100, 0xFF, 1, fi.TAGGED|fi.COMPLETION) // matches 0x100..0x1FF
	p.recv(p.b, b2, fi.AddrUnspec, 7, 0, 2, fi.TAGGED|fi.COMPLETION)
	p.recv(p.b, b3, p.bAddr, 9, 0, 3, fi.TAGGED|fi.COMPLETION) // directed at b itself: a's message must not match
	p.send(p.a, p.bAddr, []byte("seven"), 7, 10, fi.TAGGED)
	p.send(p.a, p.bAddr, []byte("x1ab"), 0x1AB, 11, fi.TAGGED)
	p.send(p.a, p.bAddr, []byte("nine"), 9, 12, fi.TAGGED)
	c, _ := p.read(p.cqb)
	if c.ctx != 2 || c.tag != 7 {
		t.Errorf("first completion %+v, want ctx 2 tag 7", c)
	}
	c, _ = p.read(p.cqb)
	if c.ctx != 1 || c.tag != 0x1AB || string(b1[:c.len]) != "x1ab" {
		t.Errorf("second completion %+v, want ctx 1 tag 0x1ab", c)
	}
	if c, err := p.read(p.cqb); err == nil {
		t.Errorf("directed receive matched another source: %+v", c)
	}
	// b's own send to itself matches the directed receive.
	p.send(p.b, p.bAddr, []byte("self"), 9, 13, fi.TAGGED)
	c, _ = p.read(p.cqb)
	for c.flags&fi.SEND != 0 {
		c, _ = p.read(p.cqb)
	}
	if c.ctx != 3 || string(b3[:4]) != "self" {
		t.Errorf("directed completion %+v", c)
	}
}

func TestEngineOrderPreservedAcrossKinds(t *testing.T) {
	p := newPair(t, fi.TAGGED, 64)
	sizes := []int{10, 200, 5, 1000, 64, 65}
	for i, s := range sizes {
		m := bytes.Repeat([]byte{byte(i)}, s)
		if err := p.send(p.a, p.bAddr, m, 5, uintptr(i), fi.TAGGED); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range sizes {
		buf := make([]byte, 2000)
		p.recv(p.b, buf, fi.AddrUnspec, 5, 0, uintptr(100+i), fi.TAGGED|fi.COMPLETION)
		c, err := p.read(p.cqb)
		if err != nil || c.ctx != uintptr(100+i) || c.len != uint64(s) || buf[0] != byte(i) && s > 0 {
			t.Fatalf("message %d: %+v %v", i, c, err)
		}
	}
}

func TestEngineTruncation(t *testing.T) {
	for _, size := range []int{40, 5000} {
		p := newPair(t, fi.TAGGED, 64)
		p.send(p.a, p.bAddr, make([]byte, size), 1, 0, fi.TAGGED)
		buf := make([]byte, 16)
		p.recv(p.b, buf, fi.AddrUnspec, 1, 0, 0x77, fi.TAGGED|fi.COMPLETION)
		if _, err := p.read(p.cqb); !errors.Is(err, fi.EAVAIL) {
			t.Fatalf("size %d: read = %v, want EAVAIL", size, err)
		}
		e := p.readErr(p.cqb)
		if e.ctx != 0x77 || fi.Errno(e.err) != fi.ETRUNC || e.len != 16 || e.olen != uint64(size-16) || e.tag != 1 {
			t.Errorf("size %d: err entry %+v", size, e)
		}
	}
}

// A peek looks at what has arrived first: an application that peeks and
// reads the FI_ENOMSG answer in a loop (the read finds that entry and so
// never progresses) still sees the message come, as fabtests'
// fi_rdm_tagged_peek does with fi_cq_sread.
func TestEnginePeekProgresses(t *testing.T) {
	p := newPair(t, fi.TAGGED, 64)
	if err := p.send(p.a, p.bAddr, []byte("late"), 9, 0, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if i == 100 {
			t.Fatal("100 peeks never saw the message")
		}
		p.recv(p.b, nil, fi.AddrUnspec, 9, 0, 0x61, fi.TAGGED|fi.PEEK)
		c, err := p.read(p.cqb)
		if err == nil {
			if c.ctx != 0x61 || c.len != 4 || c.tag != 9 {
				t.Fatalf("peek hit %+v", c)
			}
			return
		}
		if !errors.Is(err, fi.EAVAIL) {
			t.Fatal(err)
		}
		if e := p.readErr(p.cqb); fi.Errno(e.err) != fi.ENOMSG {
			t.Fatalf("peek answer %+v", e)
		}
	}
}

func TestEnginePeekClaimDiscard(t *testing.T) {
	p := newPair(t, fi.TAGGED, 64)
	// Peek with nothing there: an FI_ENOMSG error entry.
	p.recv(p.b, nil, fi.AddrUnspec, 3, 0, 0x51, fi.TAGGED|fi.PEEK)
	if _, err := p.read(p.cqb); !errors.Is(err, fi.EAVAIL) {
		t.Fatalf("peek miss: %v", err)
	}
	if e := p.readErr(p.cqb); fi.Errno(e.err) != fi.ENOMSG || e.ctx != 0x51 {
		t.Fatalf("peek miss entry %+v", e)
	}
	p.send(p.a, p.bAddr, []byte("claimed!"), 3, 0, fi.TAGGED|fi.REMOTE_CQ_DATA)
	p.send(p.a, p.bAddr, []byte("dropped"), 4, 0, fi.TAGGED)
	p.dom.progress()
	// Peek|claim, then claim into a buffer with the same context.
	p.recv(p.b, nil, fi.AddrUnspec, 3, 0, 0x52, fi.TAGGED|fi.PEEK|fi.CLAIM)
	c, err := p.read(p.cqb)
	if err != nil || c.ctx != 0x52 || c.len != 8 || c.tag != 3 || c.data != 0xD47A {
		t.Fatalf("peek hit %+v %v", c, err)
	}
	// A plain receive for tag 3 must not see the claimed message.
	other := make([]byte, 16)
	p.recv(p.b, other, fi.AddrUnspec, 3, 0, 0x53, fi.TAGGED|fi.COMPLETION)
	buf := make([]byte, 16)
	if err := p.recv(p.b, buf, fi.AddrUnspec, 0, 0, 0x52, fi.TAGGED|fi.CLAIM|fi.COMPLETION); err != nil {
		t.Fatal(err)
	}
	c, err = p.read(p.cqb)
	if err != nil || c.ctx != 0x52 || string(buf[:c.len]) != "claimed!" {
		t.Fatalf("claim %+v %v", c, err)
	}
	// Peek|discard drops the other one.
	p.recv(p.b, nil, fi.AddrUnspec, 4, 0, 0x54, fi.TAGGED|fi.PEEK|fi.DISCARD)
	if c, err = p.read(p.cqb); err != nil || c.ctx != 0x54 {
		t.Fatalf("discard %+v %v", c, err)
	}
	p.recv(p.b, nil, fi.AddrUnspec, 4, 0, 0x55, fi.TAGGED|fi.PEEK)
	if _, err := p.read(p.cqb); !errors.Is(err, fi.EAVAIL) || fi.Errno(p.readErr(p.cqb).err) != fi.ENOMSG {
		t.Fatalf("discarded message still there")
	}
	// Cancel the receive for tag 3 that never matched.
	if err := p.b.Cancel(cptr(0x53)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.read(p.cqb); !errors.Is(err, fi.EAVAIL) {
		t.Fatal("no cancel entry")
	}
	if e := p.readErr(p.cqb); fi.Errno(e.err) != fi.ECANCELED || e.ctx != 0x53 {
		t.Fatalf("cancel entry %+v", e)
	}
	if err := p.b.Cancel(cptr(0x53)); !errors.Is(err, fi.ENOENT) {
		t.Fatalf("second cancel = %v", err)
	}
}

func TestEngineMultiRecv(t *testing.T) {
	p := newPair(t, fi.MSG|fi.MULTI_RECV, 64)
	min := uint64(100)
	if err := p.b.SetOpt(optLevelEndpoint, optMinMultiRecv, binary.NativeEndian.AppendUint64(nil, min)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 300)
	p.recv(p.b, buf, fi.AddrUnspec, 0, 0, 0x99, fi.MSG|fi.MULTI_RECV|fi.COMPLETION)
	for i := 0; i < 3; i++ {
		p.send(p.a, p.bAddr, bytes.Repeat([]byte{byte('a' + i)}, 90), 0, 0, fi.MSG)
	}
	var off uint64
	for i := 0; i < 3; i++ {
		c, err := p.read(p.cqb)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if c.ctx != 0x99 || c.len != 90 || c.buf != uintptr(unsafe.Pointer(&buf[off])) || buf[off] != byte('a'+i) {
			t.Fatalf("message %d: %+v", i, c)
		}
		last := i == 2 // 300 - 3*90 = 30 < min_multi_recv
		if (c.flags&fi.MULTI_RECV != 0) != last {
			t.Fatalf("message %d: FI_MULTI_RECV flag %v", i, c.flags&fi.MULTI_RECV != 0)
		}
		off += 90
	}
}

// TestEngineTaggedMultiRecv: FI_MULTI_RECV on a tagged receive (beyond
// psm2, which ignores the flag there) takes every message whose tag
// matches into consecutive parts of the buffer, each completion with its
// own tag; a message of another tag goes elsewhere.
func TestEngineTaggedMultiRecv(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.MULTI_RECV, 64)
	if err := p.b.SetOpt(optLevelEndpoint, optMinMultiRecv, binary.NativeEndian.AppendUint64(nil, 40)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	other := make([]byte, 8)
	// Tags 0x70..0x7f (ignore the low 4 bits) land in buf.
	if err := p.recv(p.b, buf, fi.AddrUnspec, 0x70, 0xf, 0x99, fi.TAGGED|fi.MULTI_RECV|fi.COMPLETION); err != nil {
		t.Fatalf("a tagged multi-receive: %v", err)
	}
	p.recv(p.b, other, fi.AddrUnspec, 0x80, 0, 0x88, fi.TAGGED|fi.COMPLETION)
	p.send(p.a, p.bAddr, bytes.Repeat([]byte{'a'}, 30), 0x71, 0, fi.TAGGED)
	p.send(p.a, p.bAddr, []byte("other"), 0x80, 0, fi.TAGGED)
	p.send(p.a, p.bAddr, bytes.Repeat([]byte{'b'}, 30), 0x7e, 0, fi.TAGGED)
	p.send(p.a, p.bAddr, bytes.Repeat([]byte{'c'}, 30), 0x7f, 0, fi.TAGGED)
	var off uint64
	seen := 0
	for i := 0; i < 4; i++ {
		c, err := p.read(p.cqb)
		if err != nil {
			t.Fatalf("completion %d: %v", i, err)
		}
		if c.ctx == 0x88 {
			if c.tag != 0x80 || string(other[:5]) != "other" {
				t.Fatalf("the other receive: %+v %q", c, other)
			}
			continue
		}
		want := []uint64{0x71, 0x7e, 0x7f}[seen]
		if c.ctx != 0x99 || c.tag != want || c.len != 30 || c.buf != uintptr(unsafe.Pointer(&buf[off])) ||
			buf[off] != "abc"[seen] {
			t.Fatalf("part %d: %+v", seen, c)
		}
		// 100 - 3*30 = 10 is below min_multi_recv: the third part
		// releases the buffer.
		if last := seen == 2; (c.flags&fi.MULTI_RECV != 0) != last {
			t.Fatalf("part %d: FI_MULTI_RECV flag %v", seen, c.flags&fi.MULTI_RECV != 0)
		}
		seen++
		off += 30
	}
	if seen != 3 {
		t.Fatalf("%d parts in the multi-receive buffer, want 3", seen)
	}
}

func TestEngineSelectiveCompletionAndInject(t *testing.T) {
	p := newPair(t, fi.TAGGED, 64)
	// Rebind is not allowed after enable, so make a fresh endpoint pair
	// with selective completion on b's CQ by hand.
	p.b.rxSel, p.a.txSel = true, true
	p.recv(p.b, make([]byte, 8), fi.AddrUnspec, 1, 0, 0x1, fi.TAGGED)           // no FI_COMPLETION
	p.send(p.a, p.bAddr, []byte("x"), 1, 0x2, fi.TAGGED)                        // no FI_COMPLETION
	p.send(p.a, p.bAddr, []byte("y"), 2, 0x3, fi.TAGGED|fi.INJECT|NoCompletion) // fi_tinject
	p.recv(p.b, make([]byte, 8), fi.AddrUnspec, 2, 0, 0x4, fi.TAGGED|fi.COMPLETION)
	c, err := p.read(p.cqb)
	if err != nil || c.ctx != 0x4 {
		t.Fatalf("only the completion-flagged receive completes: %+v %v", c, err)
	}
	if c, err := p.read(p.cqa); err == nil {
		t.Fatalf("a selective or inject send completed: %+v", c)
	}
	// FI_INJECT as a flag only frees the buffer: the send completes.
	p.send(p.a, p.bAddr, []byte("z"), 3, 0x5, fi.TAGGED|fi.INJECT|fi.COMPLETION)
	if c, err := p.read(p.cqa); err != nil || c.ctx != 0x5 {
		t.Fatalf("a send with FI_INJECT|FI_COMPLETION did not complete: %+v %v", c, err)
	}
	if err := p.send(p.a, p.bAddr, make([]byte, 65), 1, 0, fi.TAGGED|fi.INJECT); !errors.Is(err, fi.EMSGSIZE) {
		t.Fatalf("inject over inject_size = %v", err)
	}
}

func TestEngineSourceAndUnknownSender(t *testing.T) {
	p := newPair(t, fi.TAGGED|fi.SOURCE|fi.SOURCE_ERR, 64)
	p.send(p.a, p.bAddr, []byte("hi"), 1, 0, fi.TAGGED)
	p.recv(p.b, make([]byte, 8), fi.AddrUnspec, 1, 0, 0x1, fi.TAGGED|fi.COMPLETION)
	var e cqTagged
	var src uint64
	for i := 0; i < 10; i++ {
		if n, _ := p.cqb.Read(words(&e), 1, words(&src)); n == 1 {
			break
		}
	}
	if e.ctx != 0x1 || src != p.aAddr {
		t.Fatalf("readfrom %+v src %d, want %d", e, src, p.aAddr)
	}
	// Remove a from the AV: its next message has an unknown source.
	a := p.aAddr
	if err := p.av.Remove([]uint64{a}, 0); err != nil {
		t.Fatal(err)
	}
	// a can still send to b (b's name is still in the AV).
	p.send(p.a, p.bAddr, []byte("who"), 1, 0, fi.TAGGED)
	p.recv(p.b, make([]byte, 8), fi.AddrUnspec, 1, 0, 0x2, fi.TAGGED|fi.COMPLETION)
	p.send(p.a, p.bAddr, []byte("again"), 1, 0, fi.TAGGED)
	p.recv(p.b, make([]byte, 8), fi.AddrUnspec, 1, 0, 0x3, fi.TAGGED|fi.COMPLETION)
	p.dom.progress()
	// Only fi_cq_readfrom asks for the source (as psm2): a plain read of
	// the first message succeeds...
	if c, err := p.read(p.cqb); err != nil || c.ctx != 0x2 {
		t.Fatalf("plain read of an unknown sender's message: %+v %v", c, err)
	}
	// ...and readfrom turns the second into an FI_EADDRNOTAVAIL entry.
	if n, err := p.cqb.Read(words(&e), 1, words(&src)); n != 0 || !errors.Is(err, fi.EAVAIL) {
		t.Fatalf("readfrom of an unknown source: %d %v", n, err)
	}
	var raw [EPNameLen]byte
	ee := cqErrEntry{errData: uintptr(unsafe.Pointer(&raw[0])), errSize: EPNameLen}
	if n, err := readErrC(p.cqb, &ee); n != 1 || err != nil {
		t.Fatal(err)
	}
	n, _ := UnmarshalEPName(raw[:])
	if fi.Errno(ee.err) != fi.EADDRNOTAVAIL || ee.errSize != EPNameLen || n.EPID != p.a.epid {
		t.Fatalf("unknown-source entry %+v name %+v", ee, n)
	}
}

// TestEngineSendQueue: a send the wire has no room for is queued, not
// refused (psm2 never answers -FI_EAGAIN to a send, and an MPI library
// that gets it would block in MPI_Isend until the peer polls). Queued sends
// go, in order, once a poll finds room, and complete then; an inject's or
// an eager-sized send's bytes are taken at the call; another peer's sends
// are not held up; past
// sendQMax queued sends the answer is -FI_EAGAIN.
func TestEngineSendQueue(t *testing.T) {
	p := newPair(t, fi.TAGGED, 64)
	w := p.b.tp.(*loopWire)
	w.full = true
	inj := []byte("inject!")
	big := make([]byte, 100) // over the pair's threshold: a rendezvous
	for i := range big {
		big[i] = byte(i * 7)
	}
	first := []byte("first")
	if err := p.send(p.a, p.bAddr, first, 1, 0x1, fi.TAGGED); err != nil {
		t.Fatalf("send into a full wire = %v, want it queued", err)
	}
	copy(first, "xxxxx") // an eager-sized send is copied at the call, as psm2 does
	if err := p.send(p.a, p.bAddr, inj, 2, 0, fi.TAGGED|fi.INJECT|NoCompletion); err != nil {
		t.Fatalf("inject into a full wire = %v, want it queued", err)
	}
	copy(inj, "changed")
	if err := p.send(p.a, p.bAddr, big, 3, 0x3, fi.TAGGED); err != nil {
		t.Fatalf("rendezvous into a full wire = %v, want it queued", err)
	}
	if c, err := p.read(p.cqa); err == nil {
		t.Fatalf("a queued send completed while the wire is full: %+v", c)
	}
	if p.a.sendQ.n != 3 {
		t.Fatalf("%d sends queued, want 3", p.a.sendQ.n)
	}
	// Another peer (a itself) is not held up by b's queue.
	self := make([]byte, 4)
	p.recv(p.a, self, fi.AddrUnspec, 9, 0, 0x90, fi.TAGGED)
	if err := p.send(p.a, p.aAddr, []byte("self"), 9, 0x91, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	got := map[uintptr]bool{}
	for range 2 {
		c, err := p.read(p.cqa)
		if err != nil {
			t.Fatalf("send to self behind another peer's queue: %v", err)
		}
		got[c.ctx] = true
	}
	if !got[0x90] || !got[0x91] || string(self) != "self" {
		t.Fatalf("send to self: completions %v, data %q", got, self)
	}

	w.full = false
	bufs := [][]byte{make([]byte, 8), make([]byte, 8), make([]byte, 128)}
	for i, b := range bufs {
		p.recv(p.b, b, fi.AddrUnspec, 0, ^uint64(0), uintptr(0x10+i), fi.TAGGED)
	}
	for i := range bufs {
		c, err := p.read(p.cqb)
		if err != nil {
			t.Fatalf("receive %d: %v", i, err)
		}
		if c.ctx != uintptr(0x10+i) || c.tag != uint64(i+1) {
			t.Fatalf("receive %d: %+v, want the queued sends in order", i, c)
		}
	}
	if string(bufs[0][:5]) != "first" || string(bufs[1][:7]) != "inject!" || !bytes.Equal(bufs[2][:100], big) {
		t.Fatalf("queued sends' data: %q %q %v", bufs[0], bufs[1], bytes.Equal(bufs[2][:100], big))
	}
	got = map[uintptr]bool{}
	for {
		c, err := p.read(p.cqa)
		if err != nil {
			break
		}
		got[c.ctx] = true
	}
	if len(got) != 2 || !got[0x1] || !got[0x3] {
		t.Fatalf("send completions after the queue drained: %v, want 0x1 and 0x3", got)
	}
	if p.a.sendQ.n != 0 {
		t.Fatalf("%d sends still queued", p.a.sendQ.n)
	}

	// The bound.
	w.full = true
	one := []byte("x")
	v := Iovec{Base: unsafe.Pointer(&one[0]), Len: 1}
	for i := range sendQMax {
		if err := p.a.Send([]Iovec{v}, p.bAddr, 5, 0, nil, fi.TAGGED); err != nil {
			t.Fatalf("queued send %d: %v", i, err)
		}
	}
	if err := p.a.Send([]Iovec{v}, p.bAddr, 5, 0, nil, fi.TAGGED); !errors.Is(err, fi.EAGAIN) {
		t.Fatalf("send past %d queued = %v, want EAGAIN", sendQMax, err)
	}
}

// TestEngineSendQueueMoves: queued sends move on without any call of the
// application's (a thread that only injects): the domain's goroutine hands
// them to the wire once it has room.
func TestEngineSendQueueMoves(t *testing.T) {
	p := newPair(t, fi.TAGGED, 64)
	w := p.b.tp.(*loopWire)
	w.full = true
	if err := p.send(p.a, p.bAddr, []byte("later"), 1, 0, fi.TAGGED|fi.INJECT|NoCompletion); err != nil {
		t.Fatal(err)
	}
	queued := func() int {
		p.dom.lock()
		defer p.dom.unlock()
		return p.a.sendQ.n
	}
	time.Sleep(5 * sendQTick)
	if n := queued(); n != 1 {
		t.Fatalf("%d sends queued while the wire is full, want 1", n)
	}
	p.dom.lock()
	w.full = false
	p.dom.unlock()
	for end := time.Now().Add(2 * time.Second); queued() != 0; {
		if time.Now().After(end) {
			t.Fatal("the queued send did not move without the application")
		}
		time.Sleep(sendQTick)
	}
	buf := make([]byte, 8)
	p.recv(p.b, buf, fi.AddrUnspec, 1, 0, 0x7, fi.TAGGED)
	if c, err := p.read(p.cqb); err != nil || c.ctx != 0x7 || string(buf[:5]) != "later" {
		t.Fatalf("receive: %+v %v %q", c, err, buf)
	}
}

func TestEngineBadInput(t *testing.T) {
	p := newPair(t, fi.TAGGED, 64)
	if err := p.send(p.a, 12345, []byte("x"), 1, 0, fi.TAGGED); !errors.Is(err, fi.EINVAL) {
		t.Errorf("unknown address = %v", err)
	}
	if err := p.a.Send([]Iovec{{Len: 1}}, p.bAddr, 0, 0, nil, fi.TAGGED); !errors.Is(err, fi.EINVAL) {
		t.Errorf("a NULL piece = %v", err)
	}
	if err := p.a.Send(make([]Iovec, getinfo.IovLimit+1), p.bAddr, 0, 0, nil, fi.TAGGED); !errors.Is(err, fi.EINVAL) {
		t.Errorf("iov count over the limit = %v", err)
	}
	v := Iovec{Base: unsafe.Pointer(&p.keep), Len: getinfo.MaxMsgSize + 1}
	if err := p.a.Send([]Iovec{v}, p.bAddr, 0, 0, nil, fi.TAGGED); !errors.Is(err, fi.EMSGSIZE) {
		t.Errorf("over max_msg_size = %v", err)
	}
	var names [2 * EPNameLen]byte
	copy(names[:], "garbage garbage garbage garbage!")
	var out [2]uint64
	if n, err := p.av.Insert(names[:], out[:], nil, 0, 0); n != 0 || err != nil || out[0] != fi.AddrUnspec || out[1] != fi.AddrUnspec {
		t.Errorf("garbage names: %d, %v, %x", n, err, out)
	}
	if err := p.cqa.Close(); !errors.Is(err, fi.EBUSY) {
		t.Errorf("closing a bound CQ = %v", err)
	}
	if err := p.dom.Close(); !errors.Is(err, fi.EBUSY) {
		t.Errorf("closing a busy domain = %v", err)
	}
}

// TestAutoProgress: with FI_PROGRESS_AUTO the domain's goroutine moves
// data and fills the CQ while the application only looks, without ever
// reading (which would progress by itself); with manual progress nothing
// moves until a read. Runs over the real shared-memory wire, whose futex
// doorbell wakes the goroutine.
func TestAutoProgress(t *testing.T) {
	// One provider per process is the real shape: endpoint ids (and so
	// segment names) come from the provider, so each run closes its pair
	// before the next opens one.
	for _, prog := range []fi.Progress{fi.PROGRESS_AUTO, fi.PROGRESS_MANUAL} {
		t.Run(map[fi.Progress]string{fi.PROGRESS_AUTO: "auto", fi.PROGRESS_MANUAL: "manual"}[prog], func(t *testing.T) { testProgress(t, prog) })
	}
}

func testProgress(t *testing.T, prog fi.Progress) {
	{
		p := buildPairProgress(t, New(newFakeHost(map[string]string{"FI_PSM2_PROG_INTERVAL": "100"})), fi.TAGGED, nil, prog)
		buf := make([]byte, 32)
		p.recv(p.b, buf, fi.AddrUnspec, 3, 0, 0x1, fi.TAGGED|fi.COMPLETION)
		p.send(p.a, p.bAddr, []byte("auto"), 3, 0x2, fi.TAGGED|fi.COMPLETION)
		queued := func() int {
			p.dom.lock()
			defer p.dom.unlock()
			return p.cqb.n
		}
		deadline := time.Now().Add(2 * time.Second)
		for queued() == 0 && time.Now().Before(deadline) && prog == fi.PROGRESS_AUTO {
			time.Sleep(time.Millisecond)
		}
		if prog == fi.PROGRESS_MANUAL {
			time.Sleep(20 * time.Millisecond)
		}
		got := queued()
		if want := map[fi.Progress]int{fi.PROGRESS_AUTO: 1, fi.PROGRESS_MANUAL: 0}[prog]; got != want {
			t.Fatalf("progress %v: %d entries queued without a read, want %d", prog, got, want)
		}
		if prog == fi.PROGRESS_AUTO && string(buf[:4]) != "auto" {
			t.Fatalf("payload %q", buf[:4])
		}
	}
}

// TestEagerConnect: with PSM2_MULTI_EP=0 and an FI_AV_MAP AV (fi_psm2(7)'s
// conditions for FI_PSM2_LAZY_CONN=0, the default), inserting an address
// connects the bound endpoints to it at once; FI_PSM2_LAZY_CONN=1, an AV
// table or multi-EP on leave the connection to the address's first use.
func TestEagerConnect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		env   map[string]string
		typ   fi.AVType
		eager bool
	}{
		{"multi-EP off, AV map", map[string]string{"PSM2_MULTI_EP": "0"}, fi.AV_MAP, true},
		{"FI_PSM2_LAZY_CONN=1", map[string]string{"PSM2_MULTI_EP": "0", "FI_PSM2_LAZY_CONN": "1"}, fi.AV_MAP, false},
		{"AV table", map[string]string{"PSM2_MULTI_EP": "0"}, fi.AV_TABLE, false},
		{"multi-EP on", nil, fi.AV_MAP, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := newTestProvider(t, tc.env)
			net := newLoopNet(64)
			p.wire = net.open
			info := &fi.Info{Caps: fi.TAGGED, Domain: &fi.DomainAttr{CQDataSize: 4}, EP: &fi.EPAttr{Type: fi.EP_RDM}}
			f, d, table := openDomainAV(t, p, info)
			av, err := d.OpenAV(&AVAttr{Type: tc.typ})
			if err != nil {
				t.Fatal(err)
			}
			a, cqa := openBoundEP(t, d, av, info)
			b, cqb := openBoundEP(t, d, table, info)
			var name [EPNameLen]byte
			b.name().put(name[:])
			var out [1]uint64
			if n, err := av.Insert(name[:], out[:], nil, 0, 0); n != 1 || err != nil {
				t.Fatalf("Insert = %d, %v", n, err)
			}
			d.lock()
			connected := out[0] < uint64(len(a.engine.conns)) && a.engine.conns[out[0]] != 0
			d.unlock()
			if connected != tc.eager {
				t.Errorf("connected at insert: %v, want %v", connected, tc.eager)
			}
			for _, c := range []interface{ Close() error }{a, b, cqa, cqb, av, table, d, f} {
				if err := c.Close(); err != nil {
					t.Errorf("close %T: %v", c, err)
				}
			}
		})
	}
}
