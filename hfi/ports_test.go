package hfi

import (
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
	p0, ok := portCursor(path, 40000, 40009, 1)
	if !ok {
		t.Fatal("cursor file unusable")
	}
	want := []struct {
		block int
		next  uint16
	}{{4, p0 + 1}, {1, p0 + 5}, {0, p0 + 6}}
	for _, w := range want {
		p, _ := portCursor(path, 40000, 40009, w.block)
		if want := 40000 + (w.next-40000)%10; p != want {
			t.Fatalf("block %d: port %d, want %d", w.block, p, want)
		}
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
