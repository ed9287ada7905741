//go:build cgo

package provider

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fastc"
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/atomicop"
	"github.com/gopsm2/libfabric-psm2/provider/match"
)

// TestFastCMatchesLikeTheEngine gives the C matcher (fast/match.h:
// psm2_rq_match, which delivers inline messages to the receives C queued)
// and the engine (package match's Key, Post and Match, as recvLocked
// and Deliver use them) the same random receive queues, tag masks, ignore bits,
// directed sources and messages, and requires the same receive to win.
func TestFastCMatchesLikeTheEngine(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	peers := []uint64{0x11, 0, 0x33, 0x44} // fi_addr 1 has no connection
	// Tags from a small set, so that matches are common.
	tags := []uint64{0, 1, 2, 0xff, 1 << 59, 1<<60 | 7, ^uint64(0)}
	pick := func() uint64 {
		if r.IntN(4) == 0 {
			return r.Uint64()
		}
		return tags[r.IntN(len(tags))]
	}
	hits, misses := 0, 0
	for round := 0; round < 200000; round++ {
		mask := ^uint64(0)
		if r.IntN(2) == 0 {
			mask >>= 4 // FI_PSM2_TAG_LAYOUT=tag60: 4 bits for data
		}
		caps := uint64(0)
		if r.IntN(2) == 0 {
			caps = fi.DIRECTED_RECV
		}
		q := make([]fastc.RQ, r.IntN(8))
		for i := range q {
			flags := uint64(fi.MSG)
			if r.IntN(2) == 0 {
				flags = fi.TAGGED
			}
			src := fi.AddrUnspec
			if r.IntN(2) == 0 {
				// Only connected sources: C queues no other directed receive.
				for src = uint64(r.IntN(len(peers))); peers[src] == 0; src = uint64(r.IntN(len(peers))) {
				}
			}
			ignore := uint64(0)
			if r.IntN(3) == 0 {
				ignore = pick()
			}
			q[i] = fastc.RQ{Src: src, Tag: pick(), Ignore: ignore, Context: uint64(i), Flags: flags}
		}
		tagged := r.IntN(2) == 0
		tag, epid := pick(), peers[r.IntN(len(peers))]
		if epid == 0 {
			epid = 0x99 // a sender with no fi_addr
		}
		if !tagged {
			tag = 0 // an untagged message carries no tag
		}
		got := fastc.Match(q, mask, caps, peers, tagged, tag, epid)

		want := -1
		msp := uint8(0)
		if tagged {
			msp = 1
		}
		var e match.Engine[rmaOp]
		for _, rq := range q {
			o := e.New(opRecv) // IDs 0, 1, ...: the queue's indices
			o.Space = space(rq.Flags)
			o.Tag, o.Ign = match.Key(o.Space, rq.Tag, rq.Ignore, mask)
			if caps&fi.DIRECTED_RECV != 0 && rq.Src != fi.AddrUnspec {
				o.Src = peers[rq.Src]
			}
			e.Post(o)
		}
		if o := e.Match(msp, tag, epid); o != nil {
			want = int(o.ID)
		}
		if got != want {
			t.Fatalf("round %d: mask %#x caps %#x, message tagged %v tag %#x from %#x, queue %+v: C takes %d, the engine %d",
				round, mask, caps, tagged, tag, epid, q, got, want)
		}
		if want >= 0 {
			hits++
		} else {
			misses++
		}
	}
	if hits < 1000 || misses < 1000 {
		t.Fatalf("%d matches, %d misses: the inputs do not exercise both", hits, misses)
	}
}

// TestFastCAtomicsLikeTheEngine gives the C target's apply (ucopy.c:
// psm2_uapply, which psm2_fast_serve uses) and the engine's atomicApply
// the same random integer ops, datatypes, counts, operands, compare values
// and memory, and requires the same memory and old values after.
func TestFastCAtomicsLikeTheEngine(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	// Values from a small set, so that compares and limits hit.
	vals := []uint64{0, 1, 2, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 1 << 31, 1<<32 - 1, 1 << 63, ^uint64(0)}
	pick := func() uint64 {
		if r.IntN(3) == 0 {
			return r.Uint64()
		}
		return vals[r.IntN(len(vals))]
	}
	fill := func(b []byte) {
		for i := 0; i+8 <= len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], pick())
		}
	}
	applied := 0
	for round := 0; round < 100000; round++ {
		dt := r.IntN(atomicop.Uint64 + 1)
		op := r.IntN(atomicop.NumOps)
		count := 1 + r.IntN(4)
		n := count * atomicop.Size[dt]
		var mem, src, cmp [4 * 8]byte
		fill(mem[:])
		fill(src[:])
		fill(cmp[:])
		if r.IntN(2) == 0 {
			copy(cmp[:n], mem[:n]) // a compare that hits everywhere
		}
		goMem, cMem := mem, mem
		var goOld, cOld [4 * 8]byte
		var sp, cp unsafe.Pointer = unsafe.Pointer(&src[0]), nil
		if atomicop.IsCompare(op) {
			cp = unsafe.Pointer(&cmp[0])
		}
		var gsrc, gcmp []byte = src[:n], nil
		if cp != nil {
			gcmp = cmp[:n]
		}
		if op == atomicop.Read {
			sp, gsrc = nil, nil
		}
		errno := atomicApply(op, dt, goMem[:n], gsrc, gcmp, goOld[:n])
		rc := fastc.UApply(op, dt, unsafe.Pointer(&cMem[0]), sp, cp, unsafe.Pointer(&cOld[0]), count)
		if errno != 0 || rc != 0 {
			t.Fatalf("op %d dt %d count %d: Go errno %v, C %d", op, dt, count, errno, rc)
		}
		if goMem != cMem || goOld != cOld {
			t.Fatalf("op %d dt %d count %d mem %x src %x cmp %x:\nGo  mem %x old %x\nC   mem %x old %x",
				op, dt, count, mem[:n], src[:n], cmp[:n], goMem[:n], goOld[:n], cMem[:n], cOld[:n])
		}
		applied++
	}
	// C refuses what it does not apply: misaligned memory, other types.
	var mem [16]byte
	var v [8]byte
	if rc := fastc.UApply(atomicop.Sum, atomicop.Uint64, unsafe.Pointer(&mem[1]), unsafe.Pointer(&v[0]), nil, unsafe.Pointer(&v[0]), 1); rc != -2 {
		t.Errorf("misaligned: C says %d, want -2", rc)
	}
	if rc := fastc.UApply(atomicop.Sum, atomicop.Double, unsafe.Pointer(&mem[0]), unsafe.Pointer(&v[0]), nil, unsafe.Pointer(&v[0]), 1); rc != -2 {
		t.Errorf("double: C says %d, want -2", rc)
	}
	t.Logf("%d ops compared", applied)
}

// TestFastCPeerSlotLikeGo: C's peer-table slot of an fi_addr (page.h,
// psm2_peer_slot) is Go's (fastSlot), for every rx_ctx_bits, and it keeps
// the contexts of one scalable peer next to its base address's slot.
func TestFastCPeerSlotLikeGo(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for bits := 0; bits <= 12; bits++ {
		for range 2000 {
			base := uint64(r.IntN(1 << 12))
			rx := uint64(0)
			a := base
			if bits > 0 {
				rx = uint64(r.IntN(1 << bits))
				a |= rx << (64 - bits)
			}
			c, g := fastc.PeerSlot(a, bits), fastSlot(a, bits)
			if c != g || g != base<<bits|rx {
				t.Fatalf("bits %d, fi_addr %#x: C slot %#x, Go %#x, want %#x", bits, a, c, g, base<<bits|rx)
			}
		}
	}
}
