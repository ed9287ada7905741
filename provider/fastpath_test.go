package provider

import (
	"bytes"
	"sync/atomic"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// A rendezvous send waiting for its receiver leaves the domain idle in C's
// eyes (the busy word 0): what completes it, the receiver's FIN, arrives
// in a ring C watches. So an fi_cq_read spinning meanwhile answers in C
// (cq.c's cq_idle reads the word) instead of calling into Go each time.
// The send still completes once the receive is posted.
func TestRendezvousSendLeavesDomainIdle(t *testing.T) {
	p := buildPair(t, New(newFakeHost(nil)), fi.TAGGED, nil) // the real shm wire
	msg := bytes.Repeat([]byte("rendezvous"), 6554)          // 65540 bytes: past the threshold
	if err := p.send(p.a, p.bAddr, msg, 9, 1, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	// b takes the RTS (unexpected: nothing posted yet); a polls too.
	for i := 0; i < 10; i++ {
		if _, err := p.read(p.cqb); err != fi.EAGAIN {
			t.Fatalf("b's CQ before any receive: %v", err)
		}
		if _, err := p.read(p.cqa); err != fi.EAGAIN {
			t.Fatalf("a's send completed before its receive was posted: %v", err)
		}
	}
	if s, q := p.a.engine.sending, p.a.engine.pending; s != 1 || q != 0 {
		t.Fatalf("sending %d, pending %d; want 1, 0", s, q)
	}
	if busy := atomic.LoadUint64(fastWord(p.dom.fast, domBusy)); busy != 0 {
		t.Fatalf("busy word %d with only a send waiting for its FIN: fi_cq_read would call into Go", busy)
	}
	buf := make([]byte, len(msg))
	if err := p.recv(p.b, buf, p.aAddr, 9, 0, 2, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	if e, err := p.read(p.cqb); err != nil || e.ctx != 2 || e.len != uint64(len(msg)) {
		t.Fatalf("receive completion %+v, %v", e, err)
	}
	if !bytes.Equal(buf, msg) {
		t.Fatal("received bytes differ")
	}
	if e, err := p.read(p.cqa); err != nil || e.ctx != 1 {
		t.Fatalf("send completion %+v, %v", e, err)
	}
	if s := p.a.engine.sending; s != 0 {
		t.Fatalf("sending %d after the send completed", s)
	}
}
