package hfi

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/umem"
)

// memNet is an in-memory network for tests: endpoints by port on the
// address 10.0.0.1, with loss, duplication and reordering chosen per
// packet, an MTU, and packets injected with any source (an attacker's).
type memNet struct {
	mu      sync.Mutex
	ports   map[uint16]*memBackend
	next    uint16
	loss    float64 // probability a packet is dropped
	dup     float64 // ... delivered twice
	reorder float64 // ... held back and delivered after the next one
	rng     *rand.Rand
	held    map[uint16]memPkt
	filter  func(b []byte) bool // false drops the packet
	// mtu, if set, is the IP MTU: a batch of packets larger than
	// mtu-28 fails with ErrPacketTooBig (and goes one by one, as the
	// UDP backend's fragmented sends), as a UDP_SEGMENT send does.
	mtu    int
	tooBig int // batches refused so
	// qmax, if set, bounds each endpoint's queue, as a socket's receive
	// buffer does: packets past it are dropped (qdrops).
	qmax     int
	qdrops   atomic.Int64
	memAddr  [4]byte
	memPaths int
	// batchBytes is every backend's BatchBytes; batches the bytes of
	// each SendBatch call, in order.
	batchBytes int
	batches    []int
	split      int // SendBatch calls with packets in two parts
}

// memPkt is a packet in flight and where it came from.
type memPkt struct {
	b    []byte
	from Addr
}

// pathPort is the source port of path k of the endpoint at port: path 0
// sends from its own port, the others from ports of their own.
func pathPort(port uint16, k int) uint16 {
	if k == 0 {
		return port
	}
	return port + uint16(10000*k)
}

func newMemNet() *memNet {
	return &memNet{ports: map[uint16]*memBackend{}, next: 1000, rng: rand.New(rand.NewPCG(1, 2)),
		held: map[uint16]memPkt{}, memAddr: [4]byte{10, 0, 0, 1}, memPaths: 2}
}

type memBackend struct {
	net       *memNet
	port      uint16
	sentBytes atomic.Int64 // bytes of the packets it sent
	mu        sync.Mutex
	cond      *sync.Cond
	q         []memPkt
	intr      bool
	close     bool
}

func (n *memNet) open() *memBackend {
	n.mu.Lock()
	defer n.mu.Unlock()
	b := &memBackend{net: n, port: n.next}
	b.cond = sync.NewCond(&b.mu)
	n.ports[n.next] = b
	n.next++
	return b
}

func (b *memBackend) Addr() ([4]byte, uint16) { return b.net.memAddr, b.port }
func (b *memBackend) Paths() int              { return b.net.memPaths }

func (b *memBackend) SrcPorts() []uint16 {
	var v []uint16
	for k := 0; k < b.net.memPaths; k++ {
		v = append(v, pathPort(b.port, k))
	}
	return v
}

func (b *memBackend) PathMTU(d *Dest) int {
	b.net.mu.Lock()
	defer b.net.mu.Unlock()
	return b.net.mtu
}

func (b *memBackend) Send(path int, d *Dest, p []byte) error {
	b.sentBytes.Add(int64(len(p)))
	b.net.deliver(d.Port, p, Addr{b.net.memAddr, pathPort(b.port, path)})
	return nil
}

// deliver puts a copy of p, from from, in the queue of the endpoint at
// port (after loss, duplication, reordering and the filter).
func (n *memNet) deliver(port uint16, p []byte, from Addr) {
	n.mu.Lock()
	to := n.ports[port]
	if to == nil || (n.filter != nil && !n.filter(p)) || n.rng.Float64() < n.loss {
		n.mu.Unlock()
		return
	}
	pkts := []memPkt{{append([]byte(nil), p...), from}}
	if n.rng.Float64() < n.dup {
		pkts = append(pkts, memPkt{append([]byte(nil), p...), from})
	}
	if h := n.held[port]; h.b != nil {
		pkts = append(pkts, h)
		delete(n.held, port)
	} else if n.rng.Float64() < n.reorder {
		n.held[port] = pkts[0]
		pkts = pkts[1:]
	}
	n.mu.Unlock()
	to.push(pkts...)
}

// push queues pkts at b, within the network's qmax.
func (b *memBackend) push(pkts ...memPkt) {
	b.mu.Lock()
	if m := b.net.qmax; m > 0 && len(b.q)+len(pkts) > m {
		b.net.qdrops.Add(int64(len(pkts)))
		b.mu.Unlock()
		return
	}
	b.q = append(b.q, pkts...)
	b.cond.Broadcast()
	b.mu.Unlock()
}

// inject puts packet p, claiming to come from from, straight into the
// queue of the endpoint at port (no loss, no filter): a sender that may
// forge its source address.
func (n *memNet) inject(port uint16, p []byte, from Addr) {
	n.mu.Lock()
	to := n.ports[port]
	n.mu.Unlock()
	if to == nil {
		return
	}
	to.push(memPkt{append([]byte(nil), p...), from})
}

func (b *memBackend) SendBatch(path int, d *Dest, pkts, pays [][]byte) error {
	if pays != nil { // a packet and its rest: one datagram, copied now
		whole := make([][]byte, len(pkts))
		for i, p := range pkts {
			w := make([]byte, len(p)+len(pays[i]))
			copy(w, p)
			if _, bad, _ := umem.Copy(w[len(p):], pays[i]); bad != umem.None {
				return unix.EFAULT // as the kernel: nothing of the batch is sent
			}
			whole[i] = w
		}
		pkts = whole
		b.net.mu.Lock()
		b.net.split++
		b.net.mu.Unlock()
	}
	b.net.mu.Lock()
	mtu := b.net.mtu
	big := false
	total := 0
	for _, p := range pkts {
		total += len(p)
	}
	b.net.batches = append(b.net.batches, total)
	if len(pkts) > 1 && mtu > 0 {
		for _, p := range pkts {
			big = big || len(p) > mtu-28
		}
		if big {
			b.net.tooBig++
		}
	}
	b.net.mu.Unlock()
	for _, p := range pkts {
		b.Send(path, d, p)
	}
	if big {
		return ErrPacketTooBig
	}
	return nil
}

func (b *memBackend) BufSize() int { return 2048 }

func (b *memBackend) BatchBytes() int {
	b.net.mu.Lock()
	defer b.net.mu.Unlock()
	return b.net.batchBytes
}

func (b *memBackend) Recv(bufs [][]byte, meta []RxMeta, wait bool) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.q) == 0 && wait && !b.intr && !b.close {
		b.cond.Wait()
	}
	b.intr = false
	k := 0
	for k < len(bufs) && len(b.q) > 0 {
		p := b.q[0]
		b.q = b.q[1:]
		meta[k] = RxMeta{From: p.from}
		if len(p.b) > len(bufs[k]) {
			meta[k].Len = -1
		} else {
			meta[k].Len = copy(bufs[k], p.b)
		}
		k++
	}
	return k, nil
}

func (b *memBackend) Park() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for !b.intr && !b.close {
		b.cond.Wait()
	}
	b.intr = false
}

func (b *memBackend) Interrupt() {
	b.mu.Lock()
	b.intr = true
	b.cond.Broadcast()
	b.mu.Unlock()
}

func (b *memBackend) Close() error {
	b.mu.Lock()
	b.close = true
	b.cond.Broadcast()
	b.mu.Unlock()
	b.net.mu.Lock()
	delete(b.net.ports, b.port)
	b.net.mu.Unlock()
	return nil
}

// flush delivers packets held for reordering.
func (n *memNet) flush() {
	n.mu.Lock()
	held := n.held
	n.held = map[uint16]memPkt{}
	n.mu.Unlock()
	for port, p := range held {
		n.mu.Lock()
		to := n.ports[port]
		n.mu.Unlock()
		if to != nil {
			to.mu.Lock()
			to.q = append(to.q, p)
			to.cond.Broadcast()
			to.mu.Unlock()
		}
	}
}

func newCond(b *memBackend) *sync.Cond { return sync.NewCond(&b.mu) }
