package slots

// Table holds values of T by index. The zero Table is empty and ready.
// It is not safe for concurrent use.
type Table[T any] struct {
	items []T
	gens  []uint32
	live  []bool
	free  []uint32
}

// Take returns a free index, now live, whose value is T's zero value.
func (t *Table[T]) Take() uint32 {
	if n := len(t.free); n > 0 {
		i := t.free[n-1]
		t.free = t.free[:n-1]
		t.live[i] = true
		return i
	}
	var zero T
	t.items = append(t.items, zero)
	t.gens = append(t.gens, 1)
	t.live = append(t.live, true)
	return uint32(len(t.items) - 1)
}

// At returns the value at index i, live or not; i must be below Len.
func (t *Table[T]) At(i uint32) *T { return &t.items[i] }

// Live reports whether index i holds an operation.
func (t *Table[T]) Live(i uint32) bool { return t.live[i] }

// ID names the value at index i as it is now: a later value at the same
// index has another id.
func (t *Table[T]) ID(i uint32) uint64 { return uint64(t.gens[i])<<32 | uint64(i) }

// Lookup returns the index id names and true if that value is still live,
// or false for an id of a value freed since, of an index never taken, or
// made up. The id is untrusted: it is only compared.
func (t *Table[T]) Lookup(id uint64) (uint32, bool) {
	i := uint32(id)
	if uint64(i) >= uint64(len(t.items)) || !t.live[i] || t.gens[i] != uint32(id>>32) {
		return 0, false
	}
	return i, true
}

// Free ends the value at index i: it is zeroed, its id goes stale, and the
// index is taken again later.
func (t *Table[T]) Free(i uint32) {
	var zero T
	t.items[i] = zero
	t.live[i] = false
	if t.gens[i]++; t.gens[i] == 0 {
		t.gens[i] = 1
	}
	t.free = append(t.free, i)
}

// Len returns the number of indexes ever taken: every live index is below
// it.
func (t *Table[T]) Len() int { return len(t.items) }

// Index returns the index part of an id, for a caller that has already
// checked the id with Lookup.
func Index(id uint64) uint32 { return uint32(id) }
