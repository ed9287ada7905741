package core

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider"
)

// fakeProv is a provider that answers one entry (or an error) and counts
// its calls.
type fakeProv struct {
	name    string
	version uint32
	api     uint32
	err     error
	noFab   bool // answer an entry with a nil Fabric

	mu    sync.Mutex
	calls int
}

func newFake(name string) *fakeProv {
	return &fakeProv{name: name, version: fi.Version(117, 0), api: fi.Version(1, 17)}
}

func (p *fakeProv) Name() string       { return p.name }
func (p *fakeProv) Version() uint32    { return p.version }
func (p *fakeProv) APIVersion() uint32 { return p.api }
func (p *fakeProv) GetInfo(version uint32, node, service string, flags uint64, hints *fi.Info) ([]*fi.Info, error) {
	p.mu.Lock()
	p.calls++
	p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	info := &fi.Info{Domain: &fi.DomainAttr{Name: p.name + "_dom"}}
	if !p.noFab {
		info.Fabric = &fi.FabricAttr{Name: p.name + "_fabric"}
	}
	return []*fi.Info{info}, nil
}

func (p *fakeProv) called() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// provNames lists prov_name of every answer.
func provNames(infos []*fi.Info) string {
	var out []string
	for _, info := range infos {
		out = append(out, info.Fabric.ProvName)
	}
	return strings.Join(out, ",")
}

func providers(names ...string) ([]Provider, []*fakeProv) {
	var ps []Provider
	var fs []*fakeProv
	for _, n := range names {
		f := newFake(n)
		ps = append(ps, f)
		fs = append(fs, f)
	}
	return ps, fs
}

var v117 = fi.Version(1, 17)

func TestGetInfoVersion(t *testing.T) {
	tests := []struct {
		version uint32
		want    error // nil: an answer
	}{
		{fi.Version(1, 18), fi.ENOSYS},
		{fi.Version(2, 0), fi.ENOSYS},
		{fi.Version(1, 0xffff), fi.ENOSYS},
		{fi.Version(1, 17), nil},
		{fi.Version(1, 5), nil},
		{fi.Version(1, 0), nil},
		{fi.Version(0, 0), nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d.%d", fi.VersionMajor(tt.version), fi.VersionMinor(tt.version)), func(t *testing.T) {
			ps, fs := providers("psm2")
			infos, err := newCore(nil).GetInfo(ps, tt.version, "", "", 0, nil)
			if tt.want != nil {
				if !errors.Is(err, tt.want) || infos != nil {
					t.Fatalf("GetInfo = %d entries, %v; want %v", len(infos), err, tt.want)
				}
				if fs[0].called() != 0 {
					t.Errorf("provider asked despite the version")
				}
				return
			}
			if err != nil || len(infos) != 1 {
				t.Fatalf("GetInfo = %d entries, %v", len(infos), err)
			}
			if got := infos[0].Fabric.APIVersion; got != tt.version {
				t.Errorf("api_version = %#x, want the requested %#x", got, tt.version)
			}
		})
	}
	// The version check comes before FI_PROV_ATTR_ONLY too.
	ps, _ := providers("psm2")
	if _, err := newCore(nil).GetInfo(ps, fi.Version(1, 18), "", "", fi.PROV_ATTR_ONLY, nil); !errors.Is(err, fi.ENOSYS) {
		t.Errorf("PROV_ATTR_ONLY with version 1.18: %v, want ENOSYS", err)
	}
}

func TestGetInfoProviderAPIVersion(t *testing.T) {
	old := newFake("old")
	old.api = fi.Version(1, 10)
	cur := newFake("psm2")
	c := newCore(nil)
	infos, err := c.GetInfo([]Provider{old, cur}, fi.Version(1, 12), "", "", 0, nil)
	if err != nil || provNames(infos) != "psm2" {
		t.Fatalf("GetInfo = %q, %v; want only psm2", provNames(infos), err)
	}
	if old.called() != 0 {
		t.Errorf("a provider older than the requested version was asked")
	}
	infos, err = c.GetInfo([]Provider{old, cur}, fi.Version(1, 10), "", "", 0, nil)
	if err != nil || provNames(infos) != "old,psm2" {
		t.Errorf("GetInfo(1.10) = %q, %v; want old,psm2", provNames(infos), err)
	}
}

func TestGetInfoProvAttrOnly(t *testing.T) {
	ps, fs := providers("psm2", "tcp")
	infos, err := newCore(nil).GetInfo(ps, v117, "", "", fi.PROV_ATTR_ONLY, &fi.Info{Caps: fi.TAGGED})
	if err != nil {
		t.Fatal(err)
	}
	want := []*fi.Info{
		{Tx: &fi.TxAttr{}, Rx: &fi.RxAttr{}, EP: &fi.EPAttr{}, Domain: &fi.DomainAttr{},
			Fabric: &fi.FabricAttr{ProvName: "psm2", ProvVersion: fi.Version(117, 0)}},
		{Tx: &fi.TxAttr{}, Rx: &fi.RxAttr{}, EP: &fi.EPAttr{}, Domain: &fi.DomainAttr{},
			Fabric: &fi.FabricAttr{ProvName: "tcp", ProvVersion: fi.Version(117, 0)}},
	}
	if diff := cmp.Diff(want, infos, infoOpts); diff != "" {
		t.Errorf("PROV_ATTR_ONLY (-want +got):\n%s", diff)
	}
	for _, f := range fs {
		if f.called() != 0 {
			t.Errorf("%s asked for entries under PROV_ATTR_ONLY", f.name)
		}
	}
	// Other flags with it make an ordinary query.
	infos, err = newCore(nil).GetInfo(ps, v117, "", "", fi.PROV_ATTR_ONLY|fi.SOURCE, nil)
	if err != nil || fs[0].called() != 1 || infos[0].Domain.Name != "psm2_dom" {
		t.Errorf("PROV_ATTR_ONLY|SOURCE did not query the providers: %v", err)
	}
	if _, err := newCore(nil).GetInfo(nil, v117, "", "", fi.PROV_ATTR_ONLY, nil); !errors.Is(err, fi.ENODATA) {
		t.Errorf("no providers: %v, want ENODATA", err)
	}
}

// TestGetInfoProvAttrOnlyListsFilteredProviders: in libfabric 1.17 a
// provider excluded by FI_PROVIDER is only hidden (ofi_register_provider
// sets prov->hidden), and ofi_getprovinfo, which answers
// FI_PROV_ATTR_ONLY, lists every provider without looking at hidden. So
// `FI_PROVIDER=tcp fi_info -l` still lists psm2.
func TestGetInfoProvAttrOnlyListsFilteredProviders(t *testing.T) {
	ps, _ := providers("psm2")
	infos, err := newCore(map[string]string{"FI_PROVIDER": "tcp"}).GetInfo(ps, v117, "", "", fi.PROV_ATTR_ONLY, nil)
	if err != nil || provNames(infos) != "psm2" {
		t.Errorf("FI_PROVIDER=tcp, PROV_ATTR_ONLY: %q, %v; want psm2 listed", provNames(infos), err)
	}
}

func TestGetInfoStamps(t *testing.T) {
	f := newFake("psm2")
	f.version = fi.Version(117, 3)
	nf := newFake("nofab")
	nf.noFab = true
	infos, err := newCore(nil).GetInfo([]Provider{f, nf}, fi.Version(1, 5), "", "", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []*fi.FabricAttr{
		{Name: "psm2_fabric", ProvName: "psm2", ProvVersion: fi.Version(117, 3), APIVersion: fi.Version(1, 5)},
		{ProvName: "nofab", ProvVersion: fi.Version(117, 0), APIVersion: fi.Version(1, 5)},
	}
	var got []*fi.FabricAttr
	for _, info := range infos {
		got = append(got, info.Fabric)
	}
	if diff := cmp.Diff(want, got, infoOpts); diff != "" {
		t.Errorf("fabric attrs (-want +got):\n%s", diff)
	}
}

// psm2Host serves the real provider in these tests.
type psm2Host struct{ env map[string]string }

func (psm2Host) DefineParam(string, provider.ParamType, string)     {}
func (h psm2Host) Getenv(name string) (string, bool)                { v, ok := h.env[name]; return v, ok }
func (psm2Host) LogEnabled(fi.LogLevel, fi.LogSubsys) bool          { return false }
func (psm2Host) Log(fi.LogLevel, fi.LogSubsys, string, int, string) {}

func TestGetInfoRealProvider(t *testing.T) {
	p := provider.New(psm2Host{})
	c := newCore(nil)
	infos, err := c.GetInfo([]Provider{p}, fi.Version(1, 5), "", "", 0, nil)
	if err != nil || len(infos) != 3 {
		t.Fatalf("GetInfo = %d entries, %v; want 3", len(infos), err)
	}
	for _, info := range infos {
		want := fi.FabricAttr{Name: "psm2", ProvName: "psm2", ProvVersion: fi.Version(117, 0), APIVersion: fi.Version(1, 5)}
		if diff := cmp.Diff(want, *info.Fabric, infoOpts); diff != "" {
			t.Errorf("fabric attr (-want +got):\n%s", diff)
		}
	}
	// Open MPI's probe for efa must be exactly ENODATA.
	_, err = c.GetInfo([]Provider{p}, fi.Version(1, 5), "", "", 0, &fi.Info{Fabric: &fi.FabricAttr{ProvName: "efa"}})
	if fi.ToErrno(err) != fi.ENODATA {
		t.Errorf("prov_name efa: %v, want ENODATA", err)
	}
	// A provider's own rejection comes out as ENODATA too.
	_, err = c.GetInfo([]Provider{p}, v117, "", "", 0, &fi.Info{Caps: fi.HMEM})
	if fi.ToErrno(err) != fi.ENODATA {
		t.Errorf("caps HMEM: %v, want ENODATA", err)
	}
}

func TestGetInfoProviderErrors(t *testing.T) {
	bad := newFake("bad")
	bad.err = fmt.Errorf("wrapped: %w", fi.ENODATA)
	other := newFake("other")
	other.err = errors.New("not an errno")
	good := newFake("psm2")
	c := newCore(nil)
	infos, err := c.GetInfo([]Provider{bad, other, good}, v117, "", "", 0, nil)
	if err != nil || provNames(infos) != "psm2" {
		t.Errorf("GetInfo = %q, %v; want psm2 after the failures", provNames(infos), err)
	}
	_, err = c.GetInfo([]Provider{bad, other}, v117, "", "", 0, &fi.Info{Fabric: &fi.FabricAttr{ProvName: "bad"}})
	if !errors.Is(err, fi.ENODATA) {
		t.Errorf("every provider failing: %v, want ENODATA", err)
	}
	if _, err := c.GetInfo(nil, v117, "", "", 0, nil); !errors.Is(err, fi.ENODATA) {
		t.Errorf("no providers: %v, want ENODATA", err)
	}
}

func TestGetInfoFIProvider(t *testing.T) {
	tests := []struct {
		value string
		want  string // prov_names answered; "" means ENODATA
	}{
		{"psm2", "psm2"},
		{"PSM2", "psm2"},
		{"^psm2", "tcp"},
		{"^PSM2", "tcp"},
		{"tcp,psm2", "psm2,tcp"},
		{"tcp", "tcp"},
		{"udp", ""},
		{"^psm2,tcp", ""},
		{"^udp", "psm2,tcp"},
		{"^", "psm2,tcp"},
		{",", ""},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			ps, _ := providers("psm2", "tcp")
			infos, err := newCore(map[string]string{"FI_PROVIDER": tt.value}).GetInfo(ps, v117, "", "", 0, nil)
			if tt.want == "" {
				if !errors.Is(err, fi.ENODATA) {
					t.Errorf("GetInfo = %q, %v; want ENODATA", provNames(infos), err)
				}
				return
			}
			if err != nil || provNames(infos) != tt.want {
				t.Errorf("GetInfo = %q, %v; want %q", provNames(infos), err, tt.want)
			}
		})
	}
	t.Run("unset", func(t *testing.T) {
		ps, _ := providers("psm2", "tcp")
		infos, err := newCore(nil).GetInfo(ps, v117, "", "", 0, nil)
		if err != nil || provNames(infos) != "psm2,tcp" {
			t.Errorf("GetInfo = %q, %v; want psm2,tcp", provNames(infos), err)
		}
	})
}

// TestGetInfoFIProviderLibfabricRules covers two FI_PROVIDER values whose
// libfabric meaning leaves a standalone psm2 library with nothing:
//
//   - "psm2;ofi_rxd" asks for the rxd-over-psm2 layering only. The init
//     filter keeps psm2 loaded (ofi_apply_prov_init_filter matches the
//     layered name), but ofi_filter_info then removes every entry whose
//     prov_name is plain "psm2" (ofi_apply_prov_post_filter requires a full
//     match, src/fabric.c:296-312). Without rxd nothing is left.
//   - "" (set but empty) is the filter [""], which matches no provider, so
//     every provider is hidden.
func TestGetInfoFIProviderLibfabricRules(t *testing.T) {
	for _, value := range []string{"psm2;ofi_rxd", ""} {
		t.Run(fmt.Sprintf("%q", value), func(t *testing.T) {
			ps, _ := providers("psm2")
			infos, err := newCore(map[string]string{"FI_PROVIDER": value}).GetInfo(ps, v117, "", "", 0, nil)
			if !errors.Is(err, fi.ENODATA) {
				t.Errorf("FI_PROVIDER=%q: GetInfo = %q, %v; want ENODATA", value, provNames(infos), err)
			}
		})
	}
}

func TestGetInfoProvNameHint(t *testing.T) {
	tests := []struct {
		provName string
		want     bool // psm2 asked and answered
	}{
		{"psm2", true},
		{"PSM2", true},
		{"psm2;ofi_rxd", false},
		{"^psm2", false},
		{"ofi_rxm;psm2", false},
		{"tcp", false},
		{"efa", false},
		{"^tcp", true},
		{"psm2;^tcp", true},
		{"tcp;^psm2", false},
		{"ofi_rxd", false},
		{"ofi_rxm;ofi_rxd;psm2", true},
	}
	for _, tt := range tests {
		t.Run(tt.provName, func(t *testing.T) {
			f := newFake("psm2")
			hints := &fi.Info{Fabric: &fi.FabricAttr{ProvName: tt.provName}}
			infos, err := newCore(nil).GetInfo([]Provider{f}, v117, "", "", 0, hints)
			if tt.want {
				if err != nil || provNames(infos) != "psm2" {
					t.Errorf("GetInfo = %q, %v; want psm2", provNames(infos), err)
				}
				return
			}
			if fi.ToErrno(err) != fi.ENODATA {
				t.Errorf("GetInfo = %q, %v; want ENODATA", provNames(infos), err)
			}
			if f.called() != 0 {
				t.Errorf("psm2 asked for entries")
			}
		})
	}
}

func TestLayeringOK(t *testing.T) {
	tests := []struct {
		name   string
		wanted []string
		want   bool
	}{
		{"psm2", nil, true},
		{"psm2", []string{"psm2"}, true},
		{"psm2", []string{"Psm2"}, true},
		{"psm2", []string{"psm2", "ofi_rxd"}, false},
		{"ofi_rxd", []string{"psm2", "ofi_rxd"}, true},
		{"psm2", []string{"ofi_rxm", "psm2"}, false},
		{"ofi_rxm", []string{"ofi_rxm", "psm2"}, true},
		{"psm2", []string{"^psm2"}, false},
		{"psm2", []string{"^tcp"}, true},
		{"psm2", []string{"^tcp", "^udp"}, true},
		{"psm2", []string{"psm2", "^tcp"}, true},
		{"psm2", []string{"tcp", "^psm2"}, false},
		{"psm2", []string{"ofi_rxm", "ofi_rxd", "psm2"}, true},
		{"psm2", []string{"psm2", "tcp", "udp"}, false},
		{"psm2", []string{"tcp"}, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s", tt.name, strings.Join(tt.wanted, ";")), func(t *testing.T) {
			if got := layeringOK(tt.name, tt.wanted); got != tt.want {
				t.Errorf("layeringOK(%q, %q) = %v, want %v", tt.name, tt.wanted, got, tt.want)
			}
		})
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		spec     string
		name     string
		excludes bool
		provider bool // excludesProvider
	}{
		{"", "psm2", false, false},
		{"psm2", "psm2", false, false},
		{"psm2", "tcp", true, true},
		{"PSM2", "psm2", false, false},
		{"^psm2", "psm2", true, true},
		{"^psm2", "tcp", false, false},
		{"tcp,psm2", "psm2", false, false},
		{"tcp,psm2", "udp", true, true},
		// A layered name keeps its core provider loaded (the init filter)...
		{"psm2;ofi_rxd", "psm2", true, false},
		{"PSM2;ofi_rxd", "psm2", true, false},
		{"tcp;ofi_rxm,psm2", "psm2", false, false},
		// ...but not in an exclusion list.
		{"^psm2;ofi_rxd", "psm2", false, false},
		{"psm2;ofi_rxd", "tcp", true, true},
		{"^", "psm2", false, false},
		{",", "psm2", true, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q/%s", tt.spec, tt.name), func(t *testing.T) {
			// The "" row stands for an unset variable; set-but-empty is
			// TestEmptyFilterVariables.
			f := parseFilter(tt.spec, tt.spec != "")
			if got := f.excludes(tt.name); got != tt.excludes {
				t.Errorf("excludes = %v, want %v", got, tt.excludes)
			}
			if got := f.excludesProvider(tt.name); got != tt.provider {
				t.Errorf("excludesProvider = %v, want %v", got, tt.provider)
			}
		})
	}
}

// infoOpts compares fi values holding fi.Ptr (unexported fields).
var infoOpts = cmp.Options{
	cmp.Comparer(func(a, b fi.Ptr) bool { return a.Pointer() == b.Pointer() && a.Addr() == b.Addr() }),
}
