package hfi

import (
	"encoding/binary"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Endpoint ids must not repeat soon on a host: an id names the endpoint's
// shared-memory segment, and a peer that still holds state for a dead
// endpoint would take a new one with the same id for it. The kernel hands
// out a random free port, which a restarted process gets again all too
// often (200 restarts over 28k ports collide more often than not). So
// ports are taken in turn from the range, through a cursor file that all
// endpoints of the user on the host share (in the shm segment directory):
// an id comes back only after the whole range was used.

// portCursor returns the port to try first and advances the cursor by
// block (at least one), in [first, last]; ok false if the cursor file
// cannot be used. A block that would pass last starts again at first, so
// the ports p .. p+block-1 it reserves all lie in the range.
func portCursor(path string, first, last uint16, block int) (uint16, bool) {
	if path == "" {
		return 0, false
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	if unix.Flock(fd, unix.LOCK_EX) != nil {
		return 0, false
	}
	defer unix.Flock(fd, unix.LOCK_UN)
	var b [2]byte
	n, _ := unix.Pread(fd, b[:], 0)
	p := binary.LittleEndian.Uint16(b[:])
	if n != 2 || p < first || p > last {
		p = first + uint16(os.Getpid()%int(last-first+1))
	}
	block = max(block, 1)
	if int(p)+block-1 > int(last) {
		p = first
	}
	next := int(p) + block
	if next > int(last) {
		next = int(first)
	}
	binary.LittleEndian.PutUint16(b[:], uint16(next))
	if _, err := unix.Pwrite(fd, b[:], 0); err != nil {
		return 0, false
	}
	return p, true
}

// localPortRange is the kernel's ephemeral port range.
func localPortRange() (uint16, uint16) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		var a, z uint16
		if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &a, &z); err == nil && a > 0 && z >= a {
			return a, z
		}
	}
	return 32768, 60999
}
