package provider

import (
	"testing"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/atomicop"
)

// BenchmarkSendRecv measures one small tagged message through the whole
// engine on the shared-memory wire: post a receive, send, drive progress
// until both completions are read. It must not allocate.
func BenchmarkSendRecv(b *testing.B) {
	for _, size := range []int{8, 64, 4096} {
		b.Run(sizeName(size), func(b *testing.B) {
			p := newBenchPair(b)
			msg := make([]byte, size)
			buf := make([]byte, size)
			sv := Iovec{Base: unsafe.Pointer(&msg[0]), Len: uint64(size)}
			rv := Iovec{Base: unsafe.Pointer(&buf[0]), Len: uint64(size)}
			var e [4]cqTagged
			b.ReportAllocs()
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := p.b.Recv([]Iovec{rv}, fi.AddrUnspec, 7, 0, cptr(1), fi.TAGGED|fi.COMPLETION); err != nil {
					b.Fatal(err)
				}
				if err := p.a.Send([]Iovec{sv}, p.bAddr, 7, 0, cptr(2), fi.TAGGED|fi.COMPLETION); err != nil {
					b.Fatal(err)
				}
				for got := 0; got < 2; {
					if n, _ := p.cqa.Read(words(&e), 4, nil); n > 0 {
						got += n
					}
					if n, _ := p.cqb.Read(words(&e), 4, nil); n > 0 {
						got += n
					}
				}
			}
		})
	}
}

// BenchmarkIdleRead is fi_cq_read with nothing to do.
func BenchmarkIdleRead(b *testing.B) {
	p := newBenchPair(b)
	var e cqTagged
	b.ReportAllocs()
	b.ResetTimer() // the pair's set-up is not the read's
	for i := 0; i < b.N; i++ {
		p.cqa.Read(words(&e), 1, nil)
	}
}

func sizeName(n int) string {
	switch {
	case n >= 1<<20:
		return itoa(n>>20) + "MiB"
	case n >= 1<<10:
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

// BenchmarkRMA measures one 8-byte RMA write, read and fetch-add through
// the whole engine on the shared-memory wire, the target served by the
// same thread's polls: post, then poll both ends until the initiator's
// completion. The ops, their answers and the outbox must not allocate.
func BenchmarkRMA(b *testing.B) {
	p := newBenchPair(b)
	mem := make([]byte, 4096)
	mr, err := p.dom.RegMR([]MRIov{{Base: uintptr(unsafe.Pointer(&mem[0])), Len: 4096}},
		fi.REMOTE_READ|fi.REMOTE_WRITE, 0, 1, 0, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer mr.Close()
	v, old := make([]byte, 8), make([]byte, 8)
	vv := Iovec{Base: unsafe.Pointer(&v[0]), Len: 8}
	ov := Iovec{Base: unsafe.Pointer(&old[0]), Len: 8}
	one := Iovec{Base: unsafe.Pointer(&v[0]), Len: 1} // one element (fi_ioc)
	res := Iovec{Base: unsafe.Pointer(&old[0]), Len: 1}
	for _, c := range []struct {
		name string
		post func() error
	}{
		{"write", func() error {
			return p.a.RMA([]Iovec{vv}, p.bAddr, 0, mr.Key(), 0, cptr(1), fi.RMA|fi.WRITE)
		}},
		{"read", func() error {
			return p.a.RMA([]Iovec{ov}, p.bAddr, 0, mr.Key(), 0, cptr(1), fi.RMA|fi.READ)
		}},
		{"fetchadd", func() error {
			return p.a.Atomic(AtomicFetch, []Iovec{one}, nil, []Iovec{res}, p.bAddr, 8,
				mr.Key(), atomicop.Uint64, atomicop.Sum, cptr(1), fi.ATOMIC|fi.READ)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var e [4]cqTagged
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := c.post(); err != nil {
					b.Fatal(err)
				}
				for {
					p.cqb.Read(words(&e), 4, nil)
					if n, _ := p.cqa.Read(words(&e), 4, nil); n > 0 {
						break
					}
				}
			}
		})
	}
}
