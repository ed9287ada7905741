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
