package atomicx

import (
	"sync/atomic"
	"unsafe"
)

// This file is where the library turns memory it shares with other
// processes (or with C) into typed words: the rings, segments and
// descriptors address that memory as []byte with offsets and take their
// words here, so every access is bounds-checked once, by the slice
// expression.

// WordAt returns the 64-bit word at mem[off:off+8] for atomic access. The
// slice expression bounds-checks the whole word; off must be a multiple of
// 8 in memory that Aligned8 accepted. The pointer refers into mem and so
// keeps a Go-allocated mem alive; for a mapping, the caller must not use it
// after the mapping is unmapped.
func WordAt(mem []byte, off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&mem[off : off+8 : off+8][0]))
}

// RawWordAt is WordAt as a *uint64, for StoreRel64. Loads of the
// word still go through WordAt's atomic.Uint64.
func RawWordAt(mem []byte, off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&mem[off : off+8 : off+8][0]))
}

// Aligned8 reports whether mem starts on an 8-byte boundary, as 64-bit
// atomics require on every architecture Go supports (arm64 faults
// otherwise, and x86 loses atomicity across a cache line).
func Aligned8(mem []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(mem)))%8 == 0
}

// Word32At returns the 32-bit word at mem[off:off+4] for atomic access
// (futex words are 32 bits). off must be a multiple of 4 in memory that
// Aligned8 accepted.
func Word32At(mem []byte, off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&mem[off : off+4 : off+4][0]))
}

// Addr returns the address of w, for code outside Go.
func Addr(w *uint64) uintptr { return uintptr(unsafe.Pointer(w)) }
