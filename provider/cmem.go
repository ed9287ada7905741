package provider

import "unsafe"

// This file is where provider turns application memory into Go slices:
// the pieces the shim hands over as Iovecs, and the buffers kept as
// addresses (uintptr) while an operation waits (a receive's buffer, an
// RMA target range, a collective's input and output), viewed when the
// data lands. Every copy into or out of such a view goes through
// internal/umem's guarded copies, as the memory may be unmapped.

// Bytes is the piece's memory as a byte slice (no copy).
func (v Iovec) Bytes() []byte { return unsafe.Slice((*byte)(v.Base), v.Len) }

// cptr turns the address of C memory, kept as a uintptr (a context or a
// buffer the application owns, never Go memory), back into a pointer.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// cbytes is the n bytes of C memory at p.
func cbytes(p uintptr, n uint64) []byte { return unsafe.Slice((*byte)(cptr(p)), n) }
