//go:build linux

package shm

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// echoHandler keeps the last message delivered, for sending it back
// after Poll returns.
type echoHandler struct {
	hdr     transport.Header
	buf     []byte
	n       int
	got     bool
	rndv    transport.Rndv
	isRndv  bool
	sends   int
	fetches int
}

func (x *echoHandler) Deliver(h *transport.Header, m *transport.Incoming) {
	x.hdr = *h
	x.n = copy(x.buf, m.Payload)
	x.got = true
	x.isRndv = m.IsRndv
	x.rndv = m.Rndv
}
func (x *echoHandler) SendDone(uint64, error)       { x.sends++ }
func (x *echoHandler) FetchDone(uint64, int, error) { x.fetches++ }

// BenchmarkEndpointPingPong bounces one message between two endpoints
// polled by two goroutines; one op is a round trip.
func BenchmarkEndpointPingPong(b *testing.B) {
	type variant struct {
		n, cells int
	}
	var vs []variant
	for _, n := range []int{8, 64, 150, 197, 1024, 8192} {
		vs = append(vs, variant{n, DefaultInlineCells})
		switch {
		case n > inlineHead && n <= inlineMax(DefaultInlineCells, false):
			vs = append(vs, variant{n, 1}) // the same size by eager
		case n > inlineMax(DefaultInlineCells, false) && n <= inlineMax(4, false):
			vs = append(vs, variant{n, 4}) // the same size inline
		case n > inlineMax(DefaultInlineCells, false) && n <= inlineMax(FastInlineCells, false):
			// The same size inline, as the C fast path sends it.
			vs = append(vs, variant{n, FastInlineCells})
		}
	}
	for _, v := range vs {
		n := v.n
		name := fmt.Sprintf("%dB", n)
		switch {
		case v.cells == 1 && v.cells != DefaultInlineCells:
			name += "-eager"
		case v.cells != DefaultInlineCells:
			name += fmt.Sprintf("-inline%d", v.cells)
		}
		b.Run(name, func(b *testing.B) {
			x, y, xy := pair(b, func(c *Config) { c.InlineCells = v.cells })
			yx, err := y.Connect(x.EPID())
			if err != nil {
				b.Fatal(err)
			}
			var stop atomic.Bool
			done := make(chan struct{})
			go func() {
				defer close(done)
				h := &echoHandler{buf: make([]byte, n)}
				iov := [][]byte{nil}
				for !stop.Load() {
					y.Poll(h, 16)
					if !h.got {
						continue
					}
					h.got = false
					iov[0] = h.buf[:h.n]
					for {
						if _, err := y.Send(yx, &h.hdr, iov, 0, 0); err == nil || stop.Load() {
							break
						}
					}
				}
			}()
			h := &echoHandler{buf: make([]byte, n)}
			payload := pattern(n, 1)
			iov := [][]byte{payload}
			hdr := transport.Header{Tag: 7, Len: uint64(n)}
			b.SetBytes(int64(2 * n))
			b.ReportAllocs()
			for b.Loop() {
				for {
					_, err := x.Send(xy, &hdr, iov, 0, 0)
					if err == nil {
						break
					}
					if !errors.Is(err, transport.ErrAgain) {
						b.Fatal(err)
					}
				}
				for !h.got {
					x.Poll(h, 16)
				}
				h.got = false
			}
			stop.Store(true)
			<-done
		})
	}
}

// BenchmarkEndpointStream sends messages one way as fast as the receiver
// takes them: the message rate.
func BenchmarkEndpointStream(b *testing.B) {
	for _, n := range []int{8, 64, 8192} {
		b.Run(fmt.Sprintf("%dB", n), func(b *testing.B) {
			x, y, xy := pair(b, func(c *Config) { c.RingCells = 4096 })
			var stop atomic.Bool
			var received atomic.Int64
			done := make(chan struct{})
			go func() {
				defer close(done)
				var z zeroHandler
				for !stop.Load() {
					if y.Poll(&z, 64) > 0 {
						received.Store(int64(z.n))
					}
				}
			}()
			iov := [][]byte{pattern(n, 1)}
			hdr := transport.Header{Tag: 7, Len: uint64(n)}
			b.SetBytes(int64(n))
			b.ReportAllocs()
			sent := int64(0)
			for b.Loop() {
				for {
					_, err := x.Send(xy, &hdr, iov, 0, 0)
					if err == nil {
						break
					}
					if !errors.Is(err, transport.ErrAgain) {
						b.Fatal(err)
					}
				}
				sent++
			}
			for received.Load() < sent {
			}
			stop.Store(true)
			<-done
		})
	}
}

// BenchmarkEndpointRndv moves one rendezvous message per op from one
// goroutine's endpoint to another's: RTS, fetch, FIN (or CTS and the
// streamed chunks), SendDone.
func BenchmarkEndpointRndv(b *testing.B) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		cma  bool
	}{
		{"in-process", func(*Config) {}, false},
		{"cma", func(*Config) {}, true},
		{"copy", noCMA, false},
	} {
		for _, n := range []int{64 << 10, 1 << 20} {
			b.Run(fmt.Sprintf("%s/%dKiB", tc.name, n>>10), func(b *testing.B) {
				x, y, xy := pair(b, tc.mod)
				y.noLocal = tc.cma
				var stop atomic.Bool
				done := make(chan struct{})
				go func() {
					defer close(done)
					h := &echoHandler{}
					dst := make([]byte, n)
					for !stop.Load() {
						y.Poll(h, 16)
						if !h.got {
							continue
						}
						h.got = false
						if ok, _, err := y.Fetch(&h.rndv, dst, 1); err != nil {
							panic(err)
						} else if ok {
							h.fetches++
						}
					}
				}()
				h := &echoHandler{}
				iov := [][]byte{pattern(n, 1)}
				hdr := transport.Header{Tag: 7, Len: uint64(n)}
				b.SetBytes(int64(n))
				b.ReportAllocs()
				for b.Loop() {
					for {
						_, err := x.Send(xy, &hdr, iov, 0, 0)
						if err == nil {
							break
						}
						if !errors.Is(err, transport.ErrAgain) {
							b.Fatal(err)
						}
						x.Poll(h, 16)
					}
					for sends := h.sends; h.sends == sends; {
						x.Poll(h, 16)
					}
				}
				stop.Store(true)
				<-done
			})
		}
	}
}

// sinkBool keeps a benchmarked result alive.
var sinkBool bool

// BenchmarkEndpointIdle is what an idle progress loop pays per endpoint.
func BenchmarkEndpointIdle(b *testing.B) {
	_, y, _ := pair(b)
	var z zeroHandler
	b.Run("Idle", func(b *testing.B) {
		b.ReportAllocs()
		idle := false
		for b.Loop() {
			idle = y.Idle()
		}
		sinkBool = idle
	})
	b.Run("Poll", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			y.Poll(&z, 16)
		}
	})
}

// BenchmarkEndpointSendPoll sends one message and receives it in the same
// goroutine: the CPU cost of a message on both sides, without the
// cache-line transfers and scheduling of two cores.
func BenchmarkEndpointSendPoll(b *testing.B) {
	for _, v := range []struct {
		n, cells int
	}{{8, 0}, {64, 0}, {87, 0}, {88, 0}, {197, 4}, {198, 0}, {1024, 0}, {8192, 0}, {16000, 0}} {
		n := v.n
		name := fmt.Sprintf("%dB", n)
		if v.cells != 0 {
			name += fmt.Sprintf("-inline%d", v.cells)
		}
		b.Run(name, func(b *testing.B) {
			x, y, xy := pair(b, func(c *Config) { c.InlineCells = v.cells })
			var z zeroHandler
			iov := [][]byte{pattern(n, 1)}
			hdr := transport.Header{Tag: 7, Len: uint64(n)}
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := x.Send(xy, &hdr, iov, 0, 0); err != nil {
					b.Fatal(err)
				}
				if y.Poll(&z, 16) != 1 {
					b.Fatal("nothing received")
				}
			}
		})
	}
}

// BenchmarkEndpointPingPongSleep is BenchmarkEndpointPingPong with both
// sides sleeping in Wait instead of spinning: the cost of the futex
// doorbell.
func BenchmarkEndpointPingPongSleep(b *testing.B) {
	x, y, xy := pair(b)
	yx, err := y.Connect(x.EPID())
	if err != nil {
		b.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		h := &echoHandler{buf: make([]byte, 8)}
		iov := [][]byte{nil}
		for !stop.Load() {
			if y.Poll(h, 16) == 0 {
				y.Wait(-1)
				continue
			}
			h.got = false
			iov[0] = h.buf[:h.n]
			if _, err := y.Send(yx, &h.hdr, iov, 0, 0); err != nil {
				panic(err)
			}
		}
	}()
	h := &echoHandler{buf: make([]byte, 8)}
	iov := [][]byte{pattern(8, 1)}
	hdr := transport.Header{Tag: 7, Len: 8}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := x.Send(xy, &hdr, iov, 0, 0); err != nil {
			b.Fatal(err)
		}
		for !h.got {
			if x.Poll(h, 16) == 0 {
				x.Wait(-1)
			}
		}
		h.got = false
	}
	stop.Store(true)
	y.Wake()
	<-done
}
