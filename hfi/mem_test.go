package hfi

import (
	"math/rand/v2"
	"sync"
)

// memNet is an in-memory network for tests: endpoints by port, with
// loss, duplication and reordering chosen per packet.
type memNet struct {
	mu      sync.Mutex
	ports   map[uint16]*memBackend
	next    uint16
	loss    float64 // probability a packet is dropped
	dup     float64 // ... delivered twice
	reorder float64 // ... held back and delivered after the next one
	rng     *rand.Rand
	held    map[uint16][]byte
	filter  func(b []byte) bool // false drops the packet
}

func newMemNet() *memNet {
	return &memNet{ports: map[uint16]*memBackend{}, next: 1000, rng: rand.New(rand.NewPCG(1, 2)), held: map[uint16][]byte{}}
}

type memBackend struct {
	net   *memNet
	port  uint16
	mu    sync.Mutex
	cond  *sync.Cond
	q     [][]byte
	intr  bool
	close bool
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

func (b *memBackend) Addr() ([4]byte, uint16) { return [4]byte{10, 0, 0, 1}, b.port }
func (b *memBackend) Paths() int              { return 2 }

func (b *memBackend) Send(path int, d *Dest, p []byte) error {
	n := b.net
	n.mu.Lock()
	to := n.ports[d.Port]
	if to == nil || (n.filter != nil && !n.filter(p)) || n.rng.Float64() < n.loss {
		n.mu.Unlock()
		return nil
	}
	pkts := [][]byte{append([]byte(nil), p...)}
	if n.rng.Float64() < n.dup {
		pkts = append(pkts, append([]byte(nil), p...))
	}
	if h := n.held[d.Port]; h != nil {
		pkts = append(pkts, h)
		delete(n.held, d.Port)
	} else if n.rng.Float64() < n.reorder {
		n.held[d.Port] = pkts[0]
		pkts = pkts[1:]
	}
	n.mu.Unlock()
	to.mu.Lock()
	to.q = append(to.q, pkts...)
	to.cond.Broadcast()
	to.mu.Unlock()
	return nil
}

func (b *memBackend) SendBatch(path int, d *Dest, pkts [][]byte) error {
	for _, p := range pkts {
		b.Send(path, d, p)
	}
	return nil
}

func (b *memBackend) BufSize() int { return 2048 }

func (b *memBackend) Recv(bufs [][]byte, lens, segs []int, wait bool) (int, error) {
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
		segs[k] = 0
		if len(p) > len(bufs[k]) {
			lens[k] = -1
		} else {
			lens[k] = copy(bufs[k], p)
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
	n.held = map[uint16][]byte{}
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
