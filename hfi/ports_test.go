package hfi

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPortCursor: ports are taken in turn through the cursor file; a
// block reserves the ports after the one given (a scalable endpoint's
// contexts), the cursor wraps to the start of the range, and binding one
// explicit port leaves the cursor alone (it once reset the cursor to that
// port, so that the next endpoint of another process took the port a
// scalable endpoint's next context needed).
func TestPortCursor(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ports")
	seed := func(p uint16) {
		if err := os.WriteFile(path, []byte{byte(p), byte(p >> 8)}, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Blocks are taken in turn; one that would pass the end of the range
	// starts at its beginning, so every port of a block lies in it.
	for _, c := range []struct {
		seed   uint16
		blocks []int
		want   []uint16
	}{
		{40000, []int{4, 1, 0}, []uint16{40000, 40004, 40005}},
		{40008, []int{1, 4, 1}, []uint16{40008, 40000, 40004}},
		{40006, []int{4, 4}, []uint16{40006, 40000}},
		{40009, []int{1, 1}, []uint16{40009, 40000}},
	} {
		seed(c.seed)
		for i, b := range c.blocks {
			p, ok := portCursor(path, 40000, 40009, b)
			if !ok || p != c.want[i] || int(p)+max(b, 1)-1 > 40009 {
				t.Fatalf("from %d, block %d (#%d): port %d ok %v, want %d", c.seed, b, i, p, ok, c.want[i])
			}
		}
	}
	// No cursor yet: a start in the range.
	os.Remove(path)
	if p, ok := portCursor(path, 40000, 40009, 1); !ok || p < 40000 || p > 40009 {
		t.Fatalf("fresh cursor: port %d ok %v", p, ok)
	}
	// Past the end of the range: back to its start.
	for range 10 {
		if p, _ := portCursor(path, 40000, 40009, 3); p < 40000 || p > 40009 {
			t.Fatalf("port %d outside the range", p)
		}
	}

	// One explicit port: bound, the cursor untouched.
	before, _ := portCursor(path, 30000, 60000, 1)
	fd, err := bindPort0([4]byte{127, 0, 0, 1}, 0, 0, path, 1) // any port, through the cursor
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	sa := before + 2 // the cursor's next
	fd, err = bindPort0([4]byte{127, 0, 0, 1}, 50123, 50123, path, 1)
	if err == nil {
		defer unix.Close(fd)
		got, _ := unix.Getsockname(fd)
		if port := got.(*unix.SockaddrInet4).Port; port != 50123 {
			t.Fatalf("explicit port: bound %d", port)
		}
	}
	if after, _ := portCursor(path, 30000, 60000, 1); after != sa {
		t.Fatalf("after binding one explicit port the cursor gives %d, want %d", after, sa)
	}
}
