//go:build linux

package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/ring"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

func mustCreate(t *testing.T, name string, cells int) *Segment {
	t.Helper()
	seg, err := Create(name, cells)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = seg.Close() })
	return seg
}

func TestSegmentCreateOpenUnlink(t *testing.T) {
	name := testName(t)
	owner := mustCreate(t, name, 16)
	if owner.Name() != name || owner.Owner() != os.Getpid() || owner.Ring().Cells() != 16 {
		t.Errorf("Create: name %q owner %d cells %d", owner.Name(), owner.Owner(), owner.Ring().Cells())
	}
	peer, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	if peer.Owner() != os.Getpid() || peer.Ring().Cells() != 16 {
		t.Errorf("Open: owner %d cells %d", peer.Owner(), peer.Ring().Cells())
	}

	// Two mappings of one object: a push through one is a pop through the
	// other.
	if err := peer.Ring().TryPush(msg(5, 6)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, ring.CellPayload)
	if _, ok := owner.Ring().TryPop(buf); !ok {
		t.Fatal("owner did not see the peer's message")
	}
	if diff := cmp.Diff(msg(5, 6), buf); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	if err := peer.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := peer.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := Unlink(name); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open after Unlink = %v, want ErrNotExist", err)
	}
	if err := Unlink(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("second Unlink = %v, want ErrNotExist", err)
	}
	// The owner's mapping survives the name.
	if err := owner.Ring().TryPush(nil); err != nil {
		t.Errorf("push after Unlink: %v", err)
	}
}

func TestSegmentExclusive(t *testing.T) {
	name := testName(t)
	first := mustCreate(t, name, 8)
	if _, err := Create(name, 8); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second Create = %v, want ErrExist", err)
	}
	// The failed Create must not have removed or damaged the first.
	if err := first.Ring().TryPush(nil); err != nil {
		t.Fatal(err)
	}
	peer, err := Open(name)
	if err != nil {
		t.Fatalf("Open after the failed Create: %v", err)
	}
	defer peer.Close()
	if peer.Ring().Empty() {
		t.Error("the first segment's message is gone")
	}
}

func TestSegmentPermissions(t *testing.T) {
	for _, mask := range []int{0, 0o022, 0o077, 0o277} {
		t.Run(fmt.Sprintf("umask %03o", mask), func(t *testing.T) {
			old := unix.Umask(mask)
			defer unix.Umask(old)
			name := testName(t)
			mustCreate(t, name, 8)
			fi, err := os.Lstat(segFile(name))
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode(); got != 0o600 {
				t.Errorf("mode %v, want -rw-------", got)
			}
		})
	}
}

func TestSegmentBadCells(t *testing.T) {
	name := testName(t)
	for _, cells := range []int{0, 1, 3, ring.MaxCells * 2} {
		if _, err := Create(name, cells); !errors.Is(err, ring.ErrCells) {
			t.Errorf("Create(%d cells) = %v, want ring.ErrCells", cells, err)
		}
	}
	if _, err := os.Lstat(segFile(name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed Create left %s behind: %v", name, err)
	}
}

func TestSegmentNames(t *testing.T) {
	tests := []struct {
		name  string
		valid bool
	}{
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"/abs", false},
		{"../escape", false},
		{"nul\x00byte", false},
		{strings.Repeat("x", 256), false},
		{strings.Repeat("x", 255), true},
		{"..dots-are-fine", true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.20q", tt.name), func(t *testing.T) {
			err := checkName(tt.name)
			if (err == nil) != tt.valid {
				t.Fatalf("checkName = %v, want valid %v", err, tt.valid)
			}
			if tt.valid {
				return
			}
			if _, err := Create(tt.name, 8); !errors.Is(err, ErrName) {
				t.Errorf("Create = %v", err)
			}
			if _, err := Open(tt.name); !errors.Is(err, ErrName) {
				t.Errorf("Open = %v", err)
			}
			if err := Unlink(tt.name); !errors.Is(err, ErrName) {
				t.Errorf("Unlink = %v", err)
			}
			if _, err := Reclaim(tt.name); !errors.Is(err, ErrName) {
				t.Errorf("Reclaim = %v", err)
			}
		})
	}
	// The longest valid name really works.
	name := testName(t)
	long := name + strings.Repeat("x", maxNameLen-len(name))
	mustCreate(t, long, 8)
	if err := Unlink(long); err != nil {
		t.Error(err)
	}
}

// TestSegmentLayout pins the version-5 header and checks what
// CreateSegment writes, read back from the file with encoding/binary.
func TestSegmentLayout(t *testing.T) {
	type field struct {
		Name string
		Off  int
	}
	got := []field{{"ident", offSegIdent}, {"pid", offSegPID}, {"size", offSegSize},
		{"ringOff", offSegRingOff}, {"job", offSegJob}, {"epid", offSegEPID},
		{"poolOff", offSegPoolOff}, {"poolBufs", offSegPoolBufs}, {"poolSize", offSegPoolSize},
		{"state", offSegState}, {"splitOff", offSegSplitOff}, {"splits", offSegSplits},
		{"start", offSegStart}, {"bellSeq", offSegBellSeq}, {"bellWaiters", offSegBellWaiters},
		{"busy", offSegBusy}, {"stream", offSegStream}, {"header", segHeaderSize}, {"splitSlot", SplitSlotSize}}
	want := []field{{"ident", 0}, {"pid", 8}, {"size", 16}, {"ringOff", 24}, {"job", 32},
		{"epid", 48}, {"poolOff", 56}, {"poolBufs", 64}, {"poolSize", 72}, {"state", 80},
		{"splitOff", 88}, {"splits", 96}, {"start", 104},
		{"bellSeq", 128}, {"bellWaiters", 132}, {"busy", 256}, {"stream", 320}, {"header", 384}, {"splitSlot", 128}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layout changed (-want +got):\n%s", diff)
	}
	if segMagic != 0x70736d73 || segVersion != 5 {
		t.Errorf("magic %#x version %d changed", segMagic, segVersion)
	}

	for _, tc := range []struct{ bufs, splits int }{{0, 0}, {3, 0}, {0, 5}, {3, 5}} {
		bufs, splits := tc.bufs, tc.splits
		t.Run(fmt.Sprintf("%d buffers %d splits", bufs, splits), func(t *testing.T) {
			name := testName(t)
			job := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
			cfg := SegmentConfig{Cells: 64, Job: job, EPID: 0xabcdef, Buffers: bufs, SplitSlots: splits}
			if bufs > 0 {
				cfg.BufferSize = 1024
			}
			seg, err := CreateSegment(name, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = seg.Close() })
			b, err := os.ReadFile(segFile(name))
			if err != nil {
				t.Fatal(err)
			}
			page := os.Getpagesize()
			end := segHeaderSize + ring.RingSize(64)
			wantHdr := segHeader{ident: segMagic | 5<<32, pid: uint64(os.Getpid()), size: uint64(len(b)),
				ringOff: 384, job: job, epid: 0xabcdef, start: sys.SelfIdentity().Start}
			if splits > 0 {
				wantHdr.splitOff, wantHdr.splits = uint64(roundUp(end, 128)), uint64(splits)
				end = roundUp(end, 128) + splits*SplitSlotSize
			}
			ringEnd := roundUp(end, page)
			wantSize := ringEnd
			if bufs > 0 {
				wantSize = roundUp(ringEnd+bufs*1024, page)
				wantHdr.poolOff, wantHdr.poolBufs, wantHdr.poolSize = uint64(ringEnd), 3, 1024
			}
			if len(b) != wantSize {
				t.Errorf("object is %d bytes, want %d", len(b), wantSize)
			}
			h, ok := decodeSegHeader(b)
			if diff := cmp.Diff(wantHdr, h, cmp.AllowUnexported(segHeader{})); !ok || diff != "" {
				t.Errorf("header (-want +got):\n%s", diff)
			}
			for _, off := range []int{offSegState, offSegBellSeq, offSegBusy} {
				if w := binary.NativeEndian.Uint64(b[off:]); w != 0 {
					t.Errorf("word at %d is %#x, want 0", off, w)
				}
			}
			if r, err := ring.AttachRing(b[h.ringOff:]); err != nil || r.Cells() != 64 {
				t.Errorf("no ring of 64 cells at the ring offset: %v", err)
			}

			// A peer sees the same.
			peer, err := Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer peer.Close()
			if peer.Job() != job || peer.EPID() != 0xabcdef || peer.Buffers() != bufs ||
				peer.BufferSize() != int(wantHdr.poolSize) || peer.Closed() {
				t.Errorf("Open: job %x epid %#x %d buffers of %d, closed %v",
					peer.Job(), peer.EPID(), peer.Buffers(), peer.BufferSize(), peer.Closed())
			}
			for i := range bufs {
				copy(seg.Buffer(i), fmt.Sprint("buffer ", i))
				if got := string(peer.Buffer(i)[:8]); got != fmt.Sprint("buffer ", i) {
					t.Errorf("peer's buffer %d starts %q", i, got)
				}
			}
			if peer.Buffer(-1) != nil || peer.Buffer(bufs) != nil {
				t.Error("Buffer out of range is not nil")
			}
			seg.Busy().Or(5)
			seg.MarkClosed()
			if peer.Busy().Load() != 5 || !peer.Closed() {
				t.Error("busy bits or state not shared")
			}
		})
	}
}

func TestSegmentBadPool(t *testing.T) {
	name := testName(t)
	for _, cfg := range []SegmentConfig{
		{Cells: 8, Buffers: -1, BufferSize: 64},
		{Cells: 8, Buffers: MaxBuffers + 1, BufferSize: 64},
		{Cells: 8, Buffers: 1, BufferSize: 0},
		{Cells: 8, Buffers: 1, BufferSize: 100},
		{Cells: 8, Buffers: 1, BufferSize: MaxBufferSize + 64},
	} {
		if _, err := CreateSegment(name, cfg); !errors.Is(err, ErrPool) {
			t.Errorf("CreateSegment(%+v) = %v, want ErrPool", cfg, err)
		}
	}
}

// TestSegmentReplaced tells the object a Segment maps from whatever the
// name refers to now.
func TestSegmentReplaced(t *testing.T) {
	name := testName(t)
	first := mustCreate(t, name, 8)
	if r, err := first.Replaced(); r || err != nil {
		t.Fatalf("Replaced = %v, %v on a live name", r, err)
	}
	if err := Unlink(name); err != nil {
		t.Fatal(err)
	}
	if r, err := first.Replaced(); !r || err != nil {
		t.Fatalf("Replaced = %v, %v after Unlink", r, err)
	}
	mustCreate(t, name, 8)
	if r, err := first.Replaced(); !r || err != nil {
		t.Fatalf("Replaced = %v, %v after re-creation", r, err)
	}
}

// TestOpenHostile opens segments another process of the same user
// damaged. Every one must be refused with an error.
func TestOpenHostile(t *testing.T) {
	pwrite := func(off int64, v uint64) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var b [8]byte
			binary.NativeEndian.PutUint64(b[:], v)
			if _, err := f.WriteAt(b[:], off); err != nil {
				t.Fatal(err)
			}
		}
	}
	truncate := func(size int64) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			if err := os.Truncate(path, size); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name   string
		mutate func(t *testing.T, path string)
		want   error
	}{
		{"bad magic", pwrite(offSegIdent, 0x12345678|1<<32), ErrCorrupt},
		{"future version", pwrite(offSegIdent, segMagic|(segVersion+1)<<32), ErrCorrupt},
		{"old version", pwrite(offSegIdent, segMagic|1<<32), ErrCorrupt},
		{"version 2", pwrite(offSegIdent, segMagic|2<<32), ErrCorrupt},
		{"too many split slots", pwrite(offSegSplits, MaxSplitSlots+1), ErrCorrupt},
		{"split slots past the end", pwrite(offSegSplitOff, 1<<40), ErrCorrupt},
		{"split slots misaligned", pwrite(offSegSplitOff, 4096+8), ErrCorrupt},
		{"split slots over the ring", func(t *testing.T, path string) {
			pwrite(offSegSplitOff, segHeaderSize+128)(t, path)
			pwrite(offSegSplits, 1)(t, path)
		}, ErrCorrupt},
		{"not yet initialised", pwrite(offSegIdent, 0), ErrCorrupt},
		{"size larger than the object", pwrite(offSegSize, 1<<40), ErrCorrupt},
		{"size smaller than the object", pwrite(offSegSize, 2048), ErrCorrupt},
		{"ring offset past the end", pwrite(offSegRingOff, 1<<40), ErrCorrupt},
		{"ring offset inside the header", pwrite(offSegRingOff, 0), ErrCorrupt},
		{"ring offset misaligned", pwrite(offSegRingOff, segHeaderSize+8), ErrCorrupt},
		{"ring offset leaves no room", pwrite(offSegRingOff, 4096-ring.LineSep), ErrCorrupt},
		{"pid zero", pwrite(offSegPID, 0), ErrCorrupt},
		{"pool offset without buffers", pwrite(offSegPoolOff, 1024), ErrCorrupt},
		{"buffers without a size", pwrite(offSegPoolBufs, 1), ErrCorrupt},
		{"pool past the end", func(t *testing.T, path string) {
			pwrite(offSegPoolOff, 1024)(t, path)
			pwrite(offSegPoolSize, 1024)(t, path)
			pwrite(offSegPoolBufs, 4)(t, path)
		}, ErrCorrupt},
		{"too many buffers", func(t *testing.T, path string) {
			pwrite(offSegPoolOff, 1024)(t, path)
			pwrite(offSegPoolSize, 64)(t, path)
			pwrite(offSegPoolBufs, MaxBuffers+1)(t, path)
		}, ErrCorrupt},
		{"pool over the ring", func(t *testing.T, path string) {
			pwrite(offSegPoolOff, 1024)(t, path) // the ring of 8 cells ends at 384+896
			pwrite(offSegPoolSize, 64)(t, path)
			pwrite(offSegPoolBufs, 1)(t, path)
		}, ErrCorrupt},
		{"pid negative", pwrite(offSegPID, ^uint64(0)), ErrCorrupt},
		// The ring's ident word is at +0, its cell count at +8
		// (internal/ring's TestRingLayout pins them).
		{"ring magic", pwrite(segHeaderSize+0, 0), ErrCorrupt},
		{"ring claims more cells", pwrite(segHeaderSize+8, 1<<16), ErrCorrupt},
		{"truncated to the header", truncate(segHeaderSize), ErrCorrupt},
		{"truncated to nothing", truncate(0), ErrCorrupt},
		{"grown past the limit", truncate(maxSegmentSize() + 4096), ErrCorrupt},
		{"replaced by a symlink", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/dev/zero", path); err != nil {
				t.Fatal(err)
			}
		}, syscall.ELOOP},
		{"replaced by a directory", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.Remove(path) })
		}, syscall.EISDIR},
		{"replaced by a fifo", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := testName(t)
			seg, err := Create(name, 8) // 4096 bytes
			if err != nil {
				t.Fatal(err)
			}
			if err := seg.Close(); err != nil {
				t.Fatal(err)
			}
			tt.mutate(t, segFile(name))
			seg, err = Open(name)
			if !errors.Is(err, tt.want) || seg != nil {
				t.Errorf("Open = %v, %v; want nil, %v", seg, err, tt.want)
			}
		})
	}
}

// TestReclaim removes stale segments and keeps live ones.
func TestReclaim(t *testing.T) {
	tests := []struct {
		name    string
		make    func(t *testing.T, name string)
		removed bool
	}{
		{"owner exited", func(t *testing.T, name string) {
			c := startChild(t, "create", childNameEnv+"="+name)
			c.wait(t) // reaped: its pid no longer exists
		}, true},
		{"owner alive", func(t *testing.T, name string) {
			mustCreate(t, name, 8)
		}, false},
		{"owner is a live child", func(t *testing.T, name string) {
			// Another live process: the pid is probed, not compared with
			// ours.
			mustCreate(t, name, 8)
			sleeper := startSleeper(t)
			f, err := os.OpenFile(segFile(name), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			start, _, err := sys.ProcStat(sleeper)
			if err != nil {
				t.Fatal(err)
			}
			var b [8]byte
			binary.NativeEndian.PutUint64(b[:], uint64(sleeper))
			if _, err := f.WriteAt(b[:], offSegPID); err != nil {
				t.Fatal(err)
			}
			binary.NativeEndian.PutUint64(b[:], start)
			if _, err := f.WriteAt(b[:], offSegStart); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"pid reused: the recorded pid is ours, the start time is not", func(t *testing.T, name string) {
			// A leftover of an earlier process that had our pid: it
			// must not block our Create of the same name (finding 6).
			mustCreate(t, name, 8)
			f, err := os.OpenFile(segFile(name), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var b [8]byte
			binary.NativeEndian.PutUint64(b[:], sys.SelfIdentity().Start-1)
			if _, err := f.WriteAt(b[:], offSegStart); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"garbage header", func(t *testing.T, name string) {
			writeFile(t, name, []byte(strings.Repeat("garbage!", 512)))
		}, true},
		{"empty object: creator died before ftruncate", func(t *testing.T, name string) {
			writeFile(t, name, nil)
		}, true},
		{"header never written: creator died before formatting", func(t *testing.T, name string) {
			writeFile(t, name, make([]byte, 4096))
		}, true},
		{"pid zero in the header", func(t *testing.T, name string) {
			mustCreate(t, name, 8)
			f, err := os.OpenFile(segFile(name), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(make([]byte, 8), offSegPID); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"missing", func(t *testing.T, name string) {}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := testName(t)
			tt.make(t, name)
			_, statErr := os.Lstat(segFile(name))
			existed := statErr == nil

			removed, err := Reclaim(name)
			if err != nil || removed != tt.removed {
				t.Fatalf("Reclaim = %v, %v; want %v, nil", removed, err, tt.removed)
			}
			_, statErr = os.Lstat(segFile(name))
			if exists := statErr == nil; exists != (existed && !tt.removed) {
				t.Errorf("after Reclaim the name exists: %v", exists)
			}
			if removed {
				// The name is free again.
				mustCreate(t, name, 8)
			}
		})
	}
}

// writeFile plants a file at the segment directory, as a crashed creator would leave.
func writeFile(t *testing.T, name string, b []byte) {
	t.Helper()
	if err := os.WriteFile(segFile(name), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// startSleeper starts a child that stays alive until the test ends, and
// returns its pid.
func startSleeper(t *testing.T) int {
	t.Helper()
	c := startChild(t, "sleep")
	return c.cmd.Process.Pid
}

// TestCrossProcess has child processes attach to a segment and push into
// its ring while this process consumes: every message arrives once, in
// each child's order.
func TestCrossProcess(t *testing.T) {
	const children = 2
	perChild := 20000
	if testing.Short() {
		perChild = 2000
	}
	name := testName(t)
	seg := mustCreate(t, name, 16) // small: children keep hitting ring.ErrFull
	r := seg.Ring()

	kids := make([]*child, children)
	for i := range kids {
		kids[i] = startChild(t, "push",
			childNameEnv+"="+name,
			childIDEnv+"="+strconv.Itoa(i),
			childCountEnv+"="+strconv.Itoa(perChild))
	}

	next := make([]uint64, children)
	buf := make([]byte, ring.CellPayload)
	deadline := time.Now().Add(2 * time.Minute)
	var b backoff
	for got := 0; got < children*perChild; {
		if _, ok := r.TryPop(buf); !ok {
			if b.n%1024 == 1023 {
				if time.Now().After(deadline) {
					t.Fatalf("timed out with %d of %d messages; next %v", got, children*perChild, next)
				}
				exited := 0
				for _, c := range kids {
					select {
					case err := <-c.done:
						c.done <- err
						if err != nil {
							t.Fatalf("child failed: %v\n%s", err, c.output.String())
						}
						exited++
					default:
					}
				}
				// Every push has returned; anything still missing is lost.
				if exited == children && r.Empty() {
					t.Fatalf("children done, ring empty, %d of %d messages delivered; next %v",
						got, children*perChild, next)
				}
			}
			b.wait()
			continue
		}
		b.reset()
		p, seq, err := checkMsg(buf)
		if err != nil {
			t.Fatal(err)
		}
		if p >= children {
			t.Fatalf("message from unknown child %d", p)
		}
		if seq != next[p] {
			t.Fatalf("child %d: got seq %d, want %d", p, seq, next[p])
		}
		next[p]++
		got++
	}
	for _, c := range kids {
		c.wait(t)
	}
	if !r.Empty() {
		t.Error("messages beyond the expected ones")
	}
}
