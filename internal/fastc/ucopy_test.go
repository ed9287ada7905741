//go:build cgo

package fastc

import (
	"runtime/debug"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

var sink byte

// The fast path's guarded copy fails instead of faulting on memory the
// kernel refuses, copies everything else, and leaves faults it does not
// own to the handler before it: here the Go runtime's, which turns a
// fault in Go code into a panic when asked to.
func TestUCopy(t *testing.T) {
	page := unix.Getpagesize()
	good := make([]byte, 3*page)
	for i := range good {
		good[i] = byte(i)
	}
	none, err := unix.Mmap(-1, 0, 2*page, unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(none)
	ro, err := unix.Mmap(-1, 0, page, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(ro)

	dst := make([]byte, 3*page)
	p := func(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
	for round := 0; round < 3; round++ {
		if UCopy(p(dst), p(none), page) {
			t.Fatal("a copy from PROT_NONE memory succeeded")
		}
		if UCopy(p(none), p(good), 100) {
			t.Fatal("a copy into PROT_NONE memory succeeded")
		}
		if UCopy(p(ro), p(good), 100) {
			t.Fatal("a copy into read-only memory succeeded")
		}
		clear(dst)
		if !UCopy(p(dst), p(good), len(good)) {
			t.Fatal("a copy between good buffers failed")
		}
		for i := range dst {
			if dst[i] != good[i] {
				t.Fatalf("byte %d: %d, want %d", i, dst[i], good[i])
			}
		}
	}

	// A fault in Go code still reaches the Go runtime.
	caught := func() (got bool) {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() { got = recover() != nil }()
		sink = *(*byte)(unsafe.Pointer(&none[0]))
		return false
	}()
	if !caught {
		t.Fatal("a fault in Go code did not become a panic")
	}
	if !UCopy(p(dst), p(good), 64) {
		t.Fatal("a copy between good buffers failed after a Go fault")
	}
}
