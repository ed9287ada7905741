package transport

import (
	"reflect"
	"strings"
	"unicode"
)

// Counters is one wire's counters, named as a script reads them: the
// wire ("shm", "hfi") and snake_case names in a fixed order.
type Counters struct {
	Wire   string
	Names  []string
	Values []uint64
}

// Counted is implemented by wires that count what they did: Counters
// appends their current values, one Counters per wire. It is called
// under the provider's serialization, like Poll.
type Counted interface {
	Counters(dst []Counters) []Counters
}

// CountersOf makes wire's Counters from stats, a struct whose fields are
// all uint64 (a wire's Stats), named after the fields: RxDropped is
// rx_dropped. For printing, not for a hot path.
func CountersOf(wire string, stats any) Counters {
	v := reflect.ValueOf(stats)
	t := v.Type()
	c := Counters{Wire: wire}
	for i := range t.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Uint64 {
			c.Names = append(c.Names, snake(t.Field(i).Name))
			c.Values = append(c.Values, f.Uint())
		}
	}
	return c
}

// snake turns a Go field name into snake_case (RndvCMA: rndv_cma).
func snake(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && (unicode.IsLower(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}
