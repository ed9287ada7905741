package route

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/hfi"
	"github.com/gopsm2/libfabric-psm2/shm"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Devices is a set of wires (PSM2_DEVICES).
type Devices uint8

// The devices.
const (
	Self Devices = 1 << iota // endpoints of this process
	Shm                      // endpoints of this host
	Hfi                      // endpoints anywhere, over the network
)

// AllDevices is PSM2's default, "self,shm,hfi".
const AllDevices = Self | Shm | Hfi

// ParseDevices parses PSM2_DEVICES: a comma-separated list of self, shm
// (or amsh) and hfi (or ips).
func ParseDevices(s string) (Devices, error) {
	var d Devices
	for _, f := range strings.Split(s, ",") {
		switch strings.ToLower(strings.TrimSpace(f)) {
		case "self":
			d |= Self
		case "shm", "amsh":
			d |= Shm
		case "hfi", "ips":
			d |= Hfi
		case "":
		default:
			return 0, fmt.Errorf("PSM2_DEVICES=%q: unknown device %q (want self, shm, hfi)", s, f)
		}
	}
	if d == 0 {
		return 0, fmt.Errorf("PSM2_DEVICES=%q names no device", s)
	}
	return d, nil
}

func (d Devices) String() string {
	var s []string
	for _, x := range []struct {
		d Devices
		n string
	}{{Self, "self"}, {Shm, "shm"}, {Hfi, "hfi"}} {
		if d&x.d != 0 {
			s = append(s, x.n)
		}
	}
	return strings.Join(s, ",")
}

// hfiBase marks the Conns of the hfi wire (shm's are small indexes).
const hfiBase transport.Conn = 1 << 62

// Config opens a routed endpoint.
type Config struct {
	Devices Devices
	Ctx     uint8
	// Shm is the shm wire's configuration without EPID (set here).
	Shm shm.Config
	// Hfi is the hfi wire's, without Ctx, ConnBase and Notify.
	Hfi hfi.Config
	// Arrived, if set, runs on hfi's receive thread after it published
	// packets (hfi.Config.Notify), without any lock.
	Arrived func()
	// PID makes the id of an endpoint without a network wire
	// (transport.ShmEPID), as PSM2's shm-only ids.
	PID int
}

// Endpoint routes each peer to self/shm or hfi.
type Endpoint struct {
	shm     *shm.Endpoint
	shmWake atomic.Pointer[shm.Endpoint] // shm for notify, on hfi's receive thread
	hfi     *hfi.Endpoint
	epid    uint64
	devs    Devices
	arrived func()
}

// Open opens the wires of cfg.Devices. The hfi wire is opened first: its
// address and port make the endpoint id, which names the shm segment.
func Open(cfg Config) (*Endpoint, error) {
	e := &Endpoint{devs: cfg.Devices, arrived: cfg.Arrived}
	if cfg.Devices&Hfi != 0 {
		hc := cfg.Hfi
		hc.Ctx, hc.ConnBase = cfg.Ctx, hfiBase
		if hc.PortCursor == "" {
			if dir, err := shm.SegmentDir(); err == nil {
				hc.PortCursor = dir + "/hfi-ports"
			}
		}
		hc.Notify = e.notify
		h, err := hfi.Open(hc)
		if err != nil {
			return nil, err
		}
		e.hfi = h
		e.epid = h.EPID()
	} else {
		e.epid = transport.ShmEPID(cfg.PID, cfg.Ctx)
	}
	if cfg.Devices&(Self|Shm) != 0 {
		sc := cfg.Shm
		sc.EPID = e.epid
		s, err := shm.NewEndpoint(sc)
		if err != nil {
			if e.hfi != nil {
				e.hfi.Close()
			}
			return nil, err
		}
		e.shm = s
		e.shmWake.Store(s)
	}
	return e, nil
}

// notify runs on hfi's receive thread: wake a waiter sleeping in shm's
// Wait, and tell the owner (Config.Arrived).
func (e *Endpoint) notify() {
	// Not e.shm: hfi's receive thread runs from hfi.Open on, before
	// Open has opened the shm wire.
	if s := e.shmWake.Load(); s != nil {
		s.Wake()
	}
	if e.arrived != nil {
		e.arrived()
	}
}

// Hfi and Shm give the wires (nil if not open), for statistics.
func (e *Endpoint) Hfi() *hfi.Endpoint { return e.hfi }

// Shm is the shared-memory wire.
func (e *Endpoint) Shm() *shm.Endpoint { return e.shm }

// EPID is the endpoint's id.
func (e *Endpoint) EPID() uint64 { return e.epid }

// local reports whether epid is to be reached through shm: this process
// (self), or this host (shm): the same network address, or an id of an
// endpoint without a network wire (which can only be on this host).
func (e *Endpoint) local(epid uint64) bool {
	if epid == e.epid {
		return e.devs&(Self|Shm) != 0
	}
	if e.devs&Shm == 0 {
		return false
	}
	_, _, net := transport.EPIDAddr(epid)
	_, _, ours := transport.EPIDAddr(e.epid)
	return !net || !ours || transport.SameHost(epid, e.epid)
}

// Local reports whether epid is reached through shared memory: a
// connection to it costs a mapping, no message on any wire.
func (e *Endpoint) Local(epid uint64) bool { return e.shm != nil && e.local(epid) }

// Connect hands epid to the first wire that reaches it.
func (e *Endpoint) Connect(epid uint64) (transport.Conn, error) {
	if e.shm != nil && e.local(epid) {
		c, err := e.shm.Connect(epid)
		if err == nil || e.hfi == nil || epid == e.epid {
			return c, err
		}
		// Same address but no segment here: another host that shares
		// the address (containers); the network decides.
	}
	if e.hfi != nil {
		return e.hfi.Connect(epid)
	}
	return 0, fmt.Errorf("route: %#x is not on this host and the hfi device is off (PSM2_DEVICES=%s): %w",
		epid, e.devs, transport.ErrUnreachable)
}

func (e *Endpoint) isHfi(c transport.Conn) bool { return c&hfiBase != 0 }

// Send sends on c's wire.
func (e *Endpoint) Send(c transport.Conn, h *transport.Header, iov [][]byte, cookie uint64, flags uint32) (bool, error) {
	if e.isHfi(c) {
		if e.hfi == nil {
			return false, errBadConn
		}
		return e.hfi.Send(c, h, iov, cookie, flags)
	}
	if e.shm == nil {
		return false, errBadConn
	}
	return e.shm.Send(c, h, iov, cookie, flags)
}

var errBadConn = errors.New("route: not a connection of this endpoint")

func (e *Endpoint) rndvHfi(r *transport.Rndv) bool {
	return e.hfi != nil && r.Wire == transport.WireHfi
}

// Fetch fetches on the wire r came from.
func (e *Endpoint) Fetch(r *transport.Rndv, dst []byte, cookie uint64) (bool, int, error) {
	if e.rndvHfi(r) {
		return e.hfi.Fetch(r, dst, cookie)
	}
	if e.shm == nil {
		return false, 0, errBadConn
	}
	return e.shm.Fetch(r, dst, cookie)
}

// Discard discards on the wire r came from.
func (e *Endpoint) Discard(r *transport.Rndv) error {
	if e.rndvHfi(r) {
		return e.hfi.Discard(r)
	}
	if e.shm == nil {
		return errBadConn
	}
	return e.shm.Discard(r)
}

// Poll polls every wire.
func (e *Endpoint) Poll(h transport.Handler, budget int) int {
	n := 0
	if e.shm != nil {
		n += e.shm.Poll(h, budget)
	}
	// An idle hfi wire has nothing to take, no timer and no failure to
	// report: skipping it spares every poll of a one-host job its clock
	// read.
	if e.hfi != nil && !e.hfi.Idle() {
		n += e.hfi.Poll(h, budget)
	}
	return n
}

// Networked: the endpoint has the hfi wire, whose peers need polls even
// from an application that makes no calls (its ACKs and probe answers).
func (e *Endpoint) Networked() bool { return e.hfi != nil }

// NetIdle: the hfi wire, if any, has nothing for a Poll to do.
func (e *Endpoint) NetIdle() bool { return e.hfi == nil || e.hfi.Idle() }

// Unsent: the hfi wire keeps packets that only a later Poll sends
// (hfi.Endpoint.Unsent); shm sends at once or refuses.
func (e *Endpoint) Unsent() bool {
	return e.hfi != nil && e.hfi.Unsent()
}

// Idle: every wire is.
func (e *Endpoint) Idle() bool {
	return (e.shm == nil || e.shm.Idle()) && (e.hfi == nil || e.hfi.Idle())
}

// IdleBesidesRings: every wire is, but for the messages in shm's ring
// (shm.Endpoint.IdleBesidesRing), which the C fast path reads itself.
func (e *Endpoint) IdleBesidesRings() bool {
	return (e.shm == nil || e.shm.IdleBesidesRing()) && (e.hfi == nil || e.hfi.Idle())
}

// Wait sleeps in shm's Wait (hfi's receive thread wakes it), bounded by
// hfi's next timer; without shm, in hfi's.
func (e *Endpoint) Wait(timeout time.Duration) {
	if e.shm == nil {
		e.hfi.Wait(timeout)
		return
	}
	if e.hfi != nil {
		if d, ok := e.hfi.NextDue(); ok && (timeout < 0 || d < timeout) {
			timeout = d
		}
		e.hfi.Cool() // the receive thread watches the network while we sleep
		if e.hfi.Arrived() {
			return
		}
	}
	e.shm.Wait(timeout)
}

// Wake wakes a Wait.
func (e *Endpoint) Wake() {
	if e.shm != nil {
		e.shm.Wake()
	}
	if e.hfi != nil {
		e.hfi.Wake()
	}
}

// RingProbe is shm's ring (the C side delivers from it).
func (e *Endpoint) RingProbe() uint64 {
	if e.shm == nil {
		return 0
	}
	return e.shm.RingProbe()
}

// Probes gives every wire's arrival words.
func (e *Endpoint) Probes(dst []uint64) []uint64 {
	if e.shm != nil {
		dst = e.shm.Probes(dst)
	}
	if e.hfi != nil {
		dst = e.hfi.Probes(dst)
	}
	return dst
}

// Watch watches c on its wire (transport.Watcher).
func (e *Endpoint) Watch(c transport.Conn, delta int) {
	if w, ok := e.wireOf(c).(transport.Watcher); ok {
		w.Watch(c, delta)
	}
}

// PeerErr asks c's wire (transport.Watcher).
func (e *Endpoint) PeerErr(c transport.Conn) error {
	if w, ok := e.wireOf(c).(transport.Watcher); ok {
		return w.PeerErr(c)
	}
	return nil
}

// wireOf is c's wire, or nil.
func (e *Endpoint) wireOf(c transport.Conn) transport.Endpoint {
	if e.isHfi(c) {
		if e.hfi == nil {
			return nil
		}
		return e.hfi
	}
	if e.shm == nil {
		return nil
	}
	return e.shm
}

// FastPeer: only shm connections have C-side sends.
func (e *Endpoint) FastPeer(c transport.Conn) unsafe.Pointer {
	if e.isHfi(c) || e.shm == nil {
		return nil
	}
	return e.shm.FastPeer(c)
}

// Report joins the wires' reports (transport.Reporter).
func (e *Endpoint) Report() string {
	var parts []string
	if e.shm != nil {
		parts = append(parts, e.shm.Report())
	}
	if e.hfi != nil {
		parts = append(parts, e.hfi.Report())
	}
	return strings.Join(parts, "; ")
}

// Counters appends every wire's counters (transport.Counted).
func (e *Endpoint) Counters(dst []transport.Counters) []transport.Counters {
	if e.shm != nil {
		dst = e.shm.Counters(dst)
	}
	if e.hfi != nil {
		dst = e.hfi.Counters(dst)
	}
	return dst
}

// Close closes every wire.
func (e *Endpoint) Close() error {
	var err error
	if e.hfi != nil {
		err = e.hfi.Close()
	}
	if e.shm != nil {
		err = errors.Join(err, e.shm.Close())
	}
	return err
}
