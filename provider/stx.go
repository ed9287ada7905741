package provider

import "github.com/gopsm2/libfabric-psm2/internal/fi"

// STX is a shared transmit context (fi_stx_context). fi_psm2(7) offers
// them to save PSM2 hardware contexts: transmit-only endpoints opened
// with ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT bind one and send through
// it. There are no hardware contexts here: every endpoint has its own
// wires, which cost no scarce resource, so an endpoint bound to an STX
// sends on its own wires as any endpoint does, and its completions go to
// its own CQ and counters as fi_endpoint(3) says. The STX holds the
// binding rules: such an endpoint must be bound to one before fi_enable,
// and an STX closes only once no open endpoint is bound to it.
type STX struct {
	dom    *Domain
	eps    int // open endpoints bound to it
	closed bool
}

// OpenSTX is fi_stx_context. attr (struct fi_tx_attr) may be nil; its
// values are the domain's.
func (d *Domain) OpenSTX() (*STX, error) {
	d.lock()
	defer d.unlock()
	d.refs.Add(1)
	return &STX{dom: d}, nil
}

// Close closes the STX: EBUSY while an open endpoint is bound to it.
func (s *STX) Close() error {
	d := s.dom
	d.lock()
	defer d.unlock()
	if s.closed {
		return fi.EINVAL
	}
	if s.eps > 0 {
		return fi.EBUSY
	}
	s.closed = true
	d.refs.Add(-1)
	return nil
}
