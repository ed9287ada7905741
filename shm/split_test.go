//go:build linux

package shm

import (
	"bytes"
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
	for i := 0; i < 50 && helped == 0; i++ {
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
