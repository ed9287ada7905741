package umem

import (
	"bytes"
	"runtime/debug"
	"testing"

	"golang.org/x/sys/unix"
)

// mapped returns n bytes of anonymous memory with protection prot; with
// half, the second half is PROT_NONE.
func mapped(t *testing.T, n int, prot int, half bool) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, prot, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Munmap(b) })
	if half {
		if err := unix.Mprotect(b[n/2:], unix.PROT_NONE); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func TestCopy(t *testing.T) {
	const n = 1 << 16
	rw := unix.PROT_READ | unix.PROT_WRITE
	good := bytes.Repeat([]byte{7}, n)
	for _, tc := range []struct {
		name   string
		dst    []byte
		src    []byte
		bad    Side
		minOff int // the fault is at or after this offset
	}{
		{"good", make([]byte, n), good, None, 0},
		{"empty", nil, good, None, 0},
		{"src PROT_NONE", make([]byte, n), mapped(t, n, unix.PROT_NONE, false), Src, 0},
		{"dst PROT_NONE", mapped(t, n, unix.PROT_NONE, false), good, Dst, 0},
		{"dst read-only", mapped(t, n, unix.PROT_READ, false), good, Dst, 0},
		{"src second half PROT_NONE", make([]byte, n), mapped(t, n, rw, true), Src, n / 2},
		{"dst second half PROT_NONE", mapped(t, n, rw, true), good, Dst, n / 2},
	} {
		got, bad, off := Copy(tc.dst, tc.src)
		want := min(len(tc.dst), len(tc.src))
		switch {
		case bad != tc.bad:
			t.Errorf("%s: Copy = %d, %v, %d; want %v", tc.name, got, bad, off, tc.bad)
		case bad != None && (got != 0 || off < tc.minOff || off >= n):
			t.Errorf("%s: Copy = %d, %v, %d; want the fault at or after %d", tc.name, got, bad, off, tc.minOff)
		case bad == None && (got != want || !bytes.Equal(tc.dst, tc.src[:want])):
			t.Errorf("%s: copied %d bytes, equal %v", tc.name, got, bytes.Equal(tc.dst, tc.src[:want]))
		}
		// The goroutine's setting is back as it was.
		if old := debug.SetPanicOnFault(false); old {
			t.Fatalf("%s: SetPanicOnFault left on", tc.name)
		}
	}
}

func TestProbes(t *testing.T) {
	rw := unix.PROT_READ | unix.PROT_WRITE
	for _, tc := range []struct {
		name      string
		b         []byte
		r, w      bool
		wantAfter byte
	}{
		{"heap", []byte{42}, true, true, 42},
		{"read-write", mapped(t, 4096, rw, false), true, true, 0},
		{"read-only", mapped(t, 4096, unix.PROT_READ, false), true, false, 0},
		{"PROT_NONE", mapped(t, 4096, unix.PROT_NONE, false), false, false, 0},
	} {
		if r, w := Readable(tc.b), Writable(tc.b); r != tc.r || w != tc.w {
			t.Errorf("%s: readable %v, writable %v; want %v, %v", tc.name, r, w, tc.r, tc.w)
		}
		if tc.r && tc.b[0] != tc.wantAfter {
			t.Errorf("%s: the probe changed the byte to %d", tc.name, tc.b[0])
		}
	}
}

// Catch recovers only memory faults: other panics go on.
func TestCatchOtherPanics(t *testing.T) {
	for _, p := range []any{"a string", fault(0)} {
		func() {
			defer func() {
				if r := recover(); r != p {
					t.Errorf("panic %v came out as %v", p, r)
				}
			}()
			var a uintptr
			defer Catch(Guard(), &a)
			panic(p)
		}()
	}
}

// Catch reports the address of a fault of any Go code in its function.
func TestCatchAddress(t *testing.T) {
	none := mapped(t, 4096, unix.PROT_NONE, false)
	var a uintptr
	func() {
		defer Catch(Guard(), &a)
		sink = none[5]
	}()
	if o, ok := Offset(a, none); !ok || o != 5 {
		t.Fatalf("fault at %#x: offset %d %v", a, o, ok)
	}
}

var sink byte

type fault uintptr

func (f fault) Addr() uintptr { return uintptr(f) }
func (f fault) Error() string { return "fake fault" }

func BenchmarkCopy64(b *testing.B) {
	src, dst := make([]byte, 64), make([]byte, 64)
	for b.Loop() {
		Copy(dst, src)
	}
}
