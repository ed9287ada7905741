package provider

import (
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
	"github.com/gopsm2/libfabric-psm2/provider/names"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// A SEP is a scalable endpoint (fi_scalable_ep): N contexts, each a full
// Endpoint with its own wires, matching engine, bindings and C fast path,
// all opened up front as fi_psm2(7) describes (the same context serves
// fi_tx_context(i) and fi_rx_context(i)). N is the greater of the
// info's tx_ctx_cnt and rx_ctx_cnt.
//
// The contexts are opened so that their ids follow from context 0's
// (transport.ContextEPID: consecutive context numbers and UDP ports). The
// SEP's name is context 0's id with type EPNameScalable and the count in
// SepID, so a peer that inserts it reaches context i at fi_rx_addr(addr,
// i, rx_ctx_bits) with no query; a plain fi_addr reaches context 0.
//
// Context i's endpoint is enabled when every role opened on it (transmit,
// receive) was enabled, or when the SEP is: an application binds each
// role's CQ after opening both and enables them one by one.
//
// Its fields are guarded by the domain lock.
type SEP struct {
	dom     *Domain
	ctxs    []*Endpoint
	opened  []uint8 // per context: the roles (RoleTx, RoleRx) opened on it
	enabled []uint8 // and those enabled
	av      *AV
	closed  bool
	service uint32
	addrFmt uint32
}

// Context roles: the transmit and the receive side of a context.
const (
	RoleTx uint8 = 1 << iota
	RoleRx
)

// sepOpenTries bounds how often OpenSEP starts again when a context's
// port is taken by another socket.
const sepOpenTries = 16

// MaxSEPContexts is how many contexts a scalable endpoint may have here
// (the domain's max_ep_tx_ctx and max_ep_rx_ctx), or 1 with
// PSM2_MULTI_EP=0, as in psm2, where scalable endpoints need multi-EP.
func (p *Provider) maxSEPContexts() uint64 {
	if !p.params.MultiEP {
		return 1
	}
	return min(p.freeContexts(), getinfo.MaxSEPContexts)
}

// OpenSEP opens a scalable endpoint for info.
func (d *Domain) OpenSEP(info *fi.Info) (*SEP, error) {
	if err := checkEPInfo(info); err != nil {
		return nil, err
	}
	n := uint64(1)
	if info.EP != nil {
		if info.EP.TxCtxCnt == fi.SHARED_CONTEXT || info.EP.RxCtxCnt == fi.SHARED_CONTEXT {
			return nil, fi.EINVAL
		}
		n = max(n, info.EP.TxCtxCnt, info.EP.RxCtxCnt)
	}
	if n > getinfo.MaxSEPContexts || !d.prov.params.MultiEP && n > 1 {
		return nil, fi.EINVAL
	}
	var ctxs []*Endpoint
	var err error
	for try := 0; try < sepOpenTries; try++ {
		ctxs, err = d.openContexts(info, int(n))
		if err != fi.EADDRINUSE {
			break
		}
	}
	if err != nil {
		if err == fi.EADDRINUSE {
			d.log.Warnf(fi.LOG_EP_CTRL, "scalable endpoint: no run of %d free UDP ports in %d tries", n, sepOpenTries)
		}
		return nil, err
	}
	s := &SEP{dom: d, ctxs: ctxs, opened: make([]uint8, n), enabled: make([]uint8, n), addrFmt: info.AddrFormat}
	for i, ep := range ctxs {
		ep.sep, ep.sepIdx = s, i
	}
	s.service = serviceOf(info, uint32(pid()&0x7FFF)<<16+uint32(ctxs[0].ctxNum))
	if d.prov.names() != nil {
		d.prov.register(s.service, s.name(), names.OpAdd)
	}
	return s, nil
}

// openContexts opens n endpoints whose ids follow from the first's; it
// fails with EADDRINUSE when a port the ids need is taken (the caller
// tries again: context 0 then gets another port).
func (d *Domain) openContexts(info *fi.Info, n int) ([]*Endpoint, error) {
	first, err := d.prov.allocContexts(n)
	if err != nil {
		return nil, err
	}
	ctxs := make([]*Endpoint, 0, n)
	fail := func(err error) ([]*Endpoint, error) {
		for _, ep := range ctxs {
			ep.Close() // frees its context number
		}
		for i := len(ctxs); i < n; i++ {
			d.prov.freeContext(first + i)
		}
		return nil, err
	}
	for i := 0; i < n; i++ {
		var port uint16
		var want uint64
		if i > 0 {
			var ok bool
			if want, ok = transport.ContextEPID(ctxs[0].epid, i); !ok {
				return fail(fi.EADDRINUSE)
			}
			port = transport.EPIDPort(want)
		}
		// Context 0 moves the host's port cursor past the ports the
		// others take next.
		ep, err := d.openEndpoint(info, first+i, port, n)
		if err != nil {
			return fail(err) // EADDRINUSE (the port or the id taken meanwhile): the caller tries again
		}
		ctxs = append(ctxs, ep)
		if i > 0 && ep.epid != want {
			return fail(fi.EADDRINUSE)
		}
	}
	return ctxs, nil
}

// name is the SEP's name: context 0's id, the scalable type and the count.
func (s *SEP) name() EPName {
	return EPName{EPID: s.ctxs[0].epid, Type: EPNameScalable, SepID: uint8(len(s.ctxs))}
}

// Len is the number of contexts.
func (s *SEP) Len() int { return len(s.ctxs) }

// Context returns context i for role (RoleTx: fi_tx_context, RoleRx:
// fi_rx_context) and records that the role was opened.
func (s *SEP) Context(i int, role uint8) (*Endpoint, error) {
	d := s.dom
	d.lock()
	defer d.unlock()
	if s.closed || i < 0 || i >= len(s.ctxs) || (role != RoleTx && role != RoleRx) {
		return nil, fi.EINVAL
	}
	s.opened[i] |= role
	return s.ctxs[i], nil
}

// ReleaseContext is the close of the last fid open on context ep: its
// roles are closed, and what was bound to it is let go (resetLocked).
func (ep *Endpoint) ReleaseContext() error {
	s := ep.sep
	if s == nil {
		return fi.EINVAL
	}
	d := s.dom
	d.lock()
	defer d.unlock()
	s.opened[ep.sepIdx], s.enabled[ep.sepIdx] = 0, 0
	ep.resetLocked()
	return nil
}

// EnableRole is fi_enable on context ep's role: the endpoint is enabled
// once every role opened on it is.
func (ep *Endpoint) EnableRole(role uint8) error {
	s := ep.sep
	if s == nil {
		return ep.Enable()
	}
	d := s.dom
	d.lock()
	defer d.unlock()
	if s.closed || ep.closed {
		return fi.EINVAL
	}
	if ep.av == nil {
		return fi.ENOAV
	}
	s.enabled[ep.sepIdx] |= role
	if s.enabled[ep.sepIdx]&s.opened[ep.sepIdx] != s.opened[ep.sepIdx] {
		return nil
	}
	return ep.enableLocked()
}

// Bind is fi_scalable_ep_bind: an AV (every context uses it) or an EQ.
func (s *SEP) Bind(obj any, flags uint64) error {
	switch o := obj.(type) {
	case *AV, *EQ:
		for _, ep := range s.ctxs {
			if err := ep.Bind(o, flags); err != nil {
				return err
			}
		}
		if av, ok := o.(*AV); ok {
			s.dom.lock()
			s.av = av
			s.dom.unlock()
		}
		return nil
	}
	return fi.EINVAL
}

// Enable is fi_enable on the SEP: every context with a role opened is
// enabled, whatever its roles' own fi_enable calls did.
func (s *SEP) Enable() error {
	d := s.dom
	d.lock()
	defer d.unlock()
	if s.closed {
		return fi.EINVAL
	}
	if s.av == nil {
		return fi.ENOAV
	}
	for i, ep := range s.ctxs {
		if s.opened[i] == 0 {
			continue
		}
		if err := ep.enableLocked(); err != nil {
			return err
		}
	}
	return nil
}

// Name is fi_getname on the SEP (Endpoint.Name's rules).
func (s *SEP) Name(buf []byte) (int, error) { return nameInto(s.name(), s.addrFmt, buf) }

// Close closes every context; the caller made sure no fi_tx_context or
// fi_rx_context fid is still open.
func (s *SEP) Close() error {
	d := s.dom
	d.lock()
	if s.closed {
		d.unlock()
		return fi.EINVAL
	}
	s.closed = true
	d.unlock()
	if d.prov.names() != nil {
		d.prov.register(s.service, s.name(), names.OpDel)
	}
	var first error
	for _, ep := range s.ctxs {
		if err := ep.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Contexts returns the contexts (for the C side, which makes a C endpoint
// of each).
func (s *SEP) Contexts() []*Endpoint { return s.ctxs }
