package provider

import (
	"sync"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// loopNet is an in-memory network of wires for engine tests: eager
// messages are copied at send time, larger ones are fetched from the
// sender's buffer and completed on the sender's next poll, as a
// rendezvous wire does.
type loopNet struct {
	mu     sync.Mutex
	eps    map[uint64]*loopWire
	thresh int
	// copyRndv: SendCopy sends above thresh go by rendezvous too (with a
	// private copy, as shm and hfi send them); else they are eager.
	copyRndv bool
}

func newLoopNet(thresh int) *loopNet { return &loopNet{eps: map[uint64]*loopWire{}, thresh: thresh} }

func (n *loopNet) open(c wireConfig) (transport.Endpoint, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	epid := makeEPID(pid(), 1, c.ctx)
	w := &loopWire{net: n, epid: epid}
	n.eps[epid] = w
	return w, nil
}

type loopMsg struct {
	hdr     transport.Header
	src     uint64
	payload []byte
	rndv    bool
	sender  *loopWire
	cookie  uint64
	data    [][]byte
}

type loopWire struct {
	net    *loopNet
	epid   uint64
	mu     sync.Mutex
	in     []loopMsg
	done   []uint64 // send cookies completed by a fetch
	peers  []*loopWire
	full   bool // refuse sends with ErrAgain
	closed bool

	dead    bool // PeerErr reports this wire's end gone to its peers
	watched int  // the sum of Watch deltas
}

// Watch and PeerErr make the loop wire a transport.Watcher; a test
// declares a wire's end gone with dead.
func (w *loopWire) Watch(c transport.Conn, delta int) {
	w.mu.Lock()
	w.watched += delta
	w.mu.Unlock()
}

func (w *loopWire) PeerErr(c transport.Conn) error {
	if c < 1 || int(c) > len(w.peers) {
		return transport.ErrUnreachable
	}
	p := w.peers[c-1]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return transport.ErrPeerDead
	}
	return nil
}

func (w *loopWire) EPID() uint64 { return w.epid }

func (w *loopWire) Connect(epid uint64) (transport.Conn, error) {
	w.net.mu.Lock()
	p := w.net.eps[epid]
	w.net.mu.Unlock()
	if p == nil {
		return 0, transport.ErrUnreachable
	}
	for i, q := range w.peers {
		if q == p {
			return transport.Conn(i + 1), nil
		}
	}
	w.peers = append(w.peers, p)
	return transport.Conn(len(w.peers)), nil
}

func (w *loopWire) Send(c transport.Conn, h *transport.Header, iov [][]byte, cookie uint64, flags uint32) (bool, error) {
	p := w.peers[c-1]
	if p.full {
		return false, transport.ErrAgain
	}
	m := loopMsg{hdr: *h, src: w.epid}
	if int(h.Len) <= w.net.thresh || flags&transport.SendCopy != 0 && !w.net.copyRndv {
		for _, b := range iov {
			m.payload = append(m.payload, b...)
		}
		if m.payload == nil {
			m.payload = []byte{}
		}
	} else {
		m.rndv, m.sender, m.cookie = true, w, cookie
		m.data = append([][]byte(nil), iov...)
		if flags&transport.SendCopy != 0 {
			var own []byte
			for _, b := range iov {
				own = append(own, b...)
			}
			m.data = [][]byte{own}
		}
	}
	p.mu.Lock()
	p.in = append(p.in, m)
	p.mu.Unlock()
	return !m.rndv, nil
}

func (w *loopWire) rndvMsg(r *transport.Rndv) *loopMsg {
	return *(**loopMsg)(unsafe.Pointer(&r.W[0]))
}

func (w *loopWire) Fetch(r *transport.Rndv, dst []byte, cookie uint64) (bool, int, error) {
	m := w.rndvMsg(r)
	n := 0
	for _, b := range m.data {
		n += copy(dst[n:], b)
	}
	m.sender.mu.Lock()
	m.sender.done = append(m.sender.done, m.cookie)
	m.sender.mu.Unlock()
	return true, n, nil
}

func (w *loopWire) Discard(r *transport.Rndv) error {
	m := w.rndvMsg(r)
	m.sender.mu.Lock()
	m.sender.done = append(m.sender.done, m.cookie)
	m.sender.mu.Unlock()
	return nil
}

// keep holds rendezvous messages alive while the engine stores them as
// plain words in a Rndv.
var keep sync.Map

func (w *loopWire) Poll(h transport.Handler, budget int) int {
	w.mu.Lock()
	in, done := w.in, w.done
	w.in, w.done = nil, nil
	w.mu.Unlock()
	for _, c := range done {
		h.SendDone(c, nil)
	}
	for i := range in {
		m := &in[i]
		inc := transport.Incoming{SrcEPID: m.src, Payload: m.payload, IsRndv: m.rndv}
		if m.rndv {
			keep.Store(m, true)
			*(**loopMsg)(unsafe.Pointer(&inc.Rndv.W[0])) = m
			inc.Payload = nil
		}
		h.Deliver(&m.hdr, &inc)
	}
	return len(in) + len(done)
}

func (w *loopWire) Idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.in) == 0 && len(w.done) == 0
}

func (w *loopWire) Wait(d time.Duration) {
	if w.Idle() {
		time.Sleep(min(d, time.Millisecond))
	}
}
func (w *loopWire) Wake()             {}
func (w *loopWire) RingProbe() uint64 { return 0 }

func (w *loopWire) Probes(dst []uint64) []uint64 { return dst }
func (w *loopWire) Close() error                 { w.closed = true; return nil }

// makeEPID builds a PSM2-style id for tests: pid<<32 | node<<16 |
// ctx<<8 | 1<<3 | 2.
func makeEPID(pid int, node uint16, ctx int) uint64 {
	return uint64(uint32(pid))<<32 | uint64(node)<<16 | uint64(uint8(ctx))<<8 | 1<<3 | 2
}
