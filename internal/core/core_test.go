package core

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// envOf is an Env over a map; nothing touches the process environment.
func envOf(m map[string]string) Env {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

func newCore(m map[string]string) *Core { return New(envOf(m)) }

func TestNewDefinesCoreParams(t *testing.T) {
	c := newCore(nil)
	type p struct {
		Prov, Name, EnvName string
		Type                fi.ParamType
	}
	var got []p
	for _, prm := range c.Params() {
		got = append(got, p{prm.Prov, prm.Name, prm.EnvName, prm.Type})
		if prm.Help == "" {
			t.Errorf("%s: empty help", prm.Name)
		}
	}
	want := []p{
		{"", "provider", "FI_PROVIDER", fi.PARAM_STRING},
		{"", "log_level", "FI_LOG_LEVEL", fi.PARAM_STRING},
		{"", "log_prov", "FI_LOG_PROV", fi.PARAM_STRING},
		{"", "log_subsys", "FI_LOG_SUBSYS", fi.PARAM_STRING},
		{"", "log_interval", "FI_LOG_INTERVAL", fi.PARAM_INT},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("core params (-want +got):\n%s", diff)
	}
}

func TestDefine(t *testing.T) {
	tests := []struct {
		prov, name string
		typ        fi.ParamType
		help       string
		want       Param
	}{
		{"psm2", "inject_size", fi.PARAM_INT, "Largest inject",
			Param{Prov: "psm2", Name: "inject_size", EnvName: "FI_PSM2_INJECT_SIZE", Type: fi.PARAM_INT, Help: "psm2: Largest inject"}},
		{"psm2", "Mixed_Case", fi.PARAM_BOOL, "h",
			Param{Prov: "psm2", Name: "Mixed_Case", EnvName: "FI_PSM2_MIXED_CASE", Type: fi.PARAM_BOOL, Help: "psm2: h"}},
		{"ofi_rxm", "buffer_size", fi.PARAM_SIZE_T, "Buffer size",
			Param{Prov: "ofi_rxm", Name: "buffer_size", EnvName: "FI_OFI_RXM_BUFFER_SIZE", Type: fi.PARAM_SIZE_T, Help: "ofi_rxm: Buffer size"}},
		{"Tcp", "iface", fi.PARAM_STRING, "Interface",
			Param{Prov: "Tcp", Name: "iface", EnvName: "FI_TCP_IFACE", Type: fi.PARAM_STRING, Help: "Tcp: Interface"}},
		{"", "fork_unsafe", fi.PARAM_BOOL, "Fork may be unsafe",
			Param{Prov: "", Name: "fork_unsafe", EnvName: "FI_FORK_UNSAFE", Type: fi.PARAM_BOOL, Help: "Fork may be unsafe"}},
	}
	for _, tt := range tests {
		t.Run(tt.prov+"/"+tt.name, func(t *testing.T) {
			c := newCore(nil)
			if err := c.Define(tt.prov, tt.name, tt.typ, tt.help); err != nil {
				t.Fatalf("Define: %v", err)
			}
			got, ok := c.Lookup(tt.prov, tt.name)
			if !ok {
				t.Fatalf("Lookup(%q, %q) found nothing", tt.prov, tt.name)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Lookup (-want +got):\n%s", diff)
			}
			params := c.Params()
			if diff := cmp.Diff(tt.want, params[len(params)-1]); diff != "" {
				t.Errorf("last of Params (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDefineErrors(t *testing.T) {
	c := newCore(nil)
	n := len(c.Params())
	for _, tt := range []struct{ name, help string }{{"", "help"}, {"x", ""}, {"", ""}} {
		if err := c.Define("psm2", tt.name, fi.PARAM_INT, tt.help); !errors.Is(err, fi.EINVAL) {
			t.Errorf("Define(%q, help %q) = %v, want EINVAL", tt.name, tt.help, err)
		}
	}
	if got := len(c.Params()); got != n {
		t.Errorf("%d params after failed defines, want %d", got, n)
	}
}

func TestDefineRedefinitionReplaces(t *testing.T) {
	c := newCore(nil)
	c.Define("psm2", "a", fi.PARAM_INT, "first a")
	c.Define("psm2", "b", fi.PARAM_INT, "b")
	c.Define("psm2", "a", fi.PARAM_STRING, "second a")
	got, _ := c.Lookup("psm2", "a")
	want := Param{Prov: "psm2", Name: "a", EnvName: "FI_PSM2_A", Type: fi.PARAM_STRING, Help: "psm2: second a"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after redefinition (-want +got):\n%s", diff)
	}
	var names []string
	for _, p := range c.Params() {
		if p.Prov == "psm2" {
			names = append(names, p.Help)
		}
	}
	// Replaced in place: still one "a", still before "b".
	if diff := cmp.Diff([]string{"psm2: second a", "psm2: b"}, names); diff != "" {
		t.Errorf("psm2 params (-want +got):\n%s", diff)
	}
}

func TestLookup(t *testing.T) {
	c := newCore(nil)
	c.Define("psm2", "uuid", fi.PARAM_STRING, "psm2 uuid")
	c.Define("opx", "uuid", fi.PARAM_STRING, "opx uuid")
	tests := []struct {
		prov, name string
		ok         bool
		help       string
	}{
		{"psm2", "uuid", true, "psm2: psm2 uuid"},
		{"opx", "uuid", true, "opx: opx uuid"},
		{"", "uuid", false, ""},
		{"psm2", "UUID", false, ""}, // names compare exactly, as fi_param_get's strcmp
		{"", "provider", true, "Only use the named providers: a comma-separated list, or ^list to exclude (default: all)"},
		{"psm2", "provider", false, ""},
		{"psm2", "nope", false, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s", tt.prov, tt.name), func(t *testing.T) {
			p, ok := c.Lookup(tt.prov, tt.name)
			if ok != tt.ok || p.Help != tt.help {
				t.Errorf("Lookup = %+v, %v; want help %q, %v", p, ok, tt.help, tt.ok)
			}
		})
	}
}

func TestParamsIsACopy(t *testing.T) {
	c := newCore(nil)
	ps := c.Params()
	ps[0].Name = "scribbled"
	if p, ok := c.Lookup("", "provider"); !ok || p.Name != "provider" {
		t.Errorf("Params shares storage with the core")
	}
}

func TestDefineConcurrent(t *testing.T) {
	c := newCore(nil)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				c.Define("p", fmt.Sprintf("v%d", j%10), fi.PARAM_INT, fmt.Sprintf("from %d", i))
				c.Lookup("p", "v1")
				c.Params()
			}
		}()
	}
	wg.Wait()
	n := 0
	for _, p := range c.Params() {
		if p.Prov == "p" {
			n++
		}
	}
	if n != 10 {
		t.Errorf("%d params for p, want 10", n)
	}
}

func TestGetenv(t *testing.T) {
	c := newCore(map[string]string{"X": "1", "EMPTY": ""})
	for _, tt := range []struct {
		name string
		v    string
		ok   bool
	}{{"X", "1", true}, {"EMPTY", "", true}, {"UNSET", "", false}} {
		if v, ok := c.Getenv(tt.name); v != tt.v || ok != tt.ok {
			t.Errorf("Getenv(%q) = %q, %v; want %q, %v", tt.name, v, ok, tt.v, tt.ok)
		}
	}
}
