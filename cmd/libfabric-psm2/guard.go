package main

/*
#include <stdint.h>
#include <sys/types.h>
*/
import "C"

import (
	"runtime/debug"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// Every exported psm2go_* function starts with a deferred guard: a panic
// in Go (a bug, or input nothing checked) must not unwind into the C
// application's frames, where the runtime would end the whole process. The
// guard recovers, reports the panic with its stack (Provider.Recovered)
// and makes the call fail with -FI_EOTHER. guard_test.go checks that no
// export is without one. A deferred call that does nothing costs about a
// nanosecond (open-coded defers), so the data path keeps it too.

// caught reports panic v, recovered in export name.
func caught(name string, v any) {
	stack := debug.Stack()
	if lib != nil && lib.prov != nil {
		lib.prov.Recovered(name, v, stack)
	}
}

func guardInt(ret *C.int, name string) {
	if v := recover(); v != nil {
		caught(name, v)
		*ret = -C.int(fi.EOTHER)
	}
}

func guardSsize(ret *C.ssize_t, name string) {
	if v := recover(); v != nil {
		caught(name, v)
		*ret = -C.ssize_t(fi.EOTHER)
	}
}

// guardU64 is for the exports whose result is a value, not a status
// (fi_cntr_read, fi_mr_desc's base): 0 after a panic.
func guardU64(ret *C.uint64_t, name string) {
	if v := recover(); v != nil {
		caught(name, v)
		*ret = 0
	}
}

func guardVoid(name string) {
	if v := recover(); v != nil {
		caught(name, v)
	}
}

// maxCBuf is the most of a caller's buffer that is ever viewed as a Go
// slice. Sizes come from the application and may be anything (SIZE_MAX
// for "large enough"); unsafe.Slice panics past the address space, and no
// string or event we write comes near this.
const maxCBuf = 1 << 30

// cView views the C buffer p of n bytes, at most maxCBuf of it (nil for
// none).
func cView(p unsafe.Pointer, n C.size_t) []byte {
	if p == nil || n == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), min(uint64(n), maxCBuf))
}
