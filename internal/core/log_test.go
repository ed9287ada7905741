package core

import (
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

const allSubsys = 1<<fi.LOG_SUBSYS_MAX - 1 // 0x3ff

func TestLogMasks(t *testing.T) {
	tests := []struct {
		name       string
		env        map[string]string
		levels     uint32
		subsystems uint32
	}{
		{"unset", nil, 0, allSubsys},
		{"warn", map[string]string{"FI_LOG_LEVEL": "warn"}, 0b1, allSubsys},
		{"trace", map[string]string{"FI_LOG_LEVEL": "trace"}, 0b11, allSubsys},
		{"info", map[string]string{"FI_LOG_LEVEL": "info"}, 0b111, allSubsys},
		{"debug", map[string]string{"FI_LOG_LEVEL": "debug"}, 0b1111, allSubsys},
		{"case-insensitive", map[string]string{"FI_LOG_LEVEL": "DeBuG"}, 0b1111, allSubsys},
		{"bogus means warn", map[string]string{"FI_LOG_LEVEL": "bogus"}, 0b1, allSubsys},
		{"empty means warn", map[string]string{"FI_LOG_LEVEL": ""}, 0b1, allSubsys},
		{"a number is not a level", map[string]string{"FI_LOG_LEVEL": "3"}, 0b1, allSubsys},
		{"subsys list", map[string]string{"FI_LOG_SUBSYS": "core,cq"}, 0, 1<<fi.LOG_CORE | 1<<fi.LOG_CQ},
		{"subsys case-insensitive", map[string]string{"FI_LOG_SUBSYS": "EP_DATA"}, 0, 1 << fi.LOG_EP_DATA},
		{"subsys exclusion", map[string]string{"FI_LOG_SUBSYS": "^core,mr"}, 0, allSubsys &^ (1<<fi.LOG_CORE | 1<<fi.LOG_MR)},
		{"subsys unknown name", map[string]string{"FI_LOG_SUBSYS": "bogus"}, 0, 0},
		{"subsys every name", map[string]string{"FI_LOG_SUBSYS": "core,fabric,domain,ep_ctrl,ep_data,av,cq,eq,mr,cntr"}, 0, allSubsys},
		{"subsys ^ alone excludes nothing", map[string]string{"FI_LOG_SUBSYS": "^"}, 0, allSubsys},
		{"level and subsys", map[string]string{"FI_LOG_LEVEL": "info", "FI_LOG_SUBSYS": "fabric"}, 0b111, 1 << fi.LOG_FABRIC},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			levels, subsys := newCore(tt.env).LogMasks()
			if levels != tt.levels || subsys != tt.subsystems {
				t.Errorf("LogMasks = %#b, %#x; want %#b, %#x", levels, subsys, tt.levels, tt.subsystems)
			}
		})
	}
}

func TestLogEnabled(t *testing.T) {
	type q struct {
		prov   string
		level  fi.LogLevel
		subsys fi.LogSubsys
		want   bool
	}
	tests := []struct {
		name    string
		env     map[string]string
		queries []q
	}{
		{"logging off", nil, []q{
			{"psm2", fi.LOG_WARN, fi.LOG_CORE, false},
		}},
		{"info", map[string]string{"FI_LOG_LEVEL": "info"}, []q{
			{"psm2", fi.LOG_WARN, fi.LOG_CORE, true},
			{"psm2", fi.LOG_TRACE, fi.LOG_CQ, true},
			{"psm2", fi.LOG_INFO, fi.LOG_CNTR, true},
			{"psm2", fi.LOG_DEBUG, fi.LOG_CORE, false},
			{"psm2", fi.LOG_MAX, fi.LOG_CORE, false},
			{"psm2", -1, fi.LOG_CORE, false},
			{"psm2", fi.LOG_WARN, fi.LOG_SUBSYS_MAX, false},
			{"psm2", fi.LOG_WARN, -1, false},
		}},
		{"FI_LOG_PROV keeps one provider", map[string]string{"FI_LOG_LEVEL": "warn", "FI_LOG_PROV": "psm2"}, []q{
			{"psm2", fi.LOG_WARN, fi.LOG_CORE, true},
			{"PSM2", fi.LOG_WARN, fi.LOG_CORE, true},
			{"tcp", fi.LOG_WARN, fi.LOG_CORE, false},
		}},
		{"FI_LOG_PROV list", map[string]string{"FI_LOG_LEVEL": "warn", "FI_LOG_PROV": "tcp,psm2"}, []q{
			{"psm2", fi.LOG_WARN, fi.LOG_CORE, true},
			{"tcp", fi.LOG_WARN, fi.LOG_CORE, true},
			{"udp", fi.LOG_WARN, fi.LOG_CORE, false},
		}},
		{"FI_LOG_PROV exclusion", map[string]string{"FI_LOG_LEVEL": "warn", "FI_LOG_PROV": "^psm2"}, []q{
			{"psm2", fi.LOG_WARN, fi.LOG_CORE, false},
			{"tcp", fi.LOG_WARN, fi.LOG_CORE, true},
		}},
		{"FI_LOG_SUBSYS", map[string]string{"FI_LOG_LEVEL": "debug", "FI_LOG_SUBSYS": "av"}, []q{
			{"psm2", fi.LOG_DEBUG, fi.LOG_AV, true},
			{"psm2", fi.LOG_WARN, fi.LOG_CORE, false},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCore(tt.env)
			for _, q := range tt.queries {
				if got := c.LogEnabled(q.prov, q.level, q.subsys); got != q.want {
					t.Errorf("LogEnabled(%q, %d, %d) = %v, want %v", q.prov, q.level, q.subsys, got, q.want)
				}
			}
		})
	}
}

func TestProvLogFiltered(t *testing.T) {
	tests := []struct {
		logProv string
		set     bool
		prov    string
		want    bool
	}{
		{"", false, "psm2", false},
		{"psm2", true, "psm2", false},
		{"psm2", true, "tcp", true},
		{"^psm2", true, "psm2", true},
		{"^psm2", true, "tcp", false},
		{"Psm2", true, "psm2", false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q/%s", tt.logProv, tt.prov), func(t *testing.T) {
			env := map[string]string{}
			if tt.set {
				env["FI_LOG_PROV"] = tt.logProv
			}
			if got := newCore(env).ProvLogFiltered(tt.prov); got != tt.want {
				t.Errorf("ProvLogFiltered = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFormatLog(t *testing.T) {
	re := regexp.MustCompile(`(?s)^libfabric:(\d+):(\d+)::([^:]*):([a-z_A-Z]+):([^:]*)\(\):(-?\d+)<([a-zA-Z]+)> (.*)$`)
	tests := []struct {
		prov   string
		level  fi.LogLevel
		subsys fi.LogSubsys
		fn     string
		line   int
		msg    string
		want   []string // prov, subsys, fn, line, level, msg
	}{
		{"psm2", fi.LOG_WARN, fi.LOG_CORE, "psmx2_getinfo", 42, "hello\n",
			[]string{"psm2", "core", "psmx2_getinfo", "42", "warn", "hello\n"}},
		{"core", fi.LOG_INFO, fi.LOG_FABRIC, "fi_getinfo", 0, "x",
			[]string{"core", "fabric", "fi_getinfo", "0", "info", "x"}},
		{"psm2", fi.LOG_TRACE, fi.LOG_EP_CTRL, "f", 1, "m\n", []string{"psm2", "ep_ctrl", "f", "1", "trace", "m\n"}},
		{"psm2", fi.LOG_DEBUG, fi.LOG_CNTR, "f", 1, "m\n", []string{"psm2", "cntr", "f", "1", "debug", "m\n"}},
		{"psm2", fi.LOG_MAX, fi.LOG_SUBSYS_MAX, "f", 7, "m\n", []string{"psm2", "Unknown", "f", "7", "Unknown", "m\n"}},
		{"psm2", -1, -1, "f", 7, "m\n", []string{"psm2", "Unknown", "f", "7", "Unknown", "m\n"}},
	}
	c := newCore(nil)
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%d", tt.level, tt.subsys), func(t *testing.T) {
			before := time.Now().Unix()
			s := c.FormatLog(tt.prov, tt.level, tt.subsys, tt.fn, tt.line, tt.msg)
			after := time.Now().Unix()
			m := re.FindStringSubmatch(s)
			if m == nil {
				t.Fatalf("FormatLog = %q, not in libfabric's layout", s)
			}
			if pid, _ := strconv.Atoi(m[1]); pid != os.Getpid() {
				t.Errorf("pid %s, want %d", m[1], os.Getpid())
			}
			if ts, _ := strconv.ParseInt(m[2], 10, 64); ts < before || ts > after {
				t.Errorf("time %s not in [%d, %d]", m[2], before, after)
			}
			if got := m[3:]; fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("fields %q, want %q", got, tt.want)
			}
			// The exact text for this pid and second.
			want := fmt.Sprintf("libfabric:%d:%s::%s:%s:%s():%d<%s> %s", os.Getpid(), m[2], tt.want[0], tt.want[1], tt.fn, tt.line, tt.want[4], tt.msg)
			if s != want {
				t.Errorf("FormatLog = %q, want %q", s, want)
			}
		})
	}
}

func TestLogInterval(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want time.Duration
	}{
		{nil, 2 * time.Second},
		{map[string]string{"FI_LOG_INTERVAL": "500"}, 500 * time.Millisecond},
		{map[string]string{"FI_LOG_INTERVAL": "0"}, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.env), func(t *testing.T) {
			if got := newCore(tt.env).LogInterval(); got != tt.want {
				t.Errorf("LogInterval = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEmptyFilterVariables: libfabric tells an unset variable from an
// empty one. fi_param_get_str returns "" for FI_X= and ofi_create_filter("")
// builds the one-name list [""], which matches no provider or subsystem:
// a non-negated list that matches nothing excludes everything
// (ofi_apply_filter, src/fabric.c:248). So FI_LOG_SUBSYS= turns every
// subsystem off and FI_LOG_PROV= silences every provider that registered.
func TestEmptyFilterVariables(t *testing.T) {
	t.Run("FI_LOG_SUBSYS=", func(t *testing.T) {
		c := newCore(map[string]string{"FI_LOG_LEVEL": "warn", "FI_LOG_SUBSYS": ""})
		if _, subsys := c.LogMasks(); subsys != 0 {
			t.Errorf("subsystem mask %#x, want 0 (libfabric: the filter [\"\"] excludes every subsystem)", subsys)
		}
	})
	t.Run("FI_LOG_PROV=", func(t *testing.T) {
		c := newCore(map[string]string{"FI_LOG_LEVEL": "warn", "FI_LOG_PROV": ""})
		if !c.ProvLogFiltered("psm2") {
			t.Errorf("psm2 not filtered, want filtered (libfabric: the filter [\"\"] excludes every provider)")
		}
	})
}

// TestCoreMessagesIgnoreLogProv: libfabric's core logs through core_prov,
// which is never registered, so FI_LOG_PROV (applied at registration,
// ofi_register_provider) never sets its disable_logging: the core's own
// messages ("fi_getinfo: provider psm2 returned -61 ...") print whatever
// FI_LOG_PROV says.
func TestCoreMessagesIgnoreLogProv(t *testing.T) {
	for _, v := range []string{"psm2", "^core"} {
		c := newCore(map[string]string{"FI_LOG_LEVEL": "warn", "FI_LOG_PROV": v})
		if !c.LogEnabled("core", fi.LOG_WARN, fi.LOG_CORE) {
			t.Errorf("FI_LOG_PROV=%s: core messages disabled, want enabled", v)
		}
	}
}
