package transport

import (
	"errors"
	"time"
	"unsafe"
)

// Header is what travels with every message besides its payload. The wire
// carries it verbatim; only the provider interprets it.
type Header struct {
	Tag   uint64 // the 64-bit match tag (0 for untagged messages)
	Data  uint64 // remote CQ data (meaningful when Flags says so)
	Flags uint32 // provider-defined bits: message kind, CQ data present, ...
	Len   uint64 // total payload length in bytes
}

// Incoming describes an arrived message to Handler.Deliver.
//
// For an eager message, Payload holds all Len bytes; it is borrowed: valid
// only during the Deliver call (it may point into shared memory or a reused
// buffer), so the handler copies what it keeps.
//
// For a rendezvous message, Payload is nil and Rndv names the sender's
// data; the handler keeps the Rndv value (it is a plain value, safe to
// copy and store) and later calls Endpoint.Fetch or Endpoint.Discard on it
// exactly once.
//
// Early marks a rendezvous message whose data is still arriving at the
// wire (hfi: a long eager message being reassembled), offered at its
// first packet so that the data can land in a receive's buffer as it
// comes. A handler with a receive for it now calls Fetch during the
// Deliver call (only then); one without keeps nothing and calls neither
// Fetch nor Discard: the wire delivers the message again, whole and not
// Early, once it has come.
type Incoming struct {
	Src     Conn   // the sender's connection; 0 if the sender is not connected here
	SrcEPID uint64 // the sender's endpoint id, always set
	Payload []byte
	Rndv    Rndv
	IsRndv  bool
	Early   bool // IsRndv too: offered before it is whole (see above)
}

// Rndv identifies the data of a rendezvous message at its sender. Wire
// says which wire the message came on (a router hands Fetch and Discard to
// it); the words are that wire's. The provider only stores and hands back
// the value.
type Rndv struct {
	W    [6]uint64
	Wire Wire
}

// Wire names a kind of wire.
type Wire uint8

// The wires.
const (
	WireShm Wire = 1 + iota // this host: shared memory (package shm)
	WireHfi                 // the network (package hfi)
)

// Conn is a wire's handle for a connected peer, returned by
// Endpoint.Connect. 0 is never a valid Conn.
type Conn uint64

// Handler receives a wire's events. It is implemented by the provider and
// called only from inside Endpoint.Poll (or Send/Fetch when they complete
// something synchronously, as documented there), in the thread that called
// it.
type Handler interface {
	// Deliver hands over an arrived message. Messages from one sender are
	// delivered in the order it sent them.
	Deliver(h *Header, m *Incoming)
	// SendDone reports that the send started with cookie completed (its
	// buffers may be reused) or failed. A send whose buffer could not be
	// read fails with ErrFault; one whose receiver's buffer could not be
	// written, with ErrPeerFault.
	SendDone(cookie uint64, err error)
	// FetchDone reports that the Fetch started with cookie completed,
	// having written n bytes into its destination, or failed: with
	// ErrFault if the destination could not be written, ErrPeerFault if
	// the sender's buffer could not be read.
	FetchDone(cookie uint64, n int, err error)
}

// Admitter is implemented by a Handler that bounds what it keeps for
// later (the provider's unexpected messages, RMA requests waiting for
// their turn). A wire that can hold a sender back (hfi: it leaves the
// packet unacknowledged and tells the sender it is busy) asks before it
// delivers the start of a new message, with its header, its sender and
// whether it comes by rendezvous (its data stays with the sender until
// fetched); false means not now: the wire asks again later, and nothing
// is lost. A wire that cannot hold back (shm: the sender's ring cell is
// already spent) delivers without asking. Called from Poll, like Deliver.
type Admitter interface {
	Admit(h *Header, srcEPID uint64, rndv bool) bool
}

// Holder is implemented by a Handler whose receives a C fast path may
// match against the wire's ring without Go (the provider's). A wire whose
// arrivals wait in such a ring (shm) asks before it takes a message that
// is the last one there, with the message's tag and flags; true leaves
// the message in the ring, where the fast path (or a later Poll, which
// asks again) finds it. Anything arriving behind it is taken with it.
// Called from Poll, like Deliver.
type Holder interface {
	Hold(h *Header) bool
}

// Send flags.
const (
	// SendCopy asks the wire to be done with the caller's buffers when
	// Send returns (an inject): it copies whatever it still needs.
	SendCopy uint32 = 1 << iota
)

// Endpoint is one open endpoint of a wire. Its methods are not safe for
// concurrent use; the provider serializes calls per endpoint (its lock
// level decides how). Poll, Send, Fetch and Discard never block.
type Endpoint interface {
	// EPID is this endpoint's id, the first word of its psm2 endpoint name.
	EPID() uint64

	// Connect returns a connection to the endpoint with id epid, in the
	// same job (UUID), setting it up if needed. Connecting to the same
	// epid again returns the same Conn. It fails with an error wrapping
	// ErrUnreachable if no such endpoint is reachable, including one of
	// another job.
	Connect(epid uint64) (Conn, error)

	// Send sends h and the payload gathered from iov (total h.Len bytes)
	// to c. If the send is complete when Send returns, it returns done
	// true and no SendDone follows; otherwise SendDone(cookie, ...) comes
	// later from Poll. A wire that cannot take the message now (its queue
	// to the peer is full) returns ErrAgain and has done nothing; the
	// caller progresses and retries. Unless flags has SendCopy, the
	// buffers of iov must stay valid and unchanged until the send is done.
	// A payload the wire cannot read gives ErrFault, now or through
	// SendDone; the wire neither crashes nor retries for ever on it.
	Send(c Conn, h *Header, iov [][]byte, cookie uint64, flags uint32) (done bool, err error)

	// Fetch pulls the data of rendezvous message r into dst: min(len(dst),
	// r's length) bytes. A shorter dst truncates: the rest is dropped and
	// the sender's send still completes normally. If the fetch is complete
	// when Fetch returns, it returns done true with n; otherwise
	// FetchDone(cookie, ...) comes later from Poll. Either way the sender
	// is told, and r must not be used again. A dst that cannot be
	// written fails the fetch with ErrFault (and the sender's send with
	// ErrPeerFault); a sender's buffer that cannot be read fails it with
	// ErrPeerFault (and the send with ErrFault).
	Fetch(r *Rndv, dst []byte, cookie uint64) (done bool, n int, err error)

	// Discard drops rendezvous message r without reading it; the sender's
	// send completes normally. r must not be used again.
	Discard(r *Rndv) error

	// Poll services the wire: it takes up to budget arrived packets and
	// calls h for the events they cause, and it retries queued control
	// traffic and checks the liveness of peers with operations pending.
	// It returns the number of events delivered.
	Poll(h Handler, budget int) int

	// Idle reports, as cheaply as possible and without side effects,
	// that Poll would find nothing to do right now.
	Idle() bool

	// Wait blocks until something may have arrived for Poll, Wake is
	// called, or timeout passes (a negative timeout waits forever). It
	// may return early; callers loop.
	Wait(timeout time.Duration)

	// Wake makes a concurrent or the next Wait return. Safe to call from
	// any goroutine.
	Wake()

	// Close stops the endpoint: sends and fetches still pending fail with
	// ErrClosed (through the handler, if Poll is called again) and
	// peers see this endpoint disappear.
	Close() error
}

// Prober is implemented by a wire whose arrivals code outside Go can see:
// Probes appends to dst a word for each of the endpoint's receive queues,
// so that the C side can tell that Poll has something to do without a
// call into Go. A word is a ring's base address, 64-byte aligned, with
// log2 of its cell count in the low 6 bits (one word, so that a reader
// racing with a change never pairs one ring's base with another's size);
// the ring follows internal/ring's cell protocol (ring.go documents the
// layout C reads); what its cells hold is the wire's business. A wire
// whose queues show in no word, or that is no Prober, is always called.
// Work that no ring shows (timers, queued control traffic) is reported by
// Idle.
type Prober interface {
	Probes(dst []uint64) []uint64
}

// MessageRing is implemented by a wire that receives its messages in an
// internal/ring Ring of shm's cells, from which the C side delivers them
// itself:
// RingProbe describes it as a Probes word does, 0 while there is none.
type MessageRing interface {
	RingProbe() uint64
}

// Reporter is implemented by wires that count what they did. Report
// describes the counters in one line; the provider logs it (FI_LOG_LEVEL
// info) when the endpoint closes, so a user can see retransmissions and
// drops without a debugger.
type Reporter interface {
	Report() string
}

// Watcher is implemented by wires that can watch a peer for the provider
// while it waits for something from that peer that no wire operation
// stands for (the answer to an RMA request, whose send is complete).
// Watch(c, +1) starts watching and Watch(c, -1) stops; while c is
// watched, the wire checks the peer's liveness as if an operation of its
// own were pending on it (Idle turns false when a check is due, Poll
// runs it), so a peer that died, closed or stopped answering within the
// connection timeout is declared dead. PeerErr says why c is unusable
// (an error wrapping ErrPeerDead or ErrTimeout), nil while it is alive.
type Watcher interface {
	Watch(c Conn, delta int)
	PeerErr(c Conn) error
}

// FastSender is implemented by a wire whose small sends code outside Go
// can make itself, without a call into Go (the C side of the library does
// this for fi_inject). FastPeer returns, for connection c, the address of
// a descriptor in memory outside the Go heap that says whether such a send
// may go ahead and where to put it (shm.Endpoint.FastPeer documents the
// layout), or nil if c has none. The descriptor stays at that address
// until the endpoint closes; the wire updates it whenever the connection's
// state changes, and both sides touch it only under the lock that
// serializes the endpoint (the provider's domain lock).
type FastSender interface {
	FastPeer(c Conn) unsafe.Pointer
}

// Errors of the wires. Wires return these or errors wrapping them, so the
// provider can map them to libfabric codes with errors.Is.
var (
	// ErrAgain: the wire cannot take the operation now; retry after Poll.
	ErrAgain = errors.New("transport: resources temporarily unavailable")
	// ErrUnreachable: no endpoint with that id can be reached in this job.
	ErrUnreachable = errors.New("transport: endpoint unreachable")
	// ErrPeerDead: the peer stopped (died or closed) with the operation
	// pending.
	ErrPeerDead = errors.New("transport: peer gone")
	// ErrTimeout: the peer did not answer within the connection timeout.
	ErrTimeout = errors.New("transport: peer timed out")
	// ErrStaleConn: the Conn no longer names a connection of the wire
	// (the wire took its peer's slot back after the peer died): Connect
	// again for a new one.
	ErrStaleConn = errors.New("transport: stale connection handle")
	// ErrClosed: the endpoint was closed.
	ErrClosed = errors.New("transport: endpoint closed")
	// ErrTooLong: the message is longer than the wire can carry.
	ErrTooLong = errors.New("transport: message too long")
	// ErrFault: the operation's own buffer could not be read (a send) or
	// written (a fetch): the kernel refused the memory the caller gave
	// (unmapped, PROT_NONE, read-only). If the operation had reached the
	// peer, the peer's side fails with ErrPeerFault.
	ErrFault = errors.New("transport: bad address: the operation's buffer is not accessible")
	// ErrPeerFault: the operation failed because the peer's buffer for
	// it could not be read or written (the peer's side fails with
	// ErrFault).
	ErrPeerFault = errors.New("transport: the peer's buffer for the operation is not accessible")
)
