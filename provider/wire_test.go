package provider

import (
	"bytes"
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/hfi"
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/shm"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// TestWireErrno: the reason a wire failed to open keeps its meaning at
// the ABI (finding 6: every failure used to be -FI_ENOMEM).
func TestWireErrno(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want fi.Errno
	}{
		{fmt.Errorf("allocate segment: %w", syscall.ENOSPC), fi.ENOSPC},
		{fmt.Errorf("create segment: %w", syscall.EMFILE), fi.EMFILE},
		{fmt.Errorf("open: %w", shm.ErrForeign), fi.EACCES},
		{fmt.Errorf("create segment: %w", syscall.EEXIST), fi.EADDRINUSE},
		{fmt.Errorf("mmap: %w", syscall.ENOMEM), fi.ENOMEM},
		{errors.New("something else"), fi.ENOMEM},
		{fi.EBUSY, fi.EBUSY},
	} {
		if got := wireErrno(tc.err); got != tc.want {
			t.Errorf("wireErrno(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// hfiNode is one endpoint with its own provider, domain and CQ on the hfi
// wire alone (UDP on loopback), so that one side can stop polling while
// the other polls: endpoints of one domain share its progress.
type hfiNode struct {
	ep *Endpoint
	cq *CQ
	av *AV
}

func openHfiNode(t *testing.T, env map[string]string) *hfiNode {
	t.Helper()
	return openHfiNodeOn(t, env, nil)
}

// openHfiNodeOn is openHfiNode whose hfi wire runs on the backend wrap
// makes of the UDP one (nil: UDP itself).
func openHfiNodeOn(t *testing.T, env map[string]string, wrap func(hfi.Backend) hfi.Backend) *hfiNode {
	t.Helper()
	info := &fi.Info{Caps: fi.TAGGED | fi.MSG | fi.RMA, Domain: &fi.DomainAttr{CQDataSize: 4}, EP: &fi.EPAttr{Type: fi.EP_RDM}}
	p := New(newFakeHost(env))
	if wrap != nil {
		p.wire = func(c wireConfig) (transport.Endpoint, error) {
			h := c.net.hfi
			be, err := hfi.OpenUDP(h.Addr, h.PortFirst, h.PortLast, max(h.Paths, 1), "", 0, false)
			if err != nil {
				return nil, err
			}
			c.net.hfi.Backend = wrap(be)
			return newWire(c)
		}
	}
	f, d, av := openDomainAV(t, p, info)
	ep, cq := openBoundEP(t, d, av, info)
	t.Cleanup(func() {
		for _, c := range []interface{ Close() error }{ep, cq, av, d, f} {
			if err := c.Close(); err != nil {
				t.Errorf("close %T: %v", c, err)
			}
		}
	})
	return &hfiNode{ep: ep, cq: cq, av: av}
}

// insert puts peer's name in n's AV.
func (n *hfiNode) insert(t *testing.T, peer *hfiNode) uint64 {
	t.Helper()
	var name [EPNameLen]byte
	peer.ep.name().put(name[:])
	var out [1]uint64
	if k, err := n.av.Insert(name[:], out[:], nil, 0, 0); k != 1 || err != nil {
		t.Fatalf("Insert = %d, %v", k, err)
	}
	return out[0]
}

// await reads n's CQ until one entry comes (true) or within passes
// (false); an error completion fails the test, named by who.
func (n *hfiNode) await(t *testing.T, within time.Duration, who string) bool {
	t.Helper()
	for end := time.Now().Add(within); time.Now().Before(end); {
		var e cqTagged
		k, err := n.cq.Read(words(&e), 1, nil)
		if k == 1 {
			return true
		}
		if errors.Is(err, fi.EAVAIL) {
			t.Fatalf("%s's error completion", who)
		}
	}
	return false
}

// connectNodes connects a and b with one message from a to b (a send to a
// peer being connected is not complete until the connection is, and its
// application polls for that) and returns b's address in a's AV and a's
// in b's.
func connectNodes(t *testing.T, a, b *hfiNode) (bAddr, aAddr uint64) {
	t.Helper()
	bAddr = a.insert(t, b)
	a.insert(t, a)
	aAddr = b.insert(t, a)
	one := []byte{9}
	v := Iovec{Base: unsafe.Pointer(&one[0]), Len: 1}
	if err := a.ep.Send([]Iovec{v}, bAddr, 99, 0, nil, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	rv := Iovec{Base: unsafe.Pointer(&one[0]), Len: 1}
	if err := b.ep.Recv([]Iovec{rv}, fi.AddrUnspec, 99, 0, nil, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	for sent, got, end := false, false, time.Now().Add(10*time.Second); !sent || !got; {
		if time.Now().After(end) {
			t.Fatalf("no connection: sent %v, received %v", sent, got)
		}
		var e cqTagged
		if k, _ := a.cq.Read(words(&e), 1, nil); k == 1 {
			sent = true
		}
		if k, _ := b.cq.Read(words(&e), 1, nil); k == 1 {
			got = true
		}
	}
	return bAddr, aAddr
}

// TestHfiReceiverStopsPolling: a rank that computes without calling
// libfabric for longer than the connection timeout, after a message came
// to it, is not a dead peer to the sender that keeps polling (psm2's
// receive thread answers for it): the message arrives and the sender sees
// no error.
func TestHfiReceiverStopsPolling(t *testing.T) {
	env := map[string]string{"PSM2_DEVICES": "hfi", "FI_PSM2_IFACE": "127.0.0.1", "FI_PSM2_CONN_TIMEOUT": "1"}
	a, b := openHfiNode(t, env), openHfiNode(t, env)
	bAddr, aAddr := connectNodes(t, a, b)
	// Long enough for b's domain goroutine to find nothing to do and
	// park: the question's arrival must wake it (netArrived).
	time.Sleep(500 * time.Millisecond)
	msg, answer := []byte("question"), make([]byte, 6)
	v := Iovec{Base: unsafe.Pointer(&msg[0]), Len: uint64(len(msg))}
	if err := a.ep.Send([]Iovec{v}, bAddr, 1, 0, nil, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	av := Iovec{Base: unsafe.Pointer(&answer[0]), Len: uint64(len(answer))}
	if err := a.ep.Recv([]Iovec{av}, bAddr, 2, 0, nil, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	// b "computes" for twice the timeout; a waits for its answer.
	aRead := func() int {
		var e cqTagged
		k, err := a.cq.Read(words(&e), 1, nil)
		if errors.Is(err, fi.EAVAIL) {
			var ee cqErrEntry
			readErrC(a.cq, &ee)
			t.Fatalf("sender's error completion while the receiver computed: %+v", ee)
		}
		if k == 1 && e.tag == 2 {
			return 1
		}
		return 0
	}
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		if aRead() == 1 {
			t.Fatal("answer before the question was received")
		}
	}
	got := make([]byte, len(msg))
	rv := Iovec{Base: unsafe.Pointer(&got[0]), Len: uint64(len(got))}
	if err := b.ep.Recv([]Iovec{rv}, aAddr, 1, 0, nil, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	if !b.await(t, 5*time.Second, "receiver") {
		t.Fatal("the message never arrived")
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("received %q", got)
	}
	ans := []byte("answer")
	sv := Iovec{Base: unsafe.Pointer(&ans[0]), Len: uint64(len(ans))}
	if err := b.ep.Send([]Iovec{sv}, aAddr, 2, 0, nil, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); aRead() == 0; {
		if time.Now().After(end) {
			t.Fatal("the answer never arrived")
		}
	}
	if !bytes.Equal(answer, ans) {
		t.Fatalf("answer %q", answer)
	}
}

// TestHfiSenderStopsPolling: an application that sends over the hfi wire,
// sees its sends complete, and then waits outside libfabric (fabtests'
// out-of-band barrier) for a peer that waits for those messages. Packets
// that only a poll sends (a burst held for the next poll, the rest of an
// eager message longer than the flow window, which waits for an ACK)
// went nowhere: both hung (fi_pingpong with PSM2_MQ_RNDV_HFI_THRESH=300000
// and 184000-byte messages). The domain's goroutine now polls such a wire
// (sendq.go).
func TestHfiSenderStopsPolling(t *testing.T) {
	// Past the flow window (the 200000 and 250000-byte eager messages,
	// with the 100-byte ones around them): deterministic, unlike a burst
	// held for the next poll, which depends on how soon after a poll the
	// sends come (hfi's TestBurstCoalesces and TestBurstNotHeld cover it).
	senderStopsPolling(t, []int{1, 100, 100, 100, 100, 200000, 100, 250000})
}

func senderStopsPolling(t *testing.T, sizes []int) {
	env := map[string]string{"PSM2_DEVICES": "hfi", "FI_PSM2_IFACE": "127.0.0.1", "PSM2_MQ_RNDV_HFI_THRESH": "300000"}
	a, b := openHfiNode(t, env), openHfiNode(t, env)
	bAddr, _ := connectNodes(t, a, b)
	var keep [][]byte
	for i, n := range sizes {
		data := bytes.Repeat([]byte{byte(i + 1)}, n)
		keep = append(keep, data)
		v := Iovec{Base: unsafe.Pointer(&data[0]), Len: uint64(n)}
		if err := a.ep.Send([]Iovec{v}, bAddr, uint64(i), 0, nil, fi.TAGGED); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	// a polls no more; b receives.
	bufs := make([][]byte, len(sizes))
	for i, n := range sizes {
		bufs[i] = make([]byte, n)
		v := Iovec{Base: unsafe.Pointer(&bufs[i][0]), Len: uint64(n)}
		if err := b.ep.Recv([]Iovec{v}, fi.AddrUnspec, uint64(i), 0, nil, fi.TAGGED); err != nil {
			t.Fatalf("recv %d: %v", i, err)
		}
	}
	got := 0
	end := time.Now().Add(10 * time.Second)
	for got < len(sizes) && time.Now().Before(end) {
		var e cqTagged
		if k, _ := b.cq.Read(words(&e), 1, nil); k == 1 {
			got++
		}
	}
	if got < len(sizes) {
		t.Fatalf("%d of %d messages arrived while the sender did not poll", got, len(sizes))
	}
	for i := range sizes {
		if !bytes.Equal(bufs[i], keep[i]) {
			t.Fatalf("message %d differs", i)
		}
	}
}

// lossyBackend drops the packets sent while drop is above zero, one per
// packet, as a lossy network would, and counts them.
type lossyBackend struct {
	hfi.Backend
	drop, dropped atomic.Int64
}

func (l *lossyBackend) lose() bool {
	if l.drop.Load() <= 0 {
		return false
	}
	l.drop.Add(-1)
	l.dropped.Add(1)
	return true
}

func (l *lossyBackend) Send(path int, d *hfi.Dest, b []byte) error {
	if l.lose() {
		return nil
	}
	return l.Backend.Send(path, d, b)
}

func (l *lossyBackend) SendBatch(path int, d *hfi.Dest, pkts, pays [][]byte) error {
	for len(pkts) > 0 && l.lose() {
		pkts = pkts[1:]
		if pays != nil {
			pays = pays[1:]
		}
	}
	if len(pkts) == 0 {
		return nil
	}
	return l.Backend.SendBatch(path, d, pkts, pays)
}

// TestLostTailSentWhileSenderComputes: a sender whose eager message
// completed (it is copied into packets) and was lost on the way, and
// which then computes without any libfabric call, still gets it to the
// receiver: its domain goroutine runs the wire's timers and sends the
// packets again, as psm2's receive thread does. Without that the message
// would wait for the sender's next call, however late.
func TestLostTailSentWhileSenderComputes(t *testing.T) {
	env := map[string]string{"PSM2_DEVICES": "hfi", "FI_PSM2_IFACE": "127.0.0.1"}
	var lossy *lossyBackend
	a := openHfiNodeOn(t, env, func(be hfi.Backend) hfi.Backend {
		lossy = &lossyBackend{Backend: be}
		return lossy
	})
	b := openHfiNode(t, env)
	bAddr, aAddr := connectNodes(t, a, b)

	msg := make([]byte, 4000) // three packets at MTU 1500
	for i := range msg {
		msg[i] = byte(i*7 + 3)
	}
	lossy.drop.Store(1 << 30) // everything a sends from now on is lost...
	v := Iovec{Base: unsafe.Pointer(&msg[0]), Len: uint64(len(msg))}
	if err := a.ep.Send([]Iovec{v}, bAddr, 5, 0, nil, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	if !a.await(t, 5*time.Second, "sender") {
		t.Fatal("the eager send did not complete")
	}
	lost := lossy.dropped.Load()
	lossy.drop.Store(0) // ...until now; a makes no more calls.
	if lost == 0 {
		t.Fatal("no packet of the message was dropped: the test proves nothing")
	}

	got := make([]byte, len(msg))
	rv := Iovec{Base: unsafe.Pointer(&got[0]), Len: uint64(len(got))}
	if err := b.ep.Recv([]Iovec{rv}, aAddr, 5, 0, nil, fi.TAGGED); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if !b.await(t, 3*time.Second, "receiver") {
		t.Fatalf("%d lost packets never came again while the sender computed", lost)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("the message arrived damaged")
	}
	t.Logf("%d packets lost; the message arrived %v after the receive was posted", lost, time.Since(start))
}

// TestHFIUnit: HFI_UNIT picks the wire's interface among the units
// (hfi.UnitAddr) unless FI_PSM2_IFACE names one; a unit past the last
// fails the wire instead of using another interface.
func TestHFIUnit(t *testing.T) {
	want, wantErr := hfi.UnitAddr(0)
	got, err := New(newFakeHost(map[string]string{"HFI_UNIT": "0"})).wireAddr()
	if got != want || (err == nil) != (wantErr == nil) {
		t.Errorf("HFI_UNIT=0: %v, %v; want %v, %v", got, err, want, wantErr)
	}
	if got, err := New(newFakeHost(map[string]string{"HFI_UNIT": "255"})).wireAddr(); err == nil {
		t.Errorf("HFI_UNIT=255: %v, no error", got)
	}
	env := map[string]string{"HFI_UNIT": "255", "FI_PSM2_IFACE": "127.0.0.1"}
	if got, err := New(newFakeHost(env)).wireAddr(); err != nil || got != [4]byte{127, 0, 0, 1} {
		t.Errorf("FI_PSM2_IFACE beside HFI_UNIT: %v, %v", got, err)
	}
}
