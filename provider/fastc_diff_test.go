//go:build cgo

package provider

import (
	"math/rand/v2"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fastc"
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// TestFastCMatchesLikeTheEngine gives the C matcher (fast.h:
// psm2_rq_match, which delivers inline messages to the receives C queued)
// and the engine's rule (matchKey and matches, as recvLocked posts a
// receive) the same random receive queues, tag masks, ignore bits,
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
		h := transport.Header{Tag: tag}
		for i, rq := range q {
			o := op{space: space(rq.Flags)}
			o.tag, o.ign = matchKey(o.space, rq.Tag, rq.Ignore, mask)
			if caps&fi.DIRECTED_RECV != 0 && rq.Src != fi.AddrUnspec {
				o.src = peers[rq.Src]
			}
			if o.space == msp && matches(&o, &h, epid) {
				want = i
				break
			}
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
