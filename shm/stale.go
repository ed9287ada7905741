//go:build linux

package shm

import (
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// namePrefix starts the name of every endpoint segment.
const namePrefix = "psm2go"

// staleGrace is how old a segment with an invalid header must be before
// ReclaimStale removes it: younger, its creator may still be inside
// CreateSegment.
const staleGrace = 10 * time.Second

// SegmentName returns the name of the segment of endpoint epid of job:
// "psm2go.<uid>.<job as 32 hex digits>.<epid as 16 hex digits>". The uid
// keeps users apart (and lets ReclaimStale judge only its own user's
// segments); the job keeps jobs apart, so an endpoint can only ever find
// the segments of its own job.
func SegmentName(job [16]byte, epid uint64) string {
	return fmt.Sprintf("%s.%d.%032x.%016x", namePrefix, os.Getuid(), job[:], epid)
}

// ReclaimStale removes the endpoint segments of this user, of any job,
// whose owner process is dead: those left behind by a process that was
// killed or crashed before closing its endpoints. A segment whose header
// is not valid is removed only once it is older than a grace period, so a
// creator still formatting it is left alone. It returns how many it
// removed; an error is returned only if the directory cannot be read, and
// then nothing was removed.
//
// NewEndpoint calls it, so a new endpoint on the node cleans up after dead
// ones.
func ReclaimStale() (int, error) {
	prefix := fmt.Sprintf("%s.%d.", namePrefix, os.Getuid())
	dir, err := SegmentDir()
	if err != nil {
		return 0, fmt.Errorf("reclaim stale segments: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("reclaim stale segments: %w", err)
	}
	removed := 0
	for _, ent := range entries {
		name := ent.Name()
		if !strings.HasPrefix(name, prefix) || !ent.Type().IsRegular() {
			continue
		}
		if staleSegment(name) {
			if ok, _ := Reclaim(name); ok {
				removed++
			}
		}
	}
	return removed, nil
}

// staleSegment reports whether Dir/name looks stale: a valid header whose
// owner is dead, or an invalid header older than staleGrace. Reclaim
// checks the header again before removing anything.
func staleSegment(name string) bool {
	path, err := segPath(name)
	if err != nil {
		return false
	}
	fd, err := openObject(path, unix.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer closeObject(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Uid != uint32(os.Getuid()) {
		return false
	}
	var buf [segHeaderSize]byte
	n, err := readObject(fd, buf[:])
	if err != nil {
		return false
	}
	h, ok := decodeSegHeader(buf[:n])
	if ok && h.check(st.Size) == nil {
		alive, err := h.ownerAlive()
		return err == nil && !alive
	}
	changed := time.Unix(st.Ctim.Unix())
	return time.Since(changed) > staleGrace
}

// EndpointOpen reports whether the endpoint of job with id epid is open on
// this host, as far as its segment tells: the segment exists, is not
// marked closed, and the process that made it still runs (not a pid
// reused since: ownerAlive). Any doubt about the owner answers true.
func EndpointOpen(job [16]byte, epid uint64) bool {
	seg, err := Open(SegmentName(job, epid))
	if err != nil {
		return false
	}
	defer seg.Close()
	if seg.Closed() {
		return false
	}
	alive, err := segHeader{pid: uint64(seg.pid), start: seg.start}.ownerAlive()
	return err != nil || alive
}
