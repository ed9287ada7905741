package ring

import (
	"sync/atomic"
	"testing"
)

// BenchmarkPushPop is one push and one pop in a single goroutine: the
// uncontended cost of a message.
func BenchmarkPushPop(b *testing.B) {
	r, _ := newTestRing(b, 64)
	p := msg(0, 0)
	buf := make([]byte, CellPayload)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.TryPush(p); err != nil {
			b.Fatal(err)
		}
		if _, ok := r.TryPop(buf); !ok {
			b.Fatal("TryPop failed")
		}
	}
}

var sinkBool bool

// BenchmarkEmptyPoll is what an idle progress loop pays per ring.
func BenchmarkEmptyPoll(b *testing.B) {
	r, _ := newTestRing(b, 64)
	b.ReportAllocs()
	empty := false
	for b.Loop() {
		empty = r.Empty()
	}
	sinkBool = empty
}

// BenchmarkPingPong bounces one message between two goroutines over two
// rings; one op is a round trip (two pushes, two pops, two cache-line
// transfers each way).
func BenchmarkPingPong(b *testing.B) {
	ping, _ := newTestRing(b, 64)
	pong, _ := newTestRing(b, 64)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, CellPayload)
		for !stop.Load() {
			n, ok := ping.TryPop(buf)
			if !ok {
				continue
			}
			for pong.TryPush(buf[:n]) != nil {
			}
		}
	}()

	p := msg(0, 0)
	buf := make([]byte, CellPayload)
	b.ReportAllocs()
	for b.Loop() {
		for ping.TryPush(p) != nil {
		}
		for {
			if _, ok := pong.TryPop(buf); ok {
				break
			}
		}
	}
	stop.Store(true)
	<-done
}
