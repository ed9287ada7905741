package fi

import "unsafe"

// Ptr is a C pointer the API only carries and prints (a fid handle, the
// domain or fabric of an attribute), never dereferences. The zero value is
// NULL.
type Ptr struct {
	p    unsafe.Pointer
	addr uintptr // a printable address with no pointer behind it
}

// MakePtr wraps a pointer.
func MakePtr(p unsafe.Pointer) Ptr { return Ptr{p: p} }

// AddrPtr makes a Ptr that only prints as addr; Pointer returns nil. It is
// for values that describe a pointer without holding one, such as test
// fixtures.
func AddrPtr(addr uintptr) Ptr { return Ptr{addr: addr} }

// Pointer returns the wrapped pointer (nil for an AddrPtr).
func (p Ptr) Pointer() unsafe.Pointer { return p.p }

// Addr is the pointer's numeric value, for printing.
func (p Ptr) Addr() uintptr {
	if p.p != nil {
		return uintptr(p.p)
	}
	return p.addr
}
