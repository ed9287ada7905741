//go:build linux

package shm

// Over 600 lines: the endpoint (connect, the send protocols, the receive
// loop, close) around one struct; cells, rings, rendezvous and liveness are
// in files of their own.

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/clock"
	"github.com/gopsm2/libfabric-psm2/internal/ring"
	"github.com/gopsm2/libfabric-psm2/internal/slots"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
	"github.com/gopsm2/libfabric-psm2/transport"
)

var _ transport.Endpoint = (*Endpoint)(nil)

// Defaults and bounds of Config.
const (
	DefaultConnTimeout   = 5 * time.Second
	DefaultRndvThreshold = 16000 // PSM2_MQ_RNDV_SHM_THRESH
	DefaultRingCells     = 1024
	DefaultBuffers       = 32
	DefaultInlineCells   = 2

	// MaxRndvThreshold bounds RndvThreshold: an eager message must fit in
	// one bounce buffer, and every endpoint's segment holds Buffers of them.
	MaxRndvThreshold = 256 << 10

	// minBufferSize is the smallest bounce buffer, and so the chunk of the
	// copy rendezvous when the threshold is small.
	minBufferSize = 16 << 10

	// checkInterval is how often Poll checks the liveness of peers that
	// operations wait on (less if ConnTimeout is short).
	checkInterval = 100 * time.Millisecond

	// busyWait is the longest Wait sleeps while the endpoint itself has
	// work that no doorbell announces: queued control cells, streams
	// waiting for bounce buffers, a send refused with ErrAgain.
	busyWait = time.Millisecond
)

// Config configures an Endpoint. Zero fields take their defaults.
type Config struct {
	// Job is the job key (the psm2 UUID). It is part of every segment
	// name and stored in the segment header: endpoints of different jobs
	// cannot find each other, and Connect fails with ErrUnreachable.
	Job [16]byte
	// EPID is this endpoint's id, chosen by the provider and unique on
	// the node.
	EPID uint64
	// ConnTimeout is FI_PSM2_CONN_TIMEOUT (default 5s): it bounds
	// connection set-up and how long Close lingers for peers.
	ConnTimeout time.Duration
	// Clock for every timer (liveness, stalled rings, rendezvous waits);
	// nil is clock.System.
	Clock clock.Clock
	// StuckTimeout, if positive, fails the operations waiting on a peer
	// that is alive but has not drained its ring (or sent rendezvous
	// data) for that long. It is off by default: an MPI rank may compute
	// for minutes without polling, and a live peer is not a failed one
	// (PSM2 does not fail it either). Dead peers fail at once regardless.
	StuckTimeout time.Duration
	// RndvThreshold: messages longer than this use rendezvous, unless
	// they fit inline. 0 means DefaultRndvThreshold; a negative value
	// means a threshold of 0 (every message longer than an inline one);
	// at most MaxRndvThreshold.
	RndvThreshold int
	// DisableCMA forces the bounce-buffer rendezvous even where
	// process_vm_readv or a direct copy would work.
	DisableCMA bool
	// SplitThreshold: a rendezvous of at least this many bytes between
	// processes is copied by both sides at once (split.go). 0 means
	// DefaultSplitThreshold; a negative value turns split copies off.
	SplitThreshold int
	// SplitAloneThreshold: a rendezvous of at least this many bytes (and
	// below SplitThreshold) is split too when nothing else waits in the
	// ring behind it. A lone message is latency-bound (a ping-pong: its
	// sender only polls for the answer), so two cores copy it; in a
	// stream of them the receiver copies alone and the sender stays free
	// to post. 0 means DefaultSplitAloneThreshold, or
	// PinnedSplitAloneThreshold in a process bound to one CPU; a negative
	// value turns it off.
	SplitAloneThreshold int
	// RingCells is the size of the receive ring, a power of two in
	// [MinCells, MaxCells]. Default DefaultRingCells.
	RingCells int
	// Buffers is the number of bounce buffers in the endpoint's segment,
	// at most MaxBuffers. Default DefaultBuffers.
	Buffers int
	// InlineCells is the most ring cells one inline message may take, in
	// [1, MaxPushCells]. Default DefaultInlineCells.
	InlineCells int
}

// Stats counts what an endpoint did. Every field only grows.
type Stats struct {
	Sent        uint64 // messages accepted by Send
	Inline      uint64 // ... of which sent inline in ring cells
	Eager       uint64 // ... of which sent through a bounce buffer
	Rndv        uint64 // ... of which sent by rendezvous
	Received    uint64 // messages delivered to the handler
	RndvCMA     uint64 // fetches done by process_vm_readv or an in-process copy
	RndvCopy    uint64 // fetches done through the sender's bounce buffers
	RndvSplit   uint64 // ... of RndvCMA: fetches cut into chunks the sender could help with (split.go)
	SplitHelped uint64 // chunks this endpoint wrote into receivers' memory
	Dropped     uint64 // arrived cells dropped as malformed, stale or unusable
	Again       uint64 // sends refused with ErrAgain
	Queued      uint64 // control cells queued because the peer's ring was full
	PeerDead    uint64 // operations failed because their peer died or closed
	Timeouts    uint64 // operations failed because their peer made no progress (StuckTimeout)
	Repaired    uint64 // ring cells a dead producer reserved and never published, skipped (internal/ring/slots.go)
	Faults      uint64 // transfers failed because a buffer was refused or a copy failed (fault.go)

	// Bytes: of the messages sent inline, eager and by rendezvous, and
	// of the rendezvous fetched here (by any means).
	InlineBytes, EagerBytes, RndvBytes, FetchedBytes uint64
}

// Errors of the endpoint besides the transport's.
var (
	// ErrBadConn: a Conn or Rndv that this endpoint did not hand out.
	ErrBadConn = errors.New("shm: invalid connection or rendezvous handle")
	// ErrLength: the header's length is not the iov's total.
	ErrLength = errors.New("shm: header length does not match the payload")
	// ErrCorrupt: a segment or its ring does not hold what it must; the
	// memory is written by other processes, so this is that peer's fault.
	// It is the ring's error, so one errors.Is covers both.
	ErrCorrupt = ring.ErrCorrupt

	errClosed        = fmt.Errorf("shm: %w", transport.ErrClosed)
	errAgain         = transport.ErrAgain
	errRemoteTimeout = fmt.Errorf("shm: the receiver gave up: %w", transport.ErrTimeout)
)

// Endpoint is one endpoint of the shared-memory wire: a segment under Dir
// holding this endpoint's receive ring, doorbell and bounce buffers, plus
// the mappings of the peers it talks to. It implements transport.Endpoint;
// see docs/shm.md for the protocols.
//
// As transport.Endpoint says, its methods are not safe for concurrent use,
// except Wake and, here, Wait (see Wait). The handler is called only from Poll, on the calling
// goroutine; Send, Fetch and Discard never call it (they report what they
// complete at once through their results).
type Endpoint struct {
	cfg         Config
	epid        uint64
	pid         int
	seg         *Segment
	ring        *ring.Ring
	threshold   int // longest eager message
	inlineCells int
	connTimeout int64 // ns
	stuck       int64 // ns; 0: never give up on a live peer
	interval    int64 // ns between liveness checks
	token       uint64
	clock       clock.Clock

	peers  []*peer
	byEPID map[uint64]int32
	last   *peer // the peer of the last cell received

	// Our bounce buffers. Bit i of the segment's busy word is set while
	// buffer i is handed to peer holder[i]. holder points at holders, or,
	// while the fast-peer descriptors are mapped, at their copy next to
	// them, which C producers write too (fastpeer.go).
	busy    *atomic.Uint64
	nbuf    int
	allBufs uint64
	holder  *[MaxBuffers]int32
	holders [MaxBuffers]int32
	reserve int  // buffers a stream leaves to eager sends
	starved bool // an allocation failed since the last liveness check
	blocked bool // a send found a peer's ring full since the last check

	sends     slots.Table[sendOp]  // ids: slots.Table.ID
	fetches   slots.Table[fetchOp] // ids: slots.Table.ID
	streams   []int32              // sends streaming through bounce buffers
	pending   int                  // sends and fetches outstanding
	watched   int                  // Watch counts over all peers
	ctlPeers  []int32              // peers with queued control cells
	doomed    bool                 // some peer died with operations pending
	nextCheck int64

	// The stall watch (stall.go): the position the ring was last seen
	// stalled at, since when, and when the slots may be read next.
	stallPos    uint64
	idleRun     uint32 // Idle answers since Poll last popped a cell (the producer counter is read every idleProbeEvery)
	probeHit    bool   // Idle's probe saw a reservation; Poll clears it
	checkHit    bool   // Idle saw the liveness check due; Poll clears it
	stallSince  int64
	stallNext   int64
	stallOwners []sys.ProcIdentity

	cmaRefused bool // process_vm_readv is not allowed here
	// Split copies (split.go): the generation and use of our split
	// slots, and whether process_vm_writev is refused here.
	splitGen     [splitSlots]uint32
	splitBusy    uint64
	writeRefused bool
	noLocal      bool   // tests: use process_vm_readv even within the process
	splitHook    func() // tests: runs when a SPLIT cell is out, before we claim a chunk
	again        bool   // the last Send returned ErrAgain

	tx      [ring.MaxPushCells * ring.CellPayload]byte
	rx      cell
	payload [ring.MaxPushCells * ring.CellPayload]byte
	hdr     transport.Header
	inc     transport.Incoming
	stats   Stats
	// fast holds the fast-peer descriptors (fastpeer.go), mapped at the
	// first FastPeer; fastClosed is what they had counted (inline and
	// eager sends, rendezvous fetches) when Close unmapped them.
	fast       []byte
	fastClosed fastCounts

	// Wait and Wake may run on other goroutines than the owner's: they
	// touch only these fields and atomics in the segment.
	bellSeq     *atomic.Uint32
	bellWaiters *atomic.Uint32
	woken       atomic.Bool
	hint        atomic.Uint32 // hintIdle, hintPending or hintBusy, for Wait
	hintShadow  uint32        // the owner's copy of hint
	againAt     int64         // when again was last set
	closing     atomic.Bool   // Close has begun to tear down
	wakeMu      sync.Mutex    // guards closed and waiting
	waitDone    sync.Cond     // signalled when waiting drops to 0
	waiting     int           // goroutines inside Wait
	closed      bool
}

// Values of Endpoint.hint: how long Wait may sleep, as far as the
// endpoint's own work is concerned.
const (
	hintIdle    = iota // as long as the caller asks
	hintPending        // until the next liveness check
	hintBusy           // busyWait: work no doorbell announces
)

// peer is another endpoint (or this one) that this endpoint sends to or
// receives from. Its index in Endpoint.peers is its Conn minus one.
type peer struct {
	epid      uint64
	idx       int32
	gen       uint32 // bumped when the segment is mapped again
	connected bool   // Connect returned its Conn: Incoming.Src is set
	self      bool
	seg       *Segment   // the peer's segment: our own if self
	ring      *ring.Ring // its receive ring
	pid       int
	busy      *atomic.Uint64 // its busy bits, which we clear as a receiver
	bellSeq   *atomic.Uint32
	bellWait  *atomic.Uint32

	dead error // why the peer is unusable; nil while it is fine

	ctl     []cell // control cells waiting for room in its ring, in order
	ctlHead int
	inCtl   bool // listed in Endpoint.ctlPeers

	full      bool   // a send found its ring full since the last check
	ops       int    // our operations that wait on it
	sendsTo   int    // of those, rendezvous sends it has yet to fetch (splitOK)
	watch     int    // the provider's waits on it (Watch)
	lastCons  uint64 // its consumer counter at the last check
	consSince int64  // when lastCons last changed

	// Found gone (closed, exited), it is killed only once our ring has
	// given up what it held then (killAfterDrain).
	draining  bool
	drainTo   uint64 // our ring's producer counter when it was found gone
	drainCons uint64 // our consumer counter at the last check since
}

// Operation states.
const (
	opFree     = iota
	opWait     // a send whose RTS is out; a fetch waiting for DATA
	opStream   // a send streaming through bounce buffers
	opFinished // reported, about to be freed
)

type sendOp struct {
	state   uint8
	peer    int32
	local   bool // published in the in-process registry
	cookie  uint64
	data    []byte
	fetchID uint64 // the receiver's fetch, once streaming
	off     int    // bytes handed to bounce buffers so far
	want    int    // bytes to stream
}

type fetchOp struct {
	state  uint8
	peer   int32
	cookie uint64
	sendID uint64
	dst    []byte // exactly the bytes wanted
	got    int
	last   int64 // when data last arrived
}

// NewEndpoint creates the endpoint's segment, SegmentName(cfg.Job,
// cfg.EPID), reclaiming first any segment of this user whose owner is
// dead (including a leftover under this very name).
func NewEndpoint(cfg Config) (*Endpoint, error) {
	asymFences() // before this process pushes its first cell (fence.go)
	if cfg.Clock == nil {
		cfg.Clock = clock.System
	}
	if cfg.ConnTimeout <= 0 {
		cfg.ConnTimeout = DefaultConnTimeout
	}
	switch {
	case cfg.RndvThreshold == 0:
		cfg.RndvThreshold = DefaultRndvThreshold
	case cfg.RndvThreshold < 0:
		cfg.RndvThreshold = 0
	case cfg.RndvThreshold > MaxRndvThreshold:
		cfg.RndvThreshold = MaxRndvThreshold
	}
	if cfg.RingCells == 0 {
		cfg.RingCells = DefaultRingCells
	}
	if cfg.Buffers == 0 {
		cfg.Buffers = DefaultBuffers
	}
	if cfg.InlineCells == 0 {
		cfg.InlineCells = DefaultInlineCells
	}
	if ring.RingSize(cfg.RingCells) == 0 {
		return nil, fmt.Errorf("shm: endpoint: ring of %d cells: %w", cfg.RingCells, ring.ErrCells)
	}
	if cfg.Buffers < 1 || cfg.Buffers > MaxBuffers {
		return nil, fmt.Errorf("shm: endpoint: %d bounce buffers: %w", cfg.Buffers, ErrPool)
	}
	if cfg.InlineCells < 1 || cfg.InlineCells > ring.MaxPushCells || cfg.InlineCells > cfg.RingCells {
		return nil, fmt.Errorf("shm: endpoint: %d inline cells out of range", cfg.InlineCells)
	}
	bufSize := roundUp(max(cfg.RndvThreshold, minBufferSize), 4096)

	_, _ = ReclaimStale()
	name := SegmentName(cfg.Job, cfg.EPID)
	if cfg.SplitThreshold == 0 {
		cfg.SplitThreshold = DefaultSplitThreshold
	}
	if cfg.SplitAloneThreshold == 0 {
		cfg.SplitAloneThreshold = defaultSplitAlone()
	}
	scfg := SegmentConfig{Cells: cfg.RingCells, Job: cfg.Job, EPID: cfg.EPID,
		Buffers: cfg.Buffers, BufferSize: bufSize, SplitSlots: splitSlots}
	seg, err := CreateSegment(name, scfg)
	if errors.Is(err, os.ErrExist) {
		if removed, _ := Reclaim(name); removed {
			seg, err = CreateSegment(name, scfg)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("shm: endpoint %#x: %w", cfg.EPID, err)
	}

	e := &Endpoint{
		cfg:         cfg,
		epid:        cfg.EPID,
		pid:         os.Getpid(),
		seg:         seg,
		ring:        seg.Ring(),
		threshold:   cfg.RndvThreshold,
		inlineCells: cfg.InlineCells,
		connTimeout: int64(cfg.ConnTimeout),
		stuck:       int64(cfg.StuckTimeout),
		interval:    int64(min(checkInterval, cfg.ConnTimeout/4)),
		clock:       cfg.Clock,
		byEPID:      make(map[uint64]int32),
		busy:        seg.Busy(),
		nbuf:        cfg.Buffers,
		allBufs:     ^uint64(0) >> (64 - cfg.Buffers),
		reserve:     cfg.Buffers / 4,
		bellSeq:     seg.bellSeq(),
		bellWaiters: seg.bellWaiters(),
	}
	e.token = uint64(time.Now().UnixNano()) ^ cfg.EPID ^ uint64(uintptr(unsafe.Pointer(e)))
	e.waitDone.L = &e.wakeMu
	e.holder = &e.holders
	for i := range e.holder {
		e.holder[i] = -1
	}
	return e, nil
}

// EPID returns the endpoint's id.
func (e *Endpoint) EPID() uint64 { return e.epid }

// Name returns the name of the endpoint's segment under Dir.
func (e *Endpoint) Name() string { return e.seg.Name() }

// Stats returns the endpoint's counters. Like the other methods it must
// not run concurrently with them.
func (e *Endpoint) Stats() Stats {
	s := e.stats
	e.fastSent().add(&s)
	e.fastClosed.add(&s)
	return s
}

// Report describes the counters (transport.Reporter).
func (e *Endpoint) Report() string { return fmt.Sprintf("shm %+v", e.Stats()) }

// Counters appends the counters (transport.Counted).
func (e *Endpoint) Counters(dst []transport.Counters) []transport.Counters {
	return append(dst, transport.CountersOf("shm", e.Stats()))
}

// RingProbe describes the endpoint's receive ring for code outside Go
// that wants to know whether Poll has anything to do without calling into
// Go: the ring's probe word (ring.Ring.Probe; N is the validated cell
// count, never re-read from the shared header). Queued control work and
// liveness checks are not visible there; Idle sees those. After Close the
// address stays readable (the segment's range is retired, not unmapped:
// vm.go), so a reader holding an old word reads zeros or another ring of
// this process, never unmapped memory.
func (e *Endpoint) RingProbe() uint64 {
	if e.closed {
		return 0
	}
	return e.ring.Probe()
}

// Probes appends the receive ring's probe word (transport.Endpoint).
func (e *Endpoint) Probes(dst []uint64) []uint64 {
	if w := e.RingProbe(); w != 0 {
		dst = append(dst, w)
	}
	return dst
}

// Connect returns the Conn of endpoint epid of this job, mapping its
// segment the first time. It fails with an error wrapping
// transport.ErrUnreachable if there is no such segment (another job's
// endpoints have other names), if it is not a valid segment of epid in
// this job, or if its owner closed it or died. Connecting to this
// endpoint's own id works: messages to self go through the own ring.
func (e *Endpoint) Connect(epid uint64) (transport.Conn, error) {
	if e.closed {
		return 0, errClosed
	}
	if i, ok := e.byEPID[epid]; ok {
		p := e.peers[i]
		if p.dead != nil && p.ops == 0 && !p.self {
			// A peer we gave up on: its endpoint id may have a new,
			// live segment.
			if err := e.remap(p, true); err != nil {
				return 0, err
			}
		}
		p.connected = true
		e.syncFast(p)
		return transport.Conn(i + 1), nil
	}
	p, err := e.openPeer(epid, true)
	if err != nil {
		return 0, err
	}
	p.connected = true
	e.syncFast(p)
	return transport.Conn(p.idx + 1), nil
}

// openPeer maps the segment of endpoint epid and adds it to the peers.
// toSend asks for a peer that can be sent to; without it (a sender whose
// cells we are reading) a closed segment, or one whose owner has died, is
// still mapped: the data of its last messages is in it.
func (e *Endpoint) openPeer(epid uint64, toSend bool) (*peer, error) {
	p := &peer{epid: epid, idx: int32(len(e.peers))}
	if epid == e.epid {
		p.self = true
		if err := e.attach(p, e.seg); err != nil {
			return nil, fmt.Errorf("shm: connect to self: %w", err)
		}
	} else if err := e.remap(p, toSend); err != nil {
		return nil, err
	}
	e.peers = append(e.peers, p)
	e.byEPID[epid] = p.idx
	return p, nil
}

// remap (re)opens the segment of peer p, which is not self. With toSend,
// a closed segment or a dead owner is refused.
func (e *Endpoint) remap(p *peer, toSend bool) error {
	seg, err := Open(SegmentName(e.cfg.Job, p.epid))
	if err != nil {
		return fmt.Errorf("shm: connect %#x: %w: %w", p.epid, transport.ErrUnreachable, err)
	}
	var why string
	switch alive, _ := processAlive(seg.Owner()); {
	case seg.Job() != e.cfg.Job || seg.EPID() != p.epid:
		why = "segment of another endpoint"
	case toSend && seg.Closed():
		why = "endpoint closed"
	case toSend && !alive:
		why = "owner dead"
	}
	if why != "" {
		_ = seg.Close()
		return fmt.Errorf("shm: connect %#x: %s: %w", p.epid, why, transport.ErrUnreachable)
	}
	if err := e.attach(p, seg); err != nil {
		_ = seg.Close()
		return fmt.Errorf("shm: connect %#x: %w: %w", p.epid, transport.ErrUnreachable, err)
	}
	p.gen++
	p.dead, p.draining = nil, false
	p.ctl, p.ctlHead = p.ctl[:0], 0
	e.syncFast(p)
	return nil
}

// attach points p at the mapped segment seg, claiming a producer slot in
// its ring: every push of this endpoint announces itself there, so the
// ring's owner can repair a cell we leave half-pushed if this process
// dies (internal/ring/slots.go).
func (e *Endpoint) attach(p *peer, seg *Segment) error {
	r, err := seg.Ring().Claim(sys.SelfIdentity())
	if err != nil {
		return err
	}
	e.detach(p)
	p.seg = seg
	p.ring = r
	p.pid = seg.Owner()
	p.busy = seg.Busy()
	p.bellSeq = seg.bellSeq()
	p.bellWait = seg.bellWaiters()
	p.lastCons, _ = p.ring.Counters()
	p.consSince = e.now()
	return nil
}

// detach releases p's producer slot and, unless p is this endpoint,
// unmaps its segment.
func (e *Endpoint) detach(p *peer) {
	if p.ring != nil {
		p.ring.Release()
	}
	if p.seg != nil && !p.self {
		_ = p.seg.Close()
	}
	p.seg, p.ring = nil, nil
}

// conn returns the peer of c, or nil if c is not a Conn of this endpoint.
func (e *Endpoint) conn(c transport.Conn) *peer {
	if c == 0 || uint64(c) > uint64(len(e.peers)) {
		return nil
	}
	p := e.peers[c-1]
	if !p.connected {
		return nil
	}
	return p
}

// lookup returns the known peer with id epid, or nil.
func (e *Endpoint) lookup(epid uint64) *peer {
	if p := e.last; p != nil && p.epid == epid {
		return p
	}
	i, ok := e.byEPID[epid]
	if !ok {
		return nil
	}
	e.last = e.peers[i]
	return e.last
}

// sender returns the peer with id epid, mapping its segment if this is
// the first cell from it that needs its memory; nil if it cannot be
// mapped.
func (e *Endpoint) sender(epid uint64) *peer {
	if p := e.lookup(epid); p != nil {
		return p
	}
	p, err := e.openPeer(epid, false)
	if err != nil {
		return nil
	}
	e.last = p
	return p
}

// Send sends the message h with the payload gathered from iov to c:
//
//   - up to an inline message's size (InlineCells cells; 32 bytes in one
//     cell, 87 in two (the default), 197 in four, 8 less with CQ data),
//     whatever the threshold: in ring cells;
//   - else up to RndvThreshold bytes: through one of this endpoint's
//     bounce buffers;
//   - longer: by rendezvous. Send publishes the data (a private copy if
//     flags has SendCopy or iov has more than one piece) and returns done
//     false; SendDone follows from Poll.
//
// Inline and eager sends are complete when Send returns (done true) and
// do not allocate. ErrAgain means the peer's ring is full, no bounce
// buffer is free, or control cells to the peer are still queued; nothing
// was sent. A dead or closed peer gives an error wrapping
// transport.ErrPeerDead.
func (e *Endpoint) Send(c transport.Conn, h *transport.Header, iov [][]byte, cookie uint64, flags uint32) (bool, error) {
	if e.closed {
		return false, errClosed
	}
	p := e.conn(c)
	if p == nil {
		return false, ErrBadConn
	}
	if p.dead != nil {
		return false, p.dead
	}
	if !p.self && p.seg.Closed() {
		e.kill(p, transport.ErrPeerDead, "closed")
		return false, p.dead
	}
	if p.ctlHead < len(p.ctl) && !e.flush(p) {
		return false, e.refuse(p, true)
	}
	n := 0
	for _, b := range iov {
		n += len(b)
	}
	if uint64(n) != h.Len {
		return false, ErrLength
	}
	var err error
	switch {
	case n <= inlineMax(e.inlineCells, h.Data != 0):
		err = e.sendInline(p, h, iov, n)
	case n > e.threshold:
		return e.sendRndv(p, h, iov, n, cookie, flags)
	default:
		err = e.sendEager(p, h, iov, n)
	}
	if err != nil {
		return false, err
	}
	return true, nil
}

// sendInline pushes the message in inlineCells(n) cells.
func (e *Endpoint) sendInline(p *peer, h *transport.Header, iov [][]byte, n int) error {
	hasData := h.Data != 0
	cells := inlineCells(n, hasData)
	b := e.tx[:cells*ring.CellPayload]
	var fl byte
	start := offCellW3
	if hasData {
		fl = cellHasData
		start = offCellW4
		put64(b, offCellW3, h.Data)
	}
	putCommon(b, cellInline, fl, uint16(n), h.Flags, e.epid)
	put64(b, offCellW2, h.Tag)
	var parts [ring.MaxPushCells][]byte
	parts[0] = b[start:ring.CellPayload]
	for k := 1; k < cells; k++ {
		c := b[k*ring.CellPayload : (k+1)*ring.CellPayload]
		c[offContKind] = cellCont
		parts[k] = c[offContPayload:]
	}
	g := gather{iov: iov}
	if !g.readAll(parts[:cells]...) {
		e.stats.Faults++
		return errSendFault
	}
	if err := p.ring.TryPushCells(b); err != nil {
		return e.pushFailed(p, err)
	}
	e.sent(p)
	e.stats.Inline++
	e.stats.InlineBytes += uint64(n)
	return nil
}

// sendEager copies the payload into a free bounce buffer of ours and
// pushes one cell naming it.
func (e *Endpoint) sendEager(p *peer, h *transport.Header, iov [][]byte, n int) error {
	i, ok := e.allocBuf(0)
	if !ok {
		return e.refuse(p, false)
	}
	g := gather{iov: iov}
	if !g.readAll(e.seg.Buffer(i)[:n]) {
		e.freeBuf(i)
		e.stats.Faults++
		return errSendFault
	}
	b := e.tx[:ring.CellPayload]
	putCommon(b, cellEager, cellHasData, uint16(i), h.Flags, e.epid)
	put64(b, offCellW2, h.Tag)
	put64(b, offCellW3, h.Data)
	put64(b, offCellW4, uint64(n))
	put64(b, offCellW5, 0)
	put64(b, offCellW6, 0)
	if err := p.ring.TryPush(b); err != nil {
		e.freeBuf(i)
		return e.pushFailed(p, err)
	}
	e.holder[i] = p.idx
	e.sent(p)
	e.stats.Eager++
	e.stats.EagerBytes += uint64(n)
	return nil
}

// sendRndv publishes the data and pushes an RTS cell.
func (e *Endpoint) sendRndv(p *peer, h *transport.Header, iov [][]byte, n int, cookie uint64, flags uint32) (bool, error) {
	var data []byte
	if len(iov) == 1 && flags&transport.SendCopy == 0 {
		data = iov[0][:n:n]
	} else {
		data = make([]byte, n)
		g := gather{iov: iov}
		if !g.readAll(data) {
			e.stats.Faults++
			return false, errSendFault
		}
	}
	slot := e.newSend()
	op := e.sends.At(uint32(slot))
	id := e.sends.ID(uint32(slot))
	b := e.tx[:ring.CellPayload]
	putCommon(b, cellRTS, cellHasData, 0, h.Flags, e.epid)
	put64(b, offCellW2, h.Tag)
	put64(b, offCellW3, h.Data)
	put64(b, offCellW4, uint64(n))
	put64(b, offCellW5, addrOf(data))
	put64(b, offCellW6, id)
	local := p.pid == e.pid
	if local {
		localPut(e.epid, id, data) // before the RTS can be seen
	}
	if err := p.ring.TryPush(b); err != nil {
		if local {
			localDrop(e.epid, id)
		}
		e.releaseSend(slot)
		return false, e.pushFailed(p, err)
	}
	*op = sendOp{state: opWait, peer: p.idx, local: local, cookie: cookie, data: data}
	p.ops++
	p.sendsTo++
	e.pending++
	e.sent(p)
	e.stats.Rndv++
	e.stats.RndvBytes += uint64(n)
	e.publishHint()
	return false, nil
}

// sent does the bookkeeping of a successful push of a message to p.
func (e *Endpoint) sent(p *peer) {
	e.ring2(p)
	if e.again {
		e.again = false
		e.publishHint()
	}
	e.stats.Sent++
}

// publishHint tells Wait, which may run on another goroutine, whether the
// endpoint has work of its own that no doorbell announces. It stores only
// when the answer changes. A refused send counts for checkInterval at
// most, in case its caller gave up on it.
func (e *Endpoint) publishHint() {
	if e.again && e.now()-e.againAt > int64(checkInterval) {
		e.again = false
	}
	h := uint32(hintIdle)
	switch {
	case len(e.ctlPeers) > 0 || len(e.streams) > 0 || e.again || e.starved || e.blocked:
		h = hintBusy
	case e.pending > 0 || e.watched > 0:
		h = hintPending
	}
	if h != e.hintShadow {
		e.hintShadow = h
		e.hint.Store(h)
	}
}

// refuse returns ErrAgain for a send to p. If p's ring was full, p is
// probed at the next liveness check: a dead peer's ring fills up, and
// Send must then report its death rather than ErrAgain forever.
func (e *Endpoint) refuse(p *peer, full bool) error {
	if full && !p.self {
		p.full = true
		e.blocked = true
	}
	if !e.again {
		e.again = true
		e.againAt = e.now()
	}
	e.stats.Again++
	e.publishHint()
	return errAgain
}

// pushFailed turns a failed push to p into Send's error: ErrAgain for a
// full ring, the peer's death otherwise.
func (e *Endpoint) pushFailed(p *peer, err error) error {
	if err == ring.ErrFull {
		return e.refuse(p, true)
	}
	e.kill(p, transport.ErrPeerDead, "ring corrupt")
	return p.dead
}

// ring2 rings p's doorbell if its owner is waiting: one load when nobody
// sleeps.
func (e *Endpoint) ring2(p *peer) {
	producerFence()
	if p.bellWait.Load() != 0 {
		p.bellSeq.Add(1)
		futexWake(p.bellSeq)
	}
}

// allocBuf takes a free bounce buffer, leaving at least reserve others
// free; false if there is none.
func (e *Endpoint) allocBuf(reserve int) (int, bool) {
	free := ^e.busy.Load() & e.allBufs
	if bits.OnesCount64(free) <= reserve {
		e.reclaimBufs()
		free = ^e.busy.Load() & e.allBufs
		if bits.OnesCount64(free) <= reserve {
			e.starved = true
			return 0, false
		}
	}
	i := bits.TrailingZeros64(free)
	// Receivers only clear bits, so the bit is still clear.
	e.busy.Or(1 << i)
	return i, true
}

// freeBuf returns our bounce buffer i to the pool.
func (e *Endpoint) freeBuf(i int) {
	e.busy.And(^(uint64(1) << i))
	e.holder[i] = -1
}

// reclaimBufs frees the bounce buffers held by peers known to be gone.
func (e *Endpoint) reclaimBufs() {
	held := e.busy.Load() & e.allBufs
	for held != 0 {
		i := bits.TrailingZeros64(held)
		held &^= 1 << i
		if h := e.holder[i]; h >= 0 {
			if p := e.peers[h]; p.dead != nil || (!p.self && p.seg.Closed()) {
				e.freeBuf(i)
			}
		}
	}
}

// newSend returns a free slot of the send table; releaseSend frees it
// (its id goes stale). newFetch and releaseFetch do the same for fetches.
func (e *Endpoint) newSend() int          { return int(e.sends.Take()) }
func (e *Endpoint) releaseSend(slot int)  { e.sends.Free(uint32(slot)) }
func (e *Endpoint) newFetch() int         { return int(e.fetches.Take()) }
func (e *Endpoint) releaseFetch(slot int) { e.fetches.Free(uint32(slot)) }

// sendByID returns the live send named by id (an untrusted word from a
// peer's cell), or nil.
func (e *Endpoint) sendByID(id uint64) *sendOp {
	slot, ok := e.sends.Lookup(id)
	if !ok {
		return nil
	}
	if op := e.sends.At(slot); op.state != opFinished {
		return op
	}
	return nil
}

// fetchByID returns the live fetch named by id, or nil.
func (e *Endpoint) fetchByID(id uint64) *fetchOp {
	slot, ok := e.fetches.Lookup(id)
	if !ok {
		return nil
	}
	if op := e.fetches.At(slot); op.state == opWait {
		return op
	}
	return nil
}

// now returns monotonic nanoseconds since the endpoint was made.
func (e *Endpoint) now() int64 { return e.clock.Now() }

// gather copies the bytes of an iov out in pieces, resuming where the
// last piece ended.
type gather struct {
	iov [][]byte
	i   int
	off int
}

// read fills dst from the iov and returns the bytes copied.
func (g *gather) read(dst []byte) int {
	n := 0
	for n < len(dst) && g.i < len(g.iov) {
		c := copy(dst[n:], g.iov[g.i][g.off:])
		n += c
		g.off += c
		if g.off == len(g.iov[g.i]) {
			g.i++
			g.off = 0
		}
	}
	return n
}

// Idle reports whether Poll would find nothing to do: one atomic load
// while no operation is pending; with operations pending, also whether a
// liveness check is due.
func (e *Endpoint) Idle() bool {
	if e.closed {
		return e.pending == 0
	}
	if !e.ring.Empty() {
		return false
	}
	return e.idleBesides(true)
}

// IdleBesidesRing is Idle, except for the messages published in the ring,
// which code outside Go that reads the ring itself (RingProbe: the C fast
// path) sees, and delivers or leaves there for receives to come: the
// provider's word for "Go has work the rings do not show". Counted as
// work, a message the last Poll left in the ring (holdHead) sent every
// read to Go, whose pass posted the receives C had queued and then took
// the message (docs/provider.md, "Early messages").
func (e *Endpoint) IdleBesidesRing() bool {
	if e.closed {
		return e.pending == 0
	}
	return e.idleBesides(e.ring.Empty())
}

// idleBesides is Idle past the ring's published cells; probe: the next
// cell is not published, so a reservation there may be a stall.
func (e *Endpoint) idleBesides(probe bool) bool {
	// A ring whose next cell is reserved but not published is not idle:
	// Poll must look at it (watchStall), or a producer that died in the
	// middle of a push would wedge it unseen. But the producer counter's
	// line belongs to the producers: reading it while messages flow pulls
	// it away from the next push's CAS, which cost a 1 KiB ping-pong a
	// third of its speed. So it is read only after idleProbeEvery idle
	// answers in a row with nothing popped (Poll resets the run): never
	// while traffic flows, and within a second on a stalled ring even
	// when the only polls are the C side's 10 ms safety net. A probe that
	// finds the ring reserved keeps Idle false until Poll has looked
	// (whichever caller asked Idle, the next Poll must not be skipped).
	if e.probeHit {
		return false
	}
	e.idleRun++
	if probe && e.idleRun%idleProbeEvery == 0 && e.ring.Reserved() {
		e.probeHit = true
		return false
	}
	if len(e.ctlPeers) != 0 || len(e.streams) != 0 || e.doomed {
		return false
	}
	if e.pending == 0 && e.watched == 0 && !e.starved && !e.blocked {
		return true
	}
	// Operations wait on peers: idle until the liveness check is due.
	// The clock is read once every idleClockEvery answers: a spinning
	// caller (fi_cq_read while a rendezvous is out) spent a twentieth of
	// its time in clock_gettime, for a check due every ~100 ms. A due
	// check keeps Idle false until Poll has run it, as a probe hit does:
	// the provider asks Idle twice per pass (before polling, then for
	// the C side's busy word), so an answer that held for one call only
	// always fell on the second, and the check never ran while the C
	// side called in only every 10 ms.
	if e.checkHit {
		return false
	}
	if e.idleRun%idleClockEvery == 0 && e.now() >= e.nextCheck {
		e.checkHit = true
		return false
	}
	return true
}

// idleClockEvery: how many idle answers in a row share one clock reading
// while operations are pending (Idle).
const idleClockEvery = 16

// idleProbeEvery: how many idle answers in a row share one look at the
// producer counter (Idle).
const idleProbeEvery = 64

// Wait blocks until a cell may have arrived in the ring, Wake is called,
// or timeout passes (forever if negative). While the endpoint has work of
// its own that no doorbell announces (queued control cells, streams,
// refused sends, a shortage of bounce buffers), it sleeps at most a
// millisecond; while operations wait on peers, at most until the next
// liveness check. Every push into the ring rings the doorbell if this
// endpoint is inside Wait; a push costs one extra load otherwise.
//
// Unlike the other methods, Wait may run concurrently with any of them,
// on any number of goroutines: it reads only atomics, so a progress
// thread can sleep in it without holding the lock that serializes the
// endpoint. Close wakes such sleepers and waits for them to return before
// it unmaps the segment.
func (e *Endpoint) Wait(timeout time.Duration) {
	e.wakeMu.Lock()
	if e.closed {
		e.wakeMu.Unlock()
		return
	}
	e.waiting++
	e.wakeMu.Unlock()

	switch e.hint.Load() {
	case hintBusy:
		timeout = capWait(timeout, busyWait)
	case hintPending:
		timeout = capWait(timeout, time.Duration(e.interval))
	}
	if !asymFences() {
		timeout = capWait(timeout, fallbackWait)
	}
	// A safety net, not a mechanism: no wakeup is known to be lost, but
	// if one were, a sleeper would still look again within safetyWait.
	timeout = capWait(timeout, safetyWait)
	seq := e.bellSeq.Load()
	e.bellWaiters.Add(1)
	receiverFence() // producers do not fence: see fence.go
	// Close stores closing before it rings: if this load misses it, the
	// ring comes after the sequence was read, and the futex returns.
	if !e.woken.Swap(false) && !e.closing.Load() && e.ring.EmptyShared() {
		futexWait(e.bellSeq, seq, timeout)
	}
	e.bellWaiters.Add(^uint32(0))

	e.wakeMu.Lock()
	e.waiting--
	if e.waiting == 0 {
		e.waitDone.Broadcast()
	}
	e.wakeMu.Unlock()
}

func capWait(timeout, limit time.Duration) time.Duration {
	if timeout < 0 || timeout > limit {
		return limit
	}
	return timeout
}

// Wake makes a concurrent Wait return, or the next one if none is
// sleeping. It is safe from any goroutine, even during or after Close.
func (e *Endpoint) Wake() {
	e.woken.Store(true)
	e.wakeMu.Lock()
	defer e.wakeMu.Unlock()
	if e.closed {
		return
	}
	e.bellSeq.Add(1)
	if e.bellWaiters.Load() != 0 {
		futexWake(e.bellSeq)
	}
}
