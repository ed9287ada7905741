package atomicop

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

func TestValid(t *testing.T) {
	for _, c := range []struct {
		dt, op int
		want   bool
	}{
		{Int32, Min, true}, {FloatComplex, Min, false}, {Double, Bor, false},
		{Uint8, Lxor, true}, {DoubleComplex, Sum, true}, {DoubleComplex, CswapLt, false},
		{Float, Mswap, false}, {LongDouble, Write, true}, {Int64, NumOps, false},
		{-1, Sum, false}, {NumTypes, Sum, false}, {Int8, -1, false},
	} {
		if got := Valid(c.dt, c.op); got != c.want {
			t.Errorf("Valid(%d, %d) = %v, want %v", c.dt, c.op, got, c.want)
		}
	}
}

func i32s(v ...int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func f64s(v ...float64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return b
}

// TestApply applies every op to int32 elements, and some to float64 and
// complex128, each against a value worked out by hand.
func TestApply(t *testing.T) {
	for _, c := range []struct {
		name          string
		op, dt        int
		dst, src, cmp []byte
		want          []byte
	}{
		{"min", Min, Int32, i32s(5, -3), i32s(2, 4), nil, i32s(2, -3)},
		{"max", Max, Int32, i32s(5, -3), i32s(2, 4), nil, i32s(5, 4)},
		{"sum", Sum, Int32, i32s(5, -3), i32s(2, 4), nil, i32s(7, 1)},
		{"prod", Prod, Int32, i32s(5, -3), i32s(2, 4), nil, i32s(10, -12)},
		{"lor", Lor, Int32, i32s(0, 0, 7), i32s(0, 3, 0), nil, i32s(0, 1, 1)},
		{"land", Land, Int32, i32s(0, 2, 7), i32s(5, 3, 0), nil, i32s(0, 1, 0)},
		{"bor", Bor, Int32, i32s(0x0c), i32s(0x0a), nil, i32s(0x0e)},
		{"band", Band, Int32, i32s(0x0c), i32s(0x0a), nil, i32s(0x08)},
		{"lxor", Lxor, Int32, i32s(0, 2, 7), i32s(5, 3, 0), nil, i32s(1, 0, 1)},
		{"bxor", Bxor, Int32, i32s(0x0c), i32s(0x0a), nil, i32s(0x06)},
		{"write", Write, Int32, i32s(1, 2), i32s(8, 9), nil, i32s(8, 9)},
		{"read", Read, Int32, i32s(1, 2), nil, nil, i32s(1, 2)},
		{"cswap", Cswap, Int32, i32s(1, 2), i32s(8, 9), i32s(1, 1), i32s(8, 2)},
		{"cswap_ne", CswapNe, Int32, i32s(1, 2), i32s(8, 9), i32s(1, 1), i32s(1, 9)},
		{"cswap_le", CswapLe, Int32, i32s(1, 2, 3), i32s(8, 8, 8), i32s(2, 2, 2), i32s(1, 8, 8)},
		{"cswap_lt", CswapLt, Int32, i32s(1, 2, 3), i32s(8, 8, 8), i32s(2, 2, 2), i32s(1, 2, 8)},
		{"cswap_ge", CswapGe, Int32, i32s(1, 2, 3), i32s(8, 8, 8), i32s(2, 2, 2), i32s(8, 8, 3)},
		{"cswap_gt", CswapGt, Int32, i32s(1, 2, 3), i32s(8, 8, 8), i32s(2, 2, 2), i32s(8, 2, 3)},
		{"mswap", Mswap, Int32, i32s(0x0f), i32s(0x30), i32s(0x33), i32s(0x3c)},
		{"double sum", Sum, Double, f64s(1.5), f64s(2.25), nil, f64s(3.75)},
		{"double min", Min, Double, f64s(1.5, -1), f64s(2.25, -2), nil, f64s(1.5, -2)},
		{"double cswap_gt", CswapGt, Double, f64s(1, 3), f64s(9, 9), f64s(2, 2), f64s(9, 3)},
		// (1+2i)*(3-1i) = 5+5i
		{"complex prod", Prod, DoubleComplex, f64s(1, 2), f64s(3, -1), nil, f64s(5, 5)},
		{"complex cswap", Cswap, DoubleComplex, f64s(1, 2, 3, 4), f64s(7, 7, 7, 7), f64s(1, 2, 0, 0), f64s(7, 7, 3, 4)},
	} {
		old := append([]byte(nil), c.dst...)
		res := make([]byte, len(c.dst))
		if errno := Apply(c.op, c.dt, c.dst, c.src, c.cmp, res); errno != 0 {
			t.Errorf("%s: %v", c.name, errno)
			continue
		}
		if string(c.dst) != string(c.want) {
			t.Errorf("%s: got %x, want %x", c.name, c.dst, c.want)
		}
		if string(res) != string(old) {
			t.Errorf("%s: old values %x, want %x", c.name, res, old)
		}
	}
}

func TestApplyRefuses(t *testing.T) {
	saved := LongDoubleApply
	LongDoubleApply = nil
	defer func() { LongDoubleApply = saved }()
	for _, c := range []struct {
		name          string
		op, dt        int
		dst, src, cmp []byte
		want          fi.Errno
	}{
		{"min on complex", Min, DoubleComplex, f64s(1, 2), f64s(1, 2), nil, fi.EOPNOTSUPP},
		{"bor on double", Bor, Double, f64s(1), f64s(1), nil, fi.EOPNOTSUPP},
		{"part of an element", Sum, Int32, make([]byte, 6), make([]byte, 6), nil, fi.EINVAL},
		{"short operands", Sum, Int32, i32s(1, 2), i32s(1), nil, fi.EINVAL},
		{"compare without compare values", Cswap, Int32, i32s(1, 2), i32s(1, 2), i32s(1), fi.EINVAL},
		{"long double without C", Sum, LongDouble, make([]byte, 16), make([]byte, 16), nil, fi.EOPNOTSUPP},
	} {
		if errno := Apply(c.op, c.dt, c.dst, c.src, c.cmp, nil); errno != c.want {
			t.Errorf("%s: %v, want %v", c.name, errno, c.want)
		}
	}
}

// TestApplyFault: target memory unmapped since it was registered fails
// the op with EFAULT instead of killing the process.
func TestApplyFault(t *testing.T) {
	m, err := sys.MapAnon(sys.PageSize())
	if err != nil {
		t.Fatal(err)
	}
	dst := m[:8]
	if err := sys.Unmap(m); err != nil {
		t.Fatal(err)
	}
	if errno := Apply(Sum, Uint64, dst, make([]byte, 8), nil, nil); errno != fi.EFAULT {
		t.Fatalf("sum into unmapped memory: %v, want EFAULT", errno)
	}
	if errno := Apply(Read, Uint64, dst, nil, nil, make([]byte, 8)); errno != fi.EFAULT {
		t.Fatalf("read of unmapped memory: %v, want EFAULT", errno)
	}
}
