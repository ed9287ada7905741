//go:build linux

package shm

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gopsm2/libfabric-psm2/internal/clock"
	"github.com/gopsm2/libfabric-psm2/internal/ring"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// testJobPrefix starts the segment name of every endpoint this test
// process (and its children) makes: the job keys of the tests begin with
// the test process's pid.
func testJobPrefix() string {
	return fmt.Sprintf("%s.%d.%08x", namePrefix, os.Getuid(), uint32(os.Getpid()))
}

// testJob returns a job key of this test process.
func testJob(tb testing.TB) [16]byte {
	tb.Helper()
	var j [16]byte
	binary.BigEndian.PutUint32(j[:4], uint32(os.Getpid()))
	if _, err := rand.Read(j[4:]); err != nil {
		tb.Fatal(err)
	}
	return j
}

// delivered is a copy of what Deliver was given.
type delivered struct {
	Hdr     transport.Header
	Src     transport.Conn
	SrcEPID uint64
	Payload []byte
	IsRndv  bool
	Rndv    transport.Rndv
}

type fetchResult struct {
	N   int
	Err error
}

// recorder is a Handler that keeps everything.
type recorder struct {
	got       []delivered
	onDeliver func(delivered) // if set, called inside Deliver (as the provider fetches)
	sendDone  map[uint64]error
	fetchDone map[uint64]fetchResult
}

func newRecorder() *recorder {
	return &recorder{sendDone: map[uint64]error{}, fetchDone: map[uint64]fetchResult{}}
}

func (r *recorder) Deliver(h *transport.Header, m *transport.Incoming) {
	d := delivered{Hdr: *h, Src: m.Src, SrcEPID: m.SrcEPID, IsRndv: m.IsRndv, Rndv: m.Rndv}
	if m.Payload != nil {
		d.Payload = append([]byte{}, m.Payload...)
	}
	r.got = append(r.got, d)
	if r.onDeliver != nil {
		r.onDeliver(d)
	}
}

func (r *recorder) SendDone(cookie uint64, err error) {
	if _, dup := r.sendDone[cookie]; dup {
		panic(fmt.Sprintf("SendDone(%d) twice", cookie))
	}
	r.sendDone[cookie] = err
}

func (r *recorder) FetchDone(cookie uint64, n int, err error) {
	if _, dup := r.fetchDone[cookie]; dup {
		panic(fmt.Sprintf("FetchDone(%d) twice", cookie))
	}
	r.fetchDone[cookie] = fetchResult{n, err}
}

// tep is an endpoint under test with its recorder.
type tep struct {
	*Endpoint
	rec *recorder
}

func (x *tep) poll() int { return x.Poll(x.rec, 64) }

// newTestEP makes an endpoint of job with id epid, closed when the test
// ends. Short timeouts keep the failure tests fast.
func newTestEP(tb testing.TB, job [16]byte, epid uint64, mod ...func(*Config)) *tep {
	tb.Helper()
	cfg := Config{Job: job, EPID: epid, ConnTimeout: time.Second}
	for _, m := range mod {
		m(&cfg)
	}
	e, err := NewEndpoint(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = e.Close() })
	return &tep{e, newRecorder()}
}

func noCMA(c *Config) { c.DisableCMA = true }

// pair makes two endpoints of one job, a connected to b.
func pair(tb testing.TB, mod ...func(*Config)) (a, b *tep, ab transport.Conn) {
	tb.Helper()
	job := testJob(tb)
	a = newTestEP(tb, job, 0xa, mod...)
	b = newTestEP(tb, job, 0xb, mod...)
	ab, err := a.Connect(b.EPID())
	if err != nil {
		tb.Fatal(err)
	}
	return a, b, ab
}

// pollUntil polls eps until cond holds; it fails the test after d.
func pollUntil(tb testing.TB, d time.Duration, cond func() bool, eps ...*tep) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("condition not met within %v", d)
		}
		busy := 0
		for _, e := range eps {
			busy += e.poll()
		}
		if busy == 0 {
			time.Sleep(50 * time.Microsecond)
		}
	}
}

// pattern returns n bytes that depend on seed and on each byte's offset,
// so shifted or swapped chunks show.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i) ^ byte(i>>8)*3 ^ byte(i>>16)*5 ^ seed
	}
	return b
}

// split cuts b into up to three pieces, to exercise gathering.
func split(b []byte) [][]byte {
	switch {
	case len(b) < 3:
		return [][]byte{b}
	default:
		return [][]byte{b[:len(b)/3], b[len(b)/3 : len(b)/2], b[len(b)/2:]}
	}
}

// sendAll sends msg to c, polling both endpoints while the wire says
// ErrAgain; it returns Send's done.
func sendAll(tb testing.TB, a, b *tep, c transport.Conn, h transport.Header, iov [][]byte, cookie uint64, flags uint32) bool {
	tb.Helper()
	for range 100000 {
		done, err := a.Send(c, &h, iov, cookie, flags)
		if err == nil {
			return done
		}
		if !errors.Is(err, transport.ErrAgain) {
			tb.Fatalf("Send(%d bytes): %v", h.Len, err)
		}
		a.poll()
		b.poll()
	}
	tb.Fatal("Send: ErrAgain forever")
	return false
}

// recvOne polls until b has received one more message and returns it.
func recvOne(tb testing.TB, a, b *tep) delivered {
	tb.Helper()
	n := len(b.rec.got)
	pollUntil(tb, 10*time.Second, func() bool { return len(b.rec.got) > n }, a, b)
	return b.rec.got[n]
}

// fetch fetches rendezvous d into a buffer of size n, polling until done.
func fetch(tb testing.TB, a, b *tep, d delivered, n int, cookie uint64) ([]byte, fetchResult) {
	tb.Helper()
	dst := make([]byte, n)
	done, got, err := b.Fetch(&d.Rndv, dst, cookie)
	if done {
		return dst, fetchResult{got, err}
	}
	if err != nil {
		tb.Fatalf("Fetch: not done but %v", err)
	}
	pollUntil(tb, 20*time.Second, func() bool { _, ok := b.rec.fetchDone[cookie]; return ok }, a, b)
	return dst, b.rec.fetchDone[cookie]
}

// transfer sends one message of n bytes from a to b and checks what
// arrives, whatever the protocol. It returns the delivery.
func transfer(tb testing.TB, a, b *tep, ab transport.Conn, n int, seed byte) delivered {
	tb.Helper()
	payload := pattern(n, seed)
	h := transport.Header{Tag: uint64(n)<<8 | uint64(seed), Data: uint64(seed) * 3, Flags: uint32(n), Len: uint64(n)}
	cookie := uint64(n)<<8 | uint64(seed)
	done := sendAll(tb, a, b, ab, h, split(payload), cookie, 0)
	d := recvOne(tb, a, b)
	if d.Hdr != h || d.SrcEPID != a.EPID() {
		tb.Fatalf("%d bytes: header %+v from %#x, want %+v from %#x", n, d.Hdr, d.SrcEPID, h, a.EPID())
	}
	got := d.Payload
	if d.IsRndv {
		if done {
			tb.Fatalf("%d bytes: rendezvous send done at once", n)
		}
		var res fetchResult
		got, res = fetch(tb, a, b, d, n, cookie)
		if res.Err != nil || res.N != n {
			tb.Fatalf("%d bytes: fetch = %d, %v", n, res.N, res.Err)
		}
		pollUntil(tb, 10*time.Second, func() bool { _, ok := a.rec.sendDone[cookie]; return ok }, a, b)
		if err := a.rec.sendDone[cookie]; err != nil {
			tb.Fatalf("%d bytes: SendDone: %v", n, err)
		}
	} else if !done {
		tb.Fatalf("%d bytes: eager send not done at once", n)
	}
	if !bytes.Equal(got, payload) {
		tb.Fatalf("%d bytes: payload differs (first bytes %x, want %x)", n, got[:min(16, len(got))], payload[:min(16, n)])
	}
	return d
}

func TestEndpointInline(t *testing.T) {
	for _, cells := range []int{1, DefaultInlineCells, ring.MaxPushCells} {
		t.Run(fmt.Sprint(cells, " cells"), func(t *testing.T) {
			a, b, ab := pair(t, func(c *Config) { c.InlineCells = cells })
			// Seed 0 sends no CQ data, so a cell carries 8 more bytes.
			type msg struct {
				n    int
				seed byte
			}
			var inline []msg
			for _, n := range []int{0, 1, 24, 25, 32, 33, 79, 80, 87, 88, 142, 189, 197, 400, 409, 410, 417} {
				for _, seed := range []byte{0, 1} {
					if n <= inlineMax(cells, seed != 0) {
						inline = append(inline, msg{n, seed})
					}
				}
			}
			for _, m := range inline {
				d := transfer(t, a, b, ab, m.n, m.seed)
				if d.IsRndv || d.Src != 0 {
					t.Fatalf("%d bytes: rndv %v, src %d", m.n, d.IsRndv, d.Src)
				}
			}
			st := a.Stats()
			if st.Inline != st.Sent || st.Eager != 0 || b.Stats().Received != st.Sent {
				t.Errorf("stats: sender %+v receiver %+v", st, b.Stats())
			}
			// One byte more goes eager.
			transfer(t, a, b, ab, inlineMax(cells, true)+1, 1)
			transfer(t, a, b, ab, inlineMax(cells, false)+1, 0)
			if st := a.Stats(); st.Eager != 2 {
				t.Errorf("stats %+v, want 2 eager", st)
			}
			// Once b connects to a, deliveries name the Conn.
			ba, err := b.Connect(a.EPID())
			if err != nil {
				t.Fatal(err)
			}
			if d := transfer(t, a, b, ab, 5, 0); d.Src != ba {
				t.Errorf("Src %d after Connect, want %d", d.Src, ba)
			}
		})
	}
	if inlineMax(1, false) != 32 || inlineMax(2, false) != 87 || inlineMax(4, true) != 189 || inlineMax(8, false) != 417 {
		t.Error("inline capacities changed")
	}
}

func TestEndpointEager(t *testing.T) {
	a, b, ab := pair(t)
	ba, err := b.Connect(a.EPID())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{190, 198, 1000, 4096, 8192, 15999, 16000} {
		d := transfer(t, a, b, ab, n, 7)
		if d.IsRndv || d.Src != ba {
			t.Fatalf("%d bytes: rndv %v src %d", n, d.IsRndv, d.Src)
		}
	}
	if st := a.Stats(); st.Eager != 7 {
		t.Errorf("stats %+v, want 7 eager", st)
	}
	if busy := a.busy.Load(); busy != 0 {
		t.Errorf("busy bits %#x after every message was received", busy)
	}
	// More eager messages than bounce buffers: ErrAgain until b polls.
	h := transport.Header{Len: 1000}
	p := pattern(1000, 0)
	sent := 0
	for {
		_, err := a.Send(ab, &h, [][]byte{p}, 0, 0)
		if errors.Is(err, transport.ErrAgain) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sent++
	}
	if sent != DefaultBuffers {
		t.Errorf("%d eager sends before ErrAgain, want %d", sent, DefaultBuffers)
	}
	b.poll()
	if _, err := a.Send(ab, &h, [][]byte{p}, 0, 0); err != nil {
		t.Errorf("Send after the receiver polled: %v", err)
	}
}

func TestEndpointRndv(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		cma  bool
	}{
		{"in-process copy", func(*Config) {}, true},
		{"process_vm_readv", func(*Config) {}, true},
		{"bounce buffers", noCMA, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, ab := pair(t, tc.mod)
			b.noLocal = tc.name == "process_vm_readv"
			for i, n := range []int{16001, 16384, 16385, 100000, 1 << 20, 4<<20 + 3} {
				d := transfer(t, a, b, ab, n, byte(i))
				if !d.IsRndv {
					t.Fatalf("%d bytes not rendezvous", n)
				}
			}
			st := b.Stats()
			if tc.cma && (st.RndvCMA != 6 || st.RndvCopy != 0) || !tc.cma && (st.RndvCopy != 6 || st.RndvCMA != 0) {
				t.Errorf("receiver stats %+v", st)
			}
			if a.pending != 0 || b.pending != 0 || a.busy.Load() != 0 || b.busy.Load() != 0 {
				t.Errorf("left behind: pending %d %d busy %#x %#x", a.pending, b.pending, a.busy.Load(), b.busy.Load())
			}
		})
	}
}

// TestEndpointRndvTruncateDiscard fetches into short buffers and discards:
// the sender's send completes normally either way.
func TestEndpointRndvTruncateDiscard(t *testing.T) {
	for _, mod := range []func(*Config){func(*Config) {}, noCMA} {
		a, b, ab := pair(t, mod)
		const n = 200000
		payload := pattern(n, 9)
		for i, keep := range []int{0, 1, 100, 50000, -1} {
			cookie := uint64(i + 1)
			h := transport.Header{Tag: cookie, Len: n}
			if sendAll(t, a, b, ab, h, [][]byte{payload}, cookie, 0) {
				t.Fatal("rendezvous done at once")
			}
			d := recvOne(t, a, b)
			if keep < 0 {
				if err := b.Discard(&d.Rndv); err != nil {
					t.Fatal(err)
				}
			} else {
				got, res := fetch(t, a, b, d, keep, cookie)
				if res.Err != nil || res.N != keep || !bytes.Equal(got, payload[:keep]) {
					t.Fatalf("fetch into %d bytes = %d, %v", keep, res.N, res.Err)
				}
			}
			pollUntil(t, 5*time.Second, func() bool { _, ok := a.rec.sendDone[cookie]; return ok }, a, b)
			if err := a.rec.sendDone[cookie]; err != nil {
				t.Errorf("keep %d: SendDone %v", keep, err)
			}
		}
		if a.pending != 0 || b.pending != 0 || a.busy.Load() != 0 {
			t.Errorf("left behind: pending %d %d busy %#x", a.pending, b.pending, a.busy.Load())
		}
	}
}

// TestEndpointSendCopy: with SendCopy, the caller may scribble over its
// buffer as soon as Send returns.
func TestEndpointSendCopy(t *testing.T) {
	for _, mod := range []func(*Config){func(*Config) {}, noCMA} {
		a, b, ab := pair(t, mod)
		for _, n := range []int{10, 1000, 65536} {
			buf := pattern(n, 3)
			want := bytes.Clone(buf)
			h := transport.Header{Len: uint64(n)}
			sendAll(t, a, b, ab, h, [][]byte{buf}, 1, transport.SendCopy)
			clear(buf)
			d := recvOne(t, a, b)
			got := d.Payload
			if d.IsRndv {
				got, _ = fetch(t, a, b, d, n, 1)
				pollUntil(t, 5*time.Second, func() bool { _, ok := a.rec.sendDone[1]; return ok }, a, b)
				delete(a.rec.sendDone, 1)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%d bytes: payload changed", n)
			}
		}
	}
}

// TestEndpointSizes runs every protocol boundary and a spread of sizes up
// to 4 MiB, with and without CMA.
func TestEndpointSizes(t *testing.T) {
	sizes := []int{0, 1, 2, 31, 32, 33, 56, 64, 87, 88, 197, 198, 255, 256, 1023, 1024, 4095, 4096,
		8191, 8192, 15999, 16000, 16001, 16383, 16384, 16385, 32768, 65535, 65536, 65537,
		262143, 262144, 1<<20 - 1, 1 << 20, 2<<20 + 17, 4 << 20}
	if testing.Short() {
		sizes = sizes[:len(sizes)-3]
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{{"cma", func(*Config) {}}, {"copy", noCMA}} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, ab := pair(t, tc.mod)
			for i, n := range sizes {
				transfer(t, a, b, ab, n, byte(i))
			}
		})
	}
}

// TestEndpointSelf sends to the endpoint's own id, every protocol.
func TestEndpointSelf(t *testing.T) {
	for _, mod := range []func(*Config){func(*Config) {}, noCMA} {
		a := newTestEP(t, testJob(t), 0x5e1f, mod)
		self, err := a.Connect(a.EPID())
		if err != nil {
			t.Fatal(err)
		}
		if again, err := a.Connect(a.EPID()); again != self || err != nil {
			t.Fatalf("second Connect = %d, %v; want %d", again, err, self)
		}
		for i, n := range []int{0, 20, 150, 5000, 16000, 100000, 1 << 20} {
			d := transfer(t, a, a, self, n, byte(i))
			if d.Src != self {
				t.Errorf("Src %d, want %d", d.Src, self)
			}
		}
	}
}

// TestEndpointRingFull fills a small ring: ErrAgain with nothing sent,
// then success once the receiver polled.
func TestEndpointRingFull(t *testing.T) {
	a, b, ab := pair(t, func(c *Config) { c.RingCells = 8 })
	h := transport.Header{Len: 8}
	p := []byte("12345678")
	sent := 0
	for {
		_, err := a.Send(ab, &h, [][]byte{p}, 0, 0)
		if errors.Is(err, transport.ErrAgain) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sent++
	}
	if sent != 8 {
		t.Fatalf("%d sends before ErrAgain, want 8", sent)
	}
	// A two-cell message does not fit in one free cell either.
	b.Poll(b.rec, 1)
	big := transport.Header{Len: 60}
	if _, err := a.Send(ab, &big, [][]byte{pattern(60, 0)}, 0, 0); !errors.Is(err, transport.ErrAgain) {
		t.Fatalf("two cells into one free: %v", err)
	}
	if _, err := a.Send(ab, &h, [][]byte{p}, 0, 0); err != nil {
		t.Fatalf("Send after the receiver polled: %v", err)
	}
	pollUntil(t, time.Second, func() bool { return len(b.rec.got) == 9 }, b)
	if st := a.Stats(); st.Again != 2 || st.Sent != 9 {
		t.Errorf("stats %+v", st)
	}
}

// TestEndpointOrder interleaves every protocol: messages from one sender
// are delivered in send order.
func TestEndpointOrder(t *testing.T) {
	for _, mod := range []func(*Config){func(*Config) {}, noCMA} {
		a, b, ab := pair(t, mod, func(c *Config) { c.RingCells = 16 })
		sizes := []int{0, 100000, 10, 5000, 150, 20000, 1, 3000, 1 << 20, 40, 16000, 16001}
		type sent struct {
			n       int
			payload []byte
		}
		var want []sent
		for round := range 20 {
			for i, n := range sizes {
				seq := round*len(sizes) + i
				payload := pattern(n, byte(seq))
				h := transport.Header{Tag: uint64(seq), Len: uint64(n)}
				sendAll(t, a, b, ab, h, [][]byte{payload}, uint64(seq), 0)
				want = append(want, sent{n, payload})
			}
		}
		pollUntil(t, 10*time.Second, func() bool { return len(b.rec.got) == len(want) }, a, b)
		for i, d := range b.rec.got {
			if d.Hdr.Tag != uint64(i) {
				t.Fatalf("delivery %d has tag %d", i, d.Hdr.Tag)
			}
			got := d.Payload
			if d.IsRndv {
				got, _ = fetch(t, a, b, d, want[i].n, uint64(i))
			}
			if !bytes.Equal(got, want[i].payload) {
				t.Fatalf("delivery %d: payload differs", i)
			}
		}
		pollUntil(t, 5*time.Second, func() bool { return a.pending == 0 }, a, b)
	}
}

// TestEndpointManySenders has several endpoints send to one at once, from
// their own goroutines.
func TestEndpointManySenders(t *testing.T) {
	job := testJob(t)
	const senders, each = 3, 300
	dst := newTestEP(t, job, 0x100, func(c *Config) { c.RingCells = 32 })
	errc := make(chan error, senders)
	for s := range senders {
		src := newTestEP(t, job, uint64(0x200+s))
		c, err := src.Connect(dst.EPID())
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			errc <- func() error {
				for i := range each {
					n := []int{8, 100, 3000}[i%3]
					payload := pattern(n, byte(i))
					h := transport.Header{Tag: uint64(s)<<32 | uint64(i), Len: uint64(n)}
					for {
						_, err := src.Send(c, &h, [][]byte{payload}, 0, 0)
						if err == nil {
							break
						}
						if !errors.Is(err, transport.ErrAgain) {
							return err
						}
						src.Wait(time.Millisecond)
						src.poll()
					}
				}
				return nil
			}()
		}()
	}
	next := make([]int, senders)
	deadline := time.Now().Add(30 * time.Second)
	for got := 0; got < senders*each; {
		if time.Now().After(deadline) {
			t.Fatalf("timed out; next %v", next)
		}
		if dst.poll() == 0 {
			dst.Wait(time.Millisecond)
		}
		for _, d := range dst.rec.got {
			s, i := int(d.Hdr.Tag>>32), int(uint32(d.Hdr.Tag))
			if d.SrcEPID != uint64(0x200+s) || i != next[s] {
				t.Fatalf("from %#x: message %d, want %d of sender %d", d.SrcEPID, i, next[s], s)
			}
			n := []int{8, 100, 3000}[i%3]
			if !bytes.Equal(d.Payload, pattern(n, byte(i))) {
				t.Fatalf("sender %d message %d: payload differs", s, i)
			}
			next[s]++
			got++
		}
		dst.rec.got = dst.rec.got[:0]
	}
	for range senders {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

func TestEndpointConnect(t *testing.T) {
	job := testJob(t)
	a := newTestEP(t, job, 1)
	b := newTestEP(t, job, 2)
	other := newTestEP(t, testJob(t), 3)
	c1, err := a.Connect(2)
	if err != nil {
		t.Fatal(err)
	}
	if c2, err := a.Connect(2); c2 != c1 || err != nil {
		t.Errorf("second Connect = %d, %v; want %d", c2, err, c1)
	}
	for _, epid := range []uint64{3, 4} { // another job's endpoint; nobody
		if _, err := a.Connect(epid); !errors.Is(err, transport.ErrUnreachable) {
			t.Errorf("Connect(%d) = %v, want ErrUnreachable", epid, err)
		}
	}
	if _, err := other.Connect(1); !errors.Is(err, transport.ErrUnreachable) {
		t.Errorf("Connect across jobs = %v, want ErrUnreachable", err)
	}
	// Bad handles.
	h := transport.Header{}
	for _, c := range []transport.Conn{0, 99} {
		if _, err := a.Send(c, &h, nil, 0, 0); !errors.Is(err, ErrBadConn) {
			t.Errorf("Send to Conn %d = %v", c, err)
		}
	}
	if _, err := a.Send(c1, &transport.Header{Len: 3}, [][]byte{{1}}, 0, 0); !errors.Is(err, ErrLength) {
		t.Errorf("Send with a wrong length = %v", err)
	}
	if done, _, err := b.Fetch(&transport.Rndv{}, nil, 0); !done || !errors.Is(err, ErrBadConn) {
		t.Errorf("Fetch of a zero Rndv = %v, %v", done, err)
	}
	if err := b.Discard(&transport.Rndv{W: [6]uint64{1, 0, 5, 0, 1, 0}}); !errors.Is(err, ErrBadConn) {
		t.Errorf("Discard of a forged Rndv = %v", err)
	}
	// The segment is private and carries the job.
	fi, err := os.Stat(segFile(a.Name()))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("segment %s: %v, %v", a.Name(), fi.Mode(), err)
	}
	if a.Name() != SegmentName(job, 1) {
		t.Errorf("segment name %q", a.Name())
	}
	// Two endpoints with one id cannot coexist.
	if _, err := NewEndpoint(Config{Job: job, EPID: 1}); !errors.Is(err, os.ErrExist) {
		t.Errorf("second endpoint with id 1: %v", err)
	}
}

// TestEndpointMalformed pushes garbage into a ring: each bad cell is
// dropped and counted, and the endpoint keeps working.
func TestEndpointMalformed(t *testing.T) {
	a, b, ab := pair(t)
	if _, err := b.Connect(a.EPID()); err != nil {
		t.Fatal(err)
	}
	seg, err := Open(b.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	r := seg.Ring()
	mk := func(kind, flags byte, short uint16, epid uint64, w ...uint64) []byte {
		c := make([]byte, ring.CellPayload)
		putCommon(c, kind, flags, short, 0, epid)
		for i, v := range w {
			put64(c, offCellW2+8*i, v)
		}
		return c
	}
	a2b := a.EPID()
	bad := [][]byte{
		make([]byte, ring.CellPayload), // kind 0
		mk(99, 0, 0, a2b),
		mk(cellCont, 0, 0, a2b),
		mk(cellInline, 0, 60000, a2b),        // longer than any unit
		mk(cellInline, 0, 100, a2b),          // a unit without its continuations
		mk(cellEager, 0, 0, 0xdead, 0, 0, 5), // unknown sender
		mk(cellEager, 0, 63, a2b, 0, 0, 5),   // buffer out of range
		mk(cellEager, 0, 0, a2b, 0, 0, 1<<40),
		mk(cellRTS, 0, 0, 0xdead, 0, 0, 100, 0, 1),
		mk(cellRTS, 0, 0, a2b, 0, 0, 0, 0, 1), // zero length
		mk(cellFIN, 0, 0, a2b, 12345),
		mk(cellCTS, 0, 0, a2b, 1<<32|7, 1, 100),
		mk(cellData, 0, 0, a2b, 1<<32, 0, 100, 0),
		mk(cellData, 0, 99, a2b, 1<<32, 0, 100, 0),
		mk(cellData, 0, 0, 0xdead, 1<<32, 0, 100, 0),
		mk(cellFIN, 200, 0, a2b, 12345),                          // a later status, unknown send
		mk(cellData, finSrcFault, noBuffer, a2b, 1<<32, 0, 0, 0), // an abort of no fetch
		mk(cellData, finTimeout, noBuffer, a2b, 1<<32, 0, 0, 0),  // not a sender's status
		mk(cellData, finSrcFault, 0, a2b, 1<<32, 0, 0, 0),        // an abort naming a buffer
		mk(cellData, finFailed, noBuffer, a2b, 1<<32, 0, 100, 0), // an abort with a length
	}
	for _, c := range bad {
		if err := r.TryPush(c); err != nil {
			t.Fatal(err)
		}
	}
	pollUntil(t, time.Second, func() bool { return b.Stats().Dropped >= uint64(len(bad)) }, b)
	if st := b.Stats(); st.Dropped != uint64(len(bad)) || st.Received != 0 || len(b.rec.got) != 0 {
		t.Errorf("stats %+v, %d delivered", st, len(b.rec.got))
	}
	// A cell claiming bounce buffer 0 of a must not free it for b's
	// sake: nothing is busy, nothing changes.
	if a.busy.Load() != 0 {
		t.Errorf("a's busy bits %#x", a.busy.Load())
	}
	// Forged RTS cells: their data cannot be found (in-process) or read
	// (process_vm_readv). The fetch fails; the peer stays usable.
	for _, cma := range []bool{false, true} {
		b.noLocal = cma
		if err := r.TryPush(mk(cellRTS, 0, 0, a2b, 0, 0, 100, 0x10, 1<<32|99)); err != nil {
			t.Fatal(err)
		}
		d := recvOne(t, a, b)
		want := transport.ErrPeerDead
		if cma {
			want = transport.ErrPeerFault
		}
		if done, _, err := b.Fetch(&d.Rndv, make([]byte, 100), 1); !done || !errors.Is(err, want) {
			t.Errorf("cma %v: Fetch of a forged RTS = %v, %v; want %v", cma, done, err, want)
		}
	}
	b.noLocal = false
	for i, n := range []int{5, 150, 3000, 50000} {
		transfer(t, a, b, ab, n, byte(i))
	}
	if st := a.Stats(); st.Dropped != 1 {
		t.Errorf("a dropped %d cells, want the one FIN for the forged send", st.Dropped)
	}
	if len(b.rec.sendDone)+len(b.rec.fetchDone) != 0 {
		t.Errorf("garbage completed operations: %v %v", b.rec.sendDone, b.rec.fetchDone)
	}
}

// TestEndpointWait checks the doorbell: Wait returns on an arrival, on
// Wake (before or during the Wait), and on its timeout.
func TestEndpointWait(t *testing.T) {
	a, b, ab := pair(t)
	start := time.Now()
	b.Wait(20 * time.Millisecond)
	if d := time.Since(start); d < 15*time.Millisecond {
		t.Errorf("Wait(20ms) returned after %v", d)
	}

	b.Wake()
	start = time.Now()
	b.Wait(5 * time.Second)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Wait after Wake took %v", d)
	}

	// asleep starts a Wait on another goroutine and returns once it sleeps,
	// with the channel its duration comes on. Wait may return without
	// sleeping (a wake-up left from before: callers re-check), and then
	// another is started.
	asleep := func() chan time.Duration {
		for {
			done := make(chan time.Duration, 1)
			go func() {
				start := time.Now()
				b.Wait(10 * time.Second)
				done <- time.Since(start)
			}()
			for b.bellWaiters.Load() == 0 {
				select {
				case <-done:
					done = nil
				default:
					time.Sleep(time.Millisecond)
					continue
				}
				break
			}
			if done != nil {
				return done
			}
		}
	}
	for _, how := range []string{"arrival", "wake"} {
		done := asleep()
		time.Sleep(5 * time.Millisecond)
		if how == "arrival" {
			h := transport.Header{Len: 1}
			if _, err := a.Send(ab, &h, [][]byte{{1}}, 0, 0); err != nil {
				t.Fatal(err)
			}
		} else {
			b.Wake()
		}
		if d := <-done; d > 5*time.Second {
			t.Errorf("%s: Wait took %v", how, d)
		}
		b.poll()
	}
	// With something in the ring, Wait does not sleep.
	h := transport.Header{Len: 1}
	if _, err := a.Send(ab, &h, [][]byte{{1}}, 0, 0); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	b.Wait(5 * time.Second)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Wait with a message waiting took %v", d)
	}
}

func TestEndpointIdle(t *testing.T) {
	a, b, ab := pair(t)
	if !b.Idle() || !a.Idle() {
		t.Fatal("fresh endpoints not idle")
	}
	h := transport.Header{Len: 100000}
	if done, err := a.Send(ab, &h, [][]byte{pattern(100000, 0)}, 1, 0); done || err != nil {
		t.Fatal(done, err)
	}
	if b.Idle() {
		t.Error("b idle with an RTS in its ring")
	}
	d := recvOne(t, a, b)
	if !b.Idle() {
		t.Error("b not idle after taking the RTS")
	}
	// a waits for the FIN: idle between liveness checks.
	a.poll()
	if a.pending != 1 || !a.Idle() {
		t.Errorf("a: pending %d, idle %v", a.pending, a.Idle())
	}
	if _, res := fetch(t, a, b, d, 100000, 1); res.Err != nil {
		t.Fatal(res.Err)
	}
	if a.Idle() {
		t.Error("a idle with a FIN in its ring")
	}
	pollUntil(t, time.Second, func() bool { return a.Idle() && b.Idle() }, a, b)

	// RingProbe sees what Idle sees, with the documented offsets.
	probe := b.RingProbe()
	if probe == 0 {
		t.Fatal("no ring")
	}
	if b.ring.Cells() != DefaultRingCells {
		t.Errorf("ring of %d cells", b.ring.Cells())
	}
	hs := transport.Header{Len: 1}
	if _, err := a.Send(ab, &hs, [][]byte{{1}}, 0, 0); err != nil {
		t.Fatal(err)
	}
	if probeEmpty(t, b.seg, probe) || b.Idle() {
		t.Error("probe or Idle empty with a message waiting")
	}
	b.poll()
	if !probeEmpty(t, b.seg, probe) || !b.Idle() {
		t.Error("probe or Idle not empty after Poll")
	}
}

// TestEndpointIdleUntilCheckRuns: once Idle has seen the liveness check
// due, it answers false to every caller until Poll has run the check. The
// provider asks Idle twice per pass (before it polls, then for the C
// side's busy word); an answer that held for one call fell on the second
// call every time, so a sender waiting for the FIN of a peer that had
// died never ran the check that would have failed its send.
func TestEndpointIdleUntilCheckRuns(t *testing.T) {
	a, b, ab := pair(t)
	h := transport.Header{Len: 100000}
	if done, err := a.Send(ab, &h, [][]byte{pattern(100000, 0)}, 1, 0); done || err != nil {
		t.Fatal(done, err)
	}
	recvOne(t, a, b) // b holds the RTS and never fetches
	a.poll()
	a.nextCheck = a.now() // due now
	seen := -1
	for i := 0; i < 2*idleClockEvery; i++ {
		if !a.Idle() {
			seen = i
			break
		}
	}
	if seen < 0 {
		t.Fatalf("Idle true %d times in a row with the check due", 2*idleClockEvery)
	}
	for i := 0; i < 3; i++ {
		if a.Idle() {
			t.Fatalf("Idle true at call %d after it saw the check due, before any Poll", seen+2+i)
		}
	}
	a.poll()
	if a.nextCheck <= a.now() {
		t.Error("Poll did not run the check")
	}
	if !a.Idle() {
		t.Error("not idle after the check ran")
	}
}

// TestEndpointClose: after Close, pending operations fail with ErrClosed
// on the next Poll, and peers see the endpoint gone.
func TestEndpointClose(t *testing.T) {
	for _, mod := range []func(*Config){func(*Config) {}, noCMA} {
		a, b, ab := pair(t, mod)
		ba, err := b.Connect(a.EPID())
		if err != nil {
			t.Fatal(err)
		}
		// a: a rendezvous send waiting for its FIN. b: a fetch from a
		// waiting for data (copy protocol) or nothing (CMA).
		h := transport.Header{Len: 100000}
		if done, err := a.Send(ab, &h, [][]byte{pattern(100000, 1)}, 7, 0); done || err != nil {
			t.Fatal(done, err)
		}
		if done, err := b.Send(ba, &h, [][]byte{pattern(100000, 2)}, 8, 0); done || err != nil {
			t.Fatal(done, err)
		}
		d := recvOne(t, a, b)
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if err := a.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := os.Stat(segFile(a.Name())); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("segment still there: %v", err)
		}
		if n := a.poll(); n != 1 || !errors.Is(a.rec.sendDone[7], transport.ErrClosed) {
			t.Errorf("Poll after Close: %d events, SendDone %v", n, a.rec.sendDone[7])
		}
		if n := a.poll(); n != 0 {
			t.Errorf("second Poll after Close: %d events", n)
		}
		if _, err := a.Send(ab, &h, nil, 0, 0); !errors.Is(err, transport.ErrClosed) {
			t.Errorf("Send after Close: %v", err)
		}
		if !a.Idle() || a.RingProbe() != 0 {
			t.Error("closed endpoint not idle or still has a ring")
		}
		a.Wake()
		a.Wait(time.Second)

		// b: its send to a fails, a new send is refused, and the fetch
		// of a's data fails.
		pollUntil(t, 3*time.Second, func() bool { _, ok := b.rec.sendDone[8]; return ok }, b)
		if err := b.rec.sendDone[8]; !errors.Is(err, transport.ErrPeerDead) {
			t.Errorf("b's SendDone: %v", err)
		}
		hs := transport.Header{Len: 1}
		if _, err := b.Send(ba, &hs, [][]byte{{1}}, 0, 0); !errors.Is(err, transport.ErrPeerDead) {
			t.Errorf("Send to a closed peer: %v", err)
		}
		if done, _, err := b.Fetch(&d.Rndv, make([]byte, 100000), 9); !done || !errors.Is(err, transport.ErrPeerDead) {
			t.Errorf("Fetch from a closed peer: %v, %v", done, err)
		}
		if st := b.Stats(); st.PeerDead != 1 {
			t.Errorf("b's stats %+v", st)
		}
	}
}

// TestEndpointStuckPeer: with StuckTimeout set, a peer that is alive but
// never polls fails the operations waiting on it with ErrTimeout after
// that long, and not before. The endpoints' clock is the test's: time
// passes when the test says, however busy the machine is.
func TestEndpointStuckPeer(t *testing.T) {
	const timeout = 300 * time.Millisecond
	setup := func(clk *clock.Manual) func(c *Config) {
		return func(c *Config) { c.ConnTimeout, c.StuckTimeout, c.Clock = timeout, timeout, clk }
	}
	// wait polls eps many times with the clock stopped, then moves it by
	// step and polls again, until done() or the clock has moved by max:
	// how far it moved.
	wait := func(clk *clock.Manual, step, max time.Duration, done func() bool, eps ...*tep) time.Duration {
		var moved time.Duration
		for {
			for range 200 {
				for _, e := range eps {
					e.poll()
				}
				if done() {
					return moved
				}
			}
			if moved >= max {
				return moved
			}
			clk.Advance(step)
			moved += step
		}
	}
	t.Run("send", func(t *testing.T) {
		clk := new(clock.Manual)
		a, b, ab := pair(t, setup(clk))
		h := transport.Header{Len: 100000}
		if done, err := a.Send(ab, &h, [][]byte{pattern(100000, 1)}, 1, 0); done || err != nil {
			t.Fatal(done, err)
		}
		moved := wait(clk, 10*time.Millisecond, 10*timeout, func() bool { _, ok := a.rec.sendDone[1]; return ok }, a)
		if err, ok := a.rec.sendDone[1]; !ok || !errors.Is(err, transport.ErrTimeout) {
			t.Fatalf("SendDone after %v of %v: %v %v", moved, timeout, err, ok)
		}
		if moved < timeout || moved > 2*timeout {
			t.Errorf("failed after %v, timeout %v", moved, timeout)
		}
		_ = b
	})
	t.Run("fetch", func(t *testing.T) {
		clk := new(clock.Manual)
		a, b, ab := pair(t, setup(clk), noCMA)
		h := transport.Header{Len: 100000}
		if done, err := a.Send(ab, &h, [][]byte{pattern(100000, 1)}, 1, 0); done || err != nil {
			t.Fatal(done, err)
		}
		d := recvOne(t, b, b) // a does not poll from now on
		if done, _, err := b.Fetch(&d.Rndv, make([]byte, 100000), 2); done || err != nil {
			t.Fatal(done, err)
		}
		moved := wait(clk, 10*time.Millisecond, 10*timeout, func() bool { _, ok := b.rec.fetchDone[2]; return ok }, b)
		if res, ok := b.rec.fetchDone[2]; !ok || !errors.Is(res.Err, transport.ErrTimeout) {
			t.Fatalf("FetchDone after %v of %v: %+v %v", moved, timeout, res, ok)
		}
		if moved < timeout || moved > 2*timeout {
			t.Errorf("failed after %v, timeout %v", moved, timeout)
		}
		// When a polls again, its send ends too: the FIN says why.
		pollUntil(t, 5*time.Second, func() bool { _, ok := a.rec.sendDone[1]; return ok }, a, b)
		if err := a.rec.sendDone[1]; !errors.Is(err, transport.ErrTimeout) {
			t.Errorf("SendDone: %v", err)
		}
	})
}

// TestEndpointControlQueued fills the sender's ring so that FIN and CTS
// cells must be queued; they still arrive, in order.
func TestEndpointControlQueued(t *testing.T) {
	for _, mod := range []func(*Config){func(*Config) {}, noCMA} {
		a, b, ab := pair(t, mod, func(c *Config) { c.RingCells = 8 })
		ba, err := b.Connect(a.EPID())
		if err != nil {
			t.Fatal(err)
		}
		const sends = 6
		for i := range sends {
			h := transport.Header{Tag: uint64(i), Len: 50000}
			sendAll(t, a, b, ab, h, [][]byte{pattern(50000, byte(i))}, uint64(i), 0)
		}
		pollUntil(t, time.Second, func() bool { return len(b.rec.got) == sends }, b)
		// Fill a's ring with messages from b, so every control cell for a
		// has to wait.
		hs := transport.Header{Len: 1}
		for {
			if _, err := b.Send(ba, &hs, [][]byte{{1}}, 0, 0); err != nil {
				break
			}
		}
		dsts := make([][]byte, sends)
		for i, d := range b.rec.got {
			dsts[i] = make([]byte, 50000)
			if done, _, err := b.Fetch(&d.Rndv, dsts[i], uint64(i)); err != nil {
				t.Fatal(err)
			} else if done {
				b.rec.fetchDone[uint64(i)] = fetchResult{N: 50000}
			}
		}
		if st := b.Stats(); st.Queued != sends {
			t.Errorf("queued %d control cells, want %d", st.Queued, sends)
		}
		if _, err := b.Send(ba, &hs, [][]byte{{1}}, 0, 0); !errors.Is(err, transport.ErrAgain) {
			t.Errorf("Send with control cells queued: %v", err)
		}
		pollUntil(t, 5*time.Second, func() bool {
			return len(a.rec.sendDone) == sends && len(b.rec.fetchDone) == sends
		}, a, b)
		for i := range sends {
			if err := a.rec.sendDone[uint64(i)]; err != nil {
				t.Errorf("send %d: %v", i, err)
			}
			if !bytes.Equal(dsts[i], pattern(50000, byte(i))) {
				t.Errorf("fetch %d: payload differs", i)
			}
		}
	}
}

// zeroHandler counts events without allocating.
type zeroHandler struct{ n, bytes int }

func (z *zeroHandler) Deliver(h *transport.Header, m *transport.Incoming) {
	z.n++
	z.bytes += len(m.Payload)
}
func (z *zeroHandler) SendDone(uint64, error)       { z.n++ }
func (z *zeroHandler) FetchDone(uint64, int, error) { z.n++ }

// TestEndpointZeroAllocs: inline and eager sends and their receipt do not
// allocate, nor does an idle Poll.
func TestEndpointZeroAllocs(t *testing.T) {
	a, b, ab := pair(t)
	var z zeroHandler
	for _, n := range []int{0, 8, 64, 197, 1000, 8192, 16000} {
		payload := pattern(n, 0)
		iov := [][]byte{payload}
		h := transport.Header{Tag: 1, Data: 2, Len: uint64(n)}
		allocs := testing.AllocsPerRun(200, func() {
			if done, err := a.Send(ab, &h, iov, 0, 0); !done || err != nil {
				t.Fatal(done, err)
			}
			if b.Poll(&z, 16) != 1 {
				t.Fatal("nothing received")
			}
		})
		if allocs != 0 {
			t.Errorf("%d bytes: %v allocations per send and receive", n, allocs)
		}
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if b.Poll(&z, 16) != 0 || !b.Idle() {
			t.Fatal("not idle")
		}
	})
	if allocs != 0 {
		t.Errorf("idle Poll: %v allocations", allocs)
	}
	// A handler the C fast path matches for (transport.Holder) is asked
	// about every message at the head of the ring; asking costs nothing.
	hz := holdingHandler{}
	h := transport.Header{Tag: 1, Len: 8}
	iov := [][]byte{pattern(8, 0)}
	allocs = testing.AllocsPerRun(200, func() {
		if done, err := a.Send(ab, &h, iov, 0, 0); !done || err != nil {
			t.Fatal(done, err)
		}
		if b.Poll(&hz, 16) != 1 {
			t.Fatal("nothing received")
		}
	})
	if allocs != 0 || hz.asked == 0 {
		t.Errorf("Poll with a Holder: %v allocations, asked %d times", allocs, hz.asked)
	}
}

// holdingHandler is a zeroHandler that is also a transport.Holder and
// holds nothing.
type holdingHandler struct {
	zeroHandler
	asked int
}

func (z *holdingHandler) Hold(*transport.Header) bool { z.asked++; return false }

// TestEndpointReclaimStale: a segment whose owner died is removed by the
// next NewEndpoint, and its id can be used again.
func TestEndpointReclaimStale(t *testing.T) {
	job := testJob(t)
	name := SegmentName(job, 0xdead)
	// Any new endpoint of this user reclaims dead segments, including
	// those of test processes running beside this one (go test runs
	// packages in parallel): try a few times to see the leftover.
	var err error
	for try := 0; try < 5; try++ {
		c := startChild(t, "ep-die", endpointChildEnv(job, 0xdead, 0)...)
		c.wait(t)
		if _, err = os.Stat(segFile(name)); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("the dead child left no segment: %v", err)
	}
	newTestEP(t, job, 0x1)
	if _, err := os.Stat(segFile(name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale segment not reclaimed: %v", err)
	}
	// A live endpoint's segment is kept, a fresh invalid one too.
	live := newTestEP(t, job, 0x2)
	writeFile(t, SegmentName(job, 0x3), make([]byte, 4096))
	t.Cleanup(func() { _ = Unlink(SegmentName(job, 0x3)) })
	if _, err := ReclaimStale(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{live.Name(), SegmentName(job, 0x3)} {
		if _, err := os.Stat(segFile(n)); err != nil {
			t.Errorf("%s removed: %v", n, err)
		}
	}
	// The dead child's id is free again; so is a name left over under our
	// own id.
	c := startChild(t, "ep-die", endpointChildEnv(job, 0xdead, 0)...)
	c.wait(t)
	if err := Unlink(SegmentName(job, 0x3)); err != nil {
		t.Fatal(err)
	}
	e, err := NewEndpoint(Config{Job: job, EPID: 0xdead})
	if err != nil {
		t.Fatalf("NewEndpoint over a dead owner's segment: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestEndpointConfig(t *testing.T) {
	job := testJob(t)
	for _, cfg := range []Config{
		{Job: job, EPID: 1, RingCells: 3},
		{Job: job, EPID: 1, Buffers: MaxBuffers + 1},
		{Job: job, EPID: 1, InlineCells: ring.MaxPushCells + 1},
	} {
		if e, err := NewEndpoint(cfg); err == nil {
			_ = e.Close()
			t.Errorf("NewEndpoint(%+v) succeeded", cfg)
		}
	}
	// A huge threshold is capped: the bounce buffers hold an eager message.
	a, b, ab := pair(t, func(c *Config) { c.RndvThreshold = 1 << 30; c.Buffers = 2 })
	if a.threshold != MaxRndvThreshold || a.seg.BufferSize() < MaxRndvThreshold {
		t.Errorf("threshold %d, buffers of %d", a.threshold, a.seg.BufferSize())
	}
	transfer(t, a, b, ab, MaxRndvThreshold, 1)
	if d := transfer(t, a, b, ab, MaxRndvThreshold+1, 2); !d.IsRndv {
		t.Error("past the threshold but not rendezvous")
	}
	// A negative threshold sends all but inline messages by rendezvous;
	// one inline cell only.
	a, b, ab = pair(t, func(c *Config) { c.RndvThreshold = -1; c.InlineCells = 1 })
	if d := transfer(t, a, b, ab, 32, 0); d.IsRndv {
		t.Error("inline message sent by rendezvous")
	}
	if d := transfer(t, a, b, ab, 33, 0); !d.IsRndv {
		t.Error("33 bytes not rendezvous")
	}
	if diff := cmp.Diff(Stats{Sent: 2, Inline: 1, Rndv: 1, InlineBytes: 32, RndvBytes: 33}, a.Stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

// TestEndpointWaitConcurrent sleeps in Wait on other goroutines while the
// owner polls and sends (as a progress thread that does not hold the
// endpoint's lock would), then closes the endpoint under the sleepers.
func TestEndpointWaitConcurrent(t *testing.T) {
	a, b, ab := pair(t)
	const sleepers = 3
	wokeUp := make(chan int, 1000)
	stop := make(chan struct{})
	done := make(chan struct{})
	for i := range sleepers {
		go func() {
			defer func() { done <- struct{}{} }()
			for {
				select {
				case <-stop:
					b.Wait(-1) // until Close
					return
				default:
				}
				b.Wait(-1)
				select {
				case wokeUp <- i:
				default:
				}
			}
		}()
	}
	// At least 200 messages, and on until a sleeper has woken: on a busy
	// machine the sleepers may not reach Wait before the first 200 are
	// through. A minute of messages with no wake-up is a lost wake-up.
	deadline := time.Now().Add(time.Minute)
	i := 0
	for ; i < 200 || (len(wokeUp) == 0 && time.Now().Before(deadline)); i++ {
		n := []int{8, 1000, 50000}[i%3]
		transfer(t, a, b, ab, n, byte(i))
	}
	if len(wokeUp) == 0 {
		t.Errorf("no sleeper woke up for %d messages", i)
	}
	close(stop)
	b.Wake()
	time.Sleep(10 * time.Millisecond)
	closed := make(chan error)
	go func() { closed <- b.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs with goroutines in Wait")
	}
	for range sleepers {
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("a Wait did not return after Close")
		}
	}
	b.Wait(-1) // after Close: at once
}

// TestEndpointSenderClosesFirst: a sender whose eager send completed may
// close (and its process exit) before the receiver polls; the message is
// still delivered, from the closed segment, because Close lingers for the
// bounce buffer and a receiver maps a closed sender's segment to read it.
func TestEndpointSenderClosesFirst(t *testing.T) {
	a, b, ab := pair(t)
	msg := pattern(1000, 7) // eager: in a's bounce buffer
	if !sendAll(t, a, b, ab, transport.Header{Tag: 9, Len: uint64(len(msg))}, [][]byte{msg}, 1, 0) {
		t.Fatal("eager send not done at once")
	}
	closed := make(chan error, 1)
	go func() { closed <- a.Endpoint.Close() }()
	for a.seg.Closed() == false {
		time.Sleep(time.Millisecond)
	}
	n := len(b.rec.got)
	pollUntil(t, 5*time.Second, func() bool { return len(b.rec.got) > n }, b)
	if got := b.rec.got[n]; !bytes.Equal(got.Payload, msg) || got.Hdr.Tag != 9 {
		t.Fatalf("delivered %d bytes tag %d", len(got.Payload), got.Hdr.Tag)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// holder is a recorder that is also a transport.Holder: it asks for
// every message to stay in the ring while hold is set, and counts asks.
type holder struct {
	*recorder
	hold bool
	asks int
}

func (h *holder) Hold(*transport.Header) bool { h.asks++; return h.hold }

// A run of up to holdUnits inline or eager messages that is all the ring
// holds stays there while the handler asks for it, for receives the C fast
// path queues; one more message, a rendezvous among them, or a handler
// that declines, and Poll takes them all.
func TestEndpointHoldRun(t *testing.T) {
	eagerLen := inlineMax(DefaultInlineCells, false) + 1
	for _, tc := range []struct {
		name  string
		sizes []int // message lengths, in order
		held  bool
	}{
		{"one inline", []int{8}, true},
		{"two inline", []int{8, 8}, true},
		{"inline and eager", []int{8, eagerLen, 100}, true},
		{"holdUnits", slices.Repeat([]int{8}, holdUnits), true},
		{"holdUnits+1", slices.Repeat([]int{8}, holdUnits+1), false},
		{"rendezvous behind", []int{8, 1 << 20}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b, ab := pair(t)
			h := &holder{recorder: newRecorder(), hold: true}
			for i, n := range tc.sizes {
				sendAll(t, a, b, ab, transport.Header{Tag: uint64(i), Len: uint64(n)}, [][]byte{pattern(n, byte(i))}, uint64(i+1), transport.SendCopy)
			}
			b.Poll(h, 64)
			if held := len(h.got) == 0; held != tc.held {
				t.Fatalf("held %v (%d delivered, %d asks), want %v", held, len(h.got), h.asks, tc.held)
			}
			// Messages in the ring are no work besides the ring's (the
			// C side reads it), but Poll must still look at them: the
			// handler's answer may change (a receive posted in Go, a
			// peek).
			if tc.held {
				if !b.IdleBesidesRing() || b.Idle() {
					t.Fatalf("held run: idle besides the ring %v (want true), idle %v (want false)",
						b.IdleBesidesRing(), b.Idle())
				}
			}
			h.hold = false
			pollUntil(t, 5*time.Second, func() bool {
				b.Poll(h, 64)
				return len(h.got) == len(tc.sizes)
			}, a)
			for i, d := range h.got {
				if d.Hdr.Tag != uint64(i) || !d.IsRndv && !bytes.Equal(d.Payload, pattern(tc.sizes[i], byte(i))) {
					t.Fatalf("message %d: tag %d, %d bytes", i, d.Hdr.Tag, len(d.Payload))
				}
			}
		})
	}
}

// Poll passes over the cells of a message the C fast path delivered out
// of ring order (cellTaken): the messages around it arrive, it does not,
// and nothing counts as dropped.
func TestEndpointPassesTakenCells(t *testing.T) {
	a, b, ab := pair(t)
	sizes := []int{8, inlineMax(DefaultInlineCells, false), 8} // the middle one takes several cells
	for i, n := range sizes {
		sendAll(t, a, b, ab, transport.Header{Tag: uint64(i), Len: uint64(n)}, [][]byte{pattern(n, byte(i))}, uint64(i+1), transport.SendCopy)
	}
	first := uint64(inlineCells(sizes[0], false))
	for c := range uint64(inlineCells(sizes[1], false)) {
		cell, ok := b.ring.PeekCell(first + c)
		if !ok {
			t.Fatal("cell not there")
		}
		cell[offCellKind] = cellTaken
	}
	pollUntil(t, 5*time.Second, func() bool { b.poll(); return len(b.rec.got) == 2 && b.ring.Empty() }, a)
	if g := b.rec.got; g[0].Hdr.Tag != 0 || g[1].Hdr.Tag != 2 || !bytes.Equal(g[1].Payload, pattern(8, 2)) {
		t.Fatalf("delivered %+v", g)
	}
	if d := b.Stats().Dropped; d != 0 {
		t.Fatalf("%d cells dropped", d)
	}
}
