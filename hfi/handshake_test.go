package hfi

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// TestSameKernel: each side of a connection is told of the other when
// their handshakes name the same kernel (Config.KernelID), and not when
// they name different ones; a peer's kernel id is under the handshake's
// proof, so only a job member can claim to share the CPUs.
func TestSameKernel(t *testing.T) {
	for _, tc := range []struct {
		ka, kb uint32
		same   bool
	}{{7, 7, true}, {7, 8, false}} {
		var mu sync.Mutex
		told := map[string][]uint64{}
		tell := func(side string) func(uint64) {
			return func(epid uint64) { mu.Lock(); told[side] = append(told[side], epid); mu.Unlock() }
		}
		ca := Config{KernelID: tc.ka, SameKernel: tell("a")}
		cb := Config{KernelID: tc.kb, SameKernel: tell("b")}
		net := newMemNet()
		a, b := openPairOf(t, net, ca, cb)
		ra, rb := recorders(t, a, b)
		c := connect(t, a, b)
		a.Send(c, &transport.Header{Len: 1}, [][]byte{{1}}, 1, 0)
		if !drive(t, a, b, ra, rb, 2*time.Second, func() bool { return len(rb.msgs) == 1 }) {
			t.Fatal("no connection")
		}
		mu.Lock()
		var want map[string][]uint64
		if tc.same {
			want = map[string][]uint64{"a": {b.EPID()}, "b": {a.EPID()}}
		} else {
			want = map[string][]uint64{}
		}
		if !reflect.DeepEqual(told, want) {
			t.Errorf("kernels %d and %d: told %v, want %v", tc.ka, tc.kb, told, want)
		}
		mu.Unlock()
	}
}
