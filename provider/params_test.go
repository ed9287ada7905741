package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gopsm2/libfabric-psm2/hfi"
	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// defaultParams is Params with nothing set (fi_psm2(7) and init.c:44-61,
// with prog_interval -1 resolved to 1000 because no affinity is set).
func defaultParams() Params {
	return Params{
		NameServer:   true,
		HFIUnit:      -1,
		TaggedRMA:    true,
		UUID:         DefaultUUID,
		Delay:        0,
		Timeout:      5,
		ConnTimeout:  5,
		ProgInterval: 1000,
		InjectSize:   64,
		Paths:        1,
		MTU:          1500,
		HFISpin:      5000,
		SreadSpin:    100,
		YieldSpin:    20,
		LockLevel:    2,
		MultiEP:      true,
		TagLayout:    TagLayoutAuto,
		MaxPeers:     hfi.MaxPeers,
		PeersPerHost: hfi.DefaultPeersPerHost,
		ReasmBytes:   hfi.DefaultReasmBytes,
		OOOBytes:     hfi.DefaultOOOBytes,
		UnexpBytes:   DefaultUnexpBytes,
		UnexpCount:   DefaultUnexpCount,
	}
}

// noPanic runs f and turns a panic into a test failure, so that one bad
// input does not take the rest of the test binary down with it.
func noPanic(t *testing.T, what string, f func()) (ok bool) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
			ok = false
		}
	}()
	f()
	return true
}

func TestParamDefinitions(t *testing.T) {
	_, h := newTestProvider(t, nil)
	type def struct {
		Name string
		Type ParamType
	}
	want := []def{
		{"name_server", ParamBool},
		{"tagged_rma", ParamBool},
		{"uuid", ParamString},
		{"delay", ParamInt},
		{"timeout", ParamInt},
		{"conn_timeout", ParamInt},
		{"prog_interval", ParamInt},
		{"prog_affinity", ParamString},
		{"inject_size", ParamInt},
		{"lock_level", ParamInt},
		{"lazy_conn", ParamBool},
		{"disconnect", ParamBool},
		{"tag_layout", ParamString},
		{"iface", ParamString},
		{"port_range", ParamString},
		{"paths", ParamInt},
		{"mtu", ParamInt},
		{"sread_spin", ParamInt},
		{"yield_spin", ParamInt},
		{"hfi_spin", ParamInt},
		{"auth", ParamBool},
		{"max_peers", ParamInt},
		{"peers_per_host", ParamInt},
		{"reasm_bytes", ParamInt},
		{"ooo_bytes", ParamInt},
		{"unexp_bytes", ParamInt},
		{"unexp_count", ParamInt},
		{"print_stats", ParamInt},
	}
	var got []def
	for _, d := range h.defined {
		got = append(got, def{d.Name, d.Type})
		if strings.TrimSpace(d.Help) == "" {
			t.Errorf("%s: empty help", d.Name)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defined params (-want +got):\n%s", diff)
	}
	// The help of tag_layout must not repeat libfabric's wrong default.
	for _, d := range h.defined {
		if d.Name == "tag_layout" && !strings.Contains(d.Help, "default: auto") {
			t.Errorf("tag_layout help %q does not say the default is auto", d.Help)
		}
	}
}

func TestParamsDefault(t *testing.T) {
	p, h := newTestProvider(t, nil)
	if diff := cmp.Diff(defaultParams(), p.Params()); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	if w := h.warnings(); len(w) != 0 {
		t.Errorf("warnings with an empty environment: %q", w)
	}
}

// TestParamsValues sets one variable at a time and checks the whole
// Params, and that a bad value is warned about through the Host.
func TestParamsValues(t *testing.T) {
	tests := []struct {
		env  string
		val  string
		mod  func(p *Params) // applied to the defaults; nil: unchanged
		warn bool
	}{
		// name_server / tagged_rma / lazy_conn / disconnect: booleans
		{"FI_PSM2_NAME_SERVER", "0", func(p *Params) { p.NameServer = false }, false},
		{"FI_PSM2_NAME_SERVER", "no", func(p *Params) { p.NameServer = false }, false},
		{"FI_PSM2_NAME_SERVER", "1", nil, false},
		{"FI_PSM2_NAME_SERVER", "maybe", nil, true},
		{"FI_PSM2_TAGGED_RMA", "off", func(p *Params) { p.TaggedRMA = false }, false},
		{"FI_PSM2_TAGGED_RMA", "FALSE", func(p *Params) { p.TaggedRMA = false }, false},
		{"FI_PSM2_TAGGED_RMA", "2", nil, true},
		{"FI_PSM2_LAZY_CONN", "yes", func(p *Params) { p.LazyConn = true }, false},
		{"PSM2_MULTI_EP", "0", func(p *Params) { p.MultiEP = false }, false},
		{"HFI_UNIT", "1", func(p *Params) { p.HFIUnit = 1 }, false},
		{"HFI_UNIT", "-1", nil, false},
		{"HFI_UNIT", "hfi1_0", nil, true},
		{"HFI_UNIT", "-2", nil, true},
		{"PSM2_MULTIRAIL", "1", func(p *Params) { p.MultiRail = 1 }, false},
		{"PSM2_MULTIRAIL", "2", func(p *Params) { p.MultiRail = 2 }, false},
		{"PSM2_MULTIRAIL", "3", nil, true},
		{"PSM2_MULTIRAIL_MAP", "0:1,1:1", nil, false}, // read only with PSM2_MULTIRAIL
		// print_stats [0, 86400], and PSM2's spelling
		{"FI_PSM2_PRINT_STATS", "1", func(p *Params) { p.PrintStats = 1 }, false},
		{"FI_PSM2_PRINT_STATS", "-1", nil, true},
		{"PSM2_PRINT_STATS", "5", func(p *Params) { p.PrintStats = 5 }, false},
		{"FI_PSM2_LAZY_CONN", "", nil, true},
		{"FI_PSM2_DISCONNECT", "On", func(p *Params) { p.Disconnect = true }, false},
		{"FI_PSM2_DISCONNECT", "y", nil, true},
		// uuid
		{"FI_PSM2_UUID", "01234567-89ab-CDEF-0123-456789abcdef", func(p *Params) {
			p.UUID = UUID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
		}, false},
		{"FI_PSM2_UUID", "not-a-uuid", nil, true},
		{"FI_PSM2_UUID", "0123456789abcdef0123456789abcdef", nil, true},
		// delay [0, 3600]
		{"FI_PSM2_DELAY", "10", func(p *Params) { p.Delay = 10 }, false},
		{"FI_PSM2_DELAY", "3600", func(p *Params) { p.Delay = 3600 }, false},
		{"FI_PSM2_DELAY", "3601", nil, true},
		{"FI_PSM2_DELAY", "-1", nil, true},
		{"FI_PSM2_DELAY", "ten", nil, true},
		// timeout [0, 3600]
		{"FI_PSM2_TIMEOUT", "0", func(p *Params) { p.Timeout = 0 }, false},
		{"FI_PSM2_TIMEOUT", " 7 ", func(p *Params) { p.Timeout = 7 }, false},
		{"FI_PSM2_TIMEOUT", "-5", nil, true},
		{"FI_PSM2_TIMEOUT", "5s", nil, true},
		// conn_timeout [1, 3600]
		{"FI_PSM2_CONN_TIMEOUT", "1", func(p *Params) { p.ConnTimeout = 1 }, false},
		{"FI_PSM2_CONN_TIMEOUT", "0", nil, true},
		{"FI_PSM2_CONN_TIMEOUT", "0x20", func(p *Params) { p.ConnTimeout = 32 }, false},
		// prog_interval [-1, 60e6]; -1 means derived
		{"FI_PSM2_PROG_INTERVAL", "500", func(p *Params) { p.ProgInterval = 500 }, false},
		{"FI_PSM2_PROG_INTERVAL", "0", func(p *Params) { p.ProgInterval = 0 }, false},
		{"FI_PSM2_PROG_INTERVAL", "-1", nil, false},
		{"FI_PSM2_PROG_INTERVAL", "-2", nil, true},
		{"FI_PSM2_PROG_INTERVAL", "60000001", nil, true},
		// prog_affinity: any machine has core 0
		{"FI_PSM2_PROG_AFFINITY", "0", func(p *Params) { p.ProgAffinity = []int{0}; p.ProgInterval = 1 }, false},
		{"FI_PSM2_PROG_AFFINITY", "-1", func(p *Params) { p.ProgAffinity = []int{numCPU() - 1}; p.ProgInterval = 1 }, false},
		{"FI_PSM2_PROG_AFFINITY", "x", nil, true},
		{"FI_PSM2_PROG_AFFINITY", "100000", nil, true},
		// inject_size [0, 65536], C integers
		{"FI_PSM2_INJECT_SIZE", "0", func(p *Params) { p.InjectSize = 0 }, false},
		{"FI_PSM2_INJECT_SIZE", "4096", func(p *Params) { p.InjectSize = 4096 }, false},
		{"FI_PSM2_INJECT_SIZE", "0x10", func(p *Params) { p.InjectSize = 16 }, false},
		{"FI_PSM2_INJECT_SIZE", "0X10", func(p *Params) { p.InjectSize = 16 }, false},
		{"FI_PSM2_INJECT_SIZE", "010", func(p *Params) { p.InjectSize = 8 }, false},
		{"FI_PSM2_INJECT_SIZE", "65536", func(p *Params) { p.InjectSize = 65536 }, false},
		{"FI_PSM2_INJECT_SIZE", "65537", nil, true},
		{"FI_PSM2_INJECT_SIZE", "-1", nil, true},
		{"FI_PSM2_INJECT_SIZE", "08", nil, true},
		{"FI_PSM2_INJECT_SIZE", "1k", nil, true},
		// yield_spin [0, 10e6]
		{"FI_PSM2_YIELD_SPIN", "0", func(p *Params) { p.YieldSpin = 0 }, false},
		{"FI_PSM2_YIELD_SPIN", "10000000", func(p *Params) { p.YieldSpin = 10_000_000 }, false},
		{"FI_PSM2_YIELD_SPIN", "10000001", nil, true},
		{"FI_PSM2_YIELD_SPIN", "-1", nil, true},
		// lock_level [0, 2]; LockLevelSet records that it was given
		{"FI_PSM2_LOCK_LEVEL", "0", func(p *Params) { p.LockLevel = 0; p.LockLevelSet = true }, false},
		{"FI_PSM2_LOCK_LEVEL", "1", func(p *Params) { p.LockLevel = 1; p.LockLevelSet = true }, false},
		{"FI_PSM2_LOCK_LEVEL", "2", func(p *Params) { p.LockLevelSet = true }, false},
		{"FI_PSM2_LOCK_LEVEL", "3", nil, true},
		{"FI_PSM2_LOCK_LEVEL", "all", nil, true},
		// tag_layout
		{"FI_PSM2_TAG_LAYOUT", "auto", nil, false},
		{"FI_PSM2_TAG_LAYOUT", "tag60", func(p *Params) { p.TagLayout = TagLayoutTag60 }, false},
		{"FI_PSM2_TAG_LAYOUT", "TAG64", func(p *Params) { p.TagLayout = TagLayoutTag64 }, false},
		{"FI_PSM2_TAG_LAYOUT", "tag32", nil, true},
		{"FI_PSM2_AUTH", "1", func(p *Params) { p.Auth = true }, false},
		{"FI_PSM2_AUTH", "no", nil, false},
		{"FI_PSM2_AUTH", "sometimes", nil, true},
		// limits
		{"FI_PSM2_MAX_PEERS", "100", func(p *Params) { p.MaxPeers = 100 }, false},
		{"FI_PSM2_MAX_PEERS", "65536", nil, true},
		{"FI_PSM2_PEERS_PER_HOST", "0", nil, true},
		{"FI_PSM2_REASM_BYTES", "1048576", func(p *Params) { p.ReasmBytes = 1 << 20 }, false},
		{"FI_PSM2_REASM_BYTES", "1000", nil, true},
		{"FI_PSM2_OOO_BYTES", "0x100000", func(p *Params) { p.OOOBytes = 1 << 20 }, false},
		{"FI_PSM2_UNEXP_BYTES", "1048576", func(p *Params) { p.UnexpBytes = 1 << 20 }, false},
		{"FI_PSM2_UNEXP_COUNT", "1000", func(p *Params) { p.UnexpCount = 1000 }, false},
		{"FI_PSM2_UNEXP_COUNT", "1", nil, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s=%q", tt.env, tt.val), func(t *testing.T) {
			var p *Provider
			var h *fakeHost
			if !noPanic(t, "New", func() { p, h = newTestProvider(t, map[string]string{tt.env: tt.val}) }) {
				return
			}
			want := defaultParams()
			if tt.mod != nil {
				tt.mod(&want)
			}
			if diff := cmp.Diff(want, p.Params()); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
			warns := h.lines(fi.LOG_WARN)
			if !tt.warn {
				if len(warns) != 0 {
					t.Errorf("unexpected warnings: %+v", warns)
				}
				return
			}
			if len(warns) != 1 {
				t.Fatalf("got %d warnings (%+v), want 1", len(warns), warns)
			}
			w := warns[0]
			if !strings.Contains(w.Msg, tt.env) || !strings.Contains(w.Msg, fmt.Sprintf("%q", tt.val)) {
				t.Errorf("warning %q does not name %s and the value", w.Msg, tt.env)
			}
			if w.Subsys != fi.LOG_CORE || w.Func == "" || w.Func == "?" || w.Line <= 0 || !strings.HasSuffix(w.Msg, "\n") {
				t.Errorf("warning logged as %+v, want subsys core, a function, a line and a final newline", w)
			}
		})
	}
}

func TestParamsBoolSpellings(t *testing.T) {
	tests := []struct {
		in        string
		value, ok bool
	}{
		{"1", true, true}, {"true", true, true}, {"TRUE", true, true}, {"True", true, true},
		{"yes", true, true}, {"YES", true, true}, {"on", true, true}, {"ON", true, true},
		{"0", false, true}, {"false", false, true}, {"False", false, true},
		{"no", false, true}, {"No", false, true}, {"off", false, true}, {"OFF", false, true},
		{"", false, false}, {"2", false, false}, {"y", false, false}, {"n", false, false},
		{"enable", false, false}, {" 1", false, false}, {"yes ", false, false}, {"01", false, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.in), func(t *testing.T) {
			v, ok := ParseBool(tt.in)
			if v != tt.value || ok != tt.ok {
				t.Errorf("ParseBool(%q) = %v, %v; want %v, %v", tt.in, v, ok, tt.value, tt.ok)
			}
			// The same spelling through the provider: a bad one keeps the
			// default (true for tagged_rma) and warns.
			p, h := newTestProvider(t, map[string]string{"FI_PSM2_TAGGED_RMA": tt.in})
			want := true
			if tt.ok {
				want = tt.value
			}
			if got := p.Params().TaggedRMA; got != want {
				t.Errorf("tagged_rma = %v, want %v", got, want)
			}
			if got := len(h.warnings()) == 1; got != !tt.ok {
				t.Errorf("warned = %v, want %v (%q)", got, !tt.ok, h.warnings())
			}
		})
	}
}

func TestParamsNameServerLaunchers(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, true},
		{map[string]string{"OMPI_COMM_WORLD_RANK": "0"}, false},
		{map[string]string{"PMI_RANK": "3"}, false},
		{map[string]string{"PMIX_RANK": ""}, false}, // set, even empty
		{map[string]string{"PMI_SIZE": "4"}, true},
		// The variable still wins over the launcher (it is read after).
		{map[string]string{"PMI_RANK": "3", "FI_PSM2_NAME_SERVER": "yes"}, true},
		{map[string]string{"FI_PSM2_NAME_SERVER": "no"}, false},
		// A bad value keeps what the launcher decided.
		{map[string]string{"PMIX_RANK": "1", "FI_PSM2_NAME_SERVER": "bogus"}, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.env), func(t *testing.T) {
			p, _ := newTestProvider(t, tt.env)
			if got := p.Params().NameServer; got != tt.want {
				t.Errorf("name_server = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParamsUUIDSources(t *testing.T) {
	ompi := UUID{
		0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01, // 0x0123456789abcdef little-endian
		0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe, // 0xfedcba9876543210 little-endian
	}
	explicit := UUID{0xAA, 0xBB, 0xCC, 0xDD, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0, 6}
	tests := []struct {
		name     string
		env      map[string]string
		want     UUID
		warnings int
	}{
		{"default", nil, DefaultUUID, 0},
		{"open mpi job key", map[string]string{"OMPI_MCA_orte_precondition_transports": "0123456789abcdef-fedcba9876543210"}, ompi, 0},
		{"open mpi short words", map[string]string{"OMPI_MCA_orte_precondition_transports": "1-2"},
			UUID{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}, 0},
		{"bad open mpi key is ignored", map[string]string{"OMPI_MCA_orte_precondition_transports": "garbage"}, DefaultUUID, 0},
		{"bad open mpi word is ignored", map[string]string{"OMPI_MCA_orte_precondition_transports": "xyz-123"}, DefaultUUID, 0},
		{"FI_PSM2_UUID overrides the job key", map[string]string{
			"OMPI_MCA_orte_precondition_transports": "0123456789abcdef-fedcba9876543210",
			"FI_PSM2_UUID":                          "aabbccdd-0001-0002-0003-000400050006",
		}, explicit, 0},
		{"bad FI_PSM2_UUID keeps the job key", map[string]string{
			"OMPI_MCA_orte_precondition_transports": "0123456789abcdef-fedcba9876543210",
			"FI_PSM2_UUID":                          "aabbccdd",
		}, ompi, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, h := newTestProvider(t, tt.env)
			if got := p.Params().UUID; got != tt.want {
				t.Errorf("uuid = %v, want %v", got, tt.want)
			}
			if got := len(h.warnings()); got != tt.warnings {
				t.Errorf("%d warnings (%q), want %d", got, h.warnings(), tt.warnings)
			}
		})
	}
}

func TestParseUUID(t *testing.T) {
	good := []struct {
		in   string
		want UUID
	}{
		{"00FF00FF-0000-0000-0000-00FF00FF00FF", DefaultUUID},
		{"00ff00ff-0000-0000-0000-00ff00ff00ff", DefaultUUID},
		{"00112233-4455-6677-8899-AABBCCDDEEFF", UUID{0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF}},
	}
	for _, tt := range good {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseUUID(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("ParseUUID(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
			if s := got.String(); s != strings.ToUpper(tt.in) {
				t.Errorf("String() = %q, want %q", s, strings.ToUpper(tt.in))
			}
			back, err := ParseUUID(got.String())
			if err != nil || back != got {
				t.Errorf("round trip: %v, %v", back, err)
			}
		})
	}
	bad := []string{
		"",
		"00FF00FF-0000-0000-0000-00FF00FF00F",      // short
		"00FF00FF-0000-0000-0000-00FF00FF00FF0",    // long
		"00FF00FF00000-000-0000-00FF00FF00FF",      // dash misplaced
		"00FF00FF-0000-0000-0000-00FF00FF00FG",     // not hex
		"{0FF00FF-0000-0000-0000-00FF00FF00FF}",    // braces
		"00FF00FF-0000-0000-0000+00FF00FF00FF",     // wrong separator
		"+0FF00FF-0000-0000-0000-00FF00FF00FF",     // sign
		"0-FF00FF-0000-0000-0000-00FF00FF00FF",     // an extra dash in a group
		"00FF00FF-0000-0000-0000-00FF00FF00-F",     // an extra dash in the last group
		"0-234567-9abc-ef01-3456-89abcdef0123",     // an extra dash near the start
		"00FF00FF-0-00-0000-0000-00FF00FF00FF",     // an extra dash in the second group
		"00FF00FF-0000-0000-0000-00FF00FF00FF\x00", // trailing NUL
	}
	for _, in := range bad {
		t.Run(fmt.Sprintf("bad %q", in), func(t *testing.T) {
			noPanic(t, fmt.Sprintf("ParseUUID(%q)", in), func() {
				if u, err := ParseUUID(in); err == nil {
					t.Errorf("ParseUUID(%q) = %v, want an error", in, u)
				}
			})
		})
	}
}

// TestParamsBadUUIDDoesNotCrash: a malformed FI_PSM2_UUID in the user's
// environment must be a warning, not a crash of the process that loads
// the library.
func TestParamsBadUUIDDoesNotCrash(t *testing.T) {
	for _, v := range []string{"0-234567-9abc-ef01-3456-89abcdef0123", "--------------------------------xxxx"} {
		t.Run(v, func(t *testing.T) {
			var p *Provider
			var h *fakeHost
			if !noPanic(t, "New", func() { p, h = newTestProvider(t, map[string]string{"FI_PSM2_UUID": v}) }) {
				return
			}
			if p.Params().UUID != DefaultUUID || len(h.warnings()) != 1 {
				t.Errorf("uuid %v, warnings %q; want the default and one warning", p.Params().UUID, h.warnings())
			}
		})
	}
}

func FuzzParseUUID(f *testing.F) {
	for _, s := range []string{
		"00FF00FF-0000-0000-0000-00FF00FF00FF",
		"0-234567-9abc-ef01-3456-89abcdef0123",
		"",
		"zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var u UUID
		var err error
		if !noPanic(t, fmt.Sprintf("ParseUUID(%q)", s), func() { u, err = ParseUUID(s) }) {
			return
		}
		if err != nil {
			return
		}
		if !strings.EqualFold(u.String(), s) {
			t.Errorf("ParseUUID(%q) = %v, which prints differently", s, u)
		}
	})
}

func TestUUIDNameServerPort(t *testing.T) {
	tests := []struct {
		name string
		u    UUID
		want uint16
	}{
		{"default uuid", DefaultUUID, 64256},
		{"zero sum moves up by 4096", UUID{}, 4096},
		{"sum 4095 moves up", UUID{0xff, 0x0f}, 4095 + 4096},
		{"sum 4096 stays", UUID{0x00, 0x10}, 4096},
		{"words are little-endian", UUID{0x01, 0x00, 0x00, 0x20}, 0x2001},
		{"the sum wraps at 2^16", UUID{0xff, 0xff, 0x01, 0x10}, 0x1000},
		{"wrap below 4096 moves up", UUID{0xff, 0xff, 0x02, 0x00}, 1 + 4096},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.u.NameServerPort(); got != tt.want {
				t.Errorf("NameServerPort(%v) = %d, want %d", tt.u, got, tt.want)
			}
		})
	}
}

func TestParseAffinity(t *testing.T) {
	tests := []struct {
		in   string
		ncpu int
		want []int // nil: error
	}{
		{"0", 4, []int{0}},
		{"3", 4, []int{3}},
		{"0:3", 4, []int{0, 1, 2, 3}},
		{"0:7:2", 8, []int{0, 2, 4, 6}},
		{"1:6:3", 8, []int{1, 4}},
		{"2:2", 4, []int{2}},
		{"-1", 4, []int{3}},
		{"-4", 4, []int{0}},
		{"-4:-1", 4, []int{0, 1, 2, 3}},
		{"0:-1:2", 6, []int{0, 2, 4}},
		{"1,3", 4, []int{1, 3}},
		{"0:1,3", 4, []int{0, 1, 3}},
		{"0:3:2,1", 4, []int{0, 2, 1}},
		{" 1 , 2 ", 4, []int{1, 2}},
		{"1 : 2", 4, []int{1, 2}},
		// errors
		{"", 4, nil},
		{"   ", 4, nil},
		{"a", 4, nil},
		{"1,", 4, nil},
		{",1", 4, nil},
		{"0:1:1:1", 4, nil},
		{"0:3:0", 4, nil},
		{"0:3:-1", 4, nil},
		{"4", 4, nil},
		{"-5", 4, nil},
		{"0:4", 4, nil},
		{"3:1", 4, nil},
		{"0x1", 4, nil},
		{"1:", 4, nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q/%d", tt.in, tt.ncpu), func(t *testing.T) {
			got, err := ParseAffinity(tt.in, tt.ncpu)
			if tt.want == nil {
				if err == nil {
					t.Errorf("ParseAffinity = %v, want an error", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseAffinity: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseAffinity (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTagLayoutString(t *testing.T) {
	for l, want := range map[TagLayout]string{TagLayoutAuto: "auto", TagLayoutTag60: "tag60", TagLayoutTag64: "tag64"} {
		if got := l.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(l), got, want)
		}
	}
}

func TestLoggerRespectsLogEnabled(t *testing.T) {
	h := newFakeHost(map[string]string{"FI_PSM2_DELAY": "bad"})
	h.enabled = func(level fi.LogLevel, _ fi.LogSubsys) bool { return level != fi.LOG_WARN }
	New(h)
	if w := h.warnings(); len(w) != 0 {
		t.Errorf("warnings logged while WARN is disabled: %q", w)
	}
	var nilLogger logger
	nilLogger.Warnf(fi.LOG_CORE, "no host: %d", 1) // must not panic
}
