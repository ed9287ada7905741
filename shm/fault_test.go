//go:build linux

package shm

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"

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
