package hfi

// Over 600 lines: the wire contract's methods (Open, Connect, Send, Fetch,
// Poll, Close and the limits they enforce) in one place; the protocol they
// drive is in flow.go, msg.go, peer.go and admit.go.

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/slots"
	"github.com/gopsm2/libfabric-psm2/internal/sys"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Path selection (PSM2_PATH_SELECTION).
const (
	PathAdaptive   = iota // small messages on one path, windows of large ones over all
	PathStaticSrc         // one path: own context % paths
	PathStaticDest        // one path: the peer's context % paths
	PathStaticBase        // one path: path 0
)

// Config is what an endpoint of the wire needs.
type Config struct {
	// Job is the job key (psm2 UUID or auth_key): a connection is made
	// only between endpoints that prove, in the handshake, that they
	// hold the same key (it is never sent).
	Job [16]byte
	// Auth (FI_PSM2_AUTH): authenticate every packet of a connection
	// (auth.go). A connection is authenticated if either side asks.
	Auth bool
	// Ctx is the endpoint's context number, part of its id.
	Ctx uint8
	// Backend is the network; nil opens UDP on Addr, Ports and Paths.
	Backend   Backend
	Addr      [4]byte
	PortFirst uint16 // FI_PSM2_PORT_RANGE; 0: any port
	PortLast  uint16
	// PortCursor is a file shared by the host's endpoints (of this user)
	// through which ports are taken in turn (ports.go); "" for none.
	PortCursor string
	// PortBlock is how many ports the cursor moves on past the one it
	// gives (0 or 1: one): a scalable endpoint's context 0 reserves the
	// ports its other contexts bind next (provider/sep.go), so that other
	// processes' endpoints opening meanwhile do not take them.
	PortBlock int
	Paths     int // dispersive routing: paths per peer pair (1..8)
	// Rails (multirail, PSM2_MULTIRAIL): this host's addresses on
	// further networks (at most MaxRails-1), each joining it to the same
	// network of its peers. With a peer that has rails too, large
	// messages are striped over every rail both have (rail i to rail i),
	// and a rail that stops carrying packets is left for the others
	// (flow.go, "Rails").
	Rails   [][4]byte
	PathSel int // PathAdaptive...
	// ConnTimeout (FI_PSM2_CONN_TIMEOUT) bounds connection set-up and how
	// long a peer may leave our packets unacknowledged before it is
	// declared dead and its operations fail.
	ConnTimeout time.Duration
	// RndvThreshold (PSM2_MQ_RNDV_HFI_THRESH, default 64000, psm2's):
	// longer messages go by rendezvous, except up to EagerIdle on a
	// connection with nothing in flight. RndvWindow
	// (PSM2_MQ_RNDV_HFI_WINDOW; unset: flowDefaults) is the size of one
	// grant of a rendezvous.
	RndvThreshold int
	RndvWindow    int
	// EagerIdle: the longest eager message to a peer with no packet of
	// ours unacknowledged or queued (DefaultEagerIdle when neither it nor
	// RndvThreshold is set; RndvThreshold when only that is: one
	// threshold, as psm2's).
	EagerIdle int
	// Credits (PSM2_FLOW_CREDITS; unset: flowDefaults): packets in
	// flight per peer.
	Credits int
	// Errchk (PSM2_ERRCHK_TIMEOUT, default 160ms:640ms:2): the
	// retransmission timeout, its cap and its backoff factor.
	ErrchkMin, ErrchkMax time.Duration
	ErrchkFactor         int
	// ErrchkAdaptive: the timeout follows the measured round trip (four
	// of them, at least 2 ms), ErrchkMin being its ceiling (flow.go rto).
	ErrchkAdaptive bool
	// AckDelay: how long an ACK may wait for a packet to ride on.
	AckDelay time.Duration
	// MTU is the IP MTU of the path (default 1500).
	MTU int
	// Spin: how long the receive thread keeps polling the network after
	// the last packet before it sleeps in the kernel (0: always sleep).
	Spin time.Duration
	// ConnBase is or'ed into every Conn this endpoint returns, so a
	// router can tell its wires' connections apart.
	ConnBase transport.Conn
	// Notify is called by the receive thread after it published packets
	// (to wake a waiter of another wire); Wait and Wake work without it.
	Notify func()
	// Stalled is called when the wire gets work that only a later Poll
	// does: from Send when a send it reports complete leaves packets that
	// only a Poll sends (Unsent: held by a burst, or queued past the flow
	// window), and whenever a peer joins an empty busy list (timers:
	// unacknowledged packets, an owed ACK, a connection being set up, a
	// grant or a fetch waiting). A provider whose application may stop
	// polling (an out-of-band barrier after its sends, or a long
	// computation) has someone poll meanwhile, as psm2's receive thread
	// does. Called with the caller's lock held; it should cost
	// nanoseconds.
	Stalled func()
	// SameKernel, if set, is told the id of each peer whose handshake
	// says it runs on this endpoint's kernel (KernelID): a rank in
	// another network namespace of this machine, which shares its CPUs.
	// Called from Poll, with the caller's lock held.
	SameKernel func(epid uint64)
	// KernelID names this endpoint's kernel in the handshake; 0 means
	// sys.KernelID (tests give endpoints of one process different ones).
	KernelID uint32
	// Linger (FI_PSM2_TIMEOUT) bounds how long Close waits for sent
	// packets to be acknowledged (0: not at all).
	Linger time.Duration
	// Clock for every timer; nil is SystemClock.
	Clock Clock
	// Limits (admit.go): peers in all and per remote address
	// (FI_PSM2_MAX_PEERS, FI_PSM2_PEERS_PER_HOST), bytes of eager
	// messages being reassembled (FI_PSM2_REASM_BYTES) and of packets
	// kept past a gap (FI_PSM2_OOO_BYTES).
	MaxPeers, PeersPerHost int
	ReasmBytes, OOOBytes   int
	// Warn, if set, is told (once per kind) when a limit refuses a peer
	// or holds a sender back.
	Warn func(msg string)
}

func (c *Config) defaults() {
	if c.KernelID == 0 {
		c.KernelID = sys.KernelID()
	}
	if c.ConnTimeout <= 0 {
		c.ConnTimeout = 5 * time.Second
	}
	if c.EagerIdle <= 0 {
		c.EagerIdle = c.RndvThreshold // one threshold, when that is given
		if c.EagerIdle <= 0 {
			c.EagerIdle = DefaultEagerIdle
		}
	}
	if c.RndvThreshold <= 0 {
		c.RndvThreshold = 64000
	}
	c.EagerIdle = max(c.EagerIdle, c.RndvThreshold)
	if c.ErrchkMin <= 0 {
		c.ErrchkMin = 160 * time.Millisecond
	}
	if c.ErrchkMax < c.ErrchkMin {
		c.ErrchkMax = max(640*time.Millisecond, c.ErrchkMin)
	}
	if c.ErrchkFactor < 1 {
		c.ErrchkFactor = 2
	}
	if c.AckDelay <= 0 {
		c.AckDelay = 200 * time.Microsecond
	}
	if c.MTU <= 0 {
		c.MTU = 1500
	}
	c.MTU = min(max(c.MTU, 576), 65535)
	if c.Paths < 1 {
		c.Paths = 1
	}
	c.Paths = min(c.Paths, 8)
	var rails [][4]byte
	for _, ip := range c.Rails { // distinct, not the endpoint's own, at most MaxRails-1
		if ip != c.Addr && ip != ([4]byte{}) && !slices.Contains(rails, ip) && len(rails) < MaxRails-1 {
			rails = append(rails, ip)
		}
	}
	c.Rails = rails
	if c.Clock == nil {
		c.Clock = SystemClock
	}
	if c.MaxPeers <= 0 || c.MaxPeers > MaxPeers {
		c.MaxPeers = MaxPeers
	}
	if c.PeersPerHost <= 0 {
		c.PeersPerHost = DefaultPeersPerHost
	}
	if c.ReasmBytes <= 0 {
		c.ReasmBytes = DefaultReasmBytes
	}
	c.ReasmBytes = max(c.ReasmBytes, 2*minEagerMax)
	if c.OOOBytes <= 0 {
		c.OOOBytes = DefaultOOOBytes
	}
}

// DefaultEagerIdle is EagerIdle when PSM2_MQ_RNDV_HFI_THRESH is unset:
// messages up to 256 KiB go eager to a peer with nothing in flight.
// psm2's single threshold of 64000 suits a fabric whose round trip is 1-2
// us; here a rendezvous's handshake costs a UDP round trip (RTS, then CTS)
// before the data moves, about what 200 KB take to send. A message that
// waits for an answer (a ping-pong, an exchange) finds the connection idle:
// NetPIPE across two namespace hosts, interleaved, best of 3, 64000 against
// 262144 for all: 64 KiB 38.3 -> 21.2 us, 128 KiB 68.8 -> 38.3, 256 KiB
// 120.8 -> 68.1 (Open MPI's btl tcp 44.8, 53.7, 66.6). A stream (sends with
// earlier ones in flight) keeps rendezvous above 64000: its data lands in
// the receive buffer without the reassembly copy, and eager made 64 KiB
// messages with 64 in flight 10-30% slower (bench/msgrate.c). What an eager
// message costs the receiver is bounded all the same: reassembly
// (ReasmBytes) and unexpected bytes (FI_PSM2_UNEXP_BYTES) hold senders back.
const DefaultEagerIdle = 262144

// DefaultCredits is PSM2_FLOW_CREDITS when unset, at the least: 128
// packets in flight per peer, not PSM2's 64. Over UDP with a 1500-byte
// MTU, 64 packets (94 KB) left a rendezvous window's sender waiting for
// ACKs: across two namespace hosts 1 MiB fi_pingpong went from 1.2-2.2 to
// 2.3-2.6 GB/s and 10,000 messages under 5% loss from 12.6 to 9.0 s with
// 128. DefaultRndvWindow is PSM2_MQ_RNDV_HFI_WINDOW's least default.
const (
	DefaultCredits    = 128
	DefaultRndvWindow = 131072
)

// MaxAutoCredits and MaxAutoRndvWindow bound what flowDefaults derives
// from a large receive buffer: 1.4 MB of 1472-byte packets in flight per
// peer, and two grants of 512 KiB (1 MiB) outstanding per rendezvous.
const (
	MaxAutoCredits    = 1024
	MaxAutoRndvWindow = 524288
)

// bufferSizer is a backend that can tell the receive buffer its socket
// got (udpBackend: SO_RCVBUF, in the units it is asked in).
type bufferSizer interface{ RecvBuffer() int }

// flowDefaults sets Credits and RndvWindow, where the configuration
// leaves them unset, from rcvbuf, the receive buffer this endpoint's
// socket got (0: unknown), taken as what the peer's likely got too (the
// same user, the same settings): credits for half of it in packets, a
// rendezvous window of an eighth (two are outstanding), never less than
// DefaultCredits and DefaultRndvWindow, at most MaxAutoCredits and
// MaxAutoRndvWindow.
//
// With 128 packets (180 KB) in flight and 256 KiB granted, a 1 MiB
// message took the receiving process 4-6 turns on a CPU to ACK and
// grant; on a busy machine each turn waits for a scheduler time slice,
// while TCP's ACKs come from the kernel: 1 MiB fi_pingpong across two
// namespace hosts with 2 CPU spinners a core took 21-42 ms against
// Debian's tcp 3.8-19. A root process gets the 4 MiB it asks for
// (SO_RCVBUFFORCE): 1024 credits and 512 KiB windows, 2.8-8.2 ms
// (unloaded 263 -> 237-253 us). Others get net.core.rmem_max (208 KiB
// on Debian): the defaults, as before.
func (c *Config) flowDefaults(rcvbuf int) {
	if c.Credits <= 0 {
		c.Credits = min(max(rcvbuf/2/1472, DefaultCredits), MaxAutoCredits)
	}
	if c.RndvWindow <= 0 {
		c.RndvWindow = min(max(rcvbuf/8, DefaultRndvWindow), MaxAutoRndvWindow)
	}
}

// Stats counts what the wire did; read with Endpoint.Stats.
type Stats struct {
	Sent, Received     uint64 // packets
	Batches            uint64 // sends of packet batches (Sent/Batches: packets per batch)
	Retransmits        uint64 // packets sent again
	Probes             uint64 // timer expiries answered by a probe (flow.go: probe)
	Naks, NaksSent     uint64
	Dups               uint64 // duplicate sequenced packets dropped
	OutOfOrder         uint64 // packets past a gap (kept for their turn if within the window)
	Malformed          uint64 // undecodable packets
	WrongJob           uint64 // connect packets with another job key or not for us
	Stale              uint64 // packets of no live connection
	Forged             uint64 // packets naming a live connection with a wrong session tag or source address, or a handshake packet from elsewhere than its id's address
	BadAck             uint64 // packets acknowledging what was never sent
	BadMAC             uint64 // authenticated packets whose MAC is wrong
	Challenges         uint64 // connect requests answered with a cookie challenge
	SendErrors         uint64 // backend send failures (packet dropped)
	PeersDead          uint64 // peers this endpoint declared dead: silent for the connection timeout
	PeersLeft          uint64 // peers that said they were gone: a disconnect notice, or a new instance at their address
	PeerLimit          uint64 // connections refused by FI_PSM2_MAX_PEERS or FI_PSM2_PEERS_PER_HOST
	Reclaimed          uint64 // slots of dead peers taken back
	Refused            uint64 // packets refused at a limit (admit.go): the sender waits and sends them again
	Busy               uint64 // times a peer said it refused ours (fBusy)
	MTUDown            uint64 // times a peer's packet size was lowered to the path's MTU
	RxDropped, Wakeups uint64
	// Messages sent eager and by rendezvous, and their bytes.
	EagerMsgs, EagerBytes, RndvMsgs, RndvBytes uint64
	// Eager messages sent from the application's buffer (sendEager), and
	// received into a receive's buffer as they came (offerEarly).
	EagerDirect, EagerEarly uint64
	// Multirail (flow.go, "Rails"): rendezvous data packets sent on a
	// further rail; rails left out after a loss on them; moves of a
	// peer's primary rail.
	RailPkts, RailsDown, RailFailovers uint64
}

// Endpoint is one endpoint of the wire. It implements transport.Endpoint;
// like every wire endpoint its methods (except Wake) are called under the
// provider's serialization.
type Endpoint struct {
	cfg      Config
	be       Backend
	rx       *rxQueue
	clock    Clock
	epid     uint64
	instance uint64
	token    uint64 // marks Rndv values of this endpoint (W[5])

	peers    []*peer  // by slot; nil: free
	slotGens []uint16 // each slot's last generation (Conn handles carry it)
	slotFree []uint32
	byEPID   map[uint64]*peer
	perHost  map[[4]byte]int // peers per remote address (PeersPerHost)
	live     int             // slots in use
	busy     []*peer         // peers with timers or queued work (peer.inBusy)

	keys     keys     // the handshake's MACs (auth.go)
	chDest   Dest     // where a challenge goes (no allocation per request)
	eagerMax uint64   // the largest eager message we take (handshake)
	adm      admitter // the handler's admission check, if it has one (admit.go)
	admH     transport.Handler
	admHdr   transport.Header
	asmUsed  uint64   // bytes reserved by eager messages being reassembled
	asmPool  [][]byte // reassembly buffers for the next ones
	keptFree [][]byte // buffers for packets kept past a gap
	keptN    int      // such buffers in use or free
	keptSize int
	warned   uint8 // kinds of refusal logged (warnOnce)

	sends   slots.Table[sendOp]  // ids: slots.Table.ID
	fetches slots.Table[fetchOp] // ids: slots.Table.ID

	txFree   [][]byte // packet buffers
	bufSize  int
	ctl      []byte   // scratch for control packets
	out      [][]byte // packets batched for one SendBatch (flow.go)
	outPay   [][]byte // their rests in the application's buffer, or nil (txPkt.src)
	outSplit bool     // some outPay is not nil
	outPath  uint8
	// outBytes is what the batch holds as sent (authentication trailers
	// included); outMax the backend's BatchBytes (0: no byte limit).
	outBytes, outMax int

	// Direct reading (hot mode: recv.go): buffers of the polling thread.
	dbufs  [][]byte
	dmeta  []RxMeta
	lastRx int64 // when the polling thread last got a packet
	rxLast bool  // its last poll got packets (pollDirect)
	wasHot bool

	h      transport.Handler // set during Poll
	now    int64             // the clock when this Poll began
	polls  uint64            // Polls so far (coalesce: a Send since the last one)
	pollAt int64             // when the last Poll began (coalesce: holdRecent)
	// inInput: Poll is taking arrived packets (pumpSoon waits for its end)
	inInput  bool
	inHdr    transport.Header // what Deliver borrows (no allocation per message)
	inMsg    transport.Incoming
	offering *peer // whose message is being offered early (offerEarly)
	closed   bool
	failed   []failure // operations to fail at the next Poll (after Close)
	stats    Stats

	wake  chan struct{}
	woken atomic.Bool
}

// failure is an operation that fails at the next Poll.
type failure struct {
	cookie uint64
	fetch  bool
	err    error
}

// Open opens an endpoint of the wire.
func Open(cfg Config) (*Endpoint, error) {
	cfg.defaults()
	be := cfg.Backend
	if be == nil {
		var err error
		be, err = OpenUDP(cfg.Addr, cfg.PortFirst, cfg.PortLast, cfg.Paths, cfg.PortCursor, cfg.PortBlock, len(cfg.Rails) > 0)
		if err != nil {
			return nil, err
		}
	}
	rcvbuf := 0
	if bs, ok := be.(bufferSizer); ok {
		rcvbuf = bs.RecvBuffer()
	}
	cfg.flowDefaults(rcvbuf)
	ip, port := be.Addr()
	e := &Endpoint{cfg: cfg, be: be, clock: cfg.Clock, byEPID: make(map[uint64]*peer),
		perHost: make(map[[4]byte]int), wake: make(chan struct{}, 1)}
	e.epid = transport.NetEPID(ip, port, cfg.Ctx)
	if err := e.initKeys(); err != nil {
		be.Close()
		return nil, err
	}
	var r [16]byte
	e.random(r[:])
	e.instance = binary.LittleEndian.Uint64(r[:]) | 1
	e.token = binary.LittleEndian.Uint64(r[8:]) | 1<<63
	e.bufSize = cfg.MTU - 28 // IPv4 and UDP headers
	e.eagerMax = eagerLimit(cfg.EagerIdle, cfg.ReasmBytes)
	e.keptSize = e.bufSize
	e.ctl = make([]byte, hsLen+authTrailer)
	e.out = make([][]byte, 0, 64)
	e.outPay = make([][]byte, 0, 64)
	rxSize := max(e.bufSize, 2048, be.BufSize())
	rx, err := newRxQueue(be, rxSize, cfg.Spin > 0, cfg.Clock, e.arrived)
	if err != nil {
		be.Close()
		return nil, fmt.Errorf("hfi: receive ring: %w", err)
	}
	e.rx = rx
	e.dbufs = make([][]byte, rxBatch)
	e.dmeta = make([]RxMeta, rxBatch)
	for i := range e.dbufs {
		e.dbufs[i] = make([]byte, rxSize)
	}
	rx.start()
	return e, nil
}

// arrived runs on the receive thread after it published packets.
func (e *Endpoint) arrived() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
	if e.cfg.Notify != nil {
		e.cfg.Notify()
	}
}

// EPID is the endpoint's id (addr.go).
func (e *Endpoint) EPID() uint64 { return e.epid }

// Stats returns the endpoint's counters.
func (e *Endpoint) Stats() Stats {
	s := e.stats
	s.RxDropped = e.rx.dropped.Load()
	s.Wakeups = e.rx.wakeups.Load()
	return s
}

// Report describes the counters (transport.Reporter).
func (e *Endpoint) Report() string { return fmt.Sprintf("hfi %+v", e.Stats()) }

// Counters appends the counters (transport.Counted).
func (e *Endpoint) Counters(dst []transport.Counters) []transport.Counters {
	return append(dst, transport.CountersOf("hfi", e.Stats()))
}

// Probes appends the arrival ring's word (transport.Prober).
func (e *Endpoint) Probes(dst []uint64) []uint64 {
	if e.closed {
		return dst
	}
	return append(dst, e.rx.probe())
}

// Idle reports that Poll has nothing to do: no packet arrived, no timer
// or queued work, and the network is not being read by the polls (hot).
func (e *Endpoint) Idle() bool {
	if e.closed {
		return len(e.failed) == 0
	}
	return len(e.busy) == 0 && len(e.failed) == 0 && !e.rx.hot.Load() && e.rx.ring.Empty()
}

// pollDirect reads the network from the polling thread (hot mode): the
// receive thread handed it over after packets came, so a busy exchange
// pays no thread wake-up per packet. After Spin without a packet it
// hands the network back (cool). fresh: packets just came from the ring.
// It returns the events and the packets it took.
//
// After a poll that found nothing, the exchange is latency-bound: the
// first read asks for one packet (a recvmmsg offered a batch tries, and
// fails, a second receive after the first), and a lone packet that
// completed a message ends the poll, so the application answers it before
// this thread reads the network again. Together about 2.5 us of an 8-byte
// round trip (BenchmarkUDPPingPong). While packets keep coming (the last
// poll found some), the budget is read in batches.
func (e *Endpoint) pollDirect(budget int, fresh bool) (n, pkts int) {
	now := e.now
	if fresh || !e.wasHot {
		e.lastRx, e.wasHot = now, true
	}
	quiet := !fresh && !e.rxLast
	for budget > 0 {
		want := min(budget, len(e.dbufs))
		if quiet && pkts == 0 {
			want = 1
		}
		k, err := e.be.Recv(e.dbufs[:want], e.dmeta, false)
		if err != nil || k == 0 {
			break
		}
		e.lastRx = now
		for i := 0; i < k; i++ {
			if m := &e.dmeta[i]; m.Len >= 0 {
				n += e.inputAll(e.dbufs[i][:m.Len], m.Seg, m.From)
			}
		}
		budget -= k
		pkts += k
		if want == 1 && n > 0 {
			break
		}
	}
	e.rxLast = pkts > 0
	if now-e.lastRx > int64(e.cfg.Spin) {
		e.Cool()
	}
	return n, pkts
}

// Cool hands the network back to the receive thread, which sleeps in the
// kernel until a packet comes: before the caller blocks (Wait), and when
// the network has been quiet for Spin.
func (e *Endpoint) Cool() {
	if e.wasHot {
		e.wasHot = false
		e.rx.cool()
	}
}

// Wait blocks until a packet arrived, Wake was called, a timer is due or
// timeout passed (negative: no limit).
func (e *Endpoint) Wait(timeout time.Duration) {
	if e.woken.Swap(false) || !e.rx.ring.Empty() {
		return
	}
	e.Cool()
	if d, ok := e.NextDue(); ok && (timeout < 0 || d < timeout) {
		timeout = d
	}
	if timeout == 0 {
		return
	}
	if timeout < 0 {
		<-e.wake
		return
	}
	t := time.NewTimer(timeout)
	select {
	case <-e.wake:
	case <-t.C:
	}
	t.Stop()
}

// NextDue is how long until the earliest timer (ok false: none), so a
// router waiting on another wire's futex bounds its sleep by it.
func (e *Endpoint) NextDue() (time.Duration, bool) {
	if len(e.busy) == 0 {
		return 0, false
	}
	now := e.clock.Now()
	due := int64(-1)
	for _, p := range e.busy {
		if t := p.due(e); t >= 0 && (due < 0 || t < due) {
			due = t
		}
	}
	if due < 0 {
		return 0, false
	}
	return time.Duration(max(due-now, 0)), true
}

// Wake makes a Wait return. Safe from any goroutine.
func (e *Endpoint) Wake() {
	e.woken.Store(true)
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Close first lets what it sent reach its peers, for up to Linger
// (FI_PSM2_TIMEOUT): an inject or a completed eager send may still wait
// in its flow for the window or an ACK. Then it tells connected peers
// this endpoint is gone, stops the receive thread and fails what is
// pending (at the next Poll).
func (e *Endpoint) Close() error {
	if e.closed {
		return nil
	}
	for _, p := range e.peers {
		if p != nil && p.held {
			e.pump(p) // sends reported complete: their packets go at least once
		}
	}
	e.linger()
	for _, p := range e.peers {
		if p == nil {
			continue
		}
		if p.state == stUp {
			e.sendDisc(p)
		}
		e.failPeer(p, transport.ErrClosed, true)
	}
	e.closed = true
	e.rx.hot.Store(false)
	e.rx.close()
	e.be.Close()
	e.Wake()
	return nil
}

// Poll processes up to budget arrived packets, then runs due timers and
// sends owed ACKs.
func (e *Endpoint) Poll(h transport.Handler, budget int) int {
	e.h = h
	if h != e.admH {
		e.admH = h
		e.adm, _ = h.(admitter)
	}
	e.now = e.clock.Now()
	e.polls++
	e.pollAt = e.now
	n := 0
	if e.closed {
		for _, f := range e.failed {
			if f.fetch {
				h.FetchDone(f.cookie, 0, f.err)
			} else {
				h.SendDone(f.cookie, f.err)
			}
			n++
		}
		e.failed = e.failed[:0]
		return n
	}
	if len(e.failed) > 0 {
		n += e.flushFailed()
	}
	if budget <= 0 {
		budget = 1 << 30
	}
	got := 0
	e.inInput = true
	defer func() { e.inInput = false }() // also if a handler panics
	for ; got < budget; got++ {
		i, b, seg, from, ok := e.rx.pop()
		if !ok {
			break
		}
		n += e.inputAll(b, seg, from)
		e.rx.release(i)
	}
	if e.rx.hot.Load() {
		k, pkts := e.pollDirect(budget-got, got > 0)
		n += k
		got += pkts
	}
	e.inInput = false
	if len(e.busy) > 0 {
		n += e.service(got > 0)
	}
	if len(e.failed) > 0 {
		n += e.flushFailed()
	}
	return n
}

func (e *Endpoint) flushFailed() int {
	n := 0
	for i := 0; i < len(e.failed); i++ {
		f := e.failed[i]
		if f.fetch {
			e.h.FetchDone(f.cookie, 0, f.err)
		} else {
			e.h.SendDone(f.cookie, f.err)
		}
		n++
	}
	e.failed = e.failed[:0]
	return n
}

// ErrBadConn: a Conn that is not, or no longer, one of this endpoint's
// (its peer's slot was reclaimed): Connect again.
var ErrBadConn = fmt.Errorf("hfi: not a connection of this endpoint: %w", transport.ErrStaleConn)

// conn maps a Conn (slot + 1 in bits 0..31, the slot's generation in
// 32..47) to its peer.
func (e *Endpoint) conn(c transport.Conn) *peer {
	v := uint64(c &^ e.cfg.ConnBase)
	i := v&0xffffffff - 1
	if i >= uint64(len(e.peers)) {
		return nil
	}
	p := e.peers[i]
	if p == nil || uint64(p.slotGen) != v>>32&0xffff {
		return nil
	}
	return p
}

// Watch implements transport.Watcher: a watched peer that stays silent
// is pinged, as one a fetch waits on, and declared dead when the pings go
// unanswered for the connection timeout.
func (e *Endpoint) Watch(c transport.Conn, delta int) {
	p := e.conn(c)
	if p == nil {
		return
	}
	if p.watch += delta; p.watch > 0 && delta > 0 {
		p.heard = max(p.heard, e.clock.Now())
		e.markBusy(p)
	}
}

// PeerErr implements transport.Watcher.
func (e *Endpoint) PeerErr(c transport.Conn) error {
	p := e.conn(c)
	if p == nil {
		return ErrBadConn
	}
	if p.state == stDead {
		return p.deadErr()
	}
	return nil
}

func (e *Endpoint) connOf(p *peer) transport.Conn {
	return transport.Conn(uint64(p.slotGen)<<32|uint64(p.idx+1)) | e.cfg.ConnBase
}

// linger polls, dropping what arrives, until no peer that is up has
// packets queued or unacknowledged, or Linger passes.
func (e *Endpoint) linger() {
	end := time.Now().Add(e.cfg.Linger)
	var nop nopHandler
	nop.e = e
	for time.Now().Before(end) {
		left := false
		for _, p := range e.peers {
			if p != nil && p.state == stUp && (p.queued.len() > 0 || p.unacked.len() > 0 || len(p.rsend) > 0) {
				left = true
			}
		}
		if !left {
			return
		}
		e.Poll(&nop, 64)
		if e.rx.ring.Empty() && !e.rx.hot.Load() {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// nopHandler takes the events of a closing endpoint: messages are
// dropped (rendezvous ones discarded, so their senders complete).
type nopHandler struct{ e *Endpoint }

func (h *nopHandler) Deliver(_ *transport.Header, m *transport.Incoming) {
	if m.IsRndv && !m.Early {
		_ = h.e.Discard(&m.Rndv)
	}
}
func (h *nopHandler) SendDone(uint64, error)       {}
func (h *nopHandler) FetchDone(uint64, int, error) {}

// Arrived reports that a packet waits in the arrival ring.
func (e *Endpoint) Arrived() bool { return !e.closed && !e.rx.ring.Empty() }

// inputAll processes a received buffer from from: one packet, or several
// of seg bytes each (generic receive offload).
func (e *Endpoint) inputAll(b []byte, seg int, from Addr) int {
	if seg <= 0 || seg >= len(b) {
		return e.input(b, from)
	}
	n := 0
	for len(b) > 0 {
		k := min(seg, len(b))
		n += e.input(b[:k], from)
		b = b[k:]
	}
	return n
}
