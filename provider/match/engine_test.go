package match

import (
	"math/rand/v2"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/transport"
)

type eng = Engine[struct{}]

func post(e *eng, sp uint8, tag, ign, src uint64, flags uint64) *Op[struct{}] {
	o := e.New(1)
	o.Space, o.Flags = sp, flags
	o.Tag, o.Ign = Key(sp, tag, ign, ^uint64(0)>>4)
	o.Src = src
	e.Post(o)
	return o
}

func TestKey(t *testing.T) {
	tag, ign := Key(Untagged, 5, 0, 0xff)
	if tag != 0 || ign != ^uint64(0) {
		t.Fatalf("untagged key %#x %#x: want any tag", tag, ign)
	}
	tag, ign = Key(Tagged, 0x1234, 0x0f, 0xff)
	if tag != 0x34 || ign != ^uint64(0xff)|0x0f {
		t.Fatalf("tagged key %#x %#x", tag, ign)
	}
	o := Op[struct{}]{Tag: tag, Ign: ign}
	for _, c := range []struct {
		tag  uint64
		want bool
	}{{0x34, true}, {0x3f, true}, {0x1130, true}, {0x44, false}} {
		if got := o.Matches(c.tag, 9); got != c.want {
			t.Errorf("tag %#x matches %v, want %v", c.tag, got, c.want)
		}
	}
	o.Src = 7
	if o.Matches(0x34, 9) || !o.Matches(0x34, 7) {
		t.Fatal("a directed receive takes only its source's messages")
	}
}

// TestEngineAgainstModel drives an Engine and a plain model (slices in
// posting order, the first match wins) with the same random receives and
// messages, and requires the same receive or message to be taken each
// time, and the same counts.
func TestEngineAgainstModel(t *testing.T) {
	type mrecv struct {
		id            uint64
		sp            uint8
		tag, ign, src uint64
	}
	type mmsg struct {
		sp       uint8
		tag, src uint64
		n        int
	}
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var e eng
		var recvs []mrecv
		var msgs []mmsg
		bytes := 0
		for step := range 200 {
			sp := uint8(r.IntN(2))
			tag, src := uint64(r.IntN(4)), uint64(r.IntN(3))
			switch r.IntN(3) {
			case 0: // a receive is posted: it takes the first message it matches
				dsrc := uint64(0)
				if r.IntN(3) == 0 {
					dsrc = 1 + uint64(r.IntN(2))
				}
				ign := uint64(0)
				if r.IntN(4) == 0 {
					ign = 1
				}
				o := e.New(1)
				o.Space, o.Src = sp, dsrc
				o.Tag, o.Ign = Key(sp, tag, ign, ^uint64(0))
				want := -1
				for i, m := range msgs {
					if m.sp == sp && (dsrc == 0 || dsrc == m.src) && (m.tag^o.Tag)&^o.Ign == 0 {
						want = i
						break
					}
				}
				u := e.TakeUnexpected(o)
				if (u == nil) != (want < 0) {
					t.Fatalf("round %d step %d: engine took %v, model %d", round, step, u, want)
				}
				if u != nil {
					m := msgs[want]
					if u.Hdr.Tag != m.tag || u.Src != m.src || len(u.Payload) != m.n {
						t.Fatalf("round %d step %d: engine took %+v, model %+v", round, step, u.Hdr, m)
					}
					msgs = append(msgs[:want], msgs[want+1:]...)
					bytes -= m.n
					e.FreeUnexpected(u)
					e.Free(o)
					break
				}
				e.Post(o)
				recvs = append(recvs, mrecv{o.ID, sp, o.Tag, o.Ign, dsrc})
			case 1: // a message arrives: the first posted receive it matches takes it
				want := -1
				for i, rv := range recvs {
					if rv.sp == sp && (rv.src == 0 || rv.src == src) && (tag^rv.tag)&^rv.ign == 0 {
						want = i
						break
					}
				}
				if e.WouldMatch(sp, tag, src) != (want >= 0) {
					t.Fatalf("round %d step %d: WouldMatch disagrees with the model", round, step)
				}
				o := e.Match(sp, tag, src)
				if (o == nil) != (want < 0) || o != nil && o.ID != recvs[want].id {
					t.Fatalf("round %d step %d: engine matched %v, model %d", round, step, o, want)
				}
				if o != nil {
					recvs = append(recvs[:want], recvs[want+1:]...)
					e.Free(o)
					break
				}
				n := r.IntN(300)
				e.AddUnexpected(sp, &transport.Header{Tag: tag, Len: uint64(n)}, src, make([]byte, n), nil)
				msgs = append(msgs, mmsg{sp, tag, src, n})
				bytes += n
			case 2: // a receive is cancelled
				if len(recvs) == 0 {
					break
				}
				i := r.IntN(len(recvs))
				o := e.ByCookie(recvs[i].id)
				if o == nil || !e.IsPosted(o) || !e.Unpost(o) || e.IsPosted(o) {
					t.Fatalf("round %d step %d: posted receive %d not found", round, step, recvs[i].id)
				}
				e.Free(o)
				recvs = append(recvs[:i], recvs[i+1:]...)
			}
			if n, b := e.Kept(); n != len(msgs) || b != uint64(bytes) || e.Queued() != len(msgs) {
				t.Fatalf("round %d step %d: kept %d msgs %d B, model %d %d B", round, step, n, b, len(msgs), bytes)
			}
			if e.NonePosted() != (len(recvs) == 0) {
				t.Fatalf("round %d step %d: NonePosted %v with %d posted", round, step, e.NonePosted(), len(recvs))
			}
		}
	}
}

func TestMultiReceiveStaysPosted(t *testing.T) {
	var e eng
	o := post(&e, Tagged, 3, 0, 0, fi.MULTI_RECV)
	if e.Match(Tagged, 3, 1) != o || e.Match(Tagged, 3, 2) != o {
		t.Fatal("a multi-receive buffer takes every message it matches")
	}
	if !e.Unpost(o) || e.Match(Tagged, 3, 1) != nil {
		t.Fatal("an unposted multi-receive buffer takes nothing")
	}
	plain := post(&e, Tagged, 3, 0, 0, 0)
	if e.Match(Tagged, 3, 1) != plain || e.Match(Tagged, 3, 1) != nil {
		t.Fatal("a plain receive takes one message")
	}
}

func TestCancelPeekClaim(t *testing.T) {
	var e eng
	a := post(&e, Untagged, 0, 0, 0, 0)
	a.Ctx = 10
	b := post(&e, Tagged, 1, 0, 0, 0)
	b.Ctx = 10
	if e.Cancel(10) != a || e.Cancel(10) != b || e.Cancel(10) != nil {
		t.Fatal("Cancel takes the untagged receive first, then the tagged one, then none")
	}
	e.AddUnexpected(Tagged, &transport.Header{Tag: 5}, 2, []byte("abc"), nil)
	rv := transport.Rndv{W: [6]uint64{1, 2, 3, 4, 5, 6}}
	e.AddUnexpected(Tagged, &transport.Header{Tag: 5, Len: 1 << 20}, 3, nil, &rv)
	tag, ign := Key(Tagged, 5, 0, ^uint64(0))
	u := e.Peek(Tagged, 3, tag, ign)
	if u == nil || !u.IsRndv || u.Rndv != rv || u.Payload != nil {
		t.Fatalf("peek from source 3: %+v", u)
	}
	e.Take(Tagged, u)
	e.SetAside(u, 77)
	if n, b := e.Kept(); n != 2 || b != 3 || e.Queued() != 1 || e.NoneClaimed() {
		t.Fatalf("kept %d (%d B), queued %d: a claimed message is kept, not queued", n, b, e.Queued())
	}
	if e.Claimed(78) != nil || e.Claimed(77) != u || !e.NoneClaimed() {
		t.Fatal("Claimed takes the message set aside for its context")
	}
	e.FreeUnexpected(u)
	if u := e.Unexpected(Tagged); u == nil || string(u.Payload) != "abc" || u.Next() != nil {
		t.Fatal("the eager message is still queued, with its own copy of the payload")
	}
}

func TestTable(t *testing.T) {
	var e eng
	a := e.New(1)
	b := e.New(2)
	if a.ID != 0 || b.ID != 1 || e.ByCookie(0) != a || e.ByCookie(1) != b || e.ByCookie(2) != nil || e.ByCookie(^uint64(0)) != nil {
		t.Fatal("ops are named by their index, and no other cookie names one")
	}
	gen := a.Gen
	e.Free(a)
	e.Free(a) // a second free must not hand it out twice
	if e.ByCookie(0) != nil {
		t.Fatal("a free op is named by no cookie")
	}
	c := e.New(3)
	d := e.New(3)
	if c != a || c.Gen != gen+1 || c.Kind != 3 || d == a || d.ID != 2 {
		t.Fatalf("reuse: c %p id %d gen %d, d id %d", c, c.ID, c.Gen, d.ID)
	}
	if len(e.Ops()) != 3 {
		t.Fatalf("%d entries", len(e.Ops()))
	}
}

func TestPayloadPool(t *testing.T) {
	var e eng
	for range 3 * bufKeep {
		e.AddUnexpected(Untagged, &transport.Header{}, 1, make([]byte, 100), nil)
	}
	o := post(&e, Untagged, 0, 0, 0, fi.MULTI_RECV)
	for u := e.TakeUnexpected(o); u != nil; u = e.TakeUnexpected(o) {
		if cap(u.Payload) != 128 {
			t.Fatalf("a 100 B payload in a %d B buffer", cap(u.Payload))
		}
		e.FreeUnexpected(u)
	}
	if n := len(e.bufs[bufClass(128)]); n != bufKeep {
		t.Fatalf("%d buffers kept, want at most %d", n, bufKeep)
	}
	if b := e.getBuf(1 << 20); cap(b) != 1<<20 {
		t.Fatal("a payload past the classes is not pooled")
	}
	allocs := testing.AllocsPerRun(100, func() {
		e.AddUnexpected(Untagged, &transport.Header{}, 1, make([]byte, 100), nil)
		e.FreeUnexpected(e.TakeUnexpected(o))
	})
	if allocs > 0 {
		t.Fatalf("%.1f allocations per unexpected message, want none once warm", allocs)
	}
}
