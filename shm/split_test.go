//go:build linux

package shm

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// TestSplitHelped: a sender that polls while its receiver fetches writes
// part of the message, and the receiver gets every byte right.
func TestSplitHelped(t *testing.T) {
	a, b, ab := pair(t)
	a.noLocal, b.noLocal = true, true // process_vm_* within the process
	const n = 2<<20 + 12345
	helped := uint64(0)
	// Helping needs the sender's goroutine to run while the receiver
	// fetches: on a crowded machine it may take many messages.
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; helped == 0 && (i < 50 || time.Now().Before(deadline)); i++ {
		payload := pattern(n, byte(i))
		h := transport.Header{Tag: uint64(i), Len: n}
		sendAll(t, a, b, ab, h, [][]byte{payload}, uint64(i+1), 0)
		d := recvOne(t, a, b)

		// a polls on its own goroutine while b fetches.
		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				a.poll()
			}
		}()
		dst := make([]byte, n)
		done, got, err := b.Fetch(&d.Rndv, dst, uint64(i+1))
		stop.Store(true)
		wg.Wait()
		if !done || got != n || err != nil || !bytes.Equal(dst, payload) {
			t.Fatalf("message %d: Fetch = %v, %d, %v; equal %v", i, done, got, err, bytes.Equal(dst, payload))
		}
		pollUntil(t, 5*time.Second, func() bool { _, ok := a.rec.sendDone[uint64(i+1)]; return ok }, a, b)
		if err := a.rec.sendDone[uint64(i+1)]; err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
		helped = a.Stats().SplitHelped
	}
	if helped == 0 {
		if run, cpus := runnable(), runtime.NumCPU(); run > cpus {
			t.Skipf("the sender never helped, on a crowded machine (%d threads runnable on %d CPUs): not judged", run, cpus)
		}
		t.Error("the sender never helped")
	}
	if st := b.Stats(); st.RndvSplit == 0 {
		t.Errorf("receiver stats %+v", st)
	}
}

// TestSplitStale: a sender that polls only after its receiver is done
// writes nothing: not into the finished buffer, not into a later fetch
// that reuses the split slot.
func TestSplitStale(t *testing.T) {
	a, b, ab := pair(t)
	a.noLocal, b.noLocal = true, true
	const n = 1 << 20
	var ds []delivered
	for i := range 2 {
		h := transport.Header{Tag: uint64(i), Len: n}
		sendAll(t, a, b, ab, h, [][]byte{pattern(n, byte(i))}, uint64(i+1), 0)
	}
	pollUntil(t, 5*time.Second, func() bool { return len(b.rec.got) == 2 }, b)
	ds = b.rec.got
	dsts := [2][]byte{make([]byte, n), make([]byte, n)}
	for i, d := range ds {
		done, got, err := b.Fetch(&d.Rndv, dsts[i], uint64(i+1))
		if !done || got != n || err != nil || !bytes.Equal(dsts[i], pattern(n, byte(i))) {
			t.Fatalf("fetch %d: %v %d %v", i, done, got, err)
		}
		clear(dsts[i]) // the receiver's buffer is the application's again
	}
	// Now a sees both SPLIT cells, then both FINs.
	pollUntil(t, 5*time.Second, func() bool { return len(a.rec.sendDone) == 2 }, a)
	for i, dst := range dsts {
		if !bytes.Equal(dst, make([]byte, n)) {
			t.Errorf("buffer %d written after its fetch ended", i)
		}
		if err := a.rec.sendDone[uint64(i+1)]; err != nil {
			t.Errorf("send %d: %v", i, err)
		}
	}
	if st := a.Stats(); st.SplitHelped != 0 {
		t.Errorf("sender wrote %d chunks late", st.SplitHelped)
	}
}

// TestSplitGeometry: two page-multiple halves covering the message.
func TestSplitGeometry(t *testing.T) {
	for _, want := range []int{1 << 20, 1<<20 + 1, 4<<20 + 3, 3 << 30} {
		n, chunk := splitGeometry(want)
		if n != 2 || chunk%4096 != 0 || chunk*(n-1) >= want || chunk*n < want {
			t.Errorf("splitGeometry(%d) = %d chunks of %d", want, n, chunk)
		}
	}
}

// TestSplitAlone: below SplitThreshold, a fetch is split only when
// nothing waits in the ring behind its request; from SplitThreshold up,
// always. Fetches run inside Deliver, as the provider's do.
func TestSplitAlone(t *testing.T) {
	a, b, ab := pair(t)
	a.noLocal, b.noLocal = true, true
	alone := b.cfg.SplitAloneThreshold // (this process's default: pinned or not)
	lone, big := alone+1, DefaultSplitThreshold
	// splits sends messages of sizes and reports which fetches were split.
	cookie := uint64(100)
	splits := func(sizes ...int) []bool {
		t.Helper()
		var split []bool
		b.rec.got = nil
		b.rec.onDeliver = func(d delivered) {
			n := int(d.Hdr.Len)
			before := b.Stats().RndvSplit
			dst := make([]byte, n)
			if done, got, err := b.Fetch(&d.Rndv, dst, d.Hdr.Tag); !done || got != n || err != nil ||
				!bytes.Equal(dst, pattern(n, byte(d.Hdr.Tag))) {
				t.Errorf("fetch of %d: %v %d %v", n, done, got, err)
			}
			split = append(split, b.Stats().RndvSplit > before)
		}
		defer func() { b.rec.onDeliver = nil }()
		for i, n := range sizes {
			sendAll(t, a, b, ab, transport.Header{Tag: uint64(i), Len: uint64(n)}, [][]byte{pattern(n, byte(i))}, cookie, 0)
			cookie++
		}
		pollUntil(t, 5*time.Second, func() bool { return len(split) == len(sizes) }, b)
		pollUntil(t, 5*time.Second, func() bool { return a.pending == 0 }, a)
		return split
	}
	for _, tc := range []struct {
		sizes []int
		want  []bool
	}{
		{[]int{lone}, []bool{true}},
		{[]int{lone, lone, lone}, []bool{false, false, true}},
		{[]int{big, lone}, []bool{true, true}},
		{[]int{alone - 1}, []bool{false}},
	} {
		if got := splits(tc.sizes...); !slices.Equal(got, tc.want) {
			t.Errorf("sizes %v: split %v, want %v", tc.sizes, got, tc.want)
		}
	}
}

// TestSplitNotWhileExchanging: a fetch from a peer that still has a
// rendezvous of ours to fetch (both directions at once, as MPI_Sendrecv)
// is copied by the receiver alone, at any size; once the peer has fetched
// ours, the same fetch is split again.
func TestSplitNotWhileExchanging(t *testing.T) {
	a, b, ab := pair(t)
	a.noLocal, b.noLocal = true, true
	ba, err := b.Connect(a.EPID())
	if err != nil {
		t.Fatal(err)
	}
	lone, big := b.cfg.SplitAloneThreshold+1, DefaultSplitThreshold
	for i, n := range []int{lone, big} {
		c := uint64(10 * i) // cookies: each is reported once
		// b's rendezvous to a is out; a has not fetched it.
		back := pattern(n, 7)
		if sendAll(t, b, a, ba, transport.Header{Tag: 7, Len: uint64(n)}, [][]byte{back}, c+1, 0) {
			t.Fatalf("%d bytes: a rendezvous send completed at once", n)
		}
		owed := recvOne(t, b, a)
		// a sends n to b: b's fetch is not split while a owes it a fetch.
		sendAll(t, a, b, ab, transport.Header{Tag: 1, Len: uint64(n)}, [][]byte{pattern(n, 1)}, c+2, 0)
		before := b.Stats().RndvSplit
		fetchIs(t, a, b, recvOne(t, a, b), pattern(n, 1), c+4)
		if b.Stats().RndvSplit != before {
			t.Errorf("%d bytes: split while the peer had our rendezvous to fetch", n)
		}
		// a fetches b's message; b sees the FIN, and splits again.
		fetchIs(t, b, a, owed, back, c+5)
		pollUntil(t, 5*time.Second, func() bool { return b.pending == 0 && a.pending == 0 }, a, b)
		sendAll(t, a, b, ab, transport.Header{Tag: 3, Len: uint64(n)}, [][]byte{pattern(n, 3)}, c+3, 0)
		before = b.Stats().RndvSplit
		fetchIs(t, a, b, recvOne(t, a, b), pattern(n, 3), c+6)
		if b.Stats().RndvSplit == before {
			t.Errorf("%d bytes: not split after the exchange ended", n)
		}
		pollUntil(t, 5*time.Second, func() bool { return a.pending == 0 }, a, b)
	}
}

// fetchIs fetches rendezvous d from a at b and checks it carried want.
func fetchIs(t *testing.T, a, b *tep, d delivered, want []byte, cookie uint64) {
	t.Helper()
	if !d.IsRndv {
		t.Fatalf("%d bytes: not a rendezvous", len(want))
	}
	got, res := fetch(t, a, b, d, len(want), cookie)
	if res.N != len(want) || res.Err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%d bytes: fetched %d, %v, intact %v", len(want), res.N, res.Err, bytes.Equal(got, want))
	}
}

// runnable is the number of runnable threads on the machine
// (/proc/loadavg's fourth field), or a large number if unknown.
func runnable() int {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 1 << 20
	}
	var l1, l5, l15 float64
	var run int
	if _, err := fmt.Sscanf(string(b), "%f %f %f %d/", &l1, &l5, &l15, &run); err != nil {
		return 1 << 20
	}
	return run
}
