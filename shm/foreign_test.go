//go:build linux

package shm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/ring"
)

// The tests of issue 8's findings 1 and 6: another user on the node must
// not be able to take, read or shrink our segments, and a full /dev/shm
// is an error when a segment is made, not a SIGBUS later.

// nobody is the second user of these tests.
const nobody = 65534

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to act as a second user")
	}
}

// TestPrivateDirCandidates: the first candidate directory that is ours is
// used; one held by another user, a symbolic link or a file is passed
// over; ours with a wider mode is narrowed; all taken is EACCES.
func TestPrivateDirCandidates(t *testing.T) {
	needRoot(t)
	base := t.TempDir()
	if err := os.Chmod(base, 0o1777); err != nil {
		t.Fatal(err)
	}
	uid := os.Geteuid()
	cand := func(k int) string {
		p := fmt.Sprintf("%s/%s-%d", base, namePrefix, uid)
		if k > 0 {
			p += fmt.Sprintf("-%d", k)
		}
		return p
	}
	// 0: another user's directory, open to all; 1: a symbolic link to a
	// directory of ours; 2: a file; 3: ours, but mode 0755.
	if err := os.Mkdir(cand(0), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(cand(0), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), cand(1)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cand(2), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(cand(3), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := privateDir(base, uid)
	if err != nil || got != cand(3) {
		t.Fatalf("privateDir = %q, %v; want %q", got, err, cand(3))
	}
	if st, err := os.Stat(got); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("directory mode %v (%v), want 0700", st.Mode(), err)
	}
	// Every candidate taken by someone else: EACCES, not a hang or a
	// directory of theirs.
	for k := 3; k < dirCandidates; k++ {
		_ = os.Remove(cand(k))
		if err := os.Mkdir(cand(k), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(cand(k), nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := privateDir(base, uid); !errors.Is(err, ErrForeign) || !errors.Is(err, unix.EACCES) {
		t.Errorf("every candidate taken: privateDir = %q, %v; want ErrForeign (EACCES)", got, err)
	}
}

// TestOpenRefusesForeign: a segment under one of our names that another
// user owns, or that others may open, is refused by Open and by Reclaim,
// and never mapped.
func TestOpenRefusesForeign(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name   string
		mutate func(path string) error
	}{
		{"owned by another user", func(p string) error { return os.Chown(p, nobody, nobody) }},
		{"open to others", func(p string) error { return os.Chmod(p, 0o666) }},
		{"open to the group", func(p string) error { return os.Chmod(p, 0o660) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := testName(t)
			seg := mustCreate(t, name, 8)
			_ = seg.Close()
			if err := tc.mutate(segFile(name)); err != nil {
				t.Fatal(err)
			}
			if s, err := Open(name); !errors.Is(err, ErrForeign) {
				if s != nil {
					s.Close()
				}
				t.Errorf("Open = %v, want ErrForeign", err)
			}
			if removed, err := Reclaim(name); removed || !errors.Is(err, ErrForeign) {
				t.Errorf("Reclaim = %v, %v; want false, ErrForeign", removed, err)
			}
		})
	}
}

// TestSquattedAndFullDevShm runs a child in a mount namespace of its own,
// with a fresh 4 MiB /dev/shm in which a second user (nobody) has already
// taken our directory's name and its first fallback (as a symbolic link).
// The child must still make and use segments, none of them in the
// squatter's directory, and a segment larger than the space left must
// fail with ENOSPC at creation.
func TestSquattedAndFullDevShm(t *testing.T) {
	needRoot(t)
	for _, tool := range []string{"unshare", "setpriv", "mount"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not available", tool)
		}
	}
	uid := os.Geteuid()
	squat := fmt.Sprintf(`mkdir -m 0777 /dev/shm/%[1]s-%[2]d && ln -s /tmp /dev/shm/%[1]s-%[2]d-1`, namePrefix, uid)
	script := `set -e
mount -t tmpfs -o size=4m,mode=1777 psm2test /dev/shm
setpriv --reuid=65534 --regid=65534 --clear-groups sh -c '` + squat + `'
exec "$0" -test.run='^$'`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, os.Args[0])
	cmd.Env = append(os.Environ(), childRoleEnv+"=squatted")
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), "unshare failed") || strings.Contains(string(out), "Operation not permitted") {
		t.Skipf("no mount namespace here: %s", out)
	}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// runSquattedChild is the child of TestSquattedAndFullDevShm.
func runSquattedChild() error {
	uid := os.Geteuid()
	dir, err := SegmentDir()
	if err != nil {
		return fmt.Errorf("SegmentDir: %w", err)
	}
	if want := fmt.Sprintf("%s/%s-%d-2", Dir, namePrefix, uid); dir != want {
		return fmt.Errorf("segment directory %s, want %s", dir, want)
	}
	seg, err := Create("squat-test", 64)
	if err != nil {
		return fmt.Errorf("Create: %w", err)
	}
	defer Unlink("squat-test")
	defer seg.Close()
	peer, err := Open("squat-test")
	if err != nil {
		return fmt.Errorf("Open: %w", err)
	}
	defer peer.Close()
	msg := []byte("through the private directory")
	if err := peer.Ring().TryPush(msg); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	got := make([]byte, ring.CellPayload)
	if n, ok := seg.Ring().TryPop(got); !ok || string(got[:len(msg)]) != string(msg) {
		return fmt.Errorf("pop: %v %q", ok, got[:n])
	}
	squatted, _ := filepath.Glob(fmt.Sprintf("%s/%s-%d/*", Dir, namePrefix, uid))
	if len(squatted) != 0 {
		return fmt.Errorf("files in the squatter's directory: %v", squatted)
	}
	// 64 buffers of 1 MiB cannot fit in 4 MiB: ENOSPC now, and nothing
	// left behind.
	big, err := CreateSegment("squat-big", SegmentConfig{Cells: 64, Buffers: MaxBuffers, BufferSize: MaxBufferSize})
	if err == nil {
		big.Close()
		Unlink("squat-big")
		return errors.New("a segment larger than /dev/shm was created")
	}
	if !errors.Is(err, unix.ENOSPC) {
		return fmt.Errorf("oversized Create: %v, want ENOSPC", err)
	}
	if _, err := os.Stat(dir + "/squat-big"); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("the failed segment was left behind: %v", err)
	}
	return nil
}
