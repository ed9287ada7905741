package core

import (
	"strings"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// Provider is what the core needs of a provider to answer fi_getinfo.
type Provider interface {
	Name() string
	Version() uint32
	// APIVersion is the newest API version the provider implements.
	APIVersion() uint32
	GetInfo(version uint32, node, service string, flags uint64, hints *fi.Info) ([]*fi.Info, error)
}

// GetInfo is fi_getinfo over the given providers: it applies the version
// check, FI_PROV_ATTR_ONLY, FI_PROVIDER and the prov_name hint, then asks
// each remaining provider and stamps its name and versions on the answers.
// It returns fi.ENOSYS for a version newer than the library and
// fi.ENODATA when nothing matches.
func (c *Core) GetInfo(provs []Provider, version uint32, node, service string, flags uint64, hints *fi.Info) ([]*fi.Info, error) {
	if !fi.VersionGE(fi.APIVersion, version) {
		c.logf(fi.LOG_WARN, "fi_getinfo", "Requested version is newer than library\n")
		return nil, fi.ENOSYS
	}
	var active []Provider
	for _, p := range provs {
		if c.provFilter.excludesProvider(p.Name()) {
			c.logf(fi.LOG_INFO, "fi_getinfo", "provider %s excluded by FI_PROVIDER\n", p.Name())
			continue
		}
		active = append(active, p)
	}
	if flags == fi.PROV_ATTR_ONLY {
		// Like libfabric, list every provider, FI_PROVIDER or not: the
		// filter only hides providers from queries.
		var out []*fi.Info
		for _, p := range provs {
			out = append(out, &fi.Info{
				Tx: &fi.TxAttr{}, Rx: &fi.RxAttr{}, EP: &fi.EPAttr{}, Domain: &fi.DomainAttr{},
				Fabric: &fi.FabricAttr{ProvName: p.Name(), ProvVersion: p.Version()},
			})
		}
		if out == nil {
			return nil, fi.ENODATA
		}
		return out, nil
	}

	var wanted []string
	if hints != nil && hints.Fabric != nil && hints.Fabric.ProvName != "" {
		wanted = strings.Split(hints.Fabric.ProvName, ";")
	}
	var out []*fi.Info
	for _, p := range active {
		if !layeringOK(p.Name(), wanted) {
			continue
		}
		if !fi.VersionGE(p.APIVersion(), version) {
			continue
		}
		infos, err := p.GetInfo(version, node, service, flags, hints)
		if err != nil {
			level := fi.LOG_INFO
			if wanted != nil {
				level = fi.LOG_WARN
			}
			e := fi.ToErrno(err)
			c.logf(level, "fi_getinfo", "fi_getinfo: provider %s returned -%d (%s)\n", p.Name(), int(e), e.Error())
			continue
		}
		for _, info := range infos {
			if info.Fabric == nil {
				info.Fabric = &fi.FabricAttr{}
			}
			info.Fabric.ProvName = p.Name()
			info.Fabric.ProvVersion = p.Version()
			info.Fabric.APIVersion = version
			// FI_PROVIDER applies once more to the answers: a positive
			// list naming only "psm2;ofi_rxd" keeps no plain psm2 entry.
			if c.provFilter.excludesEntry(info.Fabric.ProvName) {
				continue
			}
			out = append(out, info)
		}
	}
	if out == nil {
		return nil, fi.ENODATA
	}
	return out, nil
}

// layeringOK applies a prov_name hint ("a", "a;b", "^x" exclusions at the
// end) to a core provider named name.
func layeringOK(name string, wanted []string) bool {
	n := len(wanted)
	for n > 0 && strings.HasPrefix(wanted[n-1], "^") {
		if strings.EqualFold(wanted[n-1][1:], name) {
			return false
		}
		n--
	}
	if n == 0 {
		return true
	}
	pick := wanted[n-1]
	if n == 2 && isUtil(wanted[0]) && !isUtil(wanted[1]) {
		pick = wanted[0]
	}
	return strings.EqualFold(pick, name)
}

func isUtil(name string) bool { return strings.HasPrefix(strings.ToLower(name), "ofi_") }
