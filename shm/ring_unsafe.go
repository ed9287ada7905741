package shm

import (
	"sync/atomic"
	"unsafe"
)

// This file is the only place the package turns shared memory into typed
// words. Everything else addresses the memory as []byte with offsets.

// wordAt returns the 64-bit word at mem[off:off+8] for atomic access. The
// slice expression bounds-checks the whole word; off must be a multiple of
// 8 in memory that aligned8 accepted. The pointer refers into mem and so
// keeps a Go-allocated mem alive; for a mapping, the caller must not use it
// after the mapping is unmapped.
func wordAt(mem []byte, off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&mem[off : off+8 : off+8][0]))
}

// rawWordAt is wordAt as a *uint64, for atomicx.StoreRel64. Loads of the
// word still go through wordAt's atomic.Uint64.
func rawWordAt(mem []byte, off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&mem[off : off+8 : off+8][0]))
}

// aligned8 reports whether mem starts on an 8-byte boundary, as 64-bit
// atomics require on every architecture Go supports (arm64 faults
// otherwise, and x86 loses atomicity across a cache line).
func aligned8(mem []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%8 == 0
}

// word32At returns the 32-bit word at mem[off:off+4] for atomic access
// (futex words are 32 bits). off must be a multiple of 4 in memory that
// aligned8 accepted.
func word32At(mem []byte, off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&mem[off : off+4 : off+4][0]))
}

// uintptrOf returns the address of w, for code outside Go.
func uintptrOf(w *uint64) uintptr { return uintptr(unsafe.Pointer(w)) }
