package provider

import "unsafe"

// cptr turns the address of C memory, kept as a uintptr (a context or a
// buffer the application owns, never Go memory), back into a pointer.
func cptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// cbytes is the n bytes of C memory at p.
func cbytes(p uintptr, n uint64) []byte { return unsafe.Slice((*byte)(cptr(p)), n) }
