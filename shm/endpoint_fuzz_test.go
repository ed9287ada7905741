//go:build linux

package shm

import (
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/ring"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// FuzzEndpointCells pushes arbitrary cells into an endpoint's ring, from
// outside the protocol, and polls: nothing a peer writes may make the
// endpoint panic, and it must still work afterwards.
func FuzzEndpointCells(f *testing.F) {
	cellOf := func(kind, flags byte, short uint16, epid uint64, w ...uint64) []byte {
		c := make([]byte, ring.CellPayload)
		putCommon(c, kind, flags, short, 0, epid)
		for i, v := range w {
			put64(c, offCellW2+8*i, v)
		}
		return c
	}
	const a, b = 0xa, 0xb
	for _, c := range [][]byte{
		cellOf(cellInline, 0, 3, a, 1),
		cellOf(cellInline, 1, 150, a, 1, 2),
		cellOf(cellCont, 0, 0, 0),
		cellOf(cellEager, 1, 0, a, 1, 2, 100),
		cellOf(cellEager, 1, 65535, a, 1, 2, 100),
		cellOf(cellRTS, 1, 0, a, 1, 2, 100000, 0x1000, 1<<32),
		cellOf(cellRTS, 1, 0, b, 1, 2, 100000, 0x1000, 1<<32),
		cellOf(cellFIN, 0, 0, a, 1<<32),
		cellOf(cellCTS, 0, 0, a, 1<<32, 1<<32, 100),
		cellOf(cellData, 0, 0, a, 1<<32, 0, 100, 1<<32),
		cellOf(cellData, 0, 1, b, 1<<32, 16, 1<<20, 1<<32),
	} {
		f.Add(c)
	}
	f.Add(append(cellOf(cellInline, 0, 100, a, 5), cellOf(cellCont, 0, 0, 0)...))

	job := testJob(f)
	x := newTestEP(f, job, a, func(c *Config) { c.RingCells = 64 })
	y := newTestEP(f, job, b, func(c *Config) { c.RingCells = 64 })
	xy, err := x.Connect(b)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := y.Connect(a); err != nil {
		f.Fatal(err)
	}
	// Give y real sends and fetches to confuse: a rendezvous from x
	// that y is fetching by copy.
	y.cfg.DisableCMA = true
	big := pattern(100000, 1)
	h := transport.Header{Len: uint64(len(big))}
	if _, err := x.Send(xy, &h, [][]byte{big}, 1, 0); err != nil {
		f.Fatal(err)
	}
	y.poll()
	if len(y.rec.got) != 1 {
		f.Fatal("no RTS")
	}
	if _, _, err := y.Fetch(&y.rec.got[0].Rndv, make([]byte, len(big)), 1); err != nil {
		f.Fatal(err)
	}
	y.rec.got = nil
	dst := make([]byte, 4096)
	cookie := uint64(100)

	f.Fuzz(func(t *testing.T, data []byte) {
		for len(data) > 0 {
			c := make([]byte, ring.CellPayload)
			n := copy(c, data)
			data = data[n:]
			if y.ring.TryPush(c) != nil {
				break
			}
		}
		for range 4 {
			y.poll()
			x.poll()
		}
		for _, d := range y.rec.got {
			if d.IsRndv {
				if d.Hdr.Len%2 == 0 {
					_ = y.Discard(&d.Rndv)
				} else {
					cookie++
					y.Fetch(&d.Rndv, dst, cookie)
				}
			}
		}
		y.rec.got = y.rec.got[:0]
		// Still works.
		hs := transport.Header{Tag: 77, Len: 5}
		if _, err := x.Send(xy, &hs, [][]byte{[]byte("hello")}, 0, 0); err == nil {
			pollUntil(t, 5e9, func() bool {
				for _, d := range y.rec.got {
					if d.Hdr.Tag == 77 && string(d.Payload) == "hello" {
						return true
					}
				}
				return false
			}, x, y)
		}
		y.rec.got = y.rec.got[:0]
		clear(x.rec.sendDone)
		clear(y.rec.fetchDone)
	})
}
