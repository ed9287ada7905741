package slots

import (
	"math"
	"testing"
)

type op struct{ n int }

// TestTable: ids name one value; a freed value's id is stale, also once
// its index is taken again; made-up ids name nothing; a reused index
// starts from the zero value.
func TestTable(t *testing.T) {
	var tb Table[op]
	a := tb.Take()
	b := tb.Take()
	tb.At(a).n, tb.At(b).n = 1, 2
	ida, idb := tb.ID(a), tb.ID(b)
	if ida == 0 || idb == 0 || ida == idb {
		t.Fatalf("ids %#x %#x", ida, idb)
	}
	if i, ok := tb.Lookup(ida); !ok || i != a || tb.At(i).n != 1 {
		t.Fatalf("Lookup(%#x) = %d, %v", ida, i, ok)
	}
	tb.Free(a)
	if _, ok := tb.Lookup(ida); ok || tb.Live(a) {
		t.Fatal("a freed value is found")
	}
	c := tb.Take()
	if c != a || tb.At(c).n != 0 || !tb.Live(c) {
		t.Fatalf("Take after Free = %d (n %d), want index %d zeroed", c, tb.At(c).n, a)
	}
	if _, ok := tb.Lookup(ida); ok {
		t.Fatal("the old id names the index's new value")
	}
	if i, ok := tb.Lookup(tb.ID(c)); !ok || i != c {
		t.Fatal("the new id names nothing")
	}
	for _, id := range []uint64{0, 1 << 32, uint64(tb.Len()), math.MaxUint64, idb + 1<<32} {
		if _, ok := tb.Lookup(id); ok {
			t.Errorf("made-up id %#x found", id)
		}
	}
	if tb.Len() != 2 {
		t.Errorf("Len %d, want 2", tb.Len())
	}
}

// TestGenerationSkipsZero: after 2^32 reuses, the generation wraps to 1,
// not 0, so no live id has a zero generation.
func TestGenerationSkipsZero(t *testing.T) {
	var tb Table[op]
	i := tb.Take()
	tb.gens[i] = math.MaxUint32
	tb.Free(i)
	j := tb.Take()
	if j != i || tb.ID(j)>>32 != 1 {
		t.Fatalf("generation after wrap: id %#x, want generation 1", tb.ID(j))
	}
}

// TestTakeFreeNoAllocs: a warm table takes and frees without allocating.
func TestTakeFreeNoAllocs(t *testing.T) {
	var tb Table[op]
	tb.Free(tb.Take())
	if n := testing.AllocsPerRun(100, func() { tb.Free(tb.Take()) }); n != 0 {
		t.Errorf("%v allocations per Take and Free", n)
	}
}
