//go:build linux

package shm

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// TestSharedObject: a shared object is made once (a second create is
// os.ErrExist), opened whole by others who see its bytes, refused when
// smaller than asked, and gone once unlinked.
func TestSharedObject(t *testing.T) {
	name := fmt.Sprintf("test-shared-%d", os.Getpid())
	mem, err := CreateShared(name, 4096)
	if err != nil {
		t.Fatal(err)
	}
	defer UnlinkShared(name)
	defer UnmapShared(mem)
	copy(mem, "hello")
	if _, err := CreateShared(name, 4096); !errors.Is(err, os.ErrExist) {
		t.Errorf("second create: %v, want os.ErrExist", err)
	}
	peer, err := OpenShared(name, 64)
	if err != nil {
		t.Fatal(err)
	}
	if len(peer) != 4096 || string(peer[:5]) != "hello" {
		t.Errorf("peer sees %d bytes, %q", len(peer), peer[:5])
	}
	_ = UnmapShared(peer)
	if _, err := OpenShared(name, 8192); !errors.Is(err, ErrCorrupt) {
		t.Errorf("open asking for more than the object holds: %v, want ErrCorrupt", err)
	}
	if err := UnlinkShared(name); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenShared(name, 64); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("open after unlink: %v, want os.ErrNotExist", err)
	}
}
