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
	if st["shm"]["sent"] != 3 || st["shm"]["inline"]+st["shm"]["eager"] != 3 ||
		st["shm"]["inline_bytes"]+st["shm"]["eager_bytes"] != 300 {
		t.Fatalf("shm counters %v, want 3 sent, 300 bytes", st["shm"])
	}
	var fetched uint64
	pr.dom.lock()
	fetched = parseStats(t, pr.b.statsLocked(), pr.b.epid)["shm"]["received"]
	pr.dom.unlock()
	if fetched != 3 {
		t.Fatalf("receiver's shm received %d, want 3", fetched)
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

// TestStatsBytes: messages and bytes by protocol on both wires: eager
// and rendezvous sends over hfi, inline or eager and rendezvous sends
// over shm (where the receiver counts the rendezvous bytes it fetched).
func TestStatsBytes(t *testing.T) {
	for _, c := range []struct {
		devices, wire string
		eager, rndv   []string // counters: messages, bytes
	}{
		{"self,hfi", "hfi", []string{"eager_msgs", "eager_bytes"}, []string{"rndv_msgs", "rndv_bytes"}},
		{"self,shm", "shm", []string{"eager", "eager_bytes"}, []string{"rndv", "rndv_bytes"}},
	} {
		t.Run(c.wire, func(t *testing.T) {
			p := New(newFakeHost(map[string]string{"FI_PSM2_PRINT_STATS": "1", "PSM2_DEVICES": c.devices}))
			pr := buildPair(t, p, fi.TAGGED, nil)
			small, big := make([]byte, 2000), make([]byte, 300<<10)
			for i, m := range [][]byte{small, small, big} {
				pr.recv(pr.b, make([]byte, len(m)), fi.AddrUnspec, uint64(i), 0, 0, fi.TAGGED)
				if err := pr.send(pr.a, pr.bAddr, m, uint64(i), 0, fi.TAGGED); err != nil {
					t.Fatal(err)
				}
			}
			for got := 0; got < 3; {
				if _, err := pr.read(pr.cqb); err == nil {
					got++
				}
			}
			for got := 0; got < 3; {
				if _, err := pr.read(pr.cqa); err == nil {
					got++
				}
			}
			pr.dom.lock()
			st := parseStats(t, pr.a.statsLocked(), pr.a.epid)[c.wire]
			rx := parseStats(t, pr.b.statsLocked(), pr.b.epid)[c.wire]
			pr.dom.unlock()
			small2 := st[c.eager[1]]
			if c.wire == "shm" {
				small2 += st["inline_bytes"]
			}
			if st[c.rndv[0]] != 1 || st[c.rndv[1]] != uint64(len(big)) || small2 != 2*uint64(len(small)) {
				t.Fatalf("%s sender counters %v: want 1 rendezvous of %d bytes and %d bytes eager", c.wire, st, len(big), 2*len(small))
			}
			if c.wire == "shm" && rx["fetched_bytes"] != uint64(len(big)) {
				t.Fatalf("shm receiver fetched %d bytes, want %d", rx["fetched_bytes"], len(big))
			}
		})
	}
}
