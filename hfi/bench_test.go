package hfi

import (
	"runtime"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// counter is a Handler that only counts.
type counter struct{ got, sends, fetches int }

func (c *counter) Deliver(h *transport.Header, m *transport.Incoming) {
	if !m.Early {
		c.got++
	}
}
func (c *counter) SendDone(uint64, error)       { c.sends++ }
func (c *counter) FetchDone(uint64, int, error) { c.fetches++ }

// openUDPPair opens two endpoints over UDP on 127.0.0.1, closed when the
// benchmark ends.
func openUDPPair(tb testing.TB, spin time.Duration) (*Endpoint, *Endpoint) {
	cfg := Config{Job: [16]byte{9}, Addr: [4]byte{127, 0, 0, 1}, Spin: spin}
	x, err := Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { x.Close() })
	y, err := Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { y.Close() })
	return x, y
}

// BenchmarkUDPPingPong: two endpoints over UDP on 127.0.0.1, each polled
// by its own thread in hot mode; one op is a round trip of an eager
// message. go test -bench UDPPingPong -benchmem ./hfi
func BenchmarkUDPPingPong(b *testing.B) {
	for _, size := range []int{8, 1024, 8192, 262144} {
		b.Run(sizeName(size), func(b *testing.B) {
			x, y := openUDPPair(b, 10*time.Millisecond)
			cx, _ := x.Connect(y.EPID())
			cy, _ := y.Connect(x.EPID())
			buf := [][]byte{make([]byte, size)}
			h := transport.Header{Len: uint64(size)}
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() { // the echo side
				runtime.LockOSThread()
				defer close(done)
				var c counter
				for {
					select {
					case <-stop:
						return
					default:
					}
					before := c.got
					y.Poll(&c, 16)
					for ; before < c.got; before++ {
						for {
							if _, err := y.Send(cy, &h, buf, 0, 0); err != transport.ErrAgain {
								break
							}
							y.Poll(&c, 16)
						}
					}
				}
			}()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var c counter
			pingpong := func() {
				x.Send(cx, &h, buf, 0, 0)
				for want := c.got + 1; c.got < want; {
					x.Poll(&c, 16)
				}
			}
			timeRoundTrips(b, pingpong, stop, done)
		})
	}
}

// timeRoundTrips times b.N calls of pingpong after 100 of warm-up, then
// stops the echo side (close stop, wait for done).
func timeRoundTrips(b *testing.B, pingpong func(), stop, done chan struct{}) {
	for i := 0; i < 100; i++ {
		pingpong()
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pingpong()
	}
	b.StopTimer()
	close(stop)
	<-done
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return itoa(n>>20) + "MiB"
	case n >= 1024:
		return itoa(n>>10) + "KiB"
	}
	return itoa(n) + "B"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// fetcher fetches every rendezvous message into buf.
type fetcher struct {
	ep  *Endpoint
	buf []byte
	counter
}

func (f *fetcher) Deliver(h *transport.Header, m *transport.Incoming) {
	if m.IsRndv {
		if done, _, _ := f.ep.Fetch(&m.Rndv, f.buf, 1); done {
			f.fetches++
		}
		return
	}
	f.got++
}

// BenchmarkUDPStream: one op is a 1 MiB rendezvous send, fetched by a
// thread polling the other endpoint; reports MB/s.
func BenchmarkUDPStream(b *testing.B) {
	const size = 1 << 20
	x, y := openUDPPair(b, 10*time.Millisecond)
	cx, _ := x.Connect(y.EPID())
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer close(done)
		f := &fetcher{ep: y, buf: make([]byte, size)}
		for {
			select {
			case <-stop:
				return
			default:
			}
			y.Poll(f, 64)
		}
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := [][]byte{make([]byte, size)}
	h := transport.Header{Len: size}
	var c counter
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ok, err := x.Send(cx, &h, buf, 0, 0); err != nil || ok {
			b.Fatal(ok, err)
		}
		for want := c.sends + 1; c.sends < want; {
			x.Poll(&c, 64)
		}
	}
	b.StopTimer()
	close(stop)
	<-done
	b.Logf("x %+v", x.Stats())
}

// nullSends is a backend that drops everything sent.
type nullSends struct{ Backend }

func (nullSends) Send(int, *Dest, []byte) error                  { return nil }
func (nullSends) SendBatch(int, *Dest, [][]byte, [][]byte) error { return nil }

// BenchmarkSendEager: the sender's own work for an eager message of
// several packets (building, batching, the copy for sending again, and
// freeing on the ACK), with a backend that drops what it is given.
func BenchmarkSendEager(b *testing.B) {
	for _, size := range []int{16384, 262144} {
		b.Run(sizeName(size), func(b *testing.B) {
			net := newMemNet()
			cfg := Config{Job: [16]byte{1}, EagerIdle: 262144}
			x, y := openPair(b, net, cfg)
			c, err := x.Connect(y.EPID())
			if err != nil {
				b.Fatal(err)
			}
			var cx, cy counter
			h1 := transport.Header{Len: 1}
			x.Send(c, &h1, [][]byte{{1}}, 1, 0)
			for end := time.Now().Add(2 * time.Second); cy.got == 0 || x.peers[0].unacked.len() > 0; {
				x.Poll(&cx, 64)
				y.Poll(&cy, 64)
				if time.Now().After(end) {
					b.Fatal("no connection")
				}
			}
			x.be = nullSends{x.be}
			p := x.peers[0]
			buf := [][]byte{make([]byte, size)}
			h := transport.Header{Len: uint64(size)}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := x.Send(c, &h, buf, 0, 0); err != nil {
					b.Fatal(err)
				}
				x.onAck(p, p.nextPSN)
			}
		})
	}
}
