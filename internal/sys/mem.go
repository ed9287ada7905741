package sys

import "golang.org/x/sys/unix"

// PageSize is the size of a page of this machine.
func PageSize() int { return unix.Getpagesize() }

// MapAnon maps n bytes of zeroed, private, anonymous memory, outside the Go
// heap: memory C may keep pointers into, and that no collector moves.
func MapAnon(n int) ([]byte, error) {
	return unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
}

// Unmap unmaps memory MapAnon mapped.
func Unmap(b []byte) error { return unix.Munmap(b) }
