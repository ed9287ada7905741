package provider

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// fakeHost is the Host a test gives provider.New: a private environment,
// the parameters the provider defined and the lines it logged. Nothing is
// shared between hosts, so tests can run in parallel.
type fakeHost struct {
	env map[string]string

	mu      sync.Mutex
	defined []definedParam
	logs    []logLine
	// enabled decides LogEnabled; nil enables every level and subsystem.
	enabled func(fi.LogLevel, fi.LogSubsys) bool
}

type definedParam struct {
	Name string
	Type ParamType
	Help string
}

type logLine struct {
	Level  fi.LogLevel
	Subsys fi.LogSubsys
	Func   string
	Line   int
	Msg    string
}

func newFakeHost(env map[string]string) *fakeHost {
	if env == nil {
		env = map[string]string{}
	}
	return &fakeHost{env: env}
}

func (h *fakeHost) DefineParam(name string, typ ParamType, help string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.defined = append(h.defined, definedParam{name, typ, help})
}

func (h *fakeHost) Getenv(name string) (string, bool) {
	v, ok := h.env[name]
	return v, ok
}

func (h *fakeHost) LogEnabled(level fi.LogLevel, subsys fi.LogSubsys) bool {
	if h.enabled == nil {
		return true
	}
	return h.enabled(level, subsys)
}

func (h *fakeHost) Log(level fi.LogLevel, subsys fi.LogSubsys, fn string, line int, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logs = append(h.logs, logLine{level, subsys, fn, line, msg})
}

// lines returns the logged lines at level.
func (h *fakeHost) lines(level fi.LogLevel) []logLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logLine
	for _, l := range h.logs {
		if l.Level == level {
			out = append(out, l)
		}
	}
	return out
}

// warnings returns the messages of the WARN lines.
func (h *fakeHost) warnings() []string {
	var out []string
	for _, l := range h.lines(fi.LOG_WARN) {
		out = append(out, l.Msg)
	}
	return out
}

// newTestProvider makes a provider over a fresh fake host with env.
func newTestProvider(t *testing.T, env map[string]string) (*Provider, *fakeHost) {
	t.Helper()
	h := newFakeHost(env)
	return New(h), h
}

// infoOpts compares fi.Info values: fi.Ptr has unexported fields and is
// equal when it holds the same pointer and address.
var infoOpts = cmp.Options{
	cmp.Comparer(func(a, b fi.Ptr) bool { return a.Pointer() == b.Pointer() && a.Addr() == b.Addr() }),
}

// names lists the shapes of entries for short failure messages.
func shapes(infos []*fi.Info) []string {
	var out []string
	for _, info := range infos {
		out = append(out, shape(info))
	}
	return out
}

func shape(info *fi.Info) string {
	switch {
	case info.Domain == nil:
		return "?"
	case info.Domain.CQDataSize == 0:
		return "TAG64"
	case info.Domain.CQDataSize == 4:
		return "TAG60"
	case info.Domain.CQDataSize == 8:
		return "RMA"
	}
	return fmt.Sprintf("cq_data_size=%d", info.Domain.CQDataSize)
}

func joinShapes(infos []*fi.Info) string { return strings.Join(shapes(infos), ",") }

func TestFakeHostIsolation(t *testing.T) {
	// Two providers over two hosts see only their own environment.
	p1, h1 := newTestProvider(t, map[string]string{"FI_PSM2_INJECT_SIZE": "128"})
	p2, h2 := newTestProvider(t, nil)
	if got := p1.Params().InjectSize; got != 128 {
		t.Errorf("p1 inject_size = %d, want 128", got)
	}
	if got := p2.Params().InjectSize; got != 64 {
		t.Errorf("p2 inject_size = %d, want 64", got)
	}
	if len(h1.defined) != len(paramDefs) || len(h2.defined) != len(paramDefs) {
		t.Errorf("defined %d and %d params, want %d each", len(h1.defined), len(h2.defined), len(paramDefs))
	}
}
