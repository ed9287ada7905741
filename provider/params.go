package provider

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/gopsm2/libfabric-psm2/hfi"
	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// Params holds the FI_PSM2_* runtime parameters of fi_psm2(7), parsed and
// validated once when the provider is created. A value that does not parse
// or is out of range is logged as a warning and replaced by the default.
type Params struct {
	NameServer   bool
	TaggedRMA    bool
	UUID         UUID
	Delay        int // seconds slept before an endpoint closes
	Timeout      int // seconds for a graceful endpoint close
	ConnTimeout  int // seconds to establish a connection
	ProgInterval int // microseconds between auto-progress passes; -1: derived
	ProgAffinity []int
	InjectSize   int
	LockLevel    int
	LockLevelSet bool // FI_PSM2_LOCK_LEVEL was given (else locking follows the threading model)
	LazyConn     bool
	// MultiEP is PSM2_MULTI_EP (default on): off, it is one of the
	// conditions of eager connection (fi_psm2(7), FI_PSM2_LAZY_CONN).
	MultiEP    bool
	Disconnect bool
	TagLayout  TagLayout
	Iface      string // FI_PSM2_IFACE: the interface (name, address or network) of the hfi wire and the name server
	// HFIUnit is HFI_UNIT: which interface the hfi wire uses when
	// FI_PSM2_IFACE is unset (hfi.UnitAddr); -1 (default): the default
	// route's.
	HFIUnit int
	// MultiRail is PSM2_MULTIRAIL: 0 (default) one interface; 1 or 2
	// also the other units (both: every unit; the units are the
	// interfaces), or those of PSM2_MULTIRAIL_MAP (RailMap) if set, as
	// further rails of the hfi wire (hfi.Config.Rails).
	MultiRail int
	RailMap   []int
	PortFirst uint16 // FI_PSM2_PORT_RANGE: UDP ports of endpoints (0: any)
	PortLast  uint16
	Paths     int // FI_PSM2_PATHS: paths per peer pair (dispersive routing)
	MTU       int // FI_PSM2_MTU: IP MTU of the network
	HFISpin   int // FI_PSM2_HFI_SPIN: microseconds the receive thread polls after a packet
	SreadSpin int // FI_PSM2_SREAD_SPIN: microseconds fi_cq_sread and fi_cntr_wait poll before they sleep
	YieldSpin int // FI_PSM2_YIELD_SPIN: microseconds of empty fi_cq_read answers before one yields the CPU (0: never)
	// FI_PSM2_AUTH: authenticate every packet of the hfi wire (default
	// off: docs/hfi.md, "Authentication", has the cost).
	Auth bool
	// Limits of what peers may make an endpoint keep (docs/hfi.md,
	// "Limits"): FI_PSM2_MAX_PEERS, FI_PSM2_PEERS_PER_HOST,
	// FI_PSM2_REASM_BYTES, FI_PSM2_OOO_BYTES, FI_PSM2_UNEXP_BYTES,
	// FI_PSM2_UNEXP_COUNT.
	MaxPeers, PeersPerHost int
	ReasmBytes, OOOBytes   int
	UnexpBytes, UnexpCount int
	// PrintStats is FI_PSM2_PRINT_STATS (or PSM2_PRINT_STATS): 0 off; 1
	// the counters of every endpoint at its close; N > 1 also every N
	// seconds (stats.go).
	PrintStats int
}

// Default limits (docs/hfi.md, "Limits"): with the wire's own, what
// peers can make an endpoint hold is at most 32 + 32 + 32 MiB
// (reassembly, packets past gaps, the receive buffers) + 128 MiB
// (unexpected messages) + 16 MiB (RMA requests staged, rmaStageMax) =
// 240 MiB.
const (
	DefaultUnexpBytes = 128 << 20
	DefaultUnexpCount = 1 << 18
)

// TagLayout selects how the 96-bit wire tag is split (fi_psm2(7)).
type TagLayout int

// The FI_PSM2_TAG_LAYOUT choices.
const (
	TagLayoutAuto  TagLayout = iota
	TagLayoutTag60           // 32-bit CQ data, 4 flag bits, 60-bit tag
	TagLayoutTag64           // 4 flag bits, 28-bit data, 64-bit tag
)

func (t TagLayout) String() string {
	return [...]string{"auto", "tag60", "tag64"}[t]
}

// MaxInjectSize bounds FI_PSM2_INJECT_SIZE: an inject is copied into one
// transport buffer before the call returns.
const MaxInjectSize = 65536

// paramDef describes one provider parameter: its name (without the
// FI_PSM2_ prefix, lower case as libfabric defines it), type and help.
type paramDef struct {
	name string
	typ  ParamType
	help string
}

// paramDefs lists the parameters in the order fi_info -e shows them.
var paramDefs = []paramDef{
	{"name_server", ParamBool, "Run the built-in name server that lets fi_getinfo(node, service) find a server endpoint (default: yes; no under Open MPI/MPICH/PMIx launchers)"},
	{"tagged_rma", ParamBool, "Carry large RMA transfers over the tagged message queue (default: yes)"},
	{"uuid", ParamString, "Job key: only endpoints with the same UUID can talk (default: 00FF00FF-0000-0000-0000-00FF00FF00FF, or derived from OMPI_MCA_orte_precondition_transports)"},
	{"delay", ParamInt, "Seconds to sleep before closing an endpoint, for debugging (default: 0)"},
	{"timeout", ParamInt, "Seconds allowed for a graceful endpoint close before it is forced (default: 5)"},
	{"conn_timeout", ParamInt, "Seconds allowed to establish a connection to a peer; pending operations to an unreachable peer fail after it (default: 5)"},
	{"prog_interval", ParamInt, "Microseconds between passes of the auto-progress thread (default: 1 if prog_affinity is set, else 1000)"},
	{"prog_affinity", ParamString, "CPU cores for the auto-progress thread: start[:end[:stride]][,...], negative ids count from the last core (default: not pinned)"},
	{"inject_size", ParamInt, fmt.Sprintf("Largest message fi_inject/fi_tinject accept, in bytes, 0 to %d (default: 64)", MaxInjectSize)},
	{"lock_level", ParamInt, "Internal locking: 2 all locks, 1 only those needed when each context has one thread, 0 none (default: 2; unset follows the threading model)"},
	{"lazy_conn", ParamBool, "Always connect to a peer on first use; when off, inserting an address into an FI_AV_MAP connects the bound endpoints at once if PSM2_MULTI_EP=0 (default: no)"},
	{"disconnect", ParamBool, "Tell connected peers when an endpoint closes so a restarted process can reuse its address (default: no)"},
	{"tag_layout", ParamString, "Split of the 96-bit wire tag: tag60 (32-bit CQ data), tag64 (64-bit tags, no CQ data) or auto (default: auto)"},
	{"iface", ParamString, "Network of the inter-node (hfi) wire: an interface name, an IPv4 address or a network (a.b.c.d/n); setting it also narrows the name server to 127.0.0.1 and there (default: the default route's interface, or 127.0.0.1; the name server then listens on every interface)"},
	{"port_range", ParamString, "UDP ports the hfi wire's endpoints bind, first-last (default: any port)"},
	{"paths", ParamInt, "Paths (source ports) per peer pair over which windows of large messages are spread, 1 to 8 (default: 1)"},
	{"mtu", ParamInt, "IP MTU of the network the hfi wire uses, 576 to 65535 (default: 1500)"},
	{"sread_spin", ParamInt, "Microseconds fi_cq_sread and fi_cntr_wait poll before they sleep in the kernel; 0: sleep at once (default: 100)"},
	{"yield_spin", ParamInt, "Microseconds of empty fi_cq_read answers before, while more threads are runnable than CPUs and the reader lost its CPU for over 1 ms in the last 100 ms, one sleeps until an arrival (up to 1 ms) or, where the AVs name more endpoints on this host than it has CPUs (the job crowds them), yields the CPU after at most 2, a wait doubled after each yield no other thread took (up to 64 times); 0: never, and no nap and no move off a CPU shared with the peer either (default: 20)"},
	{"hfi_spin", ParamInt, "Microseconds after the last packet during which the application's polls read the network themselves, before the hfi receive thread takes it back and sleeps in the kernel; 0: always the thread (default: 5000)"},
	{"auth", ParamBool, "Authenticate every packet of the inter-node wire (AES-GMAC, a key derived from the job key): on a network where others can see the job's packets, give the job a secret key and set this (default: no; it costs a third of the bandwidth of large messages)"},
	{"max_peers", ParamInt, fmt.Sprintf("Most peers an endpoint is connected with over the network, 1 to %d; dead ones make room (default: %d)", hfi.MaxPeers, hfi.MaxPeers)},
	{"peers_per_host", ParamInt, fmt.Sprintf("Most peers of one network address an endpoint is connected with (default: %d)", hfi.DefaultPeersPerHost)},
	{"reasm_bytes", ParamInt, fmt.Sprintf("Bytes of eager messages an endpoint reassembles from the network at once; past it senders wait (default: %d)", hfi.DefaultReasmBytes)},
	{"ooo_bytes", ParamInt, fmt.Sprintf("Bytes of packets an endpoint keeps past gaps in the network's order; past it they are sent again (default: %d)", hfi.DefaultOOOBytes)},
	{"unexp_bytes", ParamInt, fmt.Sprintf("Bytes of unexpected messages an endpoint keeps for receives not yet posted; past it network senders wait (default: %d)", DefaultUnexpBytes)},
	{"unexp_count", ParamInt, fmt.Sprintf("Unexpected messages an endpoint keeps; past it network senders wait (default: %d)", DefaultUnexpCount)},
	{"print_stats", ParamInt, "Print every endpoint's counters (messages and bytes by protocol, packets, retransmissions, NAKs, duplicates, drops by reason, RMA) on stderr when it closes, with N > 1 also every N seconds, one psm2-stats line per group; while on, the latest are also in psm2-stats-PID files of the user's shm directory, which scripts/psm2stats.sh reads (default: 0, off; PSM2_PRINT_STATS is read when unset)"},
}

// defineParams registers every parameter with the host.
func defineParams(h Host) {
	for _, d := range paramDefs {
		h.DefineParam(d.name, d.typ, d.help)
	}
}

// envName is the environment variable behind a parameter.
func envName(name string) string { return "FI_PSM2_" + strings.ToUpper(name) }

// ParamNames is the environment name of every provider parameter, in
// fi_info -e's order (the manual page is checked against it).
func ParamNames() []string {
	out := make([]string, len(paramDefs))
	for i, d := range paramDefs {
		out[i] = envName(d.name)
	}
	return out
}

// loadParams reads and validates every parameter. Bad values are warned
// about and replaced by the default; loadParams never fails.
func loadParams(h Host, log logger) Params {
	p := Params{
		NameServer:   true,
		TaggedRMA:    true,
		UUID:         DefaultUUID,
		Timeout:      5,
		ConnTimeout:  5,
		ProgInterval: -1,
		InjectSize:   64,
		LockLevel:    2,
		MultiEP:      true,
		Paths:        1,
		MTU:          1500,
		HFISpin:      5000,
		SreadSpin:    100,
		YieldSpin:    20,
		MaxPeers:     hfi.MaxPeers,
		PeersPerHost: hfi.DefaultPeersPerHost,
		ReasmBytes:   hfi.DefaultReasmBytes,
		OOOBytes:     hfi.DefaultOOOBytes,
		UnexpBytes:   DefaultUnexpBytes,
		UnexpCount:   DefaultUnexpCount,
	}
	p.HFIUnit = -1
	if v, ok := h.Getenv("HFI_UNIT"); ok {
		if u, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && u >= -1 && u < 256 {
			p.HFIUnit = u
		} else {
			log.Warnf(fi.LOG_CORE, "HFI_UNIT=%q is not a unit number (0..255, or -1 for any); using any", v)
		}
	}
	if v, ok := h.Getenv("PSM2_MULTIRAIL"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 && n <= 2 {
			p.MultiRail = n
		} else {
			log.Warnf(fi.LOG_CORE, "PSM2_MULTIRAIL=%q is not 0, 1 or 2; using 0 (one rail)", v)
		}
	}
	if v, ok := h.Getenv("PSM2_MULTIRAIL_MAP"); ok && p.MultiRail > 0 {
		if units, err := hfi.ParseRailMap(v); err == nil {
			p.RailMap = units
		} else {
			log.Warnf(fi.LOG_CORE, "%v; using every unit", err)
		}
	}
	if v, ok := h.Getenv("PSM2_MULTI_EP"); ok {
		if b, ok := ParseBool(v); ok {
			p.MultiEP = b
		}
	}
	for _, launcher := range []string{"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"} {
		if _, ok := h.Getenv(launcher); ok {
			p.NameServer = false
		}
	}
	if key, ok := h.Getenv("OMPI_MCA_orte_precondition_transports"); ok {
		if u, err := uuidFromOMPIKey(key); err == nil {
			p.UUID = u
		} else {
			log.Infof(fi.LOG_CORE, "ignoring Open MPI job key %q: %v", key, err)
		}
	}

	r := paramReader{h: h, log: log}
	r.boolean("name_server", &p.NameServer)
	r.boolean("tagged_rma", &p.TaggedRMA)
	if s, ok := r.str("uuid"); ok {
		if u, err := ParseUUID(s); err == nil {
			p.UUID = u
		} else {
			r.bad("uuid", s, err)
		}
	}
	r.integer("delay", &p.Delay, 0, 3600)
	r.integer("timeout", &p.Timeout, 0, 3600)
	r.integer("conn_timeout", &p.ConnTimeout, 1, 3600)
	r.integer("prog_interval", &p.ProgInterval, -1, 60_000_000)
	if s, ok := r.str("prog_affinity"); ok {
		if cpus, err := ParseAffinity(s, numCPU()); err == nil {
			p.ProgAffinity = cpus
		} else {
			r.bad("prog_affinity", s, err)
		}
	}
	r.integer("inject_size", &p.InjectSize, 0, MaxInjectSize)
	if r.integer("lock_level", &p.LockLevel, 0, 2) {
		p.LockLevelSet = true
	}
	if s, ok := r.str("iface"); ok {
		p.Iface = s
	}
	if s, ok := r.str("port_range"); ok {
		if a, b, err := hfi.ParsePortRange(s); err == nil {
			p.PortFirst, p.PortLast = a, b
		} else {
			r.bad("port_range", s, err)
		}
	}
	r.integer("paths", &p.Paths, 1, 8)
	r.integer("mtu", &p.MTU, 576, 65535)
	r.integer("hfi_spin", &p.HFISpin, 0, 10_000_000)
	r.integer("sread_spin", &p.SreadSpin, 0, 10_000_000)
	r.integer("yield_spin", &p.YieldSpin, 0, 10_000_000)
	r.boolean("auth", &p.Auth)
	r.integer("max_peers", &p.MaxPeers, 1, hfi.MaxPeers)
	r.integer("peers_per_host", &p.PeersPerHost, 1, hfi.MaxPeers)
	r.integer("reasm_bytes", &p.ReasmBytes, 256<<10, 1<<40)
	r.integer("ooo_bytes", &p.OOOBytes, 64<<10, 1<<40)
	r.integer("unexp_bytes", &p.UnexpBytes, 64<<10, 1<<40)
	r.integer("unexp_count", &p.UnexpCount, 16, 1<<30)
	if v, ok := h.Getenv("PSM2_PRINT_STATS"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
			p.PrintStats = n
		}
	}
	r.integer("print_stats", &p.PrintStats, 0, 86400)
	r.boolean("lazy_conn", &p.LazyConn)
	r.boolean("disconnect", &p.Disconnect)
	if s, ok := r.str("tag_layout"); ok {
		switch strings.ToLower(s) {
		case "auto":
			p.TagLayout = TagLayoutAuto
		case "tag60":
			p.TagLayout = TagLayoutTag60
		case "tag64":
			p.TagLayout = TagLayoutTag64
		default:
			r.bad("tag_layout", s, fmt.Errorf("want auto, tag60 or tag64"))
		}
	}
	if p.ProgInterval < 0 {
		p.ProgInterval = 1000
		if len(p.ProgAffinity) > 0 {
			p.ProgInterval = 1
		}
	}
	return p
}

type paramReader struct {
	h   Host
	log logger
}

func (r paramReader) str(name string) (string, bool) {
	return r.h.Getenv(envName(name))
}

func (r paramReader) bad(name, value string, why error) {
	r.log.Warnf(fi.LOG_CORE, "invalid %s=%q (%v), using the default", envName(name), value, why)
}

// boolean parses libfabric's boolean spellings. It reports whether the
// variable was set to a valid value.
func (r paramReader) boolean(name string, dst *bool) bool {
	s, ok := r.str(name)
	if !ok {
		return false
	}
	if v, ok := ParseBool(s); ok {
		*dst = v
		return true
	}
	r.bad(name, s, fmt.Errorf("want 0/1, yes/no, true/false or on/off"))
	return false
}

// integer parses a C-style integer (decimal, 0x hex, 0 octal) in [lo, hi].
// It reports whether the variable was set to a valid value.
func (r paramReader) integer(name string, dst *int, lo, hi int) bool {
	s, ok := r.str(name)
	if !ok {
		return false
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
	if err != nil {
		r.bad(name, s, fmt.Errorf("not an integer"))
		return false
	}
	if v < int64(lo) || v > int64(hi) {
		r.bad(name, s, fmt.Errorf("out of range [%d, %d]", lo, hi))
		return false
	}
	*dst = int(v)
	return true
}

// ParseBool accepts the spellings libfabric's fi_param_get accepts.
func ParseBool(s string) (value, ok bool) {
	switch strings.ToLower(s) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

// ParseAffinity expands the fi_psm2(7) core list syntax
// "start[:end[:stride]][,...]" into CPU ids. Negative ids count back from
// ncpu (-1 is the last core). Every id must name an existing core.
func ParseAffinity(s string, ncpu int) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty core list")
	}
	var cpus []int
	for _, block := range strings.Split(s, ",") {
		parts := strings.Split(strings.TrimSpace(block), ":")
		if len(parts) > 3 {
			return nil, fmt.Errorf("block %q has more than three fields", block)
		}
		var v [3]int
		for i, f := range parts {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return nil, fmt.Errorf("block %q: %q is not an integer", block, f)
			}
			v[i] = n
		}
		start, end, stride := v[0], v[0], 1
		if len(parts) > 1 {
			end = v[1]
		}
		if len(parts) > 2 {
			stride = v[2]
		}
		if start < 0 {
			start += ncpu
		}
		if end < 0 {
			end += ncpu
		}
		if stride <= 0 {
			return nil, fmt.Errorf("block %q: stride must be positive", block)
		}
		if start < 0 || start >= ncpu || end < 0 || end >= ncpu {
			return nil, fmt.Errorf("block %q: cores must be in [%d, %d]", block, -ncpu, ncpu-1)
		}
		if end < start {
			return nil, fmt.Errorf("block %q: end before start", block)
		}
		for c := start; c <= end; c += stride {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// UUID is a 16-byte job key (psm2_uuid_t).
type UUID [16]byte

// DefaultUUID is the job key used when nothing else sets one. The provider
// code (not its man page, which differs) defines this value.
var DefaultUUID = UUID{0x00, 0xFF, 0x00, 0xFF, 0, 0, 0, 0, 0, 0, 0x00, 0xFF, 0x00, 0xFF, 0x00, 0xFF}

// ParseUUID reads the canonical 8-4-4-4-12 hex form, either case.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	if len(s) != 36 {
		return u, fmt.Errorf("want the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
	}
	n := 0 // hex digits read
	for i := 0; i < len(s); i++ {
		dash := i == 8 || i == 13 || i == 18 || i == 23
		if dash != (s[i] == '-') {
			return u, fmt.Errorf("want the form xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx")
		}
		if dash {
			continue
		}
		v, ok := hexDigit(s[i])
		if !ok {
			return u, fmt.Errorf("%q is not a hex digit", s[i])
		}
		u[n/2] |= v << (4 * (1 - n%2))
		n++
	}
	return u, nil
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// String prints the canonical upper-case form.
func (u UUID) String() string {
	return fmt.Sprintf("%02X%02X%02X%02X-%02X%02X-%02X%02X-%02X%02X-%02X%02X%02X%02X%02X%02X",
		u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15])
}

// uuidFromOMPIKey turns Open MPI's "%016llx-%016llx" job key into a UUID:
// the two numbers are stored as little-endian 64-bit words.
func uuidFromOMPIKey(key string) (UUID, error) {
	var u UUID
	a, b, ok := strings.Cut(key, "-")
	if !ok {
		return u, fmt.Errorf("want two hex numbers joined by '-'")
	}
	x, err1 := strconv.ParseUint(a, 16, 64)
	y, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return u, fmt.Errorf("want two hex numbers joined by '-'")
	}
	binary.LittleEndian.PutUint64(u[0:8], x)
	binary.LittleEndian.PutUint64(u[8:16], y)
	return u, nil
}

// NameServerPort is the TCP port of the name server for a job key: the sum
// of the key's eight little-endian 16-bit words modulo 2^16, moved above
// the reserved range when it falls below 4096.
func (u UUID) NameServerPort() uint16 {
	var sum uint32
	for i := 0; i < 16; i += 2 {
		sum += uint32(binary.LittleEndian.Uint16(u[i:]))
	}
	port := uint16(sum)
	if port < 4096 {
		port += 4096
	}
	return port
}
