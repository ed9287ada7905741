package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gopsm2/libfabric-psm2/shm"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Statistics (FI_PSM2_PRINT_STATS, or PSM2_PRINT_STATS as PSM2 spells
// it). An endpoint's counters are printed as lines a script can split on
// spaces and '=':
//
//	psm2-stats pid=PID ep=EPID group=GROUP name=value name=value ...
//
// one per group: shm and hfi (each wire's own: messages sent inline,
// eager or by rendezvous, packets, retransmissions, NAKs, duplicates,
// packets dropped by reason, ...; shm/endpoint.go and hfi/endpoint.go
// document every counter of their Stats), rma (this endpoint's writes,
// reads and atomics, requests served, refused), and msg (held_back:
// messages held back at the unexpected-message limits; unexpected:
// messages queued because no receive took them, which a message left in
// its ring for a receive the fast path queues is not). They go to stderr when the
// endpoint closes and, with N > 1, every N seconds. While statistics are
// on, each endpoint also keeps its latest lines (refreshed every N
// seconds, or every second with 1) in psm2-stats-PID-EPID in the user's
// shm directory, for scripts/psm2stats.sh to read while the process runs;
// the file goes when the endpoint closes.

// statsGroups appends the endpoint's own groups (not the wires'). The
// caller holds the domain lock.
func (ep *Endpoint) statsGroupsLocked(dst []transport.Counters) []transport.Counters {
	dst = append(dst, transport.CountersOf("rma", ep.rmaStatsLocked()))
	return append(dst, transport.Counters{Wire: "msg", Names: []string{"held_back", "unexpected"},
		Values: []uint64{ep.engine.refusals, ep.engine.Total()}})
}

// rmaStatsLocked is the endpoint's RMA counts, with the ops C posted and
// the requests it served. The caller holds the domain lock.
func (ep *Endpoint) rmaStatsLocked() RMAStats {
	rma := ep.engine.rma.stats
	c := ep.cCounts()
	rma.Served += c.served
	rma.Writes += c.writes
	rma.Reads += c.reads
	rma.Atomics += c.atomics
	rma.WriteBytes += c.writeBytes
	rma.ReadBytes += c.readBytes
	rma.AtomicBytes += c.atomicBytes
	return rma
}

// formatStats writes groups as psm2-stats lines of endpoint epid.
func formatStats(epid uint64, groups []transport.Counters) []byte {
	var b []byte
	for _, g := range groups {
		b = fmt.Appendf(b, "psm2-stats pid=%d ep=%#x group=%s", pid(), epid, g.Wire)
		for i, n := range g.Names {
			b = append(b, ' ')
			b = append(b, n...)
			b = append(b, '=')
			b = strconv.AppendUint(b, g.Values[i], 10)
		}
		b = append(b, '\n')
	}
	return b
}

// statsLocked is the endpoint's psm2-stats lines now. The caller holds
// the domain lock.
func (ep *Endpoint) statsLocked() []byte {
	var groups []transport.Counters
	if c, ok := ep.tp.(transport.Counted); ok {
		groups = c.Counters(groups)
	}
	return formatStats(ep.epid, ep.statsGroupsLocked(groups))
}

// statsFile is where the endpoint's latest lines are kept ("" if the shm
// directory cannot be used).
func (ep *Endpoint) statsFile() string {
	dir, err := shm.SegmentDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, fmt.Sprintf("psm2-stats-%d-%x", pid(), ep.epid))
}

// writeStatsFile replaces path with b (rename: a reader sees the old
// lines or the new ones).
func writeStatsFile(path string, b []byte) {
	if path == "" {
		return
	}
	tmp := path + ".tmp"
	if os.WriteFile(tmp, b, 0o600) == nil {
		_ = os.Rename(tmp, path)
	}
}

// startStats starts the endpoint's statistics goroutine when they are on:
// every period it refreshes the file and, with FI_PSM2_PRINT_STATS > 1,
// prints the lines.
func (ep *Endpoint) startStats() {
	n := ep.dom.params.PrintStats
	if n <= 0 {
		return
	}
	period := time.Second
	if n > 1 {
		period = time.Duration(n) * time.Second
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	ep.statsStop, ep.statsDone = stop, done
	path := ep.statsFile()
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			d := ep.dom
			d.lock()
			b := ep.statsLocked()
			d.unlock()
			writeStatsFile(path, b)
			if n > 1 {
				os.Stderr.Write(b)
			}
		}
	}()
}

// stopStats stops the goroutine and removes the file; the endpoint is
// closing (its wires still open).
func (ep *Endpoint) stopStats() {
	if ep.statsStop == nil {
		return
	}
	close(ep.statsStop)
	<-ep.statsDone
	ep.statsStop = nil
	if path := ep.statsFile(); path != "" {
		_ = os.Remove(path)
	}
}

// printFinalStats prints the lines of a closed endpoint: groups were
// taken under the lock at close, the wires' counters are read now that
// they are closed.
func (ep *Endpoint) printFinalStats(groups []transport.Counters) {
	var all []transport.Counters
	if c, ok := ep.tp.(transport.Counted); ok {
		all = c.Counters(all)
	}
	os.Stderr.Write(formatStats(ep.epid, append(all, groups...)))
}
