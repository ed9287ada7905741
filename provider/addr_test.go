package provider

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEPNameMarshal(t *testing.T) {
	tests := []struct {
		name string
		n    EPName
		wire []byte
		str  string
	}{
		{
			name: "default source address",
			n:    EPName{EPID: ReservedEPID, Type: EPNameSrcAddr, SepID: 0xff},
			wire: []byte{0xff, 0xff, 0, 0, 0, 0, 0, 0, 2, 0xff, 0, 0, 0, 0, 0, 0},
			str:  "fi_addr_psmx2://ffff:ff02",
		},
		{
			name: "resolved source address",
			n:    EPName{EPID: ReservedEPID, Type: EPNameSrcAddr},
			wire: []byte{0xff, 0xff, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0},
			str:  "fi_addr_psmx2://ffff:2",
		},
		{
			name: "every field, little-endian",
			n:    EPName{EPID: 0x0102030405060708, Type: EPNameScalable, SepID: 0x7e, Port: 9, Service: 0x0a0b0c0d},
			wire: []byte{8, 7, 6, 5, 4, 3, 2, 1, 1, 0x7e, 9, 0, 0x0d, 0x0c, 0x0b, 0x0a},
			str:  "fi_addr_psmx2://102030405060708:a0b0c0d00097e01",
		},
		{
			name: "zero",
			n:    EPName{},
			wire: make([]byte, 16),
			str:  "fi_addr_psmx2://0:0",
		},
		{
			name: "all ones",
			n:    EPName{EPID: ^uint64(0), Type: 0xff, SepID: 0xff, Port: 0xff, Service: ^uint32(0)},
			wire: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0xff},
			str:  "fi_addr_psmx2://ffffffffffffffff:ffffffff00ffffff",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wire, tt.n.Marshal()); diff != "" {
				t.Errorf("Marshal (-want +got):\n%s", diff)
			}
			back, err := UnmarshalEPName(tt.wire)
			if err != nil || back != tt.n {
				t.Errorf("UnmarshalEPName = %+v, %v; want %+v", back, err, tt.n)
			}
			if got := tt.n.String(); got != tt.str {
				t.Errorf("String = %q, want %q", got, tt.str)
			}
			if diff := cmp.Diff(append([]byte(tt.str), 0), tt.n.StringAddr()); diff != "" {
				t.Errorf("StringAddr (-want +got):\n%s", diff)
			}
			parsed, err := ParseEPNameString(tt.str)
			if err != nil || parsed != tt.n {
				t.Errorf("ParseEPNameString(%q) = %+v, %v; want %+v", tt.str, parsed, err, tt.n)
			}
		})
	}
}

func TestEPNameUnit(t *testing.T) {
	for sep, want := range map[uint8]int{0: 0, 1: 1, 3: 3, 0x7f: 127, 0xff: AnyUnit, 0xfe: -2, 0x80: -128} {
		if got := (EPName{SepID: sep}).Unit(); got != want {
			t.Errorf("Unit() with sep_id %#x = %d, want %d", sep, got, want)
		}
	}
}

func TestUnmarshalEPName(t *testing.T) {
	if _, err := UnmarshalEPName(make([]byte, 15)); err == nil {
		t.Errorf("15 bytes: want an error")
	}
	if _, err := UnmarshalEPName(nil); err == nil {
		t.Errorf("nil: want an error")
	}
	// The pad byte is ignored, and bytes past 16 too.
	b := []byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 3, 4, 0xee, 5, 0, 0, 0, 0x99}
	n, err := UnmarshalEPName(b)
	want := EPName{EPID: 1, Type: 2, SepID: 3, Port: 4, Service: 5}
	if err != nil || n != want {
		t.Errorf("UnmarshalEPName = %+v, %v; want %+v", n, err, want)
	}
}

func TestParseEPNameString(t *testing.T) {
	good := []struct {
		in   string
		want EPName
	}{
		{"fi_addr_psmx2://ffff:2", EPName{EPID: 0xffff, Type: 2}},
		{"FI_ADDR_PSMX2://FFFF:2", EPName{EPID: 0xffff, Type: 2}},
		{"Fi_Addr_Psmx2://abc:0", EPName{EPID: 0xabc}},
		{"fi_addr_psmx2://0xffff:0X2", EPName{EPID: 0xffff, Type: 2}},
		{"fi_addr_psmx2://ffff:2\x00", EPName{EPID: 0xffff, Type: 2}},
		{"fi_addr_psmx2://0000000000000001:0000000000000000", EPName{EPID: 1}},
		{"fi_addr_psmx2://ffff:4d00010002", EPName{EPID: 0xffff, Type: 2, Port: 1, Service: 77}},
		// The pad byte of the second word is dropped.
		{"fi_addr_psmx2://1:ff000000", EPName{EPID: 1}},
	}
	for _, tt := range good {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseEPNameString(tt.in)
			if err != nil || got != tt.want {
				t.Errorf("ParseEPNameString(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
		})
	}
	bad := []string{
		"",
		"ffff:2",
		"fi_addr_psmx2:ffff:2",
		"fi_addr_psmx2//ffff:2",
		"fi_addr_psmx2://",
		"fi_addr_psmx2://ffff",
		"fi_addr_psmx2://ffff:",
		"fi_addr_psmx2://:2",
		"fi_addr_psmx2://zz:2",
		"fi_addr_psmx2://ffff:zz",
		"fi_addr_psmx2://0x:2",
		"fi_addr_psmx2://10000000000000000:2", // 65 bits
		"fi_addr_psmx2://-1:2",
		"fi_addr_psmx://ffff:2",
		"fi_addr_psmx3://ffff:2",
		"fi_sockaddr_in://127.0.0.1:80",
		"fi_addr_psmx2 ://ffff:2",
		"localhost",
	}
	for _, in := range bad {
		t.Run("bad "+in, func(t *testing.T) {
			if n, err := ParseEPNameString(in); err == nil {
				t.Errorf("ParseEPNameString(%q) = %+v, want an error", in, n)
			}
		})
	}
}

func FuzzParseEPNameString(f *testing.F) {
	for _, s := range []string{
		"fi_addr_psmx2://ffff:2",
		"fi_addr_psmx2://ffff:ff02",
		"FI_ADDR_PSMX2://0x1:0x2\x00",
		"fi_addr_psmx2://ffffffffffffffff:ffffffffffffffff",
		"fi_addr_psmx2://:",
		"fi_addr_psmx2://1:2:3",
		"fi_addr_psmx://1:2",
		"",
		"://",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var n EPName
		var err error
		if !noPanic(t, "ParseEPNameString", func() { n, err = ParseEPNameString(s) }) || err != nil {
			return
		}
		// What is accepted prints in the canonical form, which parses back
		// to the same name, and survives the wire form.
		str := n.String()
		if !strings.HasPrefix(str, "fi_addr_psmx2://") {
			t.Fatalf("String() = %q", str)
		}
		back, err := ParseEPNameString(str)
		if err != nil || back != n {
			t.Fatalf("ParseEPNameString(%q) = %+v, %v; want %+v (from %q)", str, back, err, n, s)
		}
		if back.String() != str {
			t.Fatalf("String not stable: %q then %q", str, back.String())
		}
		wire, err := UnmarshalEPName(n.Marshal())
		if err != nil || wire != n {
			t.Fatalf("wire round trip of %+v = %+v, %v", n, wire, err)
		}
		if !strings.EqualFold(strings.SplitN(strings.TrimRight(s, "\x00"), "://", 2)[0], "fi_addr_psmx2") {
			t.Fatalf("accepted %q without the fi_addr_psmx2 scheme", s)
		}
	})
}
