package hfi

import (
	"net/netip"
	"slices"
	"testing"
)

func TestSoleAddr(t *testing.T) {
	a := [4]byte{10, 0, 0, 5}
	b := [4]byte{192, 168, 1, 2}
	for _, c := range []struct {
		name string
		ifs  [][][4]byte
		want [4]byte
		ok   bool
	}{
		{"none", nil, [4]byte{}, false},
		{"one without IPv4", [][][4]byte{nil}, [4]byte{}, false},
		{"one", [][][4]byte{{a}}, a, true},
		{"one, two addresses: the first", [][][4]byte{{a, b}}, a, true},
		{"one beside one without IPv4", [][][4]byte{nil, {b}}, b, true},
		{"two", [][][4]byte{{a}, {b}}, [4]byte{}, false},
	} {
		got, ok := soleAddr(c.ifs)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("%s: soleAddr = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

// TestNthUnit: HFI_UNIT counts only the interfaces with an IPv4 address,
// and a unit past the last is an error.
func TestNthUnit(t *testing.T) {
	a := [4]byte{10, 0, 0, 5}
	b := [4]byte{192, 168, 1, 2}
	c := [4]byte{172, 16, 0, 9}
	ifs := [][][4]byte{nil, {a, c}, nil, {b}}
	for unit, want := range [][4]byte{a, b} {
		if got, err := nthUnit(ifs, unit); err != nil || got != want {
			t.Errorf("unit %d: %v, %v; want %v", unit, got, err, want)
		}
	}
	for _, unit := range []int{2, 7} {
		if got, err := nthUnit(ifs, unit); err == nil {
			t.Errorf("unit %d of 2: %v, no error", unit, got)
		}
	}
	if _, err := nthUnit(nil, 0); err == nil {
		t.Error("unit 0 of none: no error")
	}
}

// TestChooseAddr: an address, a network holding a local address, and the
// errors; the default is a local address (or loopback), never an error.
func TestChooseAddr(t *testing.T) {
	if ip, err := ChooseAddr("10.1.2.3"); err != nil || ip != [4]byte{10, 1, 2, 3} {
		t.Errorf("ChooseAddr(10.1.2.3) = %v, %v", ip, err)
	}
	if ip, err := ChooseAddr("127.0.0.0/8"); err != nil || ip[0] != 127 {
		t.Errorf("ChooseAddr(127.0.0.0/8) = %v, %v", ip, err)
	}
	if ip, err := ChooseAddr("lo"); err != nil || ip != [4]byte{127, 0, 0, 1} {
		t.Errorf("ChooseAddr(lo) = %v, %v", ip, err)
	}
	for _, bad := range []string{"::1", "203.0.113.0/24", "no-such-interface0"} {
		if _, err := ChooseAddr(bad); err == nil {
			t.Errorf("ChooseAddr(%q): no error", bad)
		}
	}
	ip, err := ChooseAddr("")
	if err != nil {
		t.Fatalf("ChooseAddr(\"\"): %v", err)
	}
	if a := netip.AddrFrom4(ip); !a.IsLoopback() {
		local := false
		for _, ifc := range upIfaceAddrs() {
			for _, x := range ifc {
				local = local || x == ip
			}
		}
		if !local {
			t.Errorf("ChooseAddr(\"\") = %v: not an address of an interface that is up", a)
		}
	}
}

func TestParseRailMap(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
	}{{"0:1,1:1", []int{0, 1}}, {" 2:1 , 0 ", []int{2, 0}}, {"1", []int{1}}, {"", nil}, {"x:1", nil}, {"0:1,", nil}, {"256:1", nil}} {
		got, err := ParseRailMap(tc.in)
		if (err != nil) != (tc.want == nil) || !slices.Equal(got, tc.want) {
			t.Errorf("ParseRailMap(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
