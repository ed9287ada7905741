//go:build linux

package shm

import (
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// stallGrace is how long the ring must stay stalled at one position
// before the producer slots are read: far above the nanoseconds a live
// producer spends between reserving a cell and publishing it, so a
// healthy ring never pays for the /proc reads. It is also the interval
// between two looks while the stall lasts.
const stallGrace = int64(time.Millisecond)

// watchStall runs when Poll finds the ring's next cell unpublished. If
// the producer counter says that cell is reserved, and it stays so for
// stallGrace, the slots tell whether its producer is gone; if so the cell
// is skipped (Ring.SkipDead) and the peers living in the dead process are
// killed, so their operations fail instead of waiting. It returns the
// handler calls made (none: reaping happens in check). An empty ring
// costs one more load.
func (e *Endpoint) watchStall() int {
	pos, stuck := e.ring.Stalled()
	if !stuck {
		e.stallSince = 0
		return 0
	}
	now := e.now()
	if e.stallSince == 0 || pos != e.stallPos {
		e.stallPos, e.stallSince, e.stallNext = pos, now, now+stallGrace
		return 0
	}
	if now < e.stallNext {
		return 0
	}
	e.stallNext = now + stallGrace
	owners, ok := e.ring.SkipDead(pos, e.stallOwners)
	e.stallOwners = owners
	if !ok {
		return 0
	}
	e.stats.Repaired++
	e.stallSince = 0
	for _, id := range owners {
		for _, p := range e.peers {
			if p.pid == id.PID && !p.self {
				e.kill(p, transport.ErrPeerDead, "died in the middle of a push")
			}
		}
	}
	return 0
}
