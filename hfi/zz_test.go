package hfi

import (
	"runtime"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

func BenchmarkZZWindow(b *testing.B) {
	const size = 65536
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
	sent := 0
	for i := 0; i < b.N; i++ {
		for sent-c.sends >= 64 {
			x.Poll(&c, 64)
		}
		if ok, err := x.Send(cx, &h, buf, 0, 0); err != nil || ok {
			b.Fatal(ok, err)
		}
		sent++
	}
	for c.sends < sent {
		x.Poll(&c, 64)
	}
	b.StopTimer()
	close(stop)
	<-done
	xs, ys := x.Stats(), y.Stats()
	b.Logf("N %d x sent %.1f/msg batches %.1f recv %.1f | y sent %.1f batches %.1f recv %.1f", b.N, float64(xs.Sent)/float64(b.N), float64(xs.Batches)/float64(b.N), float64(xs.Received)/float64(b.N), float64(ys.Sent)/float64(b.N), float64(ys.Batches)/float64(b.N), float64(ys.Received)/float64(b.N))
}
