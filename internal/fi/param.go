package fi

// ParamType is enum fi_param_type.
type ParamType int32

// The fi_param_type values.
const (
	PARAM_STRING ParamType = iota
	PARAM_INT
	PARAM_BOOL
	PARAM_SIZE_T
)

// LogLevelNames and LogSubsysNames are the spellings libfabric uses in
// FI_LOG_LEVEL / FI_LOG_SUBSYS and in log lines.
var (
	LogLevelNames  = [...]string{"warn", "trace", "info", "debug"}
	LogSubsysNames = [...]string{"core", "fabric", "domain", "ep_ctrl", "ep_data", "av", "cq", "eq", "mr", "cntr"}
)
