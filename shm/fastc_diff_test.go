//go:build cgo

package shm

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fastc"
	"github.com/gopsm2/libfabric-psm2/internal/ring"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// The C fast path (cmd/libfabric-psm2/fast: cell.h) builds inline cells for
// fi_inject and parses them in fi_cq_read. These differential tests give C
// and this package the same random messages and compare: cells C builds
// must be delivered by Poll exactly as sent, and cells sendInline builds
// must be read by C exactly as sent, or left to Go when C cannot take them
// (header flags C does not know).

// cHFlags are the message header flags C knows (provider's hfTagged and
// hfData; this package carries them opaquely).
const cHFlags = 3

func randInline(r *rand.Rand, maxLen int) (transport.Header, []byte) {
	return randMsg(r, 0, maxLen)
}

// randMsg is a message of minLen to maxLen random bytes with a random
// header (flags C knows, data half of the time).
func randMsg(r *rand.Rand, minLen, maxLen int) (transport.Header, []byte) {
	n := minLen + r.IntN(maxLen-minLen+1)
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	h := transport.Header{Len: uint64(n), Flags: uint32(r.IntN(cHFlags + 1)), Tag: r.Uint64()}
	if r.IntN(2) == 0 {
		h.Data = r.Uint64()
	}
	return h, p
}

func TestFastCBuildsWhatPollDelivers(t *testing.T) {
	a, b, ab := pair(t)
	p := a.peers[int(ab)-1]
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		h, payload := randInline(r, inlineMax(FastInlineCells, false)+contPayload)
		m := fastc.Inline{Len: h.Len, EPID: a.EPID(), Tag: h.Tag, Data: h.Data, HFlags: h.Flags,
			WithData: h.Data != 0}
		cells := fastc.Build(m, payload)
		fits := h.Len <= uint64(inlineMax(FastInlineCells, h.Data != 0))
		if (cells != nil) != fits {
			t.Fatalf("message %d (%d bytes, data %v): C built %d bytes of cells", i, h.Len, h.Data != 0, len(cells))
		}
		if cells == nil {
			continue
		}
		if err := p.ring.TryPushCells(cells); err != nil {
			t.Fatal(err)
		}
		d := recvOne(t, a, b)
		if d.Hdr != h || !bytes.Equal(d.Payload, payload) || d.SrcEPID != a.EPID() {
			t.Fatalf("message %d: C sent %+v %x; Poll delivered %+v %x from %#x", i, h, payload, d.Hdr, d.Payload, d.SrcEPID)
		}
	}
}

func TestFastCParsesWhatSendBuilds(t *testing.T) {
	a, b, ab := pair(t, func(c *Config) { c.InlineCells = ring.MaxPushCells })
	r := rand.New(rand.NewPCG(3, 4))
	taken, left := 0, 0
	for i := 0; i < 3000; i++ {
		h, payload := randInline(r, inlineMax(a.inlineCells, false))
		if r.IntN(8) == 0 {
			h.Flags |= 1 << (2 + r.IntN(30)) // a flag C does not know
		}
		if h.Len > uint64(inlineMax(a.inlineCells, h.Data != 0)) {
			continue
		}
		before := len(b.rec.got)
		sendAll(t, a, b, ab, h, [][]byte{payload}, uint64(i), 0)
		// The cells are in b's ring: C reads them as fi_cq_read would.
		var cells []byte
		for k := uint64(0); k < ring.MaxPushCells; k++ {
			c, ok := b.ring.PeekCell(k)
			if !ok {
				break
			}
			cells = append(cells, c...)
		}
		m, got, ok := fastc.Parse(cells)
		want := h.Flags&^cHFlags == 0
		if ok != want {
			t.Fatalf("message %d (%d bytes, flags %#x, data %v): C took it: %v, want %v", i, h.Len, h.Flags, h.Data != 0, ok, want)
		}
		if ok {
			taken++
			if m.Len != h.Len || m.Tag != h.Tag || m.Data != h.Data || m.HFlags != h.Flags ||
				m.WithData != (h.Data != 0) || m.EPID != a.EPID() || !bytes.Equal(got, payload) {
				t.Fatalf("message %d: sent %+v %x from %#x; C read %+v %x", i, h, payload, a.EPID(), m, got)
			}
		} else {
			left++
		}
		pollUntil(t, 10*time.Second, func() bool { return len(b.rec.got) > before }, a, b)
	}
	if taken == 0 || left == 0 {
		t.Fatalf("C took %d messages and left %d: both kinds should occur", taken, left)
	}
}

// randEager is a message for a bounce buffer: longer than C's inline
// messages, up to max bytes.
func randEager(r *rand.Rand, max int) (transport.Header, []byte) {
	return randMsg(r, inlineMax(FastInlineCells, false)+1, max)
}

func TestFastCEagerCellIsWhatPollDelivers(t *testing.T) {
	a, b, ab := pair(t)
	p := a.peers[int(ab)-1]
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 2000; i++ {
		h, payload := randEager(r, a.threshold)
		// As C's psm2_fast_send does it: a free buffer of a's, the
		// bytes, one cell naming it.
		k, ok := a.allocBuf(0)
		if !ok {
			t.Fatalf("message %d: no free bounce buffer", i)
		}
		copy(a.seg.Buffer(k), payload)
		m := fastc.Inline{Len: h.Len, EPID: a.EPID(), Tag: h.Tag, Data: h.Data, HFlags: h.Flags}
		if err := p.ring.TryPush(fastc.BuildEager(m, uint16(k))); err != nil {
			t.Fatal(err)
		}
		d := recvOne(t, a, b)
		if d.Hdr != h || !bytes.Equal(d.Payload, payload) || d.SrcEPID != a.EPID() {
			t.Fatalf("message %d: C sent %+v (%d bytes); Poll delivered %+v (%d bytes, equal %v) from %#x",
				i, h, len(payload), d.Hdr, len(d.Payload), bytes.Equal(d.Payload, payload), d.SrcEPID)
		}
		if a.busy.Load()&(1<<k) != 0 {
			t.Fatalf("message %d: bounce buffer %d still busy after delivery", i, k)
		}
	}
}

func TestFastCParsesEagerSendBuilds(t *testing.T) {
	a, b, ab := pair(t)
	r := rand.New(rand.NewPCG(7, 8))
	taken, left := 0, 0
	for i := 0; i < 2000; i++ {
		h, payload := randEager(r, a.threshold)
		if r.IntN(8) == 0 {
			h.Flags |= 1 << (2 + r.IntN(30)) // a flag C does not know
		}
		before := len(b.rec.got)
		sendAll(t, a, b, ab, h, [][]byte{payload}, uint64(i), 0)
		cell, published := b.ring.PeekCell(0)
		if !published {
			t.Fatalf("message %d: no cell in the ring", i)
		}
		m, k, ok := fastc.ParseEager(cell)
		want := h.Flags&^cHFlags == 0
		if ok != want {
			t.Fatalf("message %d (%d bytes, flags %#x): C took it: %v, want %v", i, h.Len, h.Flags, ok, want)
		}
		if ok {
			taken++
			buf := a.seg.Buffer(int(k))
			if m.Len != h.Len || m.Tag != h.Tag || m.Data != h.Data || m.HFlags != h.Flags ||
				m.EPID != a.EPID() || buf == nil || !bytes.Equal(buf[:m.Len], payload) {
				t.Fatalf("message %d: sent %+v from %#x; C read %+v, buffer %d", i, h, a.EPID(), m, k)
			}
		} else {
			left++
		}
		pollUntil(t, 10*time.Second, func() bool { return len(b.rec.got) > before }, a, b)
	}
	if taken == 0 || left == 0 {
		t.Fatalf("C took %d messages and left %d: both kinds should occur", taken, left)
	}
	// An inline cell is not an eager one.
	if _, _, ok := fastc.ParseEager(fastc.Build(fastc.Inline{Len: 3, EPID: 1}, []byte{1, 2, 3})); ok {
		t.Fatal("C read an inline cell as an eager one")
	}
}

// TestFastCParsesRTSAndBuildsFIN: C reads the rendezvous request cells
// Send builds (header, the sender's address of the data, the send id),
// leaves to Go those with header flags it does not know, and the FIN it
// builds after its own fetch completes the send at the sender, like the
// FIN of Go's Fetch.
func TestFastCParsesRTSAndBuildsFIN(t *testing.T) {
	a, b, ab := pair(t)
	ba, err := b.Connect(a.EPID())
	if err != nil {
		t.Fatal(err)
	}
	back := b.peers[int(ba)-1] // b's view of a's ring
	r := rand.New(rand.NewPCG(9, 10))
	taken, left := 0, 0
	for i := 0; i < 500; i++ {
		h, payload := randMsg(r, a.threshold+1, 4*a.threshold)
		if r.IntN(8) == 0 {
			h.Flags |= 1 << (2 + r.IntN(30)) // a flag C does not know
		}
		cookie := uint64(1000 + i)
		if done, err := a.Send(ab, &h, [][]byte{payload}, cookie, 0); done || err != nil {
			t.Fatalf("message %d: Send = %v, %v; want a rendezvous", i, done, err)
		}
		cell, published := b.ring.PeekCell(0)
		if !published {
			t.Fatalf("message %d: no cell in the ring", i)
		}
		m, addr, sid, ok := fastc.ParseRTS(cell)
		if want := h.Flags&^cHFlags == 0; ok != want {
			t.Fatalf("message %d (flags %#x): C took it: %v, want %v", i, h.Flags, ok, want)
		}
		if !ok {
			// Go's Fetch, as the provider would do it.
			left++
			before := len(b.rec.got)
			pollUntil(t, 10*time.Second, func() bool { return len(b.rec.got) > before }, b)
			d := b.rec.got[len(b.rec.got)-1]
			dst := make([]byte, h.Len)
			if done, n, err := b.Fetch(&d.Rndv, dst, 0); !done || n != int(h.Len) || err != nil || !bytes.Equal(dst, payload) {
				t.Fatalf("message %d: Go's fetch = %v, %d, %v", i, done, n, err)
			}
		} else {
			taken++
			if m.Len != h.Len || m.Tag != h.Tag || m.Data != h.Data || m.HFlags != h.Flags ||
				m.EPID != a.EPID() || addr != uint64(uintptr(unsafe.Pointer(&payload[0]))) || sid == 0 {
				t.Fatalf("message %d: sent %+v from %#x at %p; C read %+v, address %#x, send id %#x",
					i, h, a.EPID(), &payload[0], m, addr, sid)
			}
			// C's fetch: take the cell, read the bytes (as process_vm_readv
			// would), push C's FIN.
			var cell [ring.CellSize]byte
			if _, ok := b.ring.TryPop(cell[:]); !ok {
				t.Fatalf("message %d: pop", i)
			}
			if err := back.ring.TryPush(fastc.BuildFIN(b.EPID(), sid)); err != nil {
				t.Fatal(err)
			}
		}
		pollUntil(t, 10*time.Second, func() bool { _, ok := a.rec.sendDone[cookie]; return ok }, a, b)
		if err := a.rec.sendDone[cookie]; err != nil {
			t.Fatalf("message %d: send completed with %v", i, err)
		}
	}
	if taken == 0 || left == 0 {
		t.Fatalf("C took %d requests and left %d: both kinds should occur", taken, left)
	}
	if s := a.Stats(); s.Faults != 0 || s.Dropped != 0 {
		t.Fatalf("sender: %+v", s)
	}
	// An eager cell is not a rendezvous request.
	if _, _, _, ok := fastc.ParseRTS(fastc.BuildEager(fastc.Inline{Len: 300, EPID: 1}, 0)); ok {
		t.Fatal("C read an eager cell as a rendezvous request")
	}
}

// TestFastCCellCounts checks that C counts an inline message's cells as
// this package does at every length up to the longest, and that the
// error answer C pads to fill the cells it reserved (fast/cell.h: psm2_pad_len)
// takes exactly those cells.
func TestFastCCellCounts(t *testing.T) {
	for _, data := range []bool{false, true} {
		for n := 0; n <= inlineMax(ring.MaxPushCells, data)+contPayload; n++ {
			want := inlineCells(n, data)
			if want > ring.MaxPushCells {
				want = 0
			}
			if got := fastc.Cells(uint64(n), data); got != want {
				t.Fatalf("%d bytes (data %v): C counts %d cells, Go %d", n, data, got, want)
			}
		}
	}
	for k := 1; k <= ring.MaxPushCells; k++ {
		if got := inlineCells(int(fastc.PadLen(k)), true); got != k {
			t.Errorf("padding for %d cells takes %d", k, got)
		}
	}
}

// TestStreamedEager pushes eager cells as C's psm2_fast_send streams them
// (cellStream: the cell first, the bounce buffer filled after, the stream
// word counting), with the filling done concurrently in chunks, and checks
// that Poll and C's receiver (psm2_stream_copy) both read every byte; that
// a broken stream is dropped, counted and its buffer given back, with
// nothing delivered; and that a stream word naming a later stream means
// the buffer is full.
func TestStreamedEager(t *testing.T) {
	a, b, ab := pair(t)
	p := a.peers[int(ab)-1]
	w := a.seg.Stream()
	r := rand.New(rand.NewPCG(9, 10))
	seq := uint64(0)
	gaveUp, cCopies := 0, 0
	// fill fills the rest as the sender would; with nap, pausing a few
	// microseconds between chunks (far less than C waits before it
	// leaves a message to Go).
	fill := func(buf, payload []byte, kbuf, from int, s uint64, breakAt int, nap bool, started, done chan<- struct{}) {
		defer close(done)
		// A thread of its own, running before C starts to wait (the
		// scheduler could otherwise hold it back longer than C waits).
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		close(started)
		for off := from; off < len(payload); {
			k := min(1000+(off*7919)%3000, len(payload)-off)
			if breakAt > 0 && off+k > breakAt {
				a.seg.StreamBroken().Store(s<<32 | uint64(kbuf+1))
				w.Store(s<<32 | streamBroken)
				return
			}
			copy(buf[off:off+k], payload[off:off+k])
			off += k
			w.Store(s<<32 | uint64(off))
			if nap {
				// (busy: a sleep may last milliseconds)
				for t0 := time.Now(); time.Since(t0) < time.Duration(k%20)*time.Microsecond; {
				}
			}
		}
	}
	for i := 0; i < 300; i++ {
		h, payload := randMsg(r, 8192, a.threshold)
		k, ok := a.allocBuf(0)
		if !ok {
			t.Fatalf("message %d: no free bounce buffer", i)
		}
		buf := a.seg.Buffer(k)
		seq++
		first := 4096
		copy(buf, payload[:first])
		w.Store(seq<<32 | uint64(first))
		m := fastc.Inline{Len: h.Len, EPID: a.EPID(), Tag: h.Tag, Data: h.Data, HFlags: h.Flags}
		cell := fastc.BuildEager(m, uint16(k))
		cell[offCellFlags] |= cellStream
		put64(cell, offCellW5, seq)
		if _, _, eagerOK := fastc.ParseEager(cell); !eagerOK && h.Flags&^cHFlags == 0 {
			t.Fatalf("message %d: C does not take its own streamed cell", i)
		}
		broken := i%5 == 4
		breakAt := 0
		if broken {
			breakAt = first + 1 + r.IntN(len(payload)-first-1)
		}
		done := make(chan struct{})
		if i%2 == 1 {
			// C's receiver, against the same filling.
			started := make(chan struct{})
			go fill(buf, payload, k, first, seq, breakAt, true, started, done)
			<-started
			dst := make([]byte, len(payload))
			got := fastc.StreamCopy((*uint64)(unsafe.Pointer(w)), seq, unsafe.Pointer(&dst[0]),
				unsafe.Pointer(&buf[0]), len(payload))
			<-done
			if !got && !broken {
				// C gave up waiting (the filler was off its CPU for
				// milliseconds): it may, as Go then takes the message;
				// once the buffer is full it must not.
				gaveUp++
				got = fastc.StreamCopy((*uint64)(unsafe.Pointer(w)), seq, unsafe.Pointer(&dst[0]),
					unsafe.Pointer(&buf[0]), len(payload))
			}
			if got == broken || (!broken && !bytes.Equal(dst, payload)) {
				t.Fatalf("message %d (%d bytes, broken %v): C copied %v, equal %v", i, len(payload), broken, got,
					bytes.Equal(dst, payload))
			}
			cCopies++
			a.freeBuf(k)
			continue
		}
		before := b.Stats()
		n := len(b.rec.got)
		if err := p.ring.TryPush(cell); err != nil {
			t.Fatal(err)
		}
		go fill(buf, payload, k, first, seq, breakAt, true, make(chan struct{}), done)
		if broken {
			<-done
			if i%10 == 4 {
				// The sender has started another stream since:
				// the word moved on, the broken one is still named.
				w.Store((seq + 1) << 32)
			}
			pollUntil(t, 10*time.Second, func() bool { return b.Stats().Dropped > before.Dropped }, a, b)
			if len(b.rec.got) != n || b.Stats().Faults != before.Faults+1 {
				t.Fatalf("message %d: a broken stream was delivered or not counted: %+v", i, b.Stats())
			}
		} else {
			d := recvOne(t, a, b)
			<-done
			if d.Hdr != h || !bytes.Equal(d.Payload, payload) {
				t.Fatalf("message %d: streamed %d bytes; Poll delivered %d (equal %v)", i, len(payload),
					len(d.Payload), bytes.Equal(d.Payload, payload))
			}
		}
		if a.busy.Load()&(1<<k) != 0 {
			t.Fatalf("message %d: bounce buffer %d still busy", i, k)
		}
	}
	if gaveUp > cCopies/4 {
		t.Errorf("C gave up on %d of %d streams its filler was filling", gaveUp, cCopies)
	}
	// A word naming a later stream: ours is full, unless the broken word
	// names ours.
	dst := make([]byte, 64)
	src := make([]byte, 64)
	w.Store((seq + 1) << 32)
	a.seg.StreamBroken().Store((seq-1)<<32 | 1)
	if !fastc.StreamCopy((*uint64)(unsafe.Pointer(w)), seq, unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), 64) {
		t.Fatal("C waited for a stream the word says is over")
	}
	a.seg.StreamBroken().Store(seq<<32 | 1)
	if fastc.StreamCopy((*uint64)(unsafe.Pointer(w)), seq, unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[0]), 64) {
		t.Fatal("C took a broken stream as full once the word moved on")
	}
}

// TestAnswerInBuffer has b answer into a's own bounce buffer, as C's
// psm2_serve_one does for an atomic request that came in it
// (cellAnswerBuf): a's Poll delivers the bytes there and frees the
// buffer, and drops (and counts) an answer naming a buffer a did not hand
// to b, or one that is free.
func TestAnswerInBuffer(t *testing.T) {
	a, b, ab := pair(t)
	ba, err := b.Connect(a.EPID())
	if err != nil {
		t.Fatal(err)
	}
	pa, pb := a.peers[int(ab)-1], b.peers[int(ba)-1]
	r := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 200; i++ {
		h, payload := randMsg(r, 1, a.seg.BufferSize())
		k, ok := a.allocBuf(0)
		if !ok {
			t.Fatalf("answer %d: no free bounce buffer", i)
		}
		copy(a.seg.Buffer(k), payload)
		holder := pa.idx
		if i%7 == 6 {
			holder = -1 // not handed to b
		}
		a.holder[k] = holder
		m := fastc.Inline{Len: h.Len, EPID: b.EPID(), Tag: h.Tag, HFlags: h.Flags}
		cell := fastc.BuildEager(m, uint16(k))
		cell[offCellKind] = cellAnswerBuf
		before, n := a.Stats().Dropped, len(a.rec.got)
		if err := pb.ring.TryPush(cell); err != nil {
			t.Fatal(err)
		}
		if holder < 0 {
			pollUntil(t, 10*time.Second, func() bool { return a.Stats().Dropped > before }, a, b)
			if len(a.rec.got) != n || a.busy.Load()&(1<<k) == 0 {
				t.Fatalf("answer %d: one naming a buffer b did not hold was taken", i)
			}
			a.freeBuf(k)
			continue
		}
		d := recvOne(t, b, a)
		if d.Hdr.Tag != h.Tag || d.Hdr.Flags != h.Flags || !bytes.Equal(d.Payload, payload) || d.SrcEPID != b.EPID() {
			t.Fatalf("answer %d: delivered %+v (%d bytes, equal %v)", i, d.Hdr, len(d.Payload), bytes.Equal(d.Payload, payload))
		}
		if a.busy.Load()&(1<<k) != 0 {
			t.Fatalf("answer %d: buffer %d not freed", i, k)
		}
	}
	// A free buffer named: dropped.
	before := a.Stats().Dropped
	cell := fastc.BuildEager(fastc.Inline{Len: 8, EPID: b.EPID()}, 3)
	cell[offCellKind] = cellAnswerBuf
	if err := pb.ring.TryPush(cell); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, 10*time.Second, func() bool { return a.Stats().Dropped > before }, a, b)
}

// The run of unexpected messages a ring holds for receives not posted yet
// is one rule with two implementations: holdHead here, for Poll, and
// psm2_held_run in C, for fi_cq_read's delivery. Given the same rings of
// 1 to holdUnits+2 random messages (inline of any size, eager,
// rendezvous, some behind the head marked taken), both must hold or both
// take.
func TestFastCHoldsWhatPollHolds(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	inMax := inlineMax(DefaultInlineCells, false)
	held, taken := 0, 0
	for i := range 200 {
		a, b, ab := pair(t)
		n := 1 + r.IntN(holdUnits+2)
		kinds := make([]byte, n)
		at := uint64(0)
		for k := range kinds {
			var size int
			switch kinds[k] = "iiier"[r.IntN(5)]; kinds[k] {
			case 'i':
				size = r.IntN(inMax + 1)
			case 'e':
				size = inMax + 1 + r.IntN(4096)
			case 'r':
				size = 1 << 20
			}
			h := transport.Header{Len: uint64(size), Flags: uint32(r.IntN(cHFlags + 1)), Tag: r.Uint64()}
			sendAll(t, a, b, ab, h, [][]byte{make([]byte, size)}, uint64(k+1), transport.SendCopy)
			cells := uint64(1)
			if kinds[k] == 'i' {
				cells = uint64(inlineCells(size, false))
			}
			// A message behind the head that C delivered out of ring
			// order: every cell marked taken (psm2_later_match).
			if k > 0 && r.IntN(4) == 0 {
				kinds[k] = 't'
				for c := range cells {
					cell, _ := b.ring.PeekCell(at + c)
					cell[offCellKind] = cellTaken
				}
			}
			at += cells
		}
		goHeld := b.holdHead(&holder{recorder: newRecorder(), hold: true})
		if cHeld := fastc.HeldRun(b.RingProbe()); cHeld != goHeld {
			t.Fatalf("ring %d (%s): holdHead %v, psm2_held_run %v", i, kinds, goHeld, cHeld)
		}
		if goHeld {
			held++
		} else {
			taken++
		}
	}
	if held == 0 || taken == 0 {
		t.Fatalf("%d rings held, %d taken: the test exercises one side only", held, taken)
	}
	t.Logf("%d rings held, %d taken alike", held, taken)
}
