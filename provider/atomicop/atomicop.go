package atomicop

import (
	"bytes"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/internal/umem"
)

// The datatypes (enum fi_datatype), in libfabric's order.
const (
	Int8 = iota
	Uint8
	Int16
	Uint16
	Int32
	Uint32
	Int64
	Uint64
	Float
	Double
	FloatComplex
	DoubleComplex
	LongDouble
	LongDoubleComplex
	NumTypes // the number of datatypes
)

// The ops (enum fi_op), in libfabric's order.
const (
	Min = iota
	Max
	Sum
	Prod
	Lor
	Land
	Bor
	Band
	Lxor
	Bxor
	Read
	Write
	Cswap
	CswapNe
	CswapLe
	CswapLt
	CswapGe
	CswapGt
	Mswap
	NumOps // the number of ops
)

// Size is the bytes of an element of each datatype.
var Size = [NumTypes]int{1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 8, 16, 16, 32}

// IsInt reports whether dt is an integer type.
func IsInt(dt int) bool { return dt <= Uint64 }

// IsComplex reports whether dt is a complex type.
func IsComplex(dt int) bool {
	return dt == FloatComplex || dt == DoubleComplex || dt == LongDoubleComplex
}

// Valid reports whether op applies to datatype dt (psm2's table), both
// in range.
func Valid(dt, op int) bool {
	if dt < 0 || dt >= NumTypes {
		return false
	}
	switch op {
	case Min, Max, CswapLe, CswapLt, CswapGe, CswapGt:
		return !IsComplex(dt)
	case Lor, Land, Bor, Band, Lxor, Bxor, Mswap:
		return IsInt(dt)
	case Sum, Prod, Read, Write, Cswap, CswapNe:
		return true
	}
	return false
}

// LongDoubleApply applies op to count long double (complex) elements; the
// C side of the library sets it (Go has no long double). Nil: such ops
// fail with EOPNOTSUPP.
var LongDoubleApply func(op, dt int, dst, src, cmp unsafe.Pointer, count int) bool

// Apply applies op to the elements of dt at dst with operands src (and
// cmp), first copying the old values to res (if not nil). dst may be
// application memory: a fault on it is EFAULT, not a crash. The caller
// makes it atomic (the provider holds the process's atomic lock).
func Apply(op, dt int, dst, src, cmp, res []byte) fi.Errno {
	if !Valid(dt, op) {
		return fi.EOPNOTSUPP
	}
	size := Size[dt]
	n := len(dst) / size
	if len(dst)%size != 0 || len(src) < n*size && op != Read || IsCompare(op) && len(cmp) < n*size {
		return fi.EINVAL
	}
	if n == 0 {
		return 0
	}
	if res != nil {
		if _, bad, _ := umem.Copy(res[:n*size], dst); bad != umem.None {
			return fi.EFAULT
		}
	}
	if op == Read {
		return 0
	}
	if dt == LongDouble || dt == LongDoubleComplex {
		// C code: a fault there would kill the process, so the region's
		// ends are tried first (umem.Writable).
		if LongDoubleApply == nil || !umem.Writable(dst[:1]) || !umem.Writable(dst[len(dst)-1:]) {
			return fi.EOPNOTSUPP
		}
		// The operands may sit inside a Go object that holds pointers
		// (a wire's receive buffer), which cgo refuses to pass: copies.
		src, cmp = bytes.Clone(src), bytes.Clone(cmp)
		if !LongDoubleApply(op, dt, ptr(dst), ptr(src), ptr(cmp), n) {
			return fi.EOPNOTSUPP
		}
		return 0
	}
	if guardedApply(op, dt, ptr(dst), ptr(src), ptr(cmp), n) != 0 {
		return fi.EFAULT
	}
	return 0
}

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// guardedApply applies op in Go; a fault on the target memory (mapped
// when registered, unmapped since) is returned as its address instead of
// killing the process.
func guardedApply(op, dt int, d, s, c unsafe.Pointer, n int) (fault uintptr) {
	defer umem.Catch(umem.Guard(), &fault)
	switch dt {
	case Int8:
		applyInt[int8](op, d, s, c, n)
	case Uint8:
		applyInt[uint8](op, d, s, c, n)
	case Int16:
		applyInt[int16](op, d, s, c, n)
	case Uint16:
		applyInt[uint16](op, d, s, c, n)
	case Int32:
		applyInt[int32](op, d, s, c, n)
	case Uint32:
		applyInt[uint32](op, d, s, c, n)
	case Int64:
		applyInt[int64](op, d, s, c, n)
	case Uint64:
		applyInt[uint64](op, d, s, c, n)
	case Float:
		applyReal[float32](op, d, s, c, n)
	case Double:
		applyReal[float64](op, d, s, c, n)
	case FloatComplex:
		applyComplex[complex64](op, d, s, c, n)
	case DoubleComplex:
		applyComplex[complex128](op, d, s, c, n)
	}
	return 0
}

// IsCompare reports whether op is one of the compare ops (FI_CSWAP to
// FI_MSWAP), which take compare operands.
func IsCompare(op int) bool { return op >= Cswap && op <= Mswap }

type integer interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

type real interface{ ~float32 | ~float64 }

func elems[T any](p unsafe.Pointer, n int) []T {
	if p == nil {
		return nil
	}
	return unsafe.Slice((*T)(p), n)
}

func b2[T integer](b bool) T {
	if b {
		return 1
	}
	return 0
}

func applyInt[T integer](op int, d, s, c unsafe.Pointer, n int) {
	dst, src, cmp := elems[T](d, n), elems[T](s, n), elems[T](c, n)
	for i := range dst {
		x, y := dst[i], src[i]
		switch op {
		case Min:
			x = min(x, y)
		case Max:
			x = max(x, y)
		case Sum:
			x += y
		case Prod:
			x *= y
		case Lor:
			x = b2[T](x != 0 || y != 0)
		case Land:
			x = b2[T](x != 0 && y != 0)
		case Bor:
			x |= y
		case Band:
			x &= y
		case Lxor:
			x = b2[T]((x != 0) != (y != 0))
		case Bxor:
			x ^= y
		case Write:
			x = y
		case Mswap:
			x = y&cmp[i] | x&^cmp[i]
		default:
			if cswap(op, cmp[i], x) {
				x = y
			}
		}
		dst[i] = x
	}
}

func applyReal[T real](op int, d, s, c unsafe.Pointer, n int) {
	dst, src, cmp := elems[T](d, n), elems[T](s, n), elems[T](c, n)
	for i := range dst {
		x, y := dst[i], src[i]
		switch op {
		case Min:
			if y < x {
				x = y
			}
		case Max:
			if y > x {
				x = y
			}
		case Sum:
			x += y
		case Prod:
			x *= y
		case Write:
			x = y
		default:
			if cswap(op, cmp[i], x) {
				x = y
			}
		}
		dst[i] = x
	}
}

func applyComplex[T complex64 | complex128](op int, d, s, c unsafe.Pointer, n int) {
	dst, src, cmp := elems[T](d, n), elems[T](s, n), elems[T](c, n)
	for i := range dst {
		switch op {
		case Sum:
			dst[i] += src[i]
		case Prod:
			dst[i] *= src[i]
		case Write:
			dst[i] = src[i]
		case Cswap:
			if cmp[i] == dst[i] {
				dst[i] = src[i]
			}
		case CswapNe:
			if cmp[i] != dst[i] {
				dst[i] = src[i]
			}
		}
	}
}

// cswap says whether a compare op with compare value c swaps at value x
// (FI_CSWAP_LE: c <= x, ...).
func cswap[T integer | real](op int, c, x T) bool {
	switch op {
	case Cswap:
		return c == x
	case CswapNe:
		return c != x
	case CswapLe:
		return c <= x
	case CswapLt:
		return c < x
	case CswapGe:
		return c >= x
	case CswapGt:
		return c > x
	}
	return false
}
