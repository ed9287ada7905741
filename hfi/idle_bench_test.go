package hfi

import (
	"testing"
	"time"
)

// BenchmarkIdlePoll: one Poll of a hot endpoint with nothing arriving
// (a busy-polling application between messages): a receive syscall and
// what the wire does around it. go test -bench IdlePoll ./hfi
func BenchmarkIdlePoll(b *testing.B) {
	cfg := Config{Job: [16]byte{9}, Addr: [4]byte{127, 0, 0, 1}, Spin: time.Hour}
	x, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	var c counter
	x.rx.hot.Store(true)
	x.Poll(&c, 16)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x.Poll(&c, 16)
	}
}
