package cabi

import (
	"strings"
	"testing"
)

// Check catches the layout mistakes a page's constants can make: a field
// past the page, a misaligned word, two fields on the same bytes.
func TestCheck(t *testing.T) {
	good := Group{Title: "p", Page: 64, Consts: []Const{
		WordField("A", 0, 8, ""), ByteField("B", 8, 4, ""), ByteField("C", 12, 4, ""),
		WordField("D", 16, 48, ""), Value("COUNT", 6, "not a field"),
	}}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    Const
		want string
	}{
		{WordField("X", 56, 16, ""), "outside"},
		{WordField("X", 4, 4, ""), "neither"},
		{ByteField("X", 10, 4, ""), "overlaps B"},
		{WordField("X", 24, 8, ""), "overlaps D"},
	} {
		g := good
		g.Consts = append(append([]Const{}, good.Consts...), tc.c)
		err := g.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.c, err, tc.want)
		}
	}
}

func TestList(t *testing.T) {
	h := string(Header("G", "test", Group{Title: "t", Consts: []Const{List("T", []int{1, 2, 8}, "")}}))
	if !strings.Contains(h, "#define T { 1, 2, 8 }") {
		t.Fatalf("no table in\n%s", h)
	}
}
