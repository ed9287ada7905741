package provider

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
	"github.com/gopsm2/libfabric-psm2/provider/names"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Provider is one instance of the psm2 provider: its parameters, its log
// and the objects it has opened. The C shim makes one per loaded library;
// nothing here is global, so tests can make as many as they like.
type Provider struct {
	host   Host
	log    logger
	params Params

	openContexts atomic.Int64 // endpoints (transmit/receive contexts) open
	fabrics      atomic.Int64 // fabrics open
	panics       atomic.Int64 // panics recovered (Recovered)

	nsOnce sync.Once
	ns     *names.Server

	layoutOnce sync.Once // the tag layout is fixed by the first domain
	layout     TagLayout

	// wire opens an endpoint's wire; tests swap it for an in-memory one.
	wire func(wireConfig) (transport.Endpoint, error)

	ctxMu   sync.Mutex
	ctxUsed [getinfo.MaxContexts]bool // context numbers in use by open endpoints

	addrOnce sync.Once // the hfi wire's address (wire.go)
	addr     [4]byte
	addrErr  error
}

// allocContexts reserves n consecutive context numbers (part of an
// endpoint id) for new endpoints and returns the first.
func (p *Provider) allocContexts(n int) (int, error) {
	p.ctxMu.Lock()
	defer p.ctxMu.Unlock()
	run := 0
	for i, used := range p.ctxUsed {
		if used {
			run = 0
			continue
		}
		if run++; run == n {
			first := i + 1 - n
			for j := first; j <= i; j++ {
				p.ctxUsed[j] = true
			}
			p.openContexts.Add(int64(n))
			return first, nil
		}
	}
	return 0, fi.EMFILE
}

// freeContext releases a context number.
func (p *Provider) freeContext(i int) {
	p.ctxMu.Lock()
	defer p.ctxMu.Unlock()
	if p.ctxUsed[i] {
		p.ctxUsed[i] = false
		p.openContexts.Add(-1)
	}
}

// New creates a provider: it registers the FI_PSM2_* parameters with the
// host and reads them.
func New(host Host) *Provider {
	p := &Provider{host: host, log: logger{host}, wire: newWire}
	defineParams(host)
	p.params = loadParams(host, p.log)
	return p
}

// Name is the provider name.
func (p *Provider) Name() string { return getinfo.ProvName }

// Version is the provider version (FI_VERSION(117, 0)).
func (p *Provider) Version() uint32 { return getinfo.ProvVersion }

// APIVersion is the newest libfabric API the provider implements.
func (p *Provider) APIVersion() uint32 { return fi.APIVersion }

// Params returns the parsed runtime parameters.
func (p *Provider) Params() Params { return p.params }

// freeContexts is how many more endpoints this process may open.
func (p *Provider) freeContexts() uint64 {
	n := getinfo.MaxContexts - p.openContexts.Load()
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// GetInfo answers fi_getinfo for this provider: the entries that fit
// the hints, narrowed to them, in the order TAG64, TAG60, RMA-only. It
// returns an error wrapping fi.ENODATA when nothing fits.
func (p *Provider) GetInfo(version uint32, node, service string, flags uint64, hints *fi.Info) ([]*fi.Info, error) {
	infos, err := p.initEntries(hints)
	if err != nil {
		return nil, p.reject(err)
	}

	src := EPName{EPID: ReservedEPID, Type: EPNameSrcAddr, SepID: uint8(0xFF), Port: AnyPort, Service: AnyService}
	var dest *EPName
	nodeUsed := false
	if node != "" {
		if n, err := ParseEPNameString(node); err == nil {
			if flags&fi.SOURCE != 0 {
				src = n
				p.log.Infof(fi.LOG_CORE, "%q is the source address: unit %d, port %d, service %d", node, n.Unit(), n.Port, n.Service)
			} else {
				dest = &n
				p.log.Infof(fi.LOG_CORE, "%q is the destination address: epid %#x", node, n.EPID)
			}
			nodeUsed = true
		}
	}
	if !nodeUsed && flags&fi.SOURCE != 0 {
		if node != "" {
			unit, port := parseHostUnitPort(node, src.Unit(), src.Port)
			src.SepID, src.Port = uint8(int8(unit)), port
		}
		if service != "" {
			src.Service = parseService(service, src.Service)
		}
		p.log.Infof(fi.LOG_CORE, "node %q service %q give unit %d, port %d, service %d", node, service, src.Unit(), src.Port, src.Service)
	}
	if u := src.Unit(); u != AnyUnit && u != 0 {
		return nil, p.reject(getinfo.NoMatch("source unit %d does not exist (the only unit is 0)", u))
	}
	if !nodeUsed && node != "" && flags&fi.SOURCE == 0 {
		// A host name or IP address: the name server turns it (and the
		// service) into an endpoint address.
		d, err := p.resolveNode(node, service)
		if err != nil {
			return nil, p.reject(err)
		}
		dest = d
	}

	p.fillAddresses(infos, src, dest)

	kept := infos[:0]
	for _, info := range infos {
		if err := getinfo.Check(info, hints, version); err != nil {
			p.log.Infof(fi.LOG_CORE, "entry skipped: %v", err)
			continue
		}
		kept = append(kept, info)
	}
	if len(kept) == 0 {
		return nil, p.reject(getinfo.NoMatch("no entry fits the hints"))
	}
	p.alter(kept, hints, version)
	return kept, nil
}

func (p *Provider) reject(err error) error {
	p.log.Infof(fi.LOG_CORE, "fi_getinfo: %v", err)
	if errors.Is(err, fi.ENODATA) {
		return err
	}
	return fmt.Errorf("%w: %v", fi.ENODATA, err)
}

// initEntries picks the entries the hints can use before any attribute
// check: fabric and domain names, endpoint type, address format and caps
// decide, and the tag layout parameter removes the layout it excludes.
func (p *Provider) initEntries(hints *fi.Info) ([]*fi.Info, error) {
	ep, format := fi.EP_RDM, fi.ADDR_PSMX2
	if hints != nil {
		if hints.Fabric != nil && hints.Fabric.Name != "" && !strings.EqualFold(hints.Fabric.Name, getinfo.FabricName) {
			return nil, getinfo.NoMatch("unknown fabric name %q", hints.Fabric.Name)
		}
		if d := hints.Domain; d != nil && d.Name != "" &&
			(len(d.Name) < len(getinfo.DomainPrefix) || !strings.EqualFold(d.Name[:len(getinfo.DomainPrefix)], getinfo.DomainPrefix)) {
			return nil, getinfo.NoMatch("unknown domain name %q", d.Name)
		}
		if hints.EP != nil {
			switch hints.EP.Type {
			case fi.EP_UNSPEC, fi.EP_RDM:
			case fi.EP_DGRAM:
				ep = fi.EP_DGRAM
			default:
				return nil, getinfo.NoMatch("unsupported endpoint type %d (RDM and DGRAM are)", hints.EP.Type)
			}
		}
		switch hints.AddrFormat {
		case fi.FORMAT_UNSPEC, fi.ADDR_PSMX2:
		case fi.ADDR_STR:
			format = fi.ADDR_STR
		default:
			return nil, getinfo.NoMatch("unsupported address format %d (FI_ADDR_PSMX2 and FI_ADDR_STR are)", hints.AddrFormat)
		}
		if hints.Caps&^(getinfo.Caps|fi.COLLECTIVE) != 0 {
			return nil, getinfo.NoMatch("caps %#x not supported", hints.Caps&^(getinfo.Caps|fi.COLLECTIVE))
		}
		if hints.Caps&fi.COLLECTIVE != 0 && ep == fi.EP_DGRAM {
			return nil, getinfo.NoMatch("FI_COLLECTIVE needs an RDM endpoint")
		}
	}

	layout := p.params.TagLayout
	var infos []*fi.Info
	if (hints == nil || hints.Domain == nil || hints.Domain.CQDataSize == 0) && layout != TagLayoutTag60 {
		infos = append(infos, getinfo.Entry(getinfo.Tag64, ep, format))
	}
	if layout != TagLayoutTag64 {
		infos = append(infos, getinfo.Entry(getinfo.Tag60, ep, format))
	}
	if hints == nil || hints.Caps&(fi.TAGGED|fi.MSG) == 0 {
		infos = append(infos, getinfo.Entry(getinfo.RMAOnly, ep, format))
	}
	if len(infos) == 0 {
		return nil, getinfo.NoMatch("FI_PSM2_TAG_LAYOUT=%v leaves no entry for the hints", layout)
	}
	// FI_CONTEXT: psm2 keeps each request's state in the application's
	// struct fi_context; we never write it. So hints without the mode
	// still get the message entries, with the mode cleared (psm2 gives
	// them only the RMA-only entry).
	if hints != nil && hints.Mode&fi.CONTEXT == 0 {
		for _, info := range infos {
			info.Mode &^= fi.CONTEXT
			info.Tx.Mode &^= fi.CONTEXT
			info.Rx.Mode &^= fi.CONTEXT
		}
	}
	// Collectives (coll.go), which psm2 does not have: offered only to
	// hints that ask for them, so that every other answer stays psm2's.
	if hints != nil && hints.Caps&fi.COLLECTIVE != 0 {
		for _, info := range infos {
			info.Caps |= fi.COLLECTIVE
			info.Tx.Caps |= fi.COLLECTIVE
			info.Rx.Caps |= fi.COLLECTIVE
		}
	}
	return infos, nil
}

// fillAddresses sets the source and destination addresses, the domain
// name, context counts and inject size of each entry.
func (p *Provider) fillAddresses(infos []*fi.Info, src EPName, dest *EPName) {
	for _, info := range infos {
		// Without an address the length of a name is still reported.
		info.SrcAddrLen, info.DestAddrLen = EPNameLen, EPNameLen
		if info.AddrFormat == fi.ADDR_STR {
			// The string form is taken before the unit is resolved, so an
			// unspecified unit shows as ff in it.
			info.SrcAddr = src.StringAddr()
			info.SrcAddrLen = uint64(len(info.SrcAddr))
			if dest != nil {
				info.DestAddr = dest.StringAddr()
				info.DestAddrLen = uint64(len(info.DestAddr))
			}
		} else {
			s := src
			if s.Unit() == AnyUnit {
				s.SepID = 0 // the one unit there is
			}
			info.SrcAddr = s.Marshal()
			if dest != nil {
				info.DestAddr = dest.Marshal()
			}
		}
		free := p.freeContexts()
		d := info.Domain
		d.TxCtxCnt, d.RxCtxCnt = free, free
		// A scalable endpoint's contexts are endpoints (sep.go), and so
		// are shared transmit contexts (stx.go): as many as can still
		// open, within a SEP's own limit.
		sep := p.maxSEPContexts()
		d.MaxEPTxCtx, d.MaxEPRxCtx, d.MaxEPStxCtx = sep, sep, free
		d.Name = getinfo.DomainPrefix + "_0"
		info.Tx.InjectSize = uint64(p.params.InjectSize)
	}
}

// alter applies the generic hint rules and then the provider's own.
func (p *Provider) alter(infos []*fi.Info, hints *fi.Info, version uint32) {
	getinfo.Alter(infos, hints, version)
	for _, info := range infos {
		if hints == nil || hints.Domain == nil || hints.Domain.ControlProgress == fi.PROGRESS_UNSPEC {
			info.Domain.ControlProgress = fi.PROGRESS_MANUAL
		}
		if hints == nil || hints.Domain == nil || hints.Domain.DataProgress == fi.PROGRESS_UNSPEC {
			info.Domain.DataProgress = fi.PROGRESS_MANUAL
		}
		if info.Domain.MRMode == fi.MR_BASIC|fi.MR_SCALABLE {
			info.Domain.MRMode = fi.MR_SCALABLE
		}
		// Triggered operations cost on every completion: only grant them
		// when asked for.
		if hints != nil && hints.Caps != 0 && hints.Caps&fi.TRIGGER == 0 {
			info.Caps &^= fi.TRIGGER
		}
		info.Nic = getinfo.Nic()
	}
}

// parseHostUnitPort reads "host:unit:port" as the FI_SOURCE node: a
// non-empty host, then a C integer unit (decimal, 0x hex or 0 octal, kept to
// its low 8 bits) and a decimal port. Fields that are missing or do not
// parse leave the defaults, and parsing stops at the first bad field.
func parseHostUnitPort(node string, unit int, port uint8) (int, uint8) {
	host, rest, ok := strings.Cut(node, ":")
	if !ok || host == "" {
		return unit, port
	}
	u, rest, ok := strings.Cut(rest, ":")
	v, err := strconv.ParseInt(leadingInt(u, true), 0, 64)
	if err != nil {
		return unit, port
	}
	unit = int(int8(v))
	if !ok {
		return unit, port
	}
	w, err := strconv.ParseUint(leadingInt(rest, false), 10, 64)
	if err != nil {
		return unit, port
	}
	return unit, uint8(w)
}

// parseService reads a decimal u32 service number.
func parseService(s string, def uint32) uint32 {
	v, err := strconv.ParseUint(leadingInt(s, false), 10, 64)
	if err != nil {
		return def
	}
	return uint32(v)
}

// leadingInt returns the prefix of s that scanf would read as an integer.
func leadingInt(s string, anyBase bool) string {
	s = strings.TrimLeft(s, " \t\n")
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	digits := "0123456789"
	if anyBase && i+1 < len(s) && s[i] == '0' && (s[i+1] == 'x' || s[i+1] == 'X') {
		i += 2
		digits = "0123456789abcdefABCDEF"
	}
	for i < len(s) && strings.IndexByte(digits, s[i]) >= 0 {
		i++
	}
	return s[:i]
}
