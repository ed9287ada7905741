//go:build linux

package shm

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/ring"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// protNone maps n bytes that nobody may read or write. The kernel
// answers EFAULT for them (process_vm_readv/writev); a Go load or store
// faults.
func protNone(tb testing.TB, n int) []byte {
	tb.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = unix.Munmap(b) })
	return b
}

// anonMem maps n readable and writable bytes (page-aligned), unmapped
// when the test ends.
func anonMem(tb testing.TB, n int) []byte {
	tb.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = unix.Munmap(b) })
	return b
}

// badMem maps n bytes of which the part says is PROT_NONE: all of it, or
// one half; the rest is readable and writable.
func badMem(tb testing.TB, n int, part region) []byte {
	tb.Helper()
	b := anonMem(tb, n)
	lo, hi := 0, n
	switch part {
	case firstHalf:
		hi = n / 2
	case secondHalf:
		lo = n / 2
	}
	if err := unix.Mprotect(b[lo:hi], unix.PROT_NONE); err != nil {
		tb.Fatal(err)
	}
	return b
}

// region is the part of a buffer a test makes unusable.
type region int

const (
	fine region = iota
	whole
	firstHalf
	secondHalf
)

// badCase says which buffers of a transfer are unusable, and where.
type badCase struct{ src, dst region }

func (c badCase) String() string {
	name := [...]string{"", "", " first half", " second half"}
	switch {
	case c.src != fine && c.dst != fine:
		return "both"
	case c.src != fine:
		return "sender" + name[c.src]
	}
	return "receiver" + name[c.dst]
}

// TestEndpointBadBuffer: a rendezvous whose send buffer cannot be read,
// or whose receive buffer cannot be written, fails promptly on both
// sides, each with its own error (ErrFault for its own buffer,
// ErrPeerFault for the other's), whatever the protocol, and the same
// endpoints then carry a good message of the same size intact.
func TestEndpointBadBuffer(t *testing.T) {
	paths := []struct {
		name    string
		mod     []func(*Config)
		noLocal bool // process_vm_readv within the process
		helped  bool // the sender takes the chunks it can of a split copy first
	}{
		{"in-process copy", nil, false, false},
		{"process_vm_readv", nil, true, false},
		{"process_vm_readv, sender helping", nil, true, true},
		{"copy protocol", []func(*Config){noCMA}, false, false},
	}
	cases := []badCase{
		{whole, fine}, {fine, whole}, {whole, whole},
		{firstHalf, fine}, {secondHalf, fine}, {fine, secondHalf},
	}
	for _, path := range paths {
		for _, n := range []int{256 << 10, 1 << 20} {
			for _, bad := range cases {
				t.Run(fmt.Sprintf("%s/%d/%v", path.name, n, bad), func(t *testing.T) {
					a, b, ab := pair(t, path.mod...)
					a.noLocal, b.noLocal = path.noLocal, path.noLocal
					if path.helped {
						b.splitHook = func() { a.poll() }
					}
					badTransfer(t, a, b, ab, n, bad)
					if a.Stats().Faults+b.Stats().Faults == 0 {
						t.Errorf("no fault counted: %+v %+v", a.Stats(), b.Stats())
					}
					// The endpoints are fine: a good message, then
					// another bad one, then a good one.
					transfer(t, a, b, ab, n, 1)
					badTransfer(t, a, b, ab, n, bad)
					transfer(t, a, b, ab, n, 2)
					if path.helped && n >= DefaultSplitThreshold && a.Stats().SplitHelped == 0 {
						t.Errorf("the sender never helped: %+v", a.Stats())
					}
				})
			}
		}
	}
}

// badTransfer sends n bytes from a to b by rendezvous with the buffers of
// bad unusable and checks both sides' errors, within 5 s.
func badTransfer(t *testing.T, a, b *tep, ab transport.Conn, n int, bad badCase) {
	t.Helper()
	src, dst := pattern(n, 9), make([]byte, n)
	if bad.src != fine {
		src = badMem(t, n, bad.src)
	}
	if bad.dst != fine {
		dst = badMem(t, n, bad.dst)
	}
	cookie := uint64(len(a.rec.sendDone) + 1000)
	start := time.Now()
	h := transport.Header{Tag: 77, Len: uint64(n)}
	if done := sendAll(t, a, b, ab, h, [][]byte{src}, cookie, 0); done {
		t.Fatal("a rendezvous send done at once")
	}
	d := recvOne(t, a, b)
	if !d.IsRndv {
		t.Fatalf("%d bytes not by rendezvous", n)
	}
	done, got, err := b.Fetch(&d.Rndv, dst, cookie)
	if !done {
		if err != nil {
			t.Fatalf("Fetch: not done, but %v", err)
		}
		pollUntil(t, 5*time.Second, func() bool { _, ok := b.rec.fetchDone[cookie]; return ok }, a, b)
		res := b.rec.fetchDone[cookie]
		got, err = res.N, res.Err
	}
	pollUntil(t, 5*time.Second, func() bool { _, ok := a.rec.sendDone[cookie]; return ok }, a, b)
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("the failure took %v", el)
	}
	// Each side reports ErrFault if its own buffer is bad where the copy
	// stopped (in these cases: if it is bad at all), ErrPeerFault if only
	// the other one is.
	srcBad, dstBad := bad.src != fine, bad.dst != fine
	wantR, wantS := transport.ErrPeerFault, transport.ErrPeerFault
	if dstBad {
		wantR = transport.ErrFault
	}
	if srcBad {
		wantS = transport.ErrFault
	}
	if got != 0 || !errors.Is(err, wantR) {
		t.Errorf("fetch = %d, %v; want %v", got, err, wantR)
	}
	serr := a.rec.sendDone[cookie]
	if a.cfg.DisableCMA && !srcBad && n <= (a.nbuf-a.reserve)*a.seg.BufferSize() {
		// The copy protocol completes a send once all its data is in
		// bounce buffers. A stream no longer than the buffers a stream
		// may hold gets there before the receiver copies any; a longer
		// one is still streaming when the receiver's FIN comes (the
		// receiver fails at most half-way, and the sender is never more
		// than those buffers ahead of it).
		wantS = nil
	}
	if (wantS == nil) != (serr == nil) || !errors.Is(serr, wantS) {
		t.Errorf("SendDone = %v, want %v", serr, wantS)
	}
}

// TestEndpointBadSendBuffer: a send that copies its payload (inline,
// eager, a rendezvous of several pieces or with SendCopy) from memory it
// cannot read fails at once with ErrFault, having sent nothing and kept
// no bounce buffer; the next message goes through.
func TestEndpointBadSendBuffer(t *testing.T) {
	a, b, ab := pair(t)
	none := protNone(t, 1<<20)
	for _, tc := range []struct {
		name  string
		iov   [][]byte
		flags uint32
	}{
		{"inline", [][]byte{none[:40]}, 0},
		{"inline, second piece", [][]byte{[]byte("ok"), none[:40]}, 0},
		{"eager", [][]byte{none[:8000]}, 0},
		{"eager, second piece", [][]byte{make([]byte, 4000), none[:4000]}, 0},
		{"rendezvous of two pieces", [][]byte{make([]byte, 50000), none[:50000]}, 0},
		{"rendezvous with SendCopy", [][]byte{none[:100000]}, transport.SendCopy},
	} {
		n := 0
		for _, v := range tc.iov {
			n += len(v)
		}
		h := transport.Header{Tag: 5, Len: uint64(n)}
		done, err := a.Send(ab, &h, tc.iov, 1, tc.flags)
		if done || !errors.Is(err, transport.ErrFault) {
			t.Errorf("%s: Send = %v, %v; want ErrFault", tc.name, done, err)
		}
		b.poll()
		if len(b.rec.got) != 0 || a.busy.Load() != 0 || a.pending != 0 {
			t.Fatalf("%s: %d delivered, busy bits %#x, %d pending", tc.name, len(b.rec.got), a.busy.Load(), a.pending)
		}
		transfer(t, a, b, ab, n, 3)
		b.rec.got = b.rec.got[:0]
	}
	if st := a.Stats(); st.Faults != 6 {
		t.Errorf("%d faults counted, want 6", st.Faults)
	}
}

// TestEndpointFINStatus: the sender's view of each FIN status, including
// one it does not know (a later version's), which fails the send rather
// than leave it waiting for ever.
func TestEndpointFINStatus(t *testing.T) {
	a, b, ab := pair(t)
	seg, err := Open(a.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	for _, tc := range []struct {
		status byte
		want   error // nil: success
	}{
		{finOK, nil},
		{finTimeout, transport.ErrTimeout},
		{finSrcFault, transport.ErrFault},
		{finDstFault, transport.ErrPeerFault},
		{finBothFault, transport.ErrFault},
		{finFailed, errRemoteFailed},
		{finMax + 1, errRemoteFailed},
		{255, errRemoteFailed},
	} {
		cookie := uint64(tc.status) + 1
		h := transport.Header{Len: 100000}
		sendAll(t, a, b, ab, h, [][]byte{make([]byte, 100000)}, cookie, 0)
		d := recvOne(t, a, b)
		c := make([]byte, ring.CellPayload)
		putCommon(c, cellFIN, tc.status, 0, 0, b.EPID())
		put64(c, offCellW2, d.Rndv.W[3])
		if err := seg.Ring().TryPush(c); err != nil {
			t.Fatal(err)
		}
		pollUntil(t, time.Second, func() bool { _, ok := a.rec.sendDone[cookie]; return ok }, a)
		if err := a.rec.sendDone[cookie]; (err == nil) != (tc.want == nil) || !errors.Is(err, tc.want) {
			t.Errorf("status %d: SendDone = %v, want %v", tc.status, err, tc.want)
		}
		if err := a.rec.sendDone[cookie]; errors.Is(err, transport.ErrFault) && errors.Is(err, transport.ErrPeerFault) {
			t.Errorf("status %d: %v is both faults", tc.status, err)
		}
	}
	// b took every RTS and dropped nothing; a dropped nothing either.
	if a.Stats().Dropped != 0 || b.Stats().Dropped != 0 {
		t.Errorf("dropped: %d %d", a.Stats().Dropped, b.Stats().Dropped)
	}
}
