//go:build linux

package shm

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/atomicx"
	"github.com/gopsm2/libfabric-psm2/internal/ring"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Environment of the endpoint children.
const (
	childJobEnv   = "GOPSM2_SHM_TEST_JOB"   // job key, hex
	childEPIDEnv  = "GOPSM2_SHM_TEST_EPID"  // the child's endpoint id
	childPeerEnv  = "GOPSM2_SHM_TEST_PEER"  // the parent's endpoint id
	childNoCMAEnv = "GOPSM2_SHM_TEST_NOCMA" // "1": Config.DisableCMA
)

// Tags of the messages between parent and endpoint children.
const (
	tagHello = 1 << 62 // child to parent: my endpoint exists
	tagQuit  = 1<<62 + 1
	tagGot   = 1<<62 + 2 // child to parent: your RTS arrived
)

func endpointChildEnv(job [16]byte, epid, peer uint64, extra ...string) []string {
	return append([]string{
		childJobEnv + "=" + hex.EncodeToString(job[:]),
		childEPIDEnv + "=" + strconv.FormatUint(epid, 16),
		childPeerEnv + "=" + strconv.FormatUint(peer, 16),
	}, extra...)
}

// probeEmpty reads segment seg's ring the way C reads it through
// RingProbe's word w: the base in the high bits, log2 of the cell count in
// the low 6.
func probeEmpty(t *testing.T, seg *Segment, w uint64) bool {
	t.Helper()
	mem := seg.mem[segHeaderSize:]
	if base := uint64(uintptr(unsafe.Pointer(unsafe.SliceData(mem)))); w&^63 != base {
		t.Fatalf("probe word %#x does not name the ring at %#x", w, base)
	}
	n, cons := uint64(1)<<(w&63), atomicx.WordAt(mem, 256).Load()
	return atomicx.WordAt(mem, 384+64*int(cons&(n-1))).Load() != cons+1
}

// runEndpointChild plays an endpoint role in a child process:
//
//	ep-die         make an endpoint and exit without closing it
//	ep-echo        send every message back to the parent until tagQuit
//	ep-rndv-stream send one large rendezvous message, then serve it
//	               forever (the parent kills the child mid-transfer)
//	ep-recv-sleep  take one rendezvous message, say so, never fetch it
func runEndpointChild(role string) error {
	jb, err := hex.DecodeString(os.Getenv(childJobEnv))
	if err != nil || len(jb) != 16 {
		return fmt.Errorf("bad job %q", os.Getenv(childJobEnv))
	}
	var job [16]byte
	copy(job[:], jb)
	epid, err1 := strconv.ParseUint(os.Getenv(childEPIDEnv), 16, 64)
	peerID, err2 := strconv.ParseUint(os.Getenv(childPeerEnv), 16, 64)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	cfg := Config{Job: job, EPID: epid, ConnTimeout: 2 * time.Second, DisableCMA: os.Getenv(childNoCMAEnv) == "1"}
	e, err := NewEndpoint(cfg)
	if err != nil {
		return err
	}
	if role == "ep-die" {
		return nil // no Close: the segment stays behind
	}
	defer e.Close()
	parent, err := e.Connect(peerID)
	if err != nil {
		return err
	}
	rec := newRecorder()
	send := func(h transport.Header, payload []byte, cookie uint64) error {
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := e.Send(parent, &h, [][]byte{payload}, cookie, 0)
			if !errors.Is(err, transport.ErrAgain) {
				return err
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("send: %w for 30s", err)
			}
			e.Poll(rec, 64)
		}
	}
	if err := send(transport.Header{Tag: tagHello}, nil, 0); err != nil {
		return err
	}
	switch role {
	case "ep-rndv-stream":
		n, _ := strconv.Atoi(os.Getenv(childCountEnv))
		payload := make([]byte, n)
		if err := send(transport.Header{Tag: 5, Len: uint64(n)}, payload, 5); err != nil {
			return err
		}
		for {
			if e.Poll(rec, 64) == 0 {
				e.Wait(time.Millisecond)
			}
		}
	case "ep-recv-sleep":
		for len(rec.got) == 0 {
			if e.Poll(rec, 64) == 0 {
				e.Wait(time.Millisecond)
			}
		}
		if err := send(transport.Header{Tag: tagGot}, nil, 0); err != nil {
			return err
		}
		time.Sleep(time.Hour)
		return nil
	case "ep-echo":
		return echo(e, rec, parent, send)
	case "ep-reserve-hang":
		// Reserve a two-cell unit in the parent's ring, publish its
		// second cell only, and stop there: a process killed in the
		// middle of TryPushCells.
		unit := make([]byte, 2*ring.CellPayload)
		unit[ring.CellPayload] = cellCont
		if err := e.peers[parent-1].ring.HalfPush(unit); err != nil {
			return err
		}
		time.Sleep(time.Hour)
		return nil
	}
	return fmt.Errorf("unknown role %q", role)
}

// echo sends every message it receives back to the parent, fetching
// rendezvous data first, until tagQuit; then it waits for its own sends.
func echo(e *Endpoint, rec *recorder, parent transport.Conn, send func(transport.Header, []byte, uint64) error) error {
	type fetching struct {
		d   delivered
		dst []byte
	}
	inflight := map[uint64]fetching{}
	var cookie uint64
	quit := false
	deadline := time.Now().Add(60 * time.Second)
	for !quit || len(inflight) > 0 || len(rec.sendDone) < int(cookie) {
		if time.Now().After(deadline) {
			return errors.New("echo: timed out")
		}
		if e.Poll(rec, 64) == 0 {
			e.Wait(time.Millisecond)
		}
		for _, d := range rec.got {
			if d.Hdr.Tag == tagQuit {
				quit = true
				continue
			}
			if !d.IsRndv {
				cookie++
				if err := send(d.Hdr, d.Payload, cookie); err != nil {
					return err
				}
				rec.sendDone[cookie] = nil // eager: done at once
				continue
			}
			cookie++
			dst := make([]byte, d.Hdr.Len)
			done, n, err := e.Fetch(&d.Rndv, dst, cookie)
			if err != nil {
				return fmt.Errorf("fetch: %w", err)
			}
			if !done {
				inflight[cookie] = fetching{d, dst}
				continue
			}
			if n != len(dst) {
				return fmt.Errorf("fetched %d of %d", n, len(dst))
			}
			if err := send(d.Hdr, dst, cookie); err != nil {
				return err
			}
		}
		rec.got = rec.got[:0]
		for c, f := range inflight {
			res, ok := rec.fetchDone[c]
			if !ok {
				continue
			}
			if res.Err != nil || res.N != len(f.dst) {
				return fmt.Errorf("fetch: %d, %v", res.N, res.Err)
			}
			delete(inflight, c)
			if err := send(f.d.Hdr, f.dst, c); err != nil {
				return err
			}
		}
		for c, err := range rec.sendDone {
			if err != nil {
				return fmt.Errorf("send %d: %w", c, err)
			}
		}
	}
	return nil
}

// startEndpointChild starts an endpoint child of parent's job and returns
// it with parent's Conn to it, once it has said hello.
func startEndpointChild(t *testing.T, parent *tep, job [16]byte, epid uint64, role string, extra ...string) (*child, transport.Conn) {
	t.Helper()
	// Registered first, so it runs after startChild's cleanup killed and
	// reaped the child: a killed child leaves its segment behind.
	t.Cleanup(func() { _, _ = Reclaim(SegmentName(job, epid)) })
	c := startChild(t, role, endpointChildEnv(job, epid, parent.EPID(), extra...)...)
	deadline := time.Now().Add(20 * time.Second)
	for {
		for i, d := range parent.rec.got {
			if d.Hdr.Tag == tagHello && d.SrcEPID == epid {
				parent.rec.got = append(parent.rec.got[:i], parent.rec.got[i+1:]...)
				conn, err := parent.Connect(epid)
				if err != nil {
					t.Fatal(err)
				}
				return c, conn
			}
		}
		select {
		case err := <-c.done:
			c.done <- err
			t.Fatalf("child exited before hello: %v\n%s", err, c.output.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no hello from the child\n%s", c.output.String())
		}
		if parent.poll() == 0 {
			parent.Wait(time.Millisecond)
		}
	}
}

// waitFrom polls x until a message from epid has arrived, and takes it
// out of x's recorder.
func waitFrom(t *testing.T, x *tep, epid uint64) delivered {
	t.Helper()
	var d delivered
	pollUntil(t, 10*time.Second, func() bool {
		for i, m := range x.rec.got {
			if m.SrcEPID == epid {
				d = m
				x.rec.got = slices.Delete(x.rec.got, i, i+1)
				return true
			}
		}
		return false
	}, x)
	return d
}

// TestEndpointCrossProcess echoes messages of every protocol through a
// child process, with and without CMA on both sides.
func TestEndpointCrossProcess(t *testing.T) {
	for _, tc := range []struct {
		name string
		cma  bool
	}{{"cma", true}, {"copy", false}} {
		t.Run(tc.name, func(t *testing.T) {
			job := testJob(t)
			parent := newTestEP(t, job, 0x10, func(c *Config) { c.DisableCMA = !tc.cma })
			var extra []string
			if !tc.cma {
				extra = append(extra, childNoCMAEnv+"=1")
			}
			kid, conn := startEndpointChild(t, parent, job, 0x11, "ep-echo", extra...)
			sizes := []int{0, 7, 100, 197, 198, 5000, 16000, 16001, 100000, 1 << 20, 4<<20 + 1}
			for round := range 3 {
				for i, n := range sizes {
					seq := round*len(sizes) + i
					h := transport.Header{Tag: uint64(seq), Data: uint64(n), Len: uint64(n)}
					sendAll(t, parent, parent, conn, h, [][]byte{pattern(n, byte(seq))}, uint64(seq)+1, transport.SendCopy)
				}
			}
			sendAll(t, parent, parent, conn, transport.Header{Tag: tagQuit}, nil, 0, 0)
			want := 3 * len(sizes)
			pollUntil(t, 60*time.Second, func() bool { return len(parent.rec.got) == want }, parent)
			// The child echoes a rendezvous message when its fetch is
			// done, so echoes come back in another order.
			slices.SortStableFunc(parent.rec.got, func(x, y delivered) int { return cmp.Compare(x.Hdr.Tag, y.Hdr.Tag) })
			for i, d := range parent.rec.got {
				n := sizes[i%len(sizes)]
				if d.Hdr.Tag != uint64(i) || d.Hdr.Len != uint64(n) || d.Src != conn || d.SrcEPID != 0x11 {
					t.Fatalf("echo %d: %+v from %d/%#x", i, d.Hdr, d.Src, d.SrcEPID)
				}
				got := d.Payload
				if d.IsRndv {
					var res fetchResult
					if got, res = fetch(t, parent, parent, d, n, 1000+uint64(i)); res.Err != nil || res.N != n {
						t.Fatalf("echo %d of %d bytes: fetched %d, %v", i, n, res.N, res.Err)
					}
				}
				if !bytes.Equal(got, pattern(n, byte(i))) {
					t.Fatalf("echo %d of %d bytes: payload differs", i, n)
				}
			}
			pollUntil(t, 10*time.Second, func() bool { return parent.pending == 0 }, parent)
			for c, err := range parent.rec.sendDone {
				if err != nil {
					t.Errorf("send %d: %v", c, err)
				}
			}
			kid.wait(t)
			st := parent.Stats()
			if tc.cma && (st.RndvCMA == 0 || st.RndvCopy != 0) || !tc.cma && (st.RndvCopy == 0 || st.RndvCMA != 0) {
				t.Errorf("stats %+v", st)
			}
			// 1 MiB and 4 MiB+1 are at least DefaultSplitThreshold: with
			// CMA they are fetched in chunks the child may help with;
			// 100000 too when it is at least SplitAloneThreshold (a
			// pinned process) and nothing waited behind it.
			lo, hi := uint64(0), uint64(0)
			if tc.cma {
				lo, hi = 6, 6
				if parent.cfg.SplitAloneThreshold <= 100000 {
					hi = 9
				}
			}
			if st.RndvSplit < lo || st.RndvSplit > hi {
				t.Errorf("%d split fetches, want %d to %d", st.RndvSplit, lo, hi)
			}
			t.Logf("parent wrote %d chunks for the child", st.SplitHelped)
		})
	}
}

// TestEndpointKillMidFetch kills a sender while its rendezvous data
// streams to us: the fetch fails with ErrPeerDead within ConnTimeout.
func TestEndpointKillMidFetch(t *testing.T) {
	job := testJob(t)
	parent := newTestEP(t, job, 0x20, noCMA, func(c *Config) { c.ConnTimeout = 2 * time.Second })
	// Longer than the bounce buffers: once some data is in, the rest
	// cannot arrive until this process polls again, which it does only
	// after the kill.
	const n = 8 << 20
	kid, _ := startEndpointChild(t, parent, job, 0x21, "ep-rndv-stream",
		childCountEnv+"="+strconv.Itoa(n), childNoCMAEnv+"=1")
	d := waitFrom(t, parent, 0x21)
	if !d.IsRndv || d.Hdr.Len != n {
		t.Fatalf("got %+v", d)
	}
	dst := make([]byte, n)
	if done, _, err := parent.Fetch(&d.Rndv, dst, 1); done || err != nil {
		t.Fatal(done, err)
	}
	pollUntil(t, 10*time.Second, func() bool { return parent.fetches.At(0).got > 0 }, parent)
	if err := kid.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	pollUntil(t, 5*time.Second, func() bool { _, ok := parent.rec.fetchDone[1]; return ok }, parent)
	res := parent.rec.fetchDone[1]
	if !errors.Is(res.Err, transport.ErrPeerDead) {
		t.Errorf("FetchDone = %+v, want ErrPeerDead", res)
	}
	if d := time.Since(killed); d > 2*time.Second {
		t.Errorf("noticed after %v", d)
	}
	if got := parent.fetches.At(0).got; got != 0 && res.N != 0 {
		t.Errorf("n = %d", res.N)
	}
	// The dead child's segment goes with the next endpoint.
	<-kid.done
	kid.done <- nil
	newTestEP(t, job, 0x22)
	if _, err := os.Stat(segFile(SegmentName(job, 0x21))); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("killed child's segment not reclaimed: %v", err)
	}
}

// TestEndpointKillMidSend kills a receiver that holds our RTS: the send
// fails with ErrPeerDead within ConnTimeout. With CMA, a fetch from a
// dead sender fails at once.
func TestEndpointKillMidSend(t *testing.T) {
	job := testJob(t)
	parent := newTestEP(t, job, 0x30, func(c *Config) { c.ConnTimeout = 2 * time.Second })
	kid, conn := startEndpointChild(t, parent, job, 0x31, "ep-recv-sleep")
	h := transport.Header{Tag: 9, Len: 1 << 20}
	if done := sendAll(t, parent, parent, conn, h, [][]byte{pattern(1<<20, 0)}, 1, 0); done {
		t.Fatal("rendezvous done at once")
	}
	got := waitFrom(t, parent, 0x31)
	if got.Hdr.Tag != tagGot {
		t.Fatalf("got %+v", got.Hdr)
	}
	if err := kid.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	pollUntil(t, 5*time.Second, func() bool { _, ok := parent.rec.sendDone[1]; return ok }, parent)
	if err := parent.rec.sendDone[1]; !errors.Is(err, transport.ErrPeerDead) {
		t.Errorf("SendDone = %v, want ErrPeerDead", err)
	}
	if d := time.Since(killed); d > 2*time.Second {
		t.Errorf("noticed after %v", d)
	}
	hs := transport.Header{Len: 1}
	if _, err := parent.Send(conn, &hs, [][]byte{{1}}, 0, 0); !errors.Is(err, transport.ErrPeerDead) {
		t.Errorf("Send to the dead child: %v", err)
	}
	if _, err := parent.Connect(0x31); !errors.Is(err, transport.ErrUnreachable) {
		t.Errorf("Connect to the dead child: %v", err)
	}

	// CMA from a dead sender.
	kid2, _ := startEndpointChild(t, parent, job, 0x32, "ep-rndv-stream", childCountEnv+"=100000")
	d := waitFrom(t, parent, 0x32)
	if err := kid2.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-kid2.done
	kid2.done <- nil
	if done, _, err := parent.Fetch(&d.Rndv, make([]byte, 100000), 2); !done || !errors.Is(err, transport.ErrPeerDead) {
		t.Errorf("Fetch from a dead sender = %v, %v", done, err)
	}
}

// TestEndpointKillIdlePeer kills a peer with nothing pending: sends fill
// its ring, then fail with ErrPeerDead instead of ErrAgain for ever.
func TestEndpointKillIdlePeer(t *testing.T) {
	job := testJob(t)
	parent := newTestEP(t, job, 0x40, func(c *Config) { c.ConnTimeout = 2 * time.Second })
	kid, conn := startEndpointChild(t, parent, job, 0x41, "ep-recv-sleep")
	if err := kid.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-kid.done
	kid.done <- nil
	killed := time.Now()
	h := transport.Header{Len: 8}
	var err error
	for time.Since(killed) < 5*time.Second {
		_, err = parent.Send(conn, &h, [][]byte{[]byte("12345678")}, 0, 0)
		if err == nil {
			continue
		}
		if !errors.Is(err, transport.ErrAgain) {
			break
		}
		parent.Wait(10 * time.Millisecond)
		parent.poll()
	}
	if !errors.Is(err, transport.ErrPeerDead) {
		t.Fatalf("Send to a dead peer: %v", err)
	}
	if d := time.Since(killed); d > time.Second {
		t.Errorf("noticed after %v", d)
	}
}

// TestEndpointDeadProducer kills a process between its reservation of
// ring cells and their publication: the ring is skipped past the dead
// unit once the process is gone (not before), the other senders' messages
// behind it arrive intact and in order, and the dead peer is failed.
func TestEndpointDeadProducer(t *testing.T) {
	job := testJob(t)
	parent := newTestEP(t, job, 0x30)
	other := newTestEP(t, job, 0x31)
	toParent, err := other.Connect(0x30)
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := startEndpointChild(t, parent, job, 0x32, "ep-reserve-hang")
	pollUntil(t, 10*time.Second, func() bool { _, stuck := parent.ring.Stalled(); return stuck }, parent)

	for i := range 3 {
		h := transport.Header{Tag: uint64(100 + i), Len: 40}
		sendAll(t, other, other, toParent, h, [][]byte{pattern(40, byte(i))}, uint64(i)+1, 0)
	}
	// Alive: waited for, however long it takes.
	until := time.Now().Add(time.Duration(3 * stallGrace))
	for time.Now().Before(until) {
		parent.poll()
	}
	if len(parent.rec.got) != 0 || parent.Stats().Repaired != 0 {
		t.Fatalf("ring skipped while its producer lives: %d delivered, stats %+v", len(parent.rec.got), parent.Stats())
	}

	_ = kid.cmd.Process.Kill()
	<-kid.done
	kid.done <- nil
	start := time.Now()
	// Poll the way the provider does: only when Idle says there is work,
	// and a second Idle after each pass (its refresh of the words the C
	// side reads). Idle looks at the producer counter only now and then;
	// whichever of the two calls sees the reservation, Poll must follow.
	for len(parent.rec.got) < 3 {
		if time.Since(start) > 2*time.Second {
			t.Fatalf("not repaired within 2 s through Idle: %d delivered, stats %+v",
				len(parent.rec.got), parent.Stats())
		}
		if !parent.Idle() {
			parent.poll()
		}
		parent.Idle()
		time.Sleep(100 * time.Microsecond)
	}
	t.Logf("repaired %v after the kill", time.Since(start))
	for i, d := range parent.rec.got {
		if d.Hdr.Tag != uint64(100+i) || d.SrcEPID != 0x31 || !bytes.Equal(d.Payload, pattern(40, byte(i))) {
			t.Fatalf("message %d: %+v from %#x", i, d.Hdr, d.SrcEPID)
		}
	}
	st := parent.Stats()
	if st.Repaired != 1 || st.Dropped == 0 {
		t.Errorf("stats %+v: want one repair and the orphaned continuation dropped", st)
	}
	if p := parent.lookup(0x32); p == nil || p.dead == nil {
		t.Error("the dead producer's peer is not failed")
	}
}
