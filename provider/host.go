package provider

import "github.com/gopsm2/libfabric-psm2/internal/fi"

// ParamType is the type of a provider parameter.
type ParamType = fi.ParamType

// The parameter types.
const (
	ParamString = fi.PARAM_STRING
	ParamInt    = fi.PARAM_INT
	ParamBool   = fi.PARAM_BOOL
	ParamSizeT  = fi.PARAM_SIZE_T
)

// Host is what the provider needs from the libfabric core it runs under:
// our own standalone core (internal/core) when this library is
// libfabric.so.1, or an installed libfabric when it is loaded as a DL
// provider. Implementations must be safe for concurrent use.
type Host interface {
	// DefineParam registers the provider parameter FI_PSM2_<NAME> so that
	// fi_getparams (fi_info -e) lists it with its help text.
	DefineParam(name string, typ ParamType, help string)
	// Getenv reads an environment variable from the C environment, so that
	// a setenv() done by the application after load is seen.
	Getenv(name string) (string, bool)
	// LogEnabled reports whether a message at level/subsys would be printed.
	LogEnabled(level fi.LogLevel, subsys fi.LogSubsys) bool
	// Log prints one message (which ends in a newline) for the provider.
	Log(level fi.LogLevel, subsys fi.LogSubsys, fn string, line int, msg string)
}
