package atomicx

import (
	"sync/atomic"
	"testing"
)

// TestStoreRel64MessagePassing is the message-passing litmus test: a
// writer fills a payload with plain stores and publishes it with
// StoreRel64; a reader that acquires the flag must see the whole payload.
// On amd64 a broken StoreRel64 (one the compiler could move above the
// payload stores) shows up as a torn payload.
func TestStoreRel64MessagePassing(t *testing.T) {
	const rounds = 200000
	var flag uint64
	var payload [8]uint64
	done := make(chan error, 1)
	go func() {
		for r := uint64(1); r <= rounds; r++ {
			for atomic.LoadUint64(&flag) != 2*r-1 {
			}
			for i := range payload {
				if v := atomic.LoadUint64(&payload[i]); v != r {
					done <- errorf(r, i, v)
					return
				}
			}
			atomic.StoreUint64(&flag, 2*r)
		}
		done <- nil
	}()
	for r := uint64(1); r <= rounds; r++ {
		for i := range payload {
			payload[i] = r // plain stores, published by StoreRel64
		}
		StoreRel64(&flag, 2*r-1)
		for atomic.LoadUint64(&flag) != 2*r {
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

type tornError struct{ round, word, got uint64 }

func (e tornError) Error() string {
	return "round " + itoa(e.round) + ": payload word " + itoa(e.word) + " is " + itoa(e.got)
}

func errorf(r uint64, i int, v uint64) error { return tornError{r, uint64(i), v} }

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

func TestStoreRel64Value(t *testing.T) {
	var w uint64
	StoreRel64(&w, 0xdeadbeefcafe)
	if w != 0xdeadbeefcafe {
		t.Fatalf("got %#x", w)
	}
}

func BenchmarkStoreRel64(b *testing.B) {
	var w uint64
	for i := 0; i < b.N; i++ {
		StoreRel64(&w, uint64(i))
	}
}

func BenchmarkAtomicStore(b *testing.B) {
	var w uint64
	for i := 0; i < b.N; i++ {
		atomic.StoreUint64(&w, uint64(i))
	}
}
