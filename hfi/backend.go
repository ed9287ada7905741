package hfi

import (
	"errors"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Backend is the network under the wire: an unreliable datagram service
// between endpoints named by IPv4 address and port. It may drop, reorder
// or duplicate packets; the wire above makes delivery reliable. The UDP
// backend (udp.go) is the one this package has; a hardware backend (an
// HFI's send and receive contexts) would implement the same methods.
type Backend interface {
	// Addr is the address and port that packets to this endpoint are
	// sent to.
	Addr() (ip [4]byte, port uint16)
	// Paths is how many distinct paths Send can use (distinct source
	// ports for UDP, so that ECMP spreads them).
	Paths() int
	// SrcPorts is the source port of each path's packets (path 0's is
	// Addr's port): a peer takes packets of the connection from these
	// only.
	SrcPorts() []uint16
	// Send sends packet b on path to d. It does not block; a packet the
	// backend cannot take now is dropped and reported with unix.EAGAIN
	// (the flow retransmits it). A path is a rail (railOf) and, on it,
	// one of Paths() source ports (path & pathMask); a rail d has no
	// address for (Dest.Rails), and a port past Paths(), are rail 0 and
	// port 0.
	Send(path int, d *Dest, b []byte) error
	// SendBatch sends pkts, in order, on path to d, as Send does each;
	// a backend that can hand several to the network at once (UDP
	// segmentation offload) does. pays, if not nil, holds the rest of
	// each packet (nil for none): packet i is pkts[i] followed by
	// pays[i], which may be the application's memory, read during the
	// call only. ErrPacketTooBig says the packets are
	// larger than the path takes whole: they were sent one by one (the
	// IP layer fragments them), and later ones should be smaller
	// (PathMTU).
	SendBatch(path int, d *Dest, pkts, pays [][]byte) error
	// BatchBytes is the most bytes of equal-sized packets SendBatch
	// hands the network at once (one UDP_SEGMENT send); 0 for no such
	// unit. The wire sends its batches in these units, so that a run
	// of packets does not leave as full sends and a short one.
	BatchBytes() int
	// PathMTU is the IP MTU of the route to d as the host knows it now
	// (the interface's, or less if the path said so), 0 if unknown.
	PathMTU(d *Dest) int
	// Recv fills bufs with arrived packets, setting meta[i].Len to the
	// length of the packet in bufs[i] (-1 for one longer than its buffer,
	// which is to be dropped) and meta[i].From to its source address, and
	// returns how many buffers it used.
	// With wait it blocks until at least one packet arrived or Interrupt
	// is called; without, it returns 0 at once if none is there. One
	// thread at a time calls it (the receive thread, or the polling
	// application thread while the receive thread is parked).
	//
	// meta[i].Seg is 0 for one packet, or, when the backend received
	// several packets of one sender as one buffer (UDP generic receive
	// offload), the size of each: bufs[i][:meta[i].Len] is then packets of
	// Seg bytes back to back, the last possibly shorter.
	Recv(bufs [][]byte, meta []RxMeta, wait bool) (int, error)
	// BufSize is the size receive buffers need.
	BufSize() int
	// Park blocks until Interrupt is called (or was, since the last
	// Park or waiting Recv returned), without taking packets.
	Park()
	// Interrupt makes a Recv waiting now, or a Park, or the next of
	// either, return.
	Interrupt()
	// Close releases the backend; Recv then fails.
	Close() error
}

// Addr is a network address: IPv4 address and UDP port.
type Addr struct {
	IP   [4]byte
	Port uint16
}

// RxMeta describes a received buffer (Backend.Recv).
type RxMeta struct {
	Len, Seg int
	From     Addr
}

// ErrPacketTooBig: SendBatch's packets are larger than the path's MTU.
var ErrPacketTooBig = errors.New("hfi: packets larger than the path MTU")

// Dest is where a peer's packets go: its address, the addresses of its
// further rails (multirail: the peer's endpoint on another network,
// same port), and what the backend derived from them once (so Send does
// no conversion per packet).
type Dest struct {
	IP    [4]byte
	Port  uint16
	raw   unix.RawSockaddrInet4
	rails [MaxRails - 1]unix.RawSockaddrInet4
	nrail int // further rails: rails[:nrail]
}

// MaxRails is the most rails (networks) an endpoint uses: its own
// address and up to three more (Config.Rails).
const MaxRails = 4

// A path byte (a packet's +6, the sender's choice) is a source port
// index in bits 0-2 and a rail in bits 3-4.
const (
	pathMask  = 7
	railShift = 3
	pathKeys  = 1<<(railShift+2) - 1 // a path byte's bits
)

// railOf is the rail of path byte path.
func railOf(path uint8) int { return int(path >> railShift) }

// onRail is path moved to rail r (its port index kept).
func onRail(path uint8, r int) uint8 { return path&pathMask | uint8(r)<<railShift }

// Rails is how many rails d has: 1 and its further ones.
func (d *Dest) Rails() int { return 1 + d.nrail }

// setRails gives d the further rails ips (at most MaxRails-1), at d's
// port.
func (d *Dest) setRails(ips [][4]byte) {
	d.nrail = min(len(ips), len(d.rails))
	for i := 0; i < d.nrail; i++ {
		r := &d.rails[i]
		*r = d.raw
		r.Addr = ips[i]
	}
}

// railIP is the address of d's rail r.
func (d *Dest) railIP(r int) [4]byte {
	if r == 0 || r > d.nrail {
		return d.IP
	}
	return d.rails[r-1].Addr
}


// NewDest makes the Dest of ip:port.
func NewDest(ip [4]byte, port uint16) *Dest {
	d := &Dest{}
	d.set(ip, port)
	return d
}

// set makes d the Dest of ip:port.
func (d *Dest) set(ip [4]byte, port uint16) {
	d.IP, d.Port = ip, port
	d.raw.Family = unix.AF_INET
	d.raw.Addr = ip
	p := (*[2]byte)(unsafe.Pointer(&d.raw.Port))
	p[0], p[1] = byte(port>>8), byte(port)
}
