package provider

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// parseStats reads psm2-stats lines into group -> name -> value, checking
// their shape.
func parseStats(t *testing.T, b []byte, epid uint64) map[string]map[string]uint64 {
	t.Helper()
	out := map[string]map[string]uint64{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || f[0] != "psm2-stats" || f[1] != "pid="+strconv.Itoa(os.Getpid()) || f[2] != "ep="+"0x"+strconv.FormatUint(epid, 16) || !strings.HasPrefix(f[3], "group=") {
			t.Fatalf("bad line %q", l)
		}
		g := map[string]uint64{}
		for _, kv := range f[4:] {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.ParseUint(v, 10, 64)
			if !ok || err != nil {
				t.Fatalf("bad counter %q in %q", kv, l)
			}
			g[k] = n
		}
		out[strings.TrimPrefix(f[3], "group=")] = g
	}
	return out
}

// TestStats: with FI_PSM2_PRINT_STATS the endpoint's counters read as
// psm2-stats lines (shm's messages by protocol, rma, msg), and its file in
// the shm directory appears while it runs and goes when it closes.
func TestStats(t *testing.T) {
	p := New(newFakeHost(map[string]string{"FI_PSM2_PRINT_STATS": "1", "PSM2_DEVICES": "self,shm"}))
	pr := buildPair(t, p, fi.TAGGED, nil)
	for i := range 3 {
		if err := pr.send(pr.a, pr.bAddr, make([]byte, 100), uint64(i), 0, fi.TAGGED); err != nil {
			t.Fatal(err)
		}
		pr.recv(pr.b, make([]byte, 100), fi.AddrUnspec, uint64(i), 0, 0, fi.TAGGED)
	}
	for range 3 {
		if _, err := pr.read(pr.cqb); err != nil {
			t.Fatal(err)
		}
	}
	pr.dom.lock()
	b := pr.a.statsLocked()
	pr.dom.unlock()
	st := parseStats(t, b, pr.a.epid)
	if st["shm"]["sent"] != 3 || st["shm"]["inline"]+st["shm"]["eager"] != 3 {
		t.Fatalf("shm counters %v, want 3 sent", st["shm"])
	}
	if _, ok := st["rma"]["writes"]; !ok {
		t.Fatalf("no rma group: %s", b)
	}
	if _, ok := st["msg"]["held_back"]; !ok {
		t.Fatalf("no msg group: %s", b)
	}
	path := pr.a.statsFile()
	var file []byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if file, _ = os.ReadFile(path); len(file) > 0 {
			break
		}
	}
	if st := parseStats(t, file, pr.a.epid); st["shm"]["sent"] != 3 {
		t.Fatalf("the stats file %s says %v", path, st["shm"])
	}
	// Another endpoint's file goes when it closes.
	c, cq := openBoundEP(t, pr.dom, pr.av, &fi.Info{Caps: fi.TAGGED, EP: &fi.EPAttr{Type: fi.EP_RDM}})
	cpath := c.statsFile()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(cpath); err == nil {
			break
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	cq.Close()
	if _, err := os.Stat(cpath); !os.IsNotExist(err) {
		t.Fatalf("stats file left after close: %v", err)
	}
}
