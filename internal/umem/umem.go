package umem

import (
	"runtime/debug"
	"unsafe"
)

// Guard makes a fault of the calling goroutine recoverable and returns
// the previous setting. Use it only as
//
//	defer umem.Catch(umem.Guard(), &addr)
//
// at the top of a function whose only possible faults are on the user
// memory it copies.
func Guard() bool { return debug.SetPanicOnFault(true) }

// Catch, deferred as shown at Guard, restores the goroutine's setting and
// recovers a memory fault, storing the faulting address in *addr (never
// 0: a fault below the first page is a nil dereference, which Catch does
// not recover). Any other panic goes on.
func Catch(old bool, addr *uintptr) {
	debug.SetPanicOnFault(old)
	r := recover()
	if r == nil {
		return
	}
	f, ok := r.(interface{ Addr() uintptr })
	if !ok || f.Addr() == 0 {
		panic(r)
	}
	*addr = f.Addr()
}

// Offset reports whether address a is inside b, and where.
func Offset(a uintptr, b []byte) (int, bool) {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if len(b) == 0 || a < base || a-base >= uintptr(len(b)) {
		return 0, false
	}
	return int(a - base), true
}

// Side says which buffer of a copy faulted.
type Side uint8

const (
	None Side = iota // the copy succeeded
	Dst              // the destination could not be written
	Src              // the source could not be read
)

func (s Side) String() string {
	switch s {
	case None:
		return "none"
	case Dst:
		return "destination"
	case Src:
		return "source"
	}
	return "?"
}

// Copy is copy(dst, src), except that a fault in either buffer returns
// the buffer at fault and the offset of the faulting byte in it (the
// bytes before it may or may not have been copied, and so may some
// after it) instead of killing the process; n is 0 then. A fault at an
// address in neither buffer is not the copy's: Copy panics with it again.
func Copy(dst, src []byte) (n int, bad Side, off int) {
	n = min(len(dst), len(src))
	if n == 0 {
		return 0, None, 0
	}
	dst, src = dst[:n], src[:n]
	var a uintptr
	guardedCopy(dst, src, &a)
	if a == 0 {
		return n, None, 0
	}
	if o, ok := Offset(a, dst); ok {
		return 0, Dst, o
	}
	if o, ok := Offset(a, src); ok {
		return 0, Src, o
	}
	panic(foreignFault(a))
}

// Readable reports whether b[0] can be read. b must not be empty.
func Readable(b []byte) bool {
	var t [1]byte
	_, bad, _ := Copy(t[:], b[:1])
	return bad == None
}

// Writable reports whether b[0] can be written: it reads the byte and
// stores it back, so it must be readable too (every writable page is, on
// the machines this runs on), and the byte is unchanged unless someone
// else writes it meanwhile. b must not be empty.
func Writable(b []byte) bool {
	var t [1]byte
	if _, bad, _ := Copy(t[:], b[:1]); bad != None {
		return false
	}
	_, bad, _ := Copy(b[:1], t[:])
	return bad == None
}

func guardedCopy(dst, src []byte, a *uintptr) {
	defer Catch(Guard(), a)
	copy(dst, src)
}

// foreignFault is a fault Copy caught outside its buffers.
type foreignFault uintptr

func (f foreignFault) Error() string {
	return "umem: fault outside the buffers of a copy"
}
