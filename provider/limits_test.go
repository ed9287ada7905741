package provider

import (
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/hfi"
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// What a network peer can make an endpoint keep is bounded, and at the
// bound the sender is held back, not dropped (docs/hfi.md, "Limits").

// fillMsg writes message i's contents: its number, then a pattern of it.
func fillMsg(b []byte, i int) {
	binary.LittleEndian.PutUint64(b, uint64(i))
	for k := 8; k < len(b); k++ {
		b[k] = byte(i*31 + k*7)
	}
}

// TestUnexpectedHeldBack (row 7): untagged messages flood an endpoint
// that posts only tagged receives. Its unexpected messages stay within
// FI_PSM2_UNEXP_BYTES (4 MiB here): the sender is held back (its sends
// answer -FI_EAGAIN), not the receiver's memory grown. Then the receiver
// posts receives: all 10^5 messages of 4 KiB (10^4 under -race) arrive,
// once each, in order, intact.
func TestUnexpectedHeldBack(t *testing.T) {
	const limit, size = 4 << 20, 4096
	env := map[string]string{"PSM2_DEVICES": "hfi", "FI_PSM2_IFACE": "127.0.0.1", "FI_PSM2_INJECT_SIZE": "4096",
		"FI_PSM2_UNEXP_BYTES": "4194304", "FI_PSM2_CONN_TIMEOUT": "2"}
	a, b := openHfiNode(t, env), openHfiNode(t, env)
	bAddr, aAddr := connectNodes(t, a, b)
	count := 100_000
	if raceEnabled {
		count = 10_000
	}
	// b posts a tagged receive that nothing matches.
	never := make([]byte, 8)
	nv := Iovec{Base: unsafe.Pointer(&never[0]), Len: 8}
	if err := b.ep.Recv([]Iovec{nv}, aAddr, 1<<40, 0, cptr(1<<20), fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, size)
	sent, sendsDone := 0, 0
	send := func() bool {
		fillMsg(out, sent)
		v := Iovec{Base: unsafe.Pointer(&out[0]), Len: size}
		err := a.ep.Send([]Iovec{v}, bAddr, 0, 0, cptr(uintptr(sent+1)), fi.MSG|fi.INJECT)
		if errors.Is(err, fi.EAGAIN) {
			return false
		}
		if err != nil {
			t.Fatalf("send %d: %v", sent, err)
		}
		sent++
		return true
	}
	reap := func(n *hfiNode, who string) int {
		k := 0
		for {
			var e [8]cqTagged
			got, err := n.cq.Read(words(&e), 8, nil)
			if errors.Is(err, fi.EAVAIL) {
				var ee cqErrEntry
				readErrC(n.cq, &ee)
				t.Fatalf("%s's error completion: %+v", who, ee)
			}
			if got <= 0 {
				return k
			}
			k += got
		}
	}
	uxBytes := func() uint64 {
		b.ep.dom.lock()
		defer b.ep.dom.unlock()
		_, n := b.ep.engine.Kept()
		return n
	}
	refusals := func() uint64 {
		b.ep.dom.lock()
		defer b.ep.dom.unlock()
		return b.ep.engine.refusals
	}
	// Phase 1: a sends until it has been held back (-FI_EAGAIN) for a
	// second, or has sent all (its own queue holds 65,536 sends), and
	// then a second more.
	var worst uint64
	held, end := time.Time{}, time.Time{}
	for end.IsZero() || time.Now().Before(end) {
		if sent < count && send() {
			held = time.Time{}
		} else if held.IsZero() {
			held = time.Now()
		} else if time.Since(held) > time.Second && end.IsZero() {
			end = time.Now().Add(time.Second)
		}
		sendsDone += reap(a, "sender")
		reap(b, "receiver")
		worst = max(worst, uxBytes())
	}
	if worst > limit+size {
		t.Fatalf("unexpected messages held %d bytes, limit %d", worst, limit)
	}
	if r := refusals(); r == 0 {
		t.Fatalf("%d messages sent, none refused: the receiver kept them all", sent)
	}
	t.Logf("phase 1: %d messages sent (%d held back by -FI_EAGAIN), at most %d bytes unexpected at the receiver, %d refusals",
		sent, count-sent, worst, refusals())
	// Phase 2: b posts receives, at most 1024 at a time, and checks each.
	const window = 1024
	bufs := make([][]byte, window)
	for i := range bufs {
		bufs[i] = make([]byte, size)
	}
	posted, got := 0, 0
	post := func() {
		for posted < count && posted-got < window {
			v := Iovec{Base: unsafe.Pointer(&bufs[posted%window][0]), Len: size}
			if err := b.ep.Recv([]Iovec{v}, fi.AddrUnspec, 0, 0, cptr(uintptr(posted+1)), fi.MSG); err != nil {
				t.Fatal(err)
			}
			posted++
		}
	}
	want := make([]byte, size)
	deadline := time.Now().Add(120 * time.Second)
	for got < count {
		if time.Now().After(deadline) {
			t.Fatalf("stuck: sent %d, received %d", sent, got)
		}
		post()
		for sent < count && send() {
		}
		sendsDone += reap(a, "sender")
		for {
			var e cqTagged
			k, err := b.cq.Read(words(&e), 1, nil)
			if errors.Is(err, fi.EAVAIL) {
				t.Fatalf("receive %d failed", got)
			}
			if k != 1 {
				break
			}
			if e.ctx == 1<<20 {
				t.Fatal("the tagged receive took an untagged message")
			}
			if e.ctx != uintptr(got+1) || e.len != size {
				t.Fatalf("completion %d: ctx %d, %d bytes", got, e.ctx, e.len)
			}
			fillMsg(want, got)
			if string(bufs[got%window]) != string(want) {
				t.Fatalf("message %d arrived damaged or out of order (it says %d)", got, binary.LittleEndian.Uint64(bufs[got%window]))
			}
			got++
		}
		worst = max(worst, uxBytes())
	}
	if worst > limit+size {
		t.Fatalf("unexpected messages held %d bytes, limit %d", worst, limit)
	}
	t.Logf("%d messages of %d bytes, all intact; the receiver refused %d times", count, size, refusals())
}

// TestRMAClaimedLength (row 6): a request to write that arrives by
// rendezvous claiming 8 GB is refused with an error before anything is
// allocated for it (the target allocated the claimed length first).
func TestRMAClaimedLength(t *testing.T) {
	env := map[string]string{"PSM2_DEVICES": "hfi", "FI_PSM2_IFACE": "127.0.0.1"}
	a, b := openHfiNode(t, env), openHfiNode(t, env)
	connectNodes(t, a, b)
	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	h := transport.Header{Flags: hfRMA | rmaWrite<<rmaKindShift, Tag: 5, Len: 8e9} // (under the old bound, 2 x max_msg_size)
	m := transport.Incoming{SrcEPID: a.ep.epid, IsRndv: true}
	b.ep.dom.lock()
	(*epEvents)(b.ep).Deliver(&h, &m)
	refused := b.ep.engine.rma.stats.Refused
	staged := b.ep.engine.rma.staged
	b.ep.dom.unlock()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	if d := int64(m1.HeapAlloc) - int64(m0.HeapAlloc); d > 64<<20 || refused != 1 || staged != 0 {
		t.Fatalf("heap %+d MiB, refused %d, staged %d", d>>20, refused, staged)
	}
}

// TestReconnectAfterPartition (row 10): a partition longer than twice the
// connection timeout fails the send pending in it (-FI_ETIMEDOUT); once
// it heals, the next send to the same address connects again and
// arrives (it failed for good: the dead connection stayed cached).
func TestReconnectAfterPartition(t *testing.T) {
	// The 200 kB send is a rendezvous (psm2's threshold), pending until
	// the peer fetches it.
	env := map[string]string{"PSM2_DEVICES": "hfi", "FI_PSM2_IFACE": "127.0.0.1", "FI_PSM2_CONN_TIMEOUT": "1",
		"PSM2_MQ_RNDV_HFI_THRESH": "64000"}
	// Both sides drop everything they send while the link is cut.
	var links []*lossyBackend
	wrap := func(be hfi.Backend) hfi.Backend {
		l := &lossyBackend{Backend: be}
		links = append(links, l)
		return l
	}
	cut := func(on bool) {
		for _, l := range links {
			if on {
				l.drop.Store(1 << 62)
			} else {
				l.drop.Store(0)
			}
		}
	}
	a, b := openHfiNodeOn(t, env, wrap), openHfiNodeOn(t, env, wrap)
	bAddr, aAddr := connectNodes(t, a, b)
	cut(true)
	big := make([]byte, 200000)
	v := Iovec{Base: unsafe.Pointer(&big[0]), Len: uint64(len(big))}
	if err := a.ep.Send([]Iovec{v}, bAddr, 3, 0, nil, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	failed := false
	for !failed && time.Since(start) < 5*time.Second {
		var e cqTagged
		_, err := a.cq.Read(words(&e), 1, nil)
		if errors.Is(err, fi.EAVAIL) {
			var ee cqErrEntry
			readErrC(a.cq, &ee)
			if fi.Errno(ee.err) != fi.ETIMEDOUT {
				t.Fatalf("error completion %v, want ETIMEDOUT", fi.Errno(ee.err))
			}
			failed = true
		}
	}
	if !failed {
		t.Fatal("the send in the partition never failed")
	}
	time.Sleep(2*time.Second - time.Since(start))
	cut(false)
	msg := []byte("after the partition")
	got := make([]byte, len(msg))
	rv := Iovec{Base: unsafe.Pointer(&got[0]), Len: uint64(len(got))}
	if err := b.ep.Recv([]Iovec{rv}, aAddr, 4, 0, nil, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	sv := Iovec{Base: unsafe.Pointer(&msg[0]), Len: uint64(len(msg))}
	if err := a.ep.Send([]Iovec{sv}, bAddr, 4, 0, nil, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	if !b.await(t, 5*time.Second, "receiver") {
		t.Fatal("nothing arrived after the partition healed")
	}
	if string(got) != string(msg) {
		t.Fatalf("got %q", got)
	}
	if !a.await(t, 5*time.Second, "sender") {
		t.Fatal("the send after the partition did not complete")
	}
}
