package provider

import (
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
	"github.com/gopsm2/libfabric-psm2/provider/names"
)

// names returns the provider's name server (package names), started on
// first use; nil when FI_PSM2_NAME_SERVER is off.
func (p *Provider) names() *names.Server {
	if !p.params.NameServer {
		return nil
	}
	p.nsOnce.Do(func() {
		job := p.params.UUID
		ns := names.New(job, job.NameServerPort(), p.params.Iface, p.log)
		ns.IsOpen = func(raw [names.NameLen]byte) bool {
			n, err := UnmarshalEPName(raw[:])
			return err == nil && p.wireOpen(job, n.EPID)
		}
		if !ns.TryServe() {
			go ns.KeepRegistered()
		}
		p.ns = ns
	})
	return p.ns
}

// register publishes or withdraws (names.OpAdd, names.OpDel) an
// endpoint's service with the node's name server.
func (p *Provider) register(service uint32, n EPName, op byte) {
	var raw [names.NameLen]byte
	n.put(raw[:])
	p.names().Register(service, raw, op)
}

// resolveNode turns fi_getinfo's node and service into a destination
// through the name server.
func (p *Provider) resolveNode(node, service string) (*EPName, error) {
	ns := p.names()
	if ns == nil {
		return nil, getinfo.NoMatch("cannot resolve %q: the name server is off (FI_PSM2_NAME_SERVER)", node)
	}
	svc := parseService(service, AnyService)
	raw, err := ns.Resolve(node, svc)
	if err != nil {
		return nil, getinfo.NoMatch("cannot resolve %q service %d: %v", node, svc, err)
	}
	n, err := UnmarshalEPName(raw[:])
	if err != nil {
		return nil, getinfo.NoMatch("cannot resolve %q service %d: %v", node, svc, err)
	}
	p.log.Infof(fi.LOG_CORE, "name server: %q service %d is %v", node, svc, n)
	return &n, nil
}
