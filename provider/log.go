package provider

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// logger formats provider messages and hands them to the Host. The level
// check comes first so that a disabled message costs one interface call.
type logger struct{ host Host }

func (l logger) logf(level fi.LogLevel, subsys fi.LogSubsys, format string, args ...any) {
	if l.host == nil || !l.host.LogEnabled(level, subsys) {
		return
	}
	fn, line := "?", 0
	if pc, _, ln, ok := runtime.Caller(2); ok {
		line = ln
		if f := runtime.FuncForPC(pc); f != nil {
			fn = f.Name()
			if i := strings.LastIndexByte(fn, '.'); i >= 0 {
				fn = fn[i+1:]
			}
		}
	}
	msg := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	l.host.Log(level, subsys, fn, line, msg)
}

func (l logger) Warnf(s fi.LogSubsys, f string, a ...any)  { l.logf(fi.LOG_WARN, s, f, a...) }
func (l logger) Infof(s fi.LogSubsys, f string, a ...any)  { l.logf(fi.LOG_INFO, s, f, a...) }
func (l logger) Debugf(s fi.LogSubsys, f string, a ...any) { l.logf(fi.LOG_DEBUG, s, f, a...) }

// Recovered reports a panic caught at the library's boundary (an exported
// entry point or a goroutine's root): the application keeps running and
// the operation fails, but it is a bug, so it is always logged as a
// warning with the stack, and counted.
func (p *Provider) Recovered(where string, v any, stack []byte) {
	n := p.panics.Add(1)
	p.log.Warnf(fi.LOG_CORE, "internal error %d in %s, recovered (the call fails): %v\n%s", n, where, v, stack)
}

// Panics is the number of panics recovered so far.
func (p *Provider) Panics() int64 { return p.panics.Load() }
