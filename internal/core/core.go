package core

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// Env reads the C environment (getenv), so that variables an application
// sets after the library loaded are seen.
type Env func(name string) (string, bool)

// Param is one registered parameter.
type Param struct {
	Prov    string // "" for the core's own
	Name    string // as defined, e.g. "inject_size"
	EnvName string // e.g. FI_PSM2_INJECT_SIZE
	Type    fi.ParamType
	Help    string // with the "<prov>: " prefix for provider parameters
}

// Core holds the standalone core's state. Its zero value is not usable:
// call New.
type Core struct {
	env Env
	pid int

	mu     sync.Mutex
	params []Param // in definition order

	// Logging, fixed at New from the environment.
	levelMask  uint32 // bit per enabled level
	subsysMask uint32 // bit per enabled subsystem
	logProv    filter
	interval   time.Duration

	provFilter filter // FI_PROVIDER
}

// New builds the core: it defines the core parameters and reads the
// logging and provider-selection variables.
func New(env Env) *Core {
	c := &Core{env: env, pid: os.Getpid()}
	c.Define("", "provider", fi.PARAM_STRING,
		"Only use the named providers: a comma-separated list, or ^list to exclude (default: all)")
	c.Define("", "log_level", fi.PARAM_STRING,
		"Logging level: warn, trace, info or debug (default: no logging)")
	c.Define("", "log_prov", fi.PARAM_STRING,
		"Only log for these providers: comma-separated, or ^list to exclude (default: all)")
	c.Define("", "log_subsys", fi.PARAM_STRING,
		"Only log these subsystems: core, fabric, domain, ep_ctrl, ep_data, av, cq, eq, mr, cntr; comma-separated, or ^list (default: all)")
	c.Define("", "log_interval", fi.PARAM_INT,
		"Milliseconds between repeats of a rate-limited log message (default: 2000)")

	if v, ok := env("FI_LOG_LEVEL"); ok {
		level := 0 // an unknown name means warn
		for i, n := range fi.LogLevelNames {
			if strings.EqualFold(v, n) {
				level = i
			}
		}
		c.levelMask = 1<<(level+1) - 1
	}
	subsys := parseFilter(env("FI_LOG_SUBSYS"))
	for i, n := range fi.LogSubsysNames {
		if !subsys.excludes(n) {
			c.subsysMask |= 1 << i
		}
	}
	c.logProv = parseFilter(env("FI_LOG_PROV"))
	c.interval = 2000 * time.Millisecond
	if v, ok := env("FI_LOG_INTERVAL"); ok {
		var ms int
		if _, err := fmt.Sscan(v, &ms); err == nil && ms >= 0 {
			c.interval = time.Duration(ms) * time.Millisecond
		}
	}
	c.provFilter = parseFilter(env("FI_PROVIDER"))
	return c
}

// Define registers a parameter, as fi_param_define does. A second
// definition of the same provider and name replaces the first.
func (c *Core) Define(prov, name string, typ fi.ParamType, help string) error {
	if name == "" || help == "" {
		return fi.EINVAL
	}
	p := Param{Prov: prov, Name: name, Type: typ, Help: help}
	if prov == "" {
		p.EnvName = strings.ToUpper("FI_" + name)
	} else {
		p.EnvName = strings.ToUpper("FI_" + prov + "_" + name)
		p.Help = prov + ": " + help
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.params {
		if c.params[i].Prov == prov && c.params[i].Name == name {
			c.params[i] = p
			return nil
		}
	}
	c.params = append(c.params, p)
	return nil
}

// Lookup finds a defined parameter.
func (c *Core) Lookup(prov, name string) (Param, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.params {
		if p.Prov == prov && p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// Params lists the defined parameters in definition order.
func (c *Core) Params() []Param {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Param(nil), c.params...)
}

// Getenv reads the C environment.
func (c *Core) Getenv(name string) (string, bool) { return c.env(name) }

// LogMasks returns the enabled levels and subsystems as bit masks, for the
// C side's allocation-free fi_log_enabled.
func (c *Core) LogMasks() (levels, subsystems uint32) { return c.levelMask, c.subsysMask }

// LogInterval is the pause between repeats of a rate-limited message.
func (c *Core) LogInterval() time.Duration { return c.interval }

// LogEnabled reports whether prov's messages at level/subsys print. The
// core's own messages ("core") are not subject to FI_LOG_PROV, which only
// selects among providers.
func (c *Core) LogEnabled(prov string, level fi.LogLevel, subsys fi.LogSubsys) bool {
	if level < 0 || level >= fi.LOG_MAX || subsys < 0 || subsys >= fi.LOG_SUBSYS_MAX {
		return false
	}
	if c.levelMask&(1<<level) == 0 || c.subsysMask&(1<<subsys) == 0 {
		return false
	}
	return prov == "core" || !c.logProv.excludes(prov)
}

// ProvLogFiltered reports whether FI_LOG_PROV silences prov.
func (c *Core) ProvLogFiltered(prov string) bool { return c.logProv.excludes(prov) }

// FormatLog renders one log line in libfabric's format:
// libfabric:<pid>:<unix time>::<prov>:<subsys>:<func>():<line><<level>> <msg>
func (c *Core) FormatLog(prov string, level fi.LogLevel, subsys fi.LogSubsys, fn string, line int, msg string) string {
	lv, ss := "Unknown", "Unknown"
	if level >= 0 && int(level) < len(fi.LogLevelNames) {
		lv = fi.LogLevelNames[level]
	}
	if subsys >= 0 && int(subsys) < len(fi.LogSubsysNames) {
		ss = fi.LogSubsysNames[subsys]
	}
	return fmt.Sprintf("libfabric:%d:%d::%s:%s:%s():%d<%s> %s", c.pid, time.Now().Unix(), prov, ss, fn, line, lv, msg)
}

// Log writes one message to stderr, as fi_log does: the caller has
// already checked that it is enabled.
func (c *Core) Log(prov string, level fi.LogLevel, subsys fi.LogSubsys, fn string, line int, msg string) {
	os.Stderr.WriteString(c.FormatLog(prov, level, subsys, fn, line, msg))
}

// logf is the core's own logging, checked against the configuration.
func (c *Core) logf(level fi.LogLevel, fn, format string, args ...any) {
	if c.LogEnabled("core", level, fi.LOG_CORE) {
		c.Log("core", level, fi.LOG_CORE, fn, 0, fmt.Sprintf(format, args...))
	}
}

// filter is a provider or subsystem name list as FI_PROVIDER, FI_LOG_PROV
// and FI_LOG_SUBSYS spell it: "a,b" keeps only those, "^a,b" drops them.
// As in libfabric, a variable that is set but empty is the list [""],
// which keeps nothing; an unset one filters nothing (names == nil).
type filter struct {
	names   []string
	negated bool
}

func parseFilter(s string, set bool) filter {
	if !set {
		return filter{}
	}
	var f filter
	if strings.HasPrefix(s, "^") {
		f.negated = true
		s = s[1:]
	}
	f.names = strings.Split(s, ",")
	return f
}

// excludes reports whether the filter removes name.
func (f filter) excludes(name string) bool { return f.excludesBy(name, strings.EqualFold) }

// excludesEntry is the filter applied to fi_getinfo's answers: an entry's
// whole prov_name must match a list name, except that a layered entry
// "core;util" also matches the list name "core".
func (f filter) excludesEntry(provName string) bool {
	return f.excludesBy(provName, func(n, p string) bool {
		return strings.EqualFold(n, p) || isCoreOf(n, p)
	})
}

// excludesProvider is excludes for provider selection, where a layered
// name "core;util" in a positive list also keeps the core provider.
func (f filter) excludesProvider(name string) bool {
	return f.excludesBy(name, func(n, p string) bool {
		return strings.EqualFold(n, p) || (!f.negated && isCoreOf(p, n))
	})
}

// excludesBy applies the filter, with match deciding whether the list name
// n names name.
func (f filter) excludesBy(name string, match func(n, name string) bool) bool {
	if f.names == nil {
		return false
	}
	for _, n := range f.names {
		if match(n, name) {
			return f.negated
		}
	}
	return !f.negated
}

// isCoreOf reports whether layered is "core;<something>".
func isCoreOf(core, layered string) bool {
	return len(layered) > len(core) && layered[len(core)] == ';' && strings.EqualFold(layered[:len(core)], core)
}
