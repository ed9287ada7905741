package provider

import (
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// TestStressOpenCloseWhilePolling is issue 8's stress for the Go side, over
// the real shared-memory wire and under -race in make check: two
// goroutines read both CQs, two post (one sends, one receives), and one
// opens, enables, uses and closes endpoints on the same domain, bound to
// one of the busy CQs or to a CQ of their own. Every message must arrive
// once and intact. GOPSM2_STRESS_SECONDS sets the length (default 2).
func TestStressOpenCloseWhilePolling(t *testing.T) {
	dur := 2 * time.Second
	if s, err := strconv.Atoi(os.Getenv("GOPSM2_STRESS_SECONDS")); err == nil && s > 0 {
		dur = time.Duration(s) * time.Second
	}
	p := buildPair(t, New(newFakeHost(nil)), fi.TAGGED, nil)
	info := &fi.Info{Caps: fi.TAGGED, Domain: &fi.DomainAttr{CQDataSize: 4}, EP: &fi.EPAttr{Type: fi.EP_RDM}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent, posted, recvd, opens atomic.Int64
	var bad atomic.Value
	fail := func(format string, args ...any) {
		bad.CompareAndSwap(nil, format)
		t.Errorf(format, args...)
	}
	const msgLen = 48
	// Receive buffers: each posted receive owns one until its completion.
	const slots = 64
	bufs := make([][msgLen]byte, slots)
	free := make(chan int, slots)
	for i := range slots {
		free <- i
	}
	done := func(ctx uint64) {
		i := int(ctx - 1)
		b := bufs[i][:]
		tag := uint64(b[0]) | uint64(b[1])<<8
		for k := 2; k < msgLen; k++ {
			if b[k] != byte(tag)+byte(k) {
				fail("message %d corrupt at byte %d", tag, k)
				break
			}
		}
		recvd.Add(1)
		free <- i
	}
	run := func(f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					f()
				}
			}
		}()
	}
	var e [8]cqTagged
	var e2 [8]cqTagged
	run(func() { // reader of the sender's CQ
		if n, _ := p.cqa.Read(words(&e), 8, nil); n < 0 {
			fail("read cqa: %d", n)
		}
	})
	run(func() { // reader of the receiver's CQ
		n, err := p.cqb.Read(words(&e2), 8, nil)
		if err != nil && err != fi.EAGAIN {
			var ee cqErrEntry
			if _, rerr := readErrC(p.cqb, &ee); rerr == nil && ee.ctx != 0 {
				fail("error completion on cqb: %+v", ee)
			}
		}
		for i := 0; i < n; i++ {
			if c := uint64(e2[i].ctx); c >= 1 && c <= slots && e2[i].flags&fi.RECV != 0 {
				done(c)
			}
		}
	})
	msg := make([]byte, msgLen)
	var tag uint64
	run(func() { // sender
		msg[0], msg[1] = byte(tag), byte(tag>>8)
		for k := 2; k < msgLen; k++ {
			msg[k] = byte(tag) + byte(k)
		}
		v := Iovec{Base: unsafe.Pointer(&msg[0]), Len: msgLen}
		if err := p.a.Send([]Iovec{v}, p.bAddr, 7, 0, nil, fi.TAGGED|fi.INJECT|NoCompletion); err == nil {
			sent.Add(1)
			tag++
		} else if err != fi.EAGAIN {
			fail("send: %v", err)
		}
	})
	run(func() { // receiver
		select {
		case i := <-free:
			v := Iovec{Base: unsafe.Pointer(&bufs[i][0]), Len: msgLen}
			for {
				err := p.b.Recv([]Iovec{v}, fi.AddrUnspec, 7, 0, cptr(uintptr(i+1)), fi.TAGGED)
				if err == nil {
					posted.Add(1)
					return
				}
				if err != fi.EAGAIN {
					fail("recv: %v", err)
					return
				}
			}
		case <-time.After(time.Millisecond):
		}
	})
	run(func() { // opener
		ep, err := p.dom.OpenEndpoint(info, 0)
		if err != nil {
			fail("open: %v", err)
			return
		}
		cq := p.cqb
		var own *CQ
		if opens.Load()%2 == 1 {
			if own, err = p.dom.OpenCQ(&CQAttr{Format: fi.CQ_FORMAT_TAGGED, WaitObj: fi.WAIT_NONE}); err != nil {
				fail("open cq: %v", err)
				return
			}
			cq = own
		}
		if err := ep.Bind(p.av, 0); err != nil {
			fail("bind av: %v", err)
		}
		if err := ep.Bind(cq, fi.TRANSMIT|fi.RECV|fi.SELECTIVE_COMPLETION); err != nil {
			fail("bind cq: %v", err)
		}
		if err := ep.Enable(); err != nil {
			fail("enable: %v", err)
		}
		if err := ep.Close(); err != nil {
			fail("close: %v", err)
		}
		if own != nil {
			if err := own.Close(); err != nil {
				fail("close cq: %v", err)
			}
		}
		opens.Add(1)
	})
	time.Sleep(dur)
	close(stop)
	wg.Wait()
	// Drain what is still in flight.
	deadline := time.Now().Add(10 * time.Second)
	for recvd.Load() < min(sent.Load(), posted.Load()) && time.Now().Before(deadline) {
		p.cqa.Read(words(&e), 8, nil)
		n, _ := p.cqb.Read(words(&e2), 8, nil)
		for i := 0; i < n; i++ {
			if c := uint64(e2[i].ctx); c >= 1 && c <= slots {
				done(c)
			}
		}
	}
	t.Logf("%v: %d sent, %d posted, %d received, %d endpoints opened and closed",
		dur, sent.Load(), posted.Load(), recvd.Load(), opens.Load())
	if recvd.Load() != min(sent.Load(), posted.Load()) || opens.Load() == 0 || recvd.Load() == 0 {
		t.Errorf("lost messages or no progress")
	}
	_ = bad.Load()
}
