package provider

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// TestEngineBadBuffer: over the real shared-memory wire, a send buffer
// that cannot be read or a receive buffer that cannot be written gives
// error completions: FI_EFAULT on the side whose buffer it is, FI_EIO on
// the other (an eager send is complete before the receiver copies, so it
// succeeds). The next message between the same endpoints arrives intact.
func TestEngineBadBuffer(t *testing.T) {
	// 4 MiB: more than an endpoint's bounce buffers hold (2 MiB), so the
	// copy protocol's send cannot complete before the receiver copies.
	none, err := unix.Mmap(-1, 0, 4<<20, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(none)
	for _, path := range []struct {
		name string
		env  map[string]string
	}{{"direct copy", nil}, {"copy protocol", map[string]string{"FI_SHM_DISABLE_CMA": "1"}}} {
		for _, n := range []int{8000, 4 << 20} {
			for _, badSend := range []bool{true, false} {
				env := path.env
				name := fmt.Sprintf("%s/%d bytes/bad send buffer %v", path.name, n, badSend)
				t.Run(name, func(t *testing.T) {
					p := buildPair(t, New(newFakeHost(env)), fi.TAGGED, nil)
					src, dst := bytes.Repeat([]byte{0x5a}, n), make([]byte, n)
					wantS, wantR := fi.EIO, fi.EFAULT
					if badSend {
						src, wantS, wantR = none[:n], fi.EFAULT, fi.EIO
					} else {
						dst = none[:n]
					}
					eager := n <= 16000
					if eager && !badSend {
						wantS = 0 // complete once in a bounce buffer
					}
					if err := p.recv(p.b, dst, fi.AddrUnspec, 1, 0, 0xB1, fi.TAGGED); err != nil {
						t.Fatal(err)
					}
					if err := p.send(p.a, p.bAddr, src, 1, 0xA1, fi.TAGGED); err != nil {
						t.Fatalf("send: %v", err)
					}
					if got := p.completion(p.cqa); got.ctx != 0xA1 || got.err != wantS {
						t.Errorf("send completion %+v, want error %d", got, wantS)
					}
					// Then a good message. An eager send that could not
					// read its buffer sent nothing: the first receive is
					// still posted and takes it.
					good := bytes.Repeat([]byte{0xc3}, n)
					rctx, tag := uintptr(0xB2), uint64(2)
					if eager && badSend {
						rctx, tag = 0xB1, 1
					} else {
						if got := p.completion(p.cqb); got.ctx != 0xB1 || got.err != wantR {
							t.Errorf("receive completion %+v, want error %d", got, wantR)
						}
						dst = make([]byte, n)
						if err := p.recv(p.b, dst, fi.AddrUnspec, 2, 0, 0xB2, fi.TAGGED); err != nil {
							t.Fatal(err)
						}
					}
					if err := p.send(p.a, p.bAddr, good, tag, 0xA2, fi.TAGGED); err != nil {
						t.Fatal(err)
					}
					if r := p.completion(p.cqb); r.ctx != rctx || r.err != 0 || r.len != uint64(n) || !bytes.Equal(dst, good) {
						t.Errorf("the good message after: %+v", r)
					}
					if s := p.completion(p.cqa); s.ctx != 0xA2 || s.err != 0 {
						t.Errorf("the good send: %+v", s)
					}
				})
			}
		}
	}
}

// done is a completion as the fault tests see it.
type done struct {
	ctx uintptr
	err fi.Errno
	len uint64
	buf uintptr
}

// completion takes the next entry of cq, success or error, within 5 s.
func (p *pair) completion(cq *CQ) done {
	p.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var e cqTagged
		n, err := cq.Read(words(&e), 1, nil)
		if n == 1 {
			return done{ctx: e.ctx, len: e.len, buf: e.buf}
		}
		if errors.Is(err, fi.EAVAIL) {
			ee := p.readErr(cq)
			return done{ctx: ee.ctx, err: fi.Errno(ee.err), len: ee.len, buf: ee.buf}
		}
		if !errors.Is(err, fi.EAGAIN) {
			p.t.Fatalf("CQ read: %v", err)
		}
	}
	p.t.Fatal("no completion within 5 s")
	return done{}
}
