//go:build linux

package shm

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/ring"
)

// The test binary doubles as the child process of the cross-process
// tests: started with childRoleEnv set, TestMain plays that role and exits
// instead of running tests.
const (
	childRoleEnv  = "GOPSM2_SHM_TEST_CHILD" // "push", "create" or "sleep"
	childNameEnv  = "GOPSM2_SHM_TEST_NAME"
	childIDEnv    = "GOPSM2_SHM_TEST_ID"
	childCountEnv = "GOPSM2_SHM_TEST_COUNT"
)

// testPrefix starts the name of every segment this test process makes, so
// TestMain can find leftovers.
var testPrefix = fmt.Sprintf("psm2-shmtest-%d-", os.Getpid())

func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		if err := runChild(role); err != nil {
			fmt.Fprintf(os.Stderr, "child %s: %v\n", role, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	code := m.Run()
	// Like a leaked fd, a leaked segment outlives the test: fail on it.
	leaked, _ := filepath.Glob(filepath.Join(segDirT(), testPrefix+"*"))
	endpoints, _ := filepath.Glob(filepath.Join(segDirT(), testJobPrefix()+"*"))
	leaked = append(leaked, endpoints...)
	for _, path := range leaked {
		fmt.Fprintf(os.Stderr, "leaked segment %s\n", path)
		_ = os.Remove(path)
		code = 1
	}
	os.Exit(code)
}

func runChild(role string) error {
	name := os.Getenv(childNameEnv)
	if strings.HasPrefix(role, "ep-") {
		return runEndpointChild(role)
	}
	switch role {
	case "squatted":
		return runSquattedChild()
	case "create":
		// Make a segment and die without cleaning up.
		_, err := Create(name, 8)
		return err
	case "sleep":
		// Stay alive until the parent kills us.
		time.Sleep(time.Hour)
		return nil
	case "push":
		id, err := strconv.ParseUint(os.Getenv(childIDEnv), 10, 64)
		if err != nil {
			return err
		}
		count, err := strconv.ParseUint(os.Getenv(childCountEnv), 10, 64)
		if err != nil {
			return err
		}
		seg, err := Open(name)
		if err != nil {
			return err
		}
		defer seg.Close()
		if seg.Owner() != os.Getppid() {
			return fmt.Errorf("segment owner %d, parent %d", seg.Owner(), os.Getppid())
		}
		r := seg.Ring()
		buf := make([]byte, ring.CellPayload)
		var b backoff
		for seq := range count {
			fillMsg(buf, id, seq)
			for {
				err := r.TryPush(buf)
				if err == nil {
					break
				}
				if err != ring.ErrFull {
					return fmt.Errorf("push %d: %w", seq, err)
				}
				b.wait()
			}
			b.reset()
		}
		return nil
	}
	return fmt.Errorf("unknown role %q", role)
}

// backoff spins briefly, then yields, then sleeps: the tests run several
// busy processes on few CPUs.
type backoff struct{ n int }

func (b *backoff) wait() {
	b.n++
	switch {
	case b.n < 64:
	case b.n < 1024:
		runtime.Gosched()
	default:
		time.Sleep(20 * time.Microsecond)
	}
}

func (b *backoff) reset() { b.n = 0 }

// testName returns a segment name unique to this process and test, and
// removes the segment when the test ends, passed or failed.
func testName(t *testing.T) string {
	t.Helper()
	var r [6]byte
	if _, err := rand.Read(r[:]); err != nil {
		t.Fatal(err)
	}
	name := testPrefix + hex.EncodeToString(r[:])
	t.Cleanup(func() {
		if err := Unlink(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cleanup: %v", err)
		}
	})
	return name
}

// child is a re-executed test binary playing a role.
type child struct {
	cmd    *exec.Cmd
	output bytes.Buffer
	done   chan error // receives the result of Wait, once
}

// startChild runs the test binary as a child with role and env; the child
// is killed if the test ends first.
func startChild(t *testing.T, role string, env ...string) *child {
	t.Helper()
	c := &child{done: make(chan error, 1)}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), append([]string{childRoleEnv + "=" + role}, env...)...)
	c.cmd.Stdout = &c.output
	c.cmd.Stderr = &c.output
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	go func() { c.done <- c.cmd.Wait() }()
	t.Cleanup(func() {
		select {
		case err := <-c.done:
			c.done <- err
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// wait waits for the child to exit and fails the test unless it succeeded.
func (c *child) wait(t *testing.T) {
	t.Helper()
	err := <-c.done
	c.done <- err
	if err != nil {
		t.Fatalf("child %d: %v\n%s", c.cmd.Process.Pid, err, c.output.String())
	}
}

// segDirT is the user's segment directory (SegmentDir), for tests.
func segDirT() string {
	d, err := SegmentDir()
	if err != nil {
		panic(err)
	}
	return d
}

// segFile is where segment name lives.
func segFile(name string) string { return segDirT() + "/" + name }
