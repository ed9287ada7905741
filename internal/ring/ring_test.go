package ring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// newTestRing formats a ring of cells cells on ordinary memory.
func newTestRing(tb testing.TB, cells int) (*Ring, []byte) {
	tb.Helper()
	mem := make([]byte, RingSize(cells))
	r, err := InitRing(mem, cells)
	if err != nil {
		tb.Fatalf("InitRing(%d cells): %v", cells, err)
	}
	return r, mem
}

// msg builds a full payload that identifies (producer, seq) in every byte.
func msg(producer, seq uint64) []byte {
	b := make([]byte, CellPayload)
	fillMsg(b, producer, seq)
	return b
}

func fillMsg(b []byte, producer, seq uint64) {
	binary.LittleEndian.PutUint64(b[0:], producer)
	binary.LittleEndian.PutUint64(b[8:], seq)
	for i := 16; i < CellPayload; i++ {
		b[i] = byte(seq) + byte(i)
	}
}

// checkMsg decodes a payload built by fillMsg and verifies its filler.
func checkMsg(b []byte) (producer, seq uint64, err error) {
	if len(b) != CellPayload {
		return 0, 0, fmt.Errorf("payload of %d bytes, want %d", len(b), CellPayload)
	}
	producer = binary.LittleEndian.Uint64(b[0:])
	seq = binary.LittleEndian.Uint64(b[8:])
	for i := 16; i < CellPayload; i++ {
		if b[i] != byte(seq)+byte(i) {
			return producer, seq, fmt.Errorf("producer %d seq %d: byte %d is %#x, want %#x",
				producer, seq, i, b[i], byte(seq)+byte(i))
		}
	}
	return producer, seq, nil
}

// TestRingLayout pins the version-4 layout: moving any field is a format
// change that needs a new ringVersion.
func TestRingLayout(t *testing.T) {
	type field struct {
		Name string
		Off  int
	}
	got := []field{
		{"ident", offRingIdent}, {"cells", offRingCells}, {"prod", offRingProd},
		{"seen", offRingSeen}, {"prod.cpu", offRingProdCPU}, {"cons", offRingCons}, {"header", ringHeaderSize},
		{"cell.seq", offCellSeq}, {"cell.payload", offCellPayload}, {"cell", CellSize},
		{"slot.pid", offSlotPID}, {"slot.start", offSlotStart}, {"slot.pos", offSlotPos},
		{"slot.n", offSlotN}, {"slot", slotSize}, {"slots", RingSlots},
	}
	want := []field{
		{"ident", 0}, {"cells", 8}, {"prod", 128},
		{"seen", 136}, {"prod.cpu", 144}, {"cons", 256}, {"header", 384},
		{"cell.seq", 0}, {"cell.payload", 8}, {"cell", 64},
		{"slot.pid", 0}, {"slot.start", 8}, {"slot.pos", 16},
		{"slot.n", 24}, {"slot", 32}, {"slots", 512},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layout changed (-want +got):\n%s", diff)
	}
	if ringMagic != 0x70736d72 || ringVersion != 4 {
		t.Errorf("magic %#x version %d changed", ringMagic, ringVersion)
	}
	if offRingProd/64 == offRingCons/64 || offRingProd/64 == offRingIdent/64 {
		t.Error("counters share a cache line")
	}
	if ringHeaderSize%CellSize != 0 {
		t.Error("cells are not line-aligned")
	}

	// The bytes InitRing writes, read back with encoding/binary.
	const cells = 4
	_, mem := newTestRing(t, cells)
	start := initialPos(cells)
	word := func(off int) uint64 { return binary.NativeEndian.Uint64(mem[off:]) }
	type header struct{ Ident, Cells, Prod, Seen, Cons uint64 }
	gotHdr := header{word(offRingIdent), word(offRingCells), word(offRingProd), word(offRingSeen), word(offRingCons)}
	wantHdr := header{uint64(ringMagic) | 4<<32, cells, start, start, start}
	if diff := cmp.Diff(wantHdr, gotHdr); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	gotSeq := make([]uint64, cells)
	wantSeq := make([]uint64, cells)
	for i := range cells {
		gotSeq[i] = word(ringHeaderSize + i*CellSize + offCellSeq)
	}
	for k := range uint64(cells) {
		pos := start + k
		wantSeq[pos%cells] = pos // each cell waits for its position in the first lap
	}
	if diff := cmp.Diff(wantSeq, gotSeq); diff != "" {
		t.Errorf("cell sequences (-want +got):\n%s", diff)
	}
}

func TestRingSize(t *testing.T) {
	tests := []struct {
		cells, want int
	}{
		{-1, 0}, {0, 0}, {1, 0}, {2, 384 + 2*64 + 512*32}, {3, 0}, {6, 0}, {64, 384 + 64*64 + 512*32},
		{MaxCells, 384 + MaxCells*64 + 512*32}, {MaxCells * 2, 0}, {MaxCells + 1, 0},
	}
	for _, tt := range tests {
		if got := RingSize(tt.cells); got != tt.want {
			t.Errorf("RingSize(%d) = %d, want %d", tt.cells, got, tt.want)
		}
	}
}

func TestInitRingErrors(t *testing.T) {
	tests := []struct {
		name  string
		mem   []byte
		cells int
		want  error
	}{
		{"zero cells", make([]byte, 4096), 0, ErrCells},
		{"one cell", make([]byte, 4096), 1, ErrCells},
		{"not a power of two", make([]byte, 4096), 12, ErrCells},
		{"negative", make([]byte, 4096), -8, ErrCells},
		{"too many", make([]byte, 4096), MaxCells * 2, ErrCells},
		{"memory one byte short", make([]byte, RingSize(8)-1), 8, ErrMemory},
		{"misaligned", make([]byte, RingSize(8)+1)[1:], 8, ErrMemory},
		{"nil memory", nil, 8, ErrMemory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := InitRing(tt.mem, tt.cells)
			if !errors.Is(err, tt.want) || r != nil {
				t.Errorf("InitRing = %v, %v; want nil, %v", r, err, tt.want)
			}
		})
	}
}

// TestCountersStartNearOverflow checks that a fresh ring's counters cross
// 2^64 before the ring has been filled once, so every test that fills a
// ring exercises the wraparound.
func TestCountersStartNearOverflow(t *testing.T) {
	for _, cells := range []uint64{MinCells, 8, 1024, MaxCells} {
		start := initialPos(cells)
		if start+cells > start { // no overflow within the first lap
			t.Errorf("%d cells: counters start at %#x, no overflow in the first lap", cells, start)
		}
	}
}

func TestPushPopOrder(t *testing.T) {
	r, _ := newTestRing(t, 8)
	var want, got [][]byte
	for i := range uint64(5) {
		m := msg(1, i)
		want = append(want, m)
		if err := r.TryPush(m); err != nil {
			t.Fatalf("TryPush %d: %v", i, err)
		}
	}
	for {
		buf := make([]byte, CellPayload)
		n, ok := r.TryPop(buf)
		if !ok {
			break
		}
		got = append(got, buf[:n])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("popped (-want +got):\n%s", diff)
	}
}

func TestFullAtExactlyN(t *testing.T) {
	for _, cells := range []int{2, 4, 64} {
		t.Run(fmt.Sprint(cells), func(t *testing.T) {
			r, _ := newTestRing(t, cells)
			for i := range cells {
				if err := r.TryPush(msg(0, uint64(i))); err != nil {
					t.Fatalf("TryPush %d of %d: %v", i, cells, err)
				}
			}
			if err := r.TryPush(msg(0, 99)); err != ErrFull {
				t.Fatalf("TryPush on a full ring = %v, want ErrFull", err)
			}
			// Full is not overwrite: the first message is intact, and
			// freeing one cell makes room for exactly one more.
			buf := make([]byte, CellPayload)
			if _, ok := r.TryPop(buf); !ok {
				t.Fatal("TryPop on a full ring failed")
			}
			if _, seq, err := checkMsg(buf); err != nil || seq != 0 {
				t.Fatalf("first message: seq %d, %v", seq, err)
			}
			if err := r.TryPush(msg(0, uint64(cells))); err != nil {
				t.Fatalf("TryPush after one pop: %v", err)
			}
			if err := r.TryPush(msg(0, 99)); err != ErrFull {
				t.Fatalf("second TryPush after one pop = %v, want ErrFull", err)
			}
		})
	}
}

func TestEmpty(t *testing.T) {
	r, _ := newTestRing(t, 4)
	buf := make([]byte, CellPayload)
	if !r.Empty() {
		t.Error("fresh ring not Empty")
	}
	if n, ok := r.TryPop(buf); ok || n != 0 {
		t.Errorf("TryPop on a fresh ring = %d, %v", n, ok)
	}
	if err := r.TryPush(nil); err != nil {
		t.Fatal(err)
	}
	if r.Empty() {
		t.Error("ring with one message is Empty")
	}
	if _, ok := r.TryPop(buf); !ok {
		t.Fatal("TryPop failed")
	}
	if !r.Empty() {
		t.Error("drained ring not Empty")
	}
	if n, ok := r.TryPop(buf); ok || n != 0 {
		t.Errorf("TryPop on a drained ring = %d, %v", n, ok)
	}
}

// TestWrap runs many laps with varying fill levels, checking order and
// content and that the counters have crossed 2^64.
func TestWrap(t *testing.T) {
	const cells = 4
	r, _ := newTestRing(t, cells)
	start := r.prod.Load()
	buf := make([]byte, CellPayload)
	var pushed, popped uint64
	for round := range 1000 {
		burst := round%cells + 1
		for range burst {
			if err := r.TryPush(msg(0, pushed)); err != nil {
				t.Fatalf("round %d: TryPush %d: %v", round, pushed, err)
			}
			pushed++
		}
		for range burst {
			if _, ok := r.TryPop(buf); !ok {
				t.Fatalf("round %d: TryPop %d failed", round, popped)
			}
			if _, seq, err := checkMsg(buf); err != nil || seq != popped {
				t.Fatalf("round %d: got seq %d (%v), want %d", round, seq, err, popped)
			}
			popped++
		}
	}
	if end := r.prod.Load(); end > start || end != start+pushed {
		t.Errorf("producer counter went from %#x to %#x after %d pushes: no wraparound", start, end, pushed)
	}
	if r.cons.Load() != r.prod.Load() {
		t.Errorf("cons %#x, prod %#x disagree", r.cons.Load(), r.prod.Load())
	}
}

// TestPayloadSizes pushes every length from 0 to CellPayload over dirty
// cells: the bytes come back, padded with zeros.
func TestPayloadSizes(t *testing.T) {
	r, _ := newTestRing(t, 2)
	dirty := make([]byte, CellPayload)
	for i := range dirty {
		dirty[i] = 0xff
	}
	buf := make([]byte, CellPayload)
	for size := 0; size <= CellPayload; size++ {
		// Leave garbage in both cells first.
		for range 2 {
			if err := r.TryPush(dirty); err != nil {
				t.Fatal(err)
			}
			if _, ok := r.TryPop(buf); !ok {
				t.Fatal("TryPop failed")
			}
		}
		p := make([]byte, size)
		for i := range p {
			p[i] = byte(i + 1)
		}
		if err := r.TryPush(p); err != nil {
			t.Fatalf("TryPush(%d bytes): %v", size, err)
		}
		n, ok := r.TryPop(buf)
		if !ok || n != CellPayload {
			t.Fatalf("TryPop after %d bytes = %d, %v", size, n, ok)
		}
		want := make([]byte, CellPayload)
		copy(want, p)
		if diff := cmp.Diff(want, buf); diff != "" {
			t.Errorf("%d bytes (-want +got):\n%s", size, diff)
		}
	}
}

func TestPopIntoShortBuffer(t *testing.T) {
	r, _ := newTestRing(t, 2)
	if err := r.TryPush(msg(3, 4)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, ok := r.TryPop(buf)
	if !ok || n != 16 {
		t.Fatalf("TryPop into 16 bytes = %d, %v", n, ok)
	}
	if diff := cmp.Diff(msg(3, 4)[:16], buf); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !r.Empty() {
		t.Error("the cell was not released")
	}
}

func TestTooBig(t *testing.T) {
	r, _ := newTestRing(t, 2)
	if err := r.TryPush(make([]byte, CellPayload+1)); err != ErrTooBig {
		t.Fatalf("TryPush(%d bytes) = %v, want ErrTooBig", CellPayload+1, err)
	}
	if !r.Empty() || r.prod.Load() != initialPos(2) {
		t.Error("a refused push changed the ring")
	}
}

// TestAttachShares pushes through an attached view and pops through the
// owner's, and the reverse, on the same memory.
func TestAttachShares(t *testing.T) {
	owner, mem := newTestRing(t, 8)
	peer, err := AttachRing(mem)
	if err != nil {
		t.Fatal(err)
	}
	if peer.Cells() != 8 {
		t.Errorf("Cells() = %d, want 8", peer.Cells())
	}
	if err := peer.TryPush(msg(7, 1)); err != nil {
		t.Fatal(err)
	}
	if err := owner.TryPush(msg(7, 2)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, CellPayload)
	var got []uint64
	for {
		if _, ok := owner.TryPop(buf); !ok {
			break
		}
		_, seq, err := checkMsg(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, seq)
	}
	if diff := cmp.Diff([]uint64{1, 2}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// A consumer that attaches later resumes where the last one stopped.
	again, err := AttachRing(mem)
	if err != nil {
		t.Fatal(err)
	}
	if again.cons.Load() != owner.cons.Load() {
		t.Errorf("re-attached consumer at %#x, want %#x", again.cons.Load(), owner.cons.Load())
	}
	if _, ok := again.TryPop(make([]byte, CellPayload)); ok {
		t.Error("re-attached consumer took a message twice")
	}
}

// TestAttachRingHostile attaches to memory a hostile or broken peer
// prepared. Every case must fail with an error, never panic.
func TestAttachRingHostile(t *testing.T) {
	const cells = 8
	put := func(off int, v uint64) func([]byte) []byte {
		return func(m []byte) []byte { binary.NativeEndian.PutUint64(m[off:], v); return m }
	}
	tests := []struct {
		name   string
		mutate func([]byte) []byte
		want   error
		reason string
	}{
		{"zeroed", func(m []byte) []byte { clear(m); return m }, ErrCorrupt, "magic"},
		{"bad magic", put(offRingIdent, 0xdeadbeef|1<<32), ErrCorrupt, "magic"},
		{"future version", put(offRingIdent, ringMagic|(ringVersion+1)<<32), ErrCorrupt, "version"},
		{"previous version", put(offRingIdent, ringMagic|(ringVersion-1)<<32), ErrCorrupt, "version"},
		{"version zero", put(offRingIdent, ringMagic), ErrCorrupt, "version"},
		{"zero cells", put(offRingCells, 0), ErrCorrupt, "cell count"},
		{"one cell", put(offRingCells, 1), ErrCorrupt, "cell count"},
		{"not a power of two", put(offRingCells, 6), ErrCorrupt, "cell count"},
		{"huge cell count", put(offRingCells, 1<<62), ErrCorrupt, "cell count"},
		{"all-ones cell count", put(offRingCells, ^uint64(0)), ErrCorrupt, "cell count"},
		{"more cells than memory", put(offRingCells, 16), ErrCorrupt, "need"},
		{"truncated by one byte", func(m []byte) []byte { return m[:len(m)-1] }, ErrCorrupt, "need"},
		{"header only", func(m []byte) []byte { return m[:ringHeaderSize] }, ErrCorrupt, "need"},
		{"shorter than header", func(m []byte) []byte { return m[:ringHeaderSize-1] }, ErrCorrupt, "header"},
		{"empty", func(m []byte) []byte { return m[:0] }, ErrCorrupt, "header"},
		{"misaligned", func(m []byte) []byte {
			c := make([]byte, len(m)+1)[1:]
			copy(c, m)
			return c
		}, ErrMemory, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, mem := newTestRing(t, cells)
			r, err := AttachRing(tt.mutate(mem))
			if !errors.Is(err, tt.want) || r != nil {
				t.Fatalf("AttachRing = %v, %v; want nil, %v", r, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("error %q does not mention %q", err, tt.reason)
			}
		})
	}
}

// TestHostileCounters corrupts the counters and sequences of an attached
// ring: pushes and pops must fail cleanly, never spin or go out of
// bounds.
func TestHostileCounters(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(r *Ring)
		push   error
	}{
		// Producers never read cell sequences: a forged one changes
		// nothing for them.
		{"sequence forged", func(r *Ring) {
			pos := r.prod.Load()
			r.seq(r.cellOff(pos)).Store(pos + 5)
		}, nil},
		{"consumer counters past the producers", func(r *Ring) {
			r.seen.Store(r.prod.Load() + 3)
			r.cons.Store(r.prod.Load() + 3)
		}, ErrCorrupt},
		{"producers' copy of cons rewound", func(r *Ring) { r.seen.Store(r.seen.Load() - 1000) }, nil},
		{"counter rewound a lap", func(r *Ring) { r.prod.Store(r.prod.Load() - 8) }, ErrCorrupt},
		{"counter advanced a lap", func(r *Ring) { r.prod.Store(r.prod.Load() + 8) }, ErrFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newTestRing(t, 8)
			tt.mutate(r)
			pushed := make(chan error, 1)
			go func() { pushed <- r.TryPush(msg(0, 0)) }()
			select {
			case err := <-pushed:
				if err != tt.push {
					t.Errorf("TryPush = %v, want %v", err, tt.push)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("TryPush spins on corrupt counters")
			}
			_, ok := r.TryPop(make([]byte, CellPayload))
			if tt.push != nil && ok {
				t.Error("TryPop delivered from a corrupt ring")
			}
			if tt.push == nil && !ok {
				t.Error("TryPop lost the message pushed")
			}
		})
	}
}

// TestConcurrentProducers has several goroutines push through their own
// attached views of one ring while one consumer drains it: every message
// must arrive exactly once, and each producer's messages in order. Run it
// with -race.
func TestConcurrentProducers(t *testing.T) {
	const (
		producers = 4
		perProd   = 5000
		cells     = 8 // small, so producers keep hitting ErrFull and wrapping
	)
	owner, mem := newTestRing(t, cells)
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range uint64(producers) {
		r, err := AttachRing(mem)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			buf := make([]byte, CellPayload)
			for seq := range uint64(perProd) {
				fillMsg(buf, p, seq)
				for {
					err := r.TryPush(buf)
					if err == nil {
						break
					}
					if err != ErrFull {
						errs <- fmt.Errorf("producer %d: %v", p, err)
						return
					}
					runtime.Gosched()
				}
			}
		})
	}

	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()

	next := make([]uint64, producers)
	buf := make([]byte, CellPayload)
	for got := 0; got < producers*perProd; {
		if _, ok := owner.TryPop(buf); !ok {
			select {
			case err := <-errs:
				t.Fatal(err)
			case <-finished:
				// Every push has returned; anything still missing is lost.
				if owner.Empty() {
					t.Fatalf("producers done, ring empty, %d of %d messages delivered; next %v",
						got, producers*perProd, next)
				}
			default:
			}
			runtime.Gosched()
			continue
		}
		p, seq, err := checkMsg(buf)
		if err != nil {
			t.Fatal(err)
		}
		if p >= producers {
			t.Fatalf("message from unknown producer %d", p)
		}
		if seq != next[p] {
			t.Fatalf("producer %d: got seq %d, want %d", p, seq, next[p])
		}
		next[p]++
		got++
	}
	<-finished
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !owner.Empty() {
		t.Error("ring not empty after every message was consumed")
	}
}

// TestStalled simulates a producer that reserved a cell and died before
// publishing it.
func TestStalled(t *testing.T) {
	r, _ := newTestRing(t, 4)
	buf := make([]byte, CellPayload)

	if _, stuck := r.Stalled(); stuck {
		t.Error("empty ring reported stalled")
	}
	if err := r.TryPush(msg(1, 0)); err != nil {
		t.Fatal(err)
	}
	if _, stuck := r.Stalled(); stuck {
		t.Error("ring with a published message reported stalled")
	}
	if _, ok := r.TryPop(buf); !ok {
		t.Fatal("TryPop failed")
	}

	// The dead producer takes the next position and never publishes.
	off, dead, err := r.reserve()
	if err != nil {
		t.Fatal(err)
	}
	// Live producers fill the rest; the consumer cannot reach them.
	for i := range uint64(3) {
		if err := r.TryPush(msg(2, i)); err != nil {
			t.Fatalf("TryPush %d: %v", i, err)
		}
	}
	if err := r.TryPush(msg(2, 3)); err != ErrFull {
		t.Errorf("TryPush behind the stall = %v, want ErrFull", err)
	}
	if !r.Empty() {
		t.Error("stalled ring not Empty")
	}
	if _, ok := r.TryPop(buf); ok {
		t.Error("TryPop passed an unpublished cell")
	}
	for range 3 { // it stays stuck, at the same position
		if pos, stuck := r.Stalled(); !stuck || pos != dead {
			t.Fatalf("Stalled() = %#x, %v; want %#x, true", pos, stuck, dead)
		}
	}

	// Had the producer only been slow, publishing unblocks everything.
	r.publish(off, dead, msg(1, 1))
	if _, stuck := r.Stalled(); stuck {
		t.Error("still stalled after the late publish")
	}
	var got [][2]uint64
	for {
		if _, ok := r.TryPop(buf); !ok {
			break
		}
		p, seq, err := checkMsg(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, [2]uint64{p, seq})
	}
	want := [][2]uint64{{1, 1}, {2, 0}, {2, 1}, {2, 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after the late publish (-want +got):\n%s", diff)
	}
}

// TestZeroAllocs checks the hot path allocates nothing.
func TestZeroAllocs(t *testing.T) {
	r, _ := newTestRing(t, 8)
	p := msg(0, 0)
	buf := make([]byte, CellPayload)
	allocs := testing.AllocsPerRun(1000, func() {
		if err := r.TryPush(p); err != nil {
			t.Fatal(err)
		}
		if r.Empty() {
			t.Fatal("empty after push")
		}
		if _, ok := r.TryPop(buf); !ok {
			t.Fatal("TryPop failed")
		}
		if _, stuck := r.Stalled(); stuck {
			t.Fatal("stalled")
		}
	})
	if allocs != 0 {
		t.Errorf("push/pop allocates %v times per call", allocs)
	}
	allocs = testing.AllocsPerRun(100, func() {
		for r.TryPush(p) == nil {
		}
		if r.TryPush(p) != ErrFull {
			t.Fatal("not full")
		}
		for {
			if _, ok := r.TryPop(buf); !ok {
				break
			}
		}
	})
	if allocs != 0 {
		t.Errorf("ErrFull path allocates %v times", allocs)
	}
}

// unit builds a TryPushCells unit of n cells: cell k carries (producer,
// seq*16+k) in fillMsg form, so a consumer can tell the cells apart.
func unit(producer, seq uint64, n int) []byte {
	b := make([]byte, n*CellPayload)
	for k := range n {
		fillMsg(b[k*CellPayload:(k+1)*CellPayload], producer, seq*16+uint64(k))
	}
	return b
}

func TestPushCells(t *testing.T) {
	r, _ := newTestRing(t, 8)
	for _, bad := range [][]byte{nil, make([]byte, CellPayload-1), make([]byte, CellPayload+1),
		make([]byte, (MaxPushCells+1)*CellPayload)} {
		if err := r.TryPushCells(bad); err != ErrTooBig {
			t.Errorf("TryPushCells(%d bytes) = %v, want ErrTooBig", len(bad), err)
		}
	}
	small, _ := newTestRing(t, 2)
	if err := small.TryPushCells(unit(0, 0, 3)); err != ErrTooBig {
		t.Errorf("3 cells into a ring of 2 = %v, want ErrTooBig", err)
	}

	// Fill 6 of 8 cells: a unit of 3 does not fit, one of 2 does.
	if err := r.TryPushCells(unit(0, 0, 4)); err != nil {
		t.Fatal(err)
	}
	if err := r.TryPushCells(unit(0, 1, 2)); err != nil {
		t.Fatal(err)
	}
	if err := r.TryPushCells(unit(0, 2, 3)); err != ErrFull {
		t.Fatalf("3 cells into 2 free = %v, want ErrFull", err)
	}
	if err := r.TryPushCells(unit(0, 2, 2)); err != nil {
		t.Fatal(err)
	}
	if err := r.TryPush(nil); err != ErrFull {
		t.Fatalf("push into a full ring = %v", err)
	}
	buf := make([]byte, CellPayload)
	want := []uint64{0, 1, 2, 3, 16, 17, 32, 33}
	for i, w := range want {
		b, ok := r.Peek()
		if !ok {
			t.Fatalf("Peek before cell %d found nothing", i)
		}
		if _, ok := r.TryPop(buf); !ok {
			t.Fatalf("TryPop %d failed", i)
		}
		if b != buf[0] {
			t.Errorf("Peek said %#x, the cell starts %#x", b, buf[0])
		}
		if _, seq, err := checkMsg(buf); err != nil || seq != w {
			t.Fatalf("cell %d: seq %d (%v), want %d", i, seq, err, w)
		}
	}
	if _, ok := r.Peek(); ok {
		t.Error("Peek on an empty ring succeeded")
	}
}

// TestPushCellsWrap pushes units of every size over many laps: each unit's
// cells come out together and in order, across the wrap of the positions
// and of the cell array.
func TestPushCellsWrap(t *testing.T) {
	r, _ := newTestRing(t, 8)
	buf := make([]byte, CellPayload)
	for seq := range uint64(500) {
		n := int(seq%4) + 1
		if err := r.TryPushCells(unit(1, seq, n)); err != nil {
			t.Fatalf("unit %d: %v", seq, err)
		}
		for k := range uint64(n) {
			if _, ok := r.TryPop(buf); !ok {
				t.Fatalf("unit %d cell %d missing", seq, k)
			}
			if _, got, err := checkMsg(buf); err != nil || got != seq*16+k {
				t.Fatalf("unit %d cell %d: got %d (%v)", seq, k, got, err)
			}
		}
	}
}

// TestPushCellsConcurrent has producers push units of 1 to 3 cells at
// once: no cell of another producer lands inside a unit, and a unit's
// later cells are published when its first one is.
func TestPushCellsConcurrent(t *testing.T) {
	const producers, perProd, cells = 3, 3000, 8
	owner, mem := newTestRing(t, cells)
	var wg sync.WaitGroup
	for p := range uint64(producers) {
		r, err := AttachRing(mem)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for seq := range uint64(perProd) {
				u := unit(p, seq, int(seq%3)+1)
				for r.TryPushCells(u) != nil {
					runtime.Gosched()
				}
			}
		})
	}
	next := make([]uint64, producers)
	buf := make([]byte, CellPayload)
	for got := 0; got < producers*perProd; {
		if _, ok := owner.TryPop(buf); !ok {
			runtime.Gosched()
			continue
		}
		p, seq, err := checkMsg(buf)
		if err != nil || p >= producers || seq != next[p]*16 {
			t.Fatalf("first cell: producer %d seq %d (%v); next %v", p, seq, err, next)
		}
		for k := range next[p] % 3 {
			if _, ok := owner.TryPop(buf); !ok {
				t.Fatalf("producer %d unit %d: cell %d not published with the first", p, next[p], k+1)
			}
			q, s, err := checkMsg(buf)
			if err != nil || q != p || s != next[p]*16+k+1 {
				t.Fatalf("producer %d unit %d cell %d: got producer %d seq %d (%v)", p, next[p], k+1, q, s, err)
			}
		}
		next[p]++
		got++
	}
	wg.Wait()
}
