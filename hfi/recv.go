package hfi

import (
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/ring"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// rxQueue is the receive side between the network and Poll. A goroutine
// locked to its OS thread (run) takes packets from the backend in batches
// into buffers of a fixed pool and publishes each buffer's index and
// length in the arrival ring, an internal/ring Ring in memory outside the Go heap,
// so the C side's idle check sees arrivals (transport.Endpoint.Probes).
// Poll pops the ring and gives buffers back through the free ring. No
// allocation per packet; the ring has as many cells as there are
// buffers, so a push never finds it full.
type rxQueue struct {
	be      Backend
	bufs    [][]byte
	mem     []byte // the arrival ring's mapping
	ring    *ring.Ring
	free    spsc
	stop    atomic.Bool
	done    chan struct{}
	notify  func()
	handoff bool        // hand the network to the polling thread after packets (hot mode)
	hot     atomic.Bool // the application's polls read the network; the thread is parked
	clock   Clock
	dropped atomic.Uint64 // packets too long for a buffer
	raceSeq atomic.Uint64 // race builds only: orders pushes before pops for the detector
	wakeups atomic.Uint64 // batches the thread took from the network
}

const (
	rxBuffers = 512
	rxBatch   = 32
)

// rxRings holds the arrival-ring mappings of closed endpoints for the
// next ones. A mapping is never unmapped (a C idle check may still hold
// its probe word: it then reads another endpoint's ring, a harmless
// wrong hint for one poll), so without reuse every endpoint opened and
// closed left its ring behind: 2000 cycles kept 105 MB resident.
var rxRings struct {
	sync.Mutex
	free  [][]byte
	mmaps int // mappings ever made (tests)
}

func newRxQueue(be Backend, bufSize int, handoff bool, clock Clock, notify func()) (*rxQueue, error) {
	size := ring.RingSize(rxBuffers)
	var mem []byte
	rxRings.Lock()
	if n := len(rxRings.free); n > 0 {
		mem = rxRings.free[n-1]
		rxRings.free = rxRings.free[:n-1]
	}
	rxRings.Unlock()
	if mem == nil {
		var err error
		mem, err = sys.MapAnon(size)
		if err != nil {
			return nil, err
		}
		rxRings.Lock()
		rxRings.mmaps++
		rxRings.Unlock()
	}
	r, err := ring.InitRing(mem, rxBuffers)
	if err != nil {
		putRxRing(mem)
		return nil, err
	}
	q := &rxQueue{be: be, mem: mem, ring: r, done: make(chan struct{}), notify: notify,
		handoff: handoff, clock: clock}
	slab := make([]byte, rxBuffers*bufSize)
	q.bufs = make([][]byte, rxBuffers)
	q.free.init(rxBuffers)
	for i := range q.bufs {
		q.bufs[i] = slab[i*bufSize : (i+1)*bufSize : (i+1)*bufSize]
		q.free.push(uint32(i))
	}
	return q, nil
}

// cool hands the network back to the receive thread (the application
// stops reading it itself).
func (q *rxQueue) cool() {
	if q.hot.Load() {
		q.hot.Store(false)
		q.be.Interrupt()
	}
}

// start runs the receive thread.
func (q *rxQueue) start() { go q.run() }

// close stops the receive thread and waits for it, then gives the
// ring's memory to the next endpoint (rxRings): it is not unmapped, as C
// may hold its probe word (see shm.Endpoint.RingProbe).
func (q *rxQueue) close() {
	q.stop.Store(true)
	q.be.Interrupt()
	<-q.done
	putRxRing(q.mem)
}

func putRxRing(mem []byte) {
	rxRings.Lock()
	rxRings.free = append(rxRings.free, mem)
	rxRings.Unlock()
}

// probe is the arrival ring's probe word.
func (q *rxQueue) probe() uint64 { return q.ring.Probe() }

// An arrival cell: buffer index, length, segment size (RxMeta.Seg), and
// the source address and port.
const rxCell = 18

// pop takes the next arrived buffer: its index, bytes, segment size and
// source (Backend.Recv's meta).
func (q *rxQueue) pop() (uint32, []byte, int, Addr, bool) {
	var c [rxCell]byte
	if _, ok := q.ring.TryPop(c[:]); !ok {
		return 0, nil, 0, Addr{}, false
	}
	if raceEnabled {
		q.raceSeq.Load()
	}
	le := binary.LittleEndian
	i, n, seg := le.Uint32(c[:]), le.Uint32(c[4:]), le.Uint32(c[8:])
	if i >= rxBuffers || int(n) > len(q.bufs[0]) {
		return 0, nil, 0, Addr{}, false // cannot happen: only run pushes
	}
	from := Addr{IP: [4]byte(c[12:16]), Port: le.Uint16(c[16:])}
	return i, q.bufs[i][:n], int(seg), from, true
}

// release gives buffer i back to the receive thread.
func (q *rxQueue) release(i uint32) { q.free.push(i) }

func (q *rxQueue) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer close(q.done)
	var (
		idx  = make([]uint32, 0, rxBatch)
		bufs = make([][]byte, 0, rxBatch)
		meta = make([]RxMeta, rxBatch)
		cell [rxCell]byte
	)
	for !q.stop.Load() {
		if q.hot.Load() {
			q.be.Park() // the application reads the network now
			continue
		}
		for len(idx) < rxBatch {
			i, ok := q.free.pop()
			if !ok {
				break
			}
			idx, bufs = append(idx, i), append(bufs, q.bufs[i])
		}
		if len(idx) == 0 {
			// Poll has every buffer: the application is not consuming.
			// Packets wait in the socket (or drop and are resent).
			time.Sleep(50 * time.Microsecond)
			continue
		}
		n, err := q.be.Recv(bufs, meta[:len(bufs)], true)
		if err != nil {
			if q.stop.Load() {
				return
			}
			time.Sleep(time.Millisecond)
			continue
		}
		if n > 0 {
			q.wakeups.Add(1)
		}
		kept := 0
		for k := 0; k < n; k++ {
			m := &meta[k]
			if m.Len < 0 {
				q.dropped.Add(1)
				idx[kept], bufs[kept] = idx[k], bufs[k]
				kept++
				continue
			}
			le := binary.LittleEndian
			le.PutUint32(cell[:], idx[k])
			le.PutUint32(cell[4:], uint32(m.Len))
			le.PutUint32(cell[8:], uint32(m.Seg))
			copy(cell[12:16], m.From.IP[:])
			le.PutUint16(cell[16:], m.From.Port)
			if raceEnabled {
				q.raceSeq.Add(1)
			}
			for q.ring.TryPush(cell[:]) != nil {
				runtime.Gosched() // cannot happen: as many cells as buffers
			}
		}
		if n > 0 {
			copy(idx[kept:], idx[n:])
			copy(bufs[kept:], bufs[n:])
			idx, bufs = idx[:kept+len(idx)-n], bufs[:kept+len(bufs)-n]
			if kept < n {
				if q.handoff {
					q.hot.Store(true)
				}
				q.notify()
			}
		}
	}
}

// spsc is a single-producer single-consumer ring of buffer indexes.
type spsc struct {
	head atomic.Uint64 // next to pop
	_    [56]byte
	tail atomic.Uint64 // next to push
	_    [56]byte
	v    []uint32
	mask uint64
}

func (s *spsc) init(n int) { s.v, s.mask = make([]uint32, n), uint64(n-1) }

func (s *spsc) push(i uint32) {
	t := s.tail.Load()
	s.v[t&s.mask] = i
	s.tail.Store(t + 1)
}

func (s *spsc) pop() (uint32, bool) {
	h := s.head.Load()
	if h == s.tail.Load() {
		return 0, false
	}
	i := s.v[h&s.mask]
	s.head.Store(h + 1)
	return i, true
}
