package provider

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
)

// Fabric is an open psm2 fabric: the root that domains are opened from.
type Fabric struct {
	prov    *Provider
	domains atomic.Int64 // domains open on this fabric
	closed  atomic.Bool
}

// OpenFabric opens the fabric named by attr, which must be psm2.
func (p *Provider) OpenFabric(attr *fi.FabricAttr) (*Fabric, error) {
	if attr == nil {
		return nil, fi.EINVAL
	}
	if attr.Name != "" && !strings.EqualFold(attr.Name, getinfo.FabricName) {
		return nil, fmt.Errorf("fabric %q: %w", attr.Name, fi.ENODATA)
	}
	p.fabrics.Add(1)
	p.log.Infof(fi.LOG_FABRIC, "fabric opened")
	return &Fabric{prov: p}, nil
}

// Close releases the fabric. It fails with EBUSY while domains are open.
func (f *Fabric) Close() error {
	if f.domains.Load() > 0 {
		return fi.EBUSY
	}
	if !f.closed.CompareAndSwap(false, true) {
		return fi.EINVAL
	}
	f.prov.fabrics.Add(-1)
	return nil
}
