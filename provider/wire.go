package provider

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gopsm2/libfabric-psm2/hfi"
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/shm"
	"github.com/gopsm2/libfabric-psm2/transport"
	"github.com/gopsm2/libfabric-psm2/transport/route"
)

// wireConfig is what an endpoint asks of its wire.
type wireConfig struct {
	job         UUID
	ctx         int
	connTimeout time.Duration
	rndvThresh  int
	disableCMA  bool
	linger      time.Duration // FI_PSM2_TIMEOUT: how long a close waits for sent data to arrive
	net         netConfig
	// stalled: a completed send left work only a later poll does
	// (hfi.Config.Stalled); called under the domain's lock.
	stalled func()
	// arrived: packets came on the network (route.Config.Arrived);
	// called on the receive thread without a lock.
	arrived func()
}

// netConfig is the inter-node part: which devices, and the hfi wire's
// settings (PSM2_* and FI_PSM2_* variables, read once per endpoint).
type netConfig struct {
	devices route.Devices
	hfi     hfi.Config
	auth    bool // FI_PSM2_AUTH
}

// newWire opens the wires under a provider endpoint: shm for this host,
// hfi for the others (route decides per peer). The endpoint id comes
// from the wire: the hfi socket's address and port.
func newWire(c wireConfig) (transport.Endpoint, error) {
	hc := c.net.hfi
	hc.Job = c.job
	hc.Auth = c.net.auth
	hc.ConnTimeout = c.connTimeout
	hc.Linger = c.linger
	hc.Stalled = c.stalled
	hc.SameKernel = noteKernelPeer
	return route.Open(route.Config{
		Devices: c.net.devices,
		Ctx:     uint8(c.ctx),
		PID:     pid(),
		Arrived: c.arrived,
		Hfi:     hc,
		Shm: shm.Config{
			Job:           c.job,
			ConnTimeout:   c.connTimeout,
			RndvThreshold: shmThreshold(c.rndvThresh),
			DisableCMA:    c.disableCMA,
		},
	})
}

// netConfig reads the inter-node settings from the environment.
func (p *Provider) netConfig() (netConfig, error) {
	nc := netConfig{devices: route.AllDevices}
	if s, ok := p.host.Getenv("PSM2_DEVICES"); ok {
		d, err := route.ParseDevices(s)
		if err != nil {
			p.log.Warnf(fi.LOG_CORE, "%v; using self,shm,hfi", err)
		} else {
			nc.devices = d
		}
	}
	if nc.devices&route.Hfi == 0 {
		return nc, nil
	}
	addr, err := p.wireAddr()
	if err != nil {
		return nc, err
	}
	h := &nc.hfi
	h.Addr = addr
	nc.auth = p.params.Auth
	h.MaxPeers, h.PeersPerHost = p.params.MaxPeers, p.params.PeersPerHost
	h.ReasmBytes, h.OOOBytes = p.params.ReasmBytes, p.params.OOOBytes
	h.Warn = func(msg string) { p.log.Warnf(fi.LOG_EP_DATA, "%s", msg) }
	h.PortFirst, h.PortLast = p.params.PortFirst, p.params.PortLast
	h.Paths = p.params.Paths
	h.Rails = p.rails()
	h.MTU = p.params.MTU
	h.Spin = time.Duration(p.params.HFISpin) * time.Microsecond
	if _, set := p.host.Getenv("PSM2_MQ_RNDV_HFI_THRESH"); set {
		// One threshold, as in psm2 (else hfi.DefaultEagerIdle).
		h.RndvThreshold = p.envInt("PSM2_MQ_RNDV_HFI_THRESH", 64000, 0, 1<<30)
		if h.RndvThreshold == 0 {
			h.RndvThreshold = 1 // 0 means every message by rendezvous
		}
	}
	// Unset (0): hfi sizes both from the socket's receive buffer.
	h.RndvWindow = p.envInt("PSM2_MQ_RNDV_HFI_WINDOW", 0, 4096, 4<<20)
	h.Credits = p.envInt("PSM2_FLOW_CREDITS", 0, 1, 4096)
	h.ErrchkMin, h.ErrchkMax, h.ErrchkFactor = 160*time.Millisecond, 640*time.Millisecond, 2
	h.ErrchkAdaptive = true // unless PSM2_ERRCHK_TIMEOUT fixes it
	if s, ok := p.host.Getenv("PSM2_ERRCHK_TIMEOUT"); ok {
		if lo, hi, f, err := parseErrchk(s); err == nil {
			h.ErrchkMin, h.ErrchkMax, h.ErrchkFactor = lo, hi, f
			h.ErrchkAdaptive = false
		} else {
			p.log.Warnf(fi.LOG_CORE, "PSM2_ERRCHK_TIMEOUT=%q: %v; using 160:640:2", s, err)
		}
	}
	if s, ok := p.host.Getenv("PSM2_PATH_SELECTION"); ok {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "adaptive":
			h.PathSel = hfi.PathAdaptive
		case "static_src":
			h.PathSel = hfi.PathStaticSrc
		case "static_dest":
			h.PathSel = hfi.PathStaticDest
		case "static_base":
			h.PathSel = hfi.PathStaticBase
		default:
			p.log.Warnf(fi.LOG_CORE, "PSM2_PATH_SELECTION=%q: want adaptive, static_src, static_dest or static_base", s)
		}
	}
	return nc, nil
}

// wireAddr is the IPv4 address endpoints bind (FI_PSM2_IFACE,
// hfi.ChooseAddr; else HFI_UNIT, hfi.UnitAddr).
func (p *Provider) wireAddr() ([4]byte, error) {
	p.addrOnce.Do(func() {
		if p.params.Iface == "" && p.params.HFIUnit >= 0 {
			p.addr, p.addrErr = hfi.UnitAddr(p.params.HFIUnit)
		} else {
			p.addr, p.addrErr = hfi.ChooseAddr(p.params.Iface)
		}
		if p.addrErr == nil {
			p.log.Infof(fi.LOG_CORE, "hfi wire on %d.%d.%d.%d", p.addr[0], p.addr[1], p.addr[2], p.addr[3])
		}
	})
	return p.addr, p.addrErr
}

// rails are the addresses of the further rails of the hfi wire
// (PSM2_MULTIRAIL: the units of PSM2_MULTIRAIL_MAP, else every unit; the
// endpoint's own address is left out by hfi.Config).
func (p *Provider) rails() [][4]byte {
	if p.params.MultiRail == 0 {
		return nil
	}
	units := hfi.UnitAddrs()
	if p.params.RailMap == nil {
		return units
	}
	var out [][4]byte
	for _, u := range p.params.RailMap {
		if u < len(units) {
			out = append(out, units[u])
		} else {
			p.log.Warnf(fi.LOG_CORE, "PSM2_MULTIRAIL_MAP: no unit %d (%d units)", u, len(units))
		}
	}
	return out
}

// envInt reads integer variable name in [lo, hi], def if unset or bad.
func (p *Provider) envInt(name string, def, lo, hi int) int {
	s, ok := p.host.Getenv(name)
	if !ok {
		return def
	}
	v, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
	if err != nil || v < int64(lo) || v > int64(hi) {
		if def == 0 {
			p.log.Warnf(fi.LOG_CORE, "%s=%q is not an integer in %d..%d; using the default", name, s, lo, hi)
		} else {
			p.log.Warnf(fi.LOG_CORE, "%s=%q is not an integer in %d..%d; using %d", name, s, lo, hi, def)
		}
		return def
	}
	return int(v)
}

// parseErrchk parses PSM2_ERRCHK_TIMEOUT, "min[:max[:factor]]" in
// milliseconds.
func parseErrchk(s string) (lo, hi time.Duration, f int, err error) {
	fs := strings.Split(strings.TrimSpace(s), ":")
	if len(fs) > 3 {
		return 0, 0, 0, fmt.Errorf("want min[:max[:factor]] in ms")
	}
	v := []int{160, 640, 2}
	for i, x := range fs {
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil || n < 1 {
			return 0, 0, 0, fmt.Errorf("want min[:max[:factor]], positive integers (ms)")
		}
		v[i] = n
	}
	if len(fs) == 1 {
		v[1] = max(v[1], v[0])
	}
	if v[1] < v[0] {
		return 0, 0, 0, fmt.Errorf("max is below min")
	}
	return time.Duration(v[0]) * time.Millisecond, time.Duration(v[1]) * time.Millisecond, v[2], nil
}

// shmThreshold maps a byte threshold to shm.Config's, where 0 means the
// default and a negative value a threshold of 0.
func shmThreshold(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// DefaultShmRndvThreshold is PSM2_MQ_RNDV_SHM_THRESH's default: messages
// longer than this go by rendezvous (a single copy) on the shm wire. PSM2
// uses 16000. Here a bounce buffer beats the rendezvous round trip up to
// 32 KiB since the C fast path sends and delivers eager messages itself
// (fi_pingpong -e rdm one-way, pinned, best of 3, same run, eager against
// rendezvous: 24 KiB 3.63 against 5.35 us, shm 3.95-4.01; 32 KiB 4.68
// against 5.32, shm 4.14-4.22; 40 KiB 5.74 against 5.98; 48 KiB 7.18
// against 6.27). bench/msgrate.c (64 in flight) is even or better with
// it: 24 KiB 293-327 K against 271-273 K messages/s, 32 KiB 239-249 K
// against 234-236 K (shm 273 K and 241 K). Since the C sender streams
// eager messages (the receiver copies out while it fills the buffer, with
// non-temporal stores from 16 KiB: docs/shm.md), eager beats rendezvous
// up to 64 KiB (fi_pingpong, 5 runs alternating, medians: 48 KiB 5.82
// against 8.33 us, shm 6.74; 64 KiB 7.24 against 9.22, shm 8.21; 96 and
// 128 KiB, rendezvous either way, even), and bench/msgrate.c at 64 KiB
// goes from 117-137 K to 186-221 K messages/s (shm 142-146 K), 32 KiB
// from 326-342 K to 328-389 K. Bounce buffers are 64 KiB each, 2 MiB an
// endpoint.
const DefaultShmRndvThreshold = 65536

// rndvThreshold is PSM2_MQ_RNDV_SHM_THRESH (default
// DefaultShmRndvThreshold): messages longer than this go by rendezvous.
func (p *Provider) rndvThreshold() int {
	if s, ok := p.host.Getenv("PSM2_MQ_RNDV_SHM_THRESH"); ok {
		if v, err := strconv.Atoi(s); err == nil && v >= 0 {
			return v
		}
		p.log.Warnf(0, "PSM2_MQ_RNDV_SHM_THRESH=%q is not a byte count; using %d", s, DefaultShmRndvThreshold)
	}
	return DefaultShmRndvThreshold
}

// disableCMA reports whether single-copy (process_vm_readv) transfers are
// switched off: FI_SHM_DISABLE_CMA=1 (as for libfabric's shm provider) or
// PSM2_KASSIST_MODE=none (as for PSM2).
func (p *Provider) disableCMA() bool {
	if s, ok := p.host.Getenv("FI_SHM_DISABLE_CMA"); ok {
		if b, ok := ParseBool(s); ok && b {
			return true
		}
	}
	s, _ := p.host.Getenv("PSM2_KASSIST_MODE")
	return strings.EqualFold(s, "none")
}

// wireOpen reports whether endpoint epid of job is open, as far as this
// host can tell: an endpoint of this host (an id without a network
// address, or with ours) must have a segment that is not marked closed
// and whose owner lives; one of another host is taken to be open (its
// wire finds out when it connects).
func (p *Provider) wireOpen(job UUID, epid uint64) bool {
	if ip, _, net := transport.EPIDAddr(epid); net {
		if ours, err := p.wireAddr(); err != nil || ip != ours {
			return true
		}
	}
	return shm.EndpointOpen(job, epid)
}
