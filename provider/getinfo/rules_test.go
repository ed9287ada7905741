package getinfo

import (
	"errors"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// v117 is libfabric API 1.17.
var v117 = fi.Version(1, 17)

// fiInfoHints are the hints the fi_info utility passes: fi_allocinfo with
// mode, domain mode and mr_mode set, everything else zero.
func fiInfoHints() *fi.Info {
	return &fi.Info{
		Mode:   ^uint64(0),
		Tx:     &fi.TxAttr{},
		Rx:     &fi.RxAttr{},
		EP:     &fi.EPAttr{},
		Domain: &fi.DomainAttr{Mode: ^uint64(0), MRMode: ^(fi.MR_BASIC | fi.MR_SCALABLE)},
		Fabric: &fi.FabricAttr{},
	}
}

// TestCheckInfoDirect drives Check with provider entries GetInfo never
// builds, to reach the generic ofi_check_info rules the psm2 templates
// cannot trigger. Every rejection must be an fi.ENODATA error.
func TestCheckInfoDirect(t *testing.T) {
	tests := []struct {
		name    string
		version uint32
		prov    func(p *fi.Info)
		hints   func(h *fi.Info)
		ok      bool
	}{
		{name: "nil hints", ok: true, hints: nil},
		{name: "ep type", hints: func(h *fi.Info) { h.EP.Type = fi.EP_DGRAM }},
		{name: "ep type unspec in the provider", prov: func(p *fi.Info) { p.EP.Type = fi.EP_UNSPEC },
			hints: func(h *fi.Info) { h.EP.Type = fi.EP_MSG }, ok: true},
		{name: "caps", prov: func(p *fi.Info) { p.Caps = rmaCaps }, hints: func(h *fi.Info) { h.Caps = fi.TAGGED }},
		{name: "address format", hints: func(h *fi.Info) { h.AddrFormat = fi.ADDR_STR }},
		{name: "address format unspec in the provider", prov: func(p *fi.Info) { p.AddrFormat = fi.FORMAT_UNSPEC },
			hints: func(h *fi.Info) { h.AddrFormat = fi.SOCKADDR_IN }, ok: true},
		{name: "sockaddr provider takes IN6", prov: func(p *fi.Info) { p.AddrFormat = fi.SOCKADDR },
			hints: func(h *fi.Info) { h.AddrFormat = fi.SOCKADDR_IN6 }, ok: true},
		{name: "sockaddr_in provider refuses IN6", prov: func(p *fi.Info) { p.AddrFormat = fi.SOCKADDR_IN },
			hints: func(h *fi.Info) { h.AddrFormat = fi.SOCKADDR_IN6 }},
		{name: "api version older than the provider's", prov: func(p *fi.Info) { p.Fabric.APIVersion = fi.Version(1, 17) },
			hints: func(h *fi.Info) { h.Fabric.APIVersion = fi.Version(1, 5) }},
		{name: "api version equal", prov: func(p *fi.Info) { p.Fabric.APIVersion = fi.Version(1, 17) },
			hints: func(h *fi.Info) { h.Fabric.APIVersion = fi.Version(1, 17) }, ok: true},
		{name: "provider version equal", hints: func(h *fi.Info) { h.Fabric.ProvVersion = fi.Version(117, 0) }, ok: true},
		{name: "provider version newer", hints: func(h *fi.Info) { h.Fabric.ProvVersion = fi.Version(117, 1) }},
		{name: "threading more parallel than the provider", prov: func(p *fi.Info) { p.Domain.Threading = fi.THREAD_DOMAIN },
			hints: func(h *fi.Info) { h.Domain.Threading = fi.THREAD_ENDPOINT }},
		{name: "threading less parallel than the provider", prov: func(p *fi.Info) { p.Domain.Threading = fi.THREAD_ENDPOINT },
			hints: func(h *fi.Info) { h.Domain.Threading = fi.THREAD_DOMAIN }, ok: true},
		{name: "progress AUTO from a MANUAL provider", prov: func(p *fi.Info) { p.Domain.DataProgress = fi.PROGRESS_MANUAL },
			hints: func(h *fi.Info) { h.Domain.DataProgress = fi.PROGRESS_AUTO }},
		{name: "control progress AUTO from a MANUAL provider", prov: func(p *fi.Info) { p.Domain.ControlProgress = fi.PROGRESS_MANUAL },
			hints: func(h *fi.Info) { h.Domain.ControlProgress = fi.PROGRESS_AUTO }},
		{name: "resource mgmt ENABLED from a DISABLED provider", prov: func(p *fi.Info) { p.Domain.ResourceMgmt = fi.RM_DISABLED },
			hints: func(h *fi.Info) { h.Domain.ResourceMgmt = fi.RM_ENABLED }},
		{name: "av type mismatch", prov: func(p *fi.Info) { p.Domain.AVType = fi.AV_MAP },
			hints: func(h *fi.Info) { h.Domain.AVType = fi.AV_TABLE }},
		{name: "av type match", prov: func(p *fi.Info) { p.Domain.AVType = fi.AV_MAP },
			hints: func(h *fi.Info) { h.Domain.AVType = fi.AV_MAP }, ok: true},
		{name: "domain mode required", prov: func(p *fi.Info) { p.Domain.Mode = fi.RESTRICTED_COMP },
			hints: func(h *fi.Info) { h.Domain.Mode = 0 }},
		{name: "domain mode given", prov: func(p *fi.Info) { p.Domain.Mode = fi.RESTRICTED_COMP },
			hints: func(h *fi.Info) { h.Domain.Mode = fi.RESTRICTED_COMP }, ok: true},
		{name: "MR_LOCAL provider, user without LOCAL", prov: func(p *fi.Info) { p.Domain.MRMode = fi.MR_LOCAL },
			hints: func(h *fi.Info) { h.Domain.MRMode = fi.MR_VIRT_ADDR }},
		{name: "MR_LOCAL provider, user with MR_LOCAL", prov: func(p *fi.Info) { p.Domain.MRMode = fi.MR_LOCAL },
			hints: func(h *fi.Info) { h.Domain.MRMode = fi.MR_LOCAL }, ok: true},
		{name: "MR_LOCAL provider, old API needs FI_LOCAL_MR mode", version: fi.Version(1, 4),
			prov:  func(p *fi.Info) { p.Domain.MRMode = fi.MR_LOCAL | fi.MR_BASIC },
			hints: func(h *fi.Info) { h.Mode = fi.CONTEXT; h.Domain.MRMode = 0 }},
		{name: "MR_LOCAL provider, old API with FI_LOCAL_MR mode", version: fi.Version(1, 4),
			prov:  func(p *fi.Info) { p.Domain.MRMode = fi.MR_LOCAL | fi.MR_BASIC },
			hints: func(h *fi.Info) { h.Mode = fi.CONTEXT | fi.LOCAL_MR; h.Domain.MRMode = 0 }, ok: true},
		{name: "RMA target needs the provider's mr_mode", prov: func(p *fi.Info) { p.Domain.MRMode = fi.MR_PROV_KEY | fi.MR_VIRT_ADDR },
			hints: func(h *fi.Info) { h.Caps = fi.RMA; h.Domain.MRMode = fi.MR_PROV_KEY }},
		{name: "RMA initiator only does not", prov: func(p *fi.Info) { p.Domain.MRMode = fi.MR_PROV_KEY | fi.MR_VIRT_ADDR },
			hints: func(h *fi.Info) { h.Caps = fi.RMA | fi.WRITE; h.Domain.MRMode = fi.MR_ALLOCATED }, ok: true},
		{name: "shared tx context required", prov: func(p *fi.Info) { p.EP.TxCtxCnt = sharedContext },
			hints: func(h *fi.Info) { h.EP.TxCtxCnt = 0 }},
		{name: "shared rx context required", prov: func(p *fi.Info) { p.EP.RxCtxCnt = sharedContext },
			hints: func(h *fi.Info) { h.EP.RxCtxCnt = 0 }},
		{name: "shared tx context offered", prov: func(p *fi.Info) { p.Domain.MaxEPStxCtx = 4 },
			hints: func(h *fi.Info) { h.EP.TxCtxCnt = fi.SHARED_CONTEXT }, ok: true},
		{name: "total_buffered_recv", prov: func(p *fi.Info) { p.Rx.TotalBufferedRecv = 100 },
			hints: func(h *fi.Info) { h.Rx.TotalBufferedRecv = 101 }},
		{name: "rx size", prov: func(p *fi.Info) { p.Rx.Size = 100 }, hints: func(h *fi.Info) { h.Rx.Size = 101 }},
		{name: "tx size", prov: func(p *fi.Info) { p.Tx.Size = 100 }, hints: func(h *fi.Info) { h.Tx.Size = 101 }},
		{name: "protocol version 0 is any", hints: func(h *fi.Info) { h.EP.ProtocolVersion = 0 }, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			version := tt.version
			if version == 0 {
				version = v117
			}
			prov := Entry(Tag64, fi.EP_RDM, fi.ADDR_PSMX2)
			if tt.prov != nil {
				tt.prov(prov)
			}
			var hints *fi.Info
			if tt.name != "nil hints" {
				hints = fiInfoHints()
				hints.Domain.MRMode = 0
				if tt.hints != nil {
					tt.hints(hints)
				}
			}
			err := Check(prov, hints, version)
			if tt.ok {
				if err != nil {
					t.Errorf("Check = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, fi.ENODATA) {
				t.Errorf("Check = %v, want an fi.ENODATA error", err)
			}
			var m *mismatch
			if !errors.As(err, &m) || m.reason == "" {
				t.Errorf("Check = %v, want a *mismatch with a reason", err)
			}
		})
	}
}

func TestAlterInfoGeneric(t *testing.T) {
	t.Run("remote access trimmed when mr_mode cannot describe a target", func(t *testing.T) {
		for _, tt := range []struct {
			hintMode int32
			version  uint32
			trimmed  bool
		}{
			{fi.MR_UNSPEC, v117, true},
			{fi.MR_PROV_KEY, v117, true},
			{fi.MR_PROV_KEY | fi.MR_VIRT_ADDR, v117, false},
			{fi.MR_BASIC, v117, false},
			{fi.MR_UNSPEC, fi.Version(1, 4), false},
		} {
			prov := Entry(RMAOnly, fi.EP_RDM, fi.ADDR_PSMX2)
			prov.Domain.MRMode = fi.MR_PROV_KEY | fi.MR_VIRT_ADDR
			hints := &fi.Info{Caps: fi.RMA | fi.REMOTE_WRITE | fi.REMOTE_READ, Domain: &fi.DomainAttr{MRMode: tt.hintMode}}
			Alter([]*fi.Info{prov}, hints, tt.version)
			if got := prov.Caps&(fi.REMOTE_READ|fi.REMOTE_WRITE) == 0; got != tt.trimmed {
				t.Errorf("mr_mode %#x version %#x: remote caps trimmed = %v, want %v", tt.hintMode, tt.version, got, tt.trimmed)
			}
		}
		// No domain hints at all trims too.
		prov := Entry(RMAOnly, fi.EP_RDM, fi.ADDR_PSMX2)
		prov.Domain.MRMode = fi.MR_PROV_KEY
		Alter([]*fi.Info{prov}, &fi.Info{Caps: fi.RMA | fi.REMOTE_WRITE}, v117)
		if prov.Caps&fi.REMOTE_WRITE != 0 {
			t.Errorf("no domain hints: REMOTE_WRITE kept")
		}
	})
	t.Run("FI_LOCAL_MR mode added for MR_LOCAL providers", func(t *testing.T) {
		for _, tt := range []struct {
			version uint32
			hints   *fi.Info
			want    bool
		}{
			{fi.Version(1, 4), nil, true},
			{v117, nil, false},
			{v117, &fi.Info{Domain: &fi.DomainAttr{MRMode: fi.MR_BASIC}}, true},
			{v117, &fi.Info{Domain: &fi.DomainAttr{MRMode: fi.MR_LOCAL}}, false},
		} {
			prov := Entry(Tag64, fi.EP_RDM, fi.ADDR_PSMX2)
			prov.Domain.MRMode = fi.MR_LOCAL | fi.MR_BASIC
			Alter([]*fi.Info{prov}, tt.hints, tt.version)
			if got := prov.Mode&fi.LOCAL_MR != 0; got != tt.want {
				t.Errorf("version %#x hints %+v: LOCAL_MR = %v, want %v", tt.version, tt.hints, got, tt.want)
			}
		}
	})
	t.Run("mr_mode narrowed to the hints", func(t *testing.T) {
		prov := Entry(RMAOnly, fi.EP_RDM, fi.ADDR_PSMX2)
		prov.Domain.MRMode = fi.MR_BASIC | fi.MR_SCALABLE | fi.MR_LOCAL | fi.MR_PROV_KEY | fi.MR_HMEM
		Alter([]*fi.Info{prov}, &fi.Info{Caps: fi.RMA, Domain: &fi.DomainAttr{MRMode: fi.MR_LOCAL | fi.MR_PROV_KEY}}, v117)
		if got, want := prov.Domain.MRMode, fi.MR_LOCAL|fi.MR_PROV_KEY; got != want {
			t.Errorf("mr_mode = %#x, want %#x", got, want)
		}
	})
}

func TestGrantCaps(t *testing.T) {
	tests := []struct {
		name                   string
		info, hint, attr, want uint64
	}{
		{"no hint: primary of info and attr, all secondary", fi.TAGGED | fi.SEND | fi.RECV | fi.MULTI_RECV,
			0, fi.TAGGED | fi.SEND | fi.TRIGGER | fi.RMA, fi.TAGGED | fi.SEND | fi.TRIGGER},
		{"hint: primary asked plus secondary", 0, fi.MSG | fi.FENCE, fi.MSG | fi.SEND | fi.RECV | fi.SOURCE,
			fi.MSG | fi.SEND | fi.RECV | fi.SOURCE},
		{"msg direction completed", 0, fi.TAGGED, fi.SEND | fi.RECV, fi.TAGGED | fi.SEND | fi.RECV},
		{"msg direction given", 0, fi.TAGGED | fi.SEND, fi.SEND | fi.RECV, fi.TAGGED | fi.SEND},
		{"rma direction completed", 0, fi.ATOMIC, fi.READ | fi.WRITE | fi.REMOTE_READ, fi.ATOMIC | fi.READ | fi.WRITE | fi.REMOTE_READ},
		{"rma direction given", 0, fi.RMA | fi.REMOTE_READ, fi.READ | fi.WRITE, fi.RMA | fi.REMOTE_READ},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := grantCaps(tt.info, tt.hint, tt.attr); got != tt.want {
				t.Errorf("grantCaps(%#x, %#x, %#x) = %#x, want %#x", tt.info, tt.hint, tt.attr, got, tt.want)
			}
		})
	}
}

func TestMaxTag(t *testing.T) {
	for _, tt := range []struct{ format, want uint64 }{
		{0, 0},
		{1, 1},
		{0xaaaaaaaaaaaaaaaa, ^uint64(0)},
		{0x0aaaaaaaaaaaaaaa, 1<<60 - 1},
		{0x007000007FFFFFFF, 1<<55 - 1},
	} {
		if got := maxTag(tt.format); got != tt.want {
			t.Errorf("maxTag(%#x) = %#x, want %#x", tt.format, got, tt.want)
		}
	}
}

func TestCheckInfoRanksAndFormats(t *testing.T) {
	tests := []struct {
		name    string
		version uint32
		prov    func(p *fi.Info)
		hints   func(h *fi.Info)
		ok      bool
	}{
		{name: "THREAD_FID", hints: func(h *fi.Info) { h.Domain.Threading = fi.THREAD_FID }, ok: true},
		{name: "THREAD_COMPLETION", hints: func(h *fi.Info) { h.Domain.Threading = fi.THREAD_COMPLETION }, ok: true},
		{name: "THREAD_ENDPOINT", hints: func(h *fi.Info) { h.Domain.Threading = fi.THREAD_ENDPOINT }, ok: true},
		{name: "THREAD_SAFE", hints: func(h *fi.Info) { h.Domain.Threading = fi.THREAD_SAFE }, ok: true},
		{name: "RM_DISABLED", hints: func(h *fi.Info) { h.Domain.ResourceMgmt = fi.RM_DISABLED }, ok: true},
		{name: "PROGRESS_MANUAL", hints: func(h *fi.Info) { h.Domain.DataProgress = fi.PROGRESS_MANUAL }, ok: true},
		{name: "IB provider takes IN", prov: func(p *fi.Info) { p.AddrFormat = fi.SOCKADDR_IB },
			hints: func(h *fi.Info) { h.AddrFormat = fi.SOCKADDR_IN }, ok: true},
		{name: "IN6 provider takes IN", prov: func(p *fi.Info) { p.AddrFormat = fi.SOCKADDR_IN6 },
			hints: func(h *fi.Info) { h.AddrFormat = fi.SOCKADDR_IN }, ok: true},
		{name: "IN6 provider refuses IB", prov: func(p *fi.Info) { p.AddrFormat = fi.SOCKADDR_IN6 },
			hints: func(h *fi.Info) { h.AddrFormat = fi.SOCKADDR_IB }},
		{name: "api 1.4 BASIC from a SCALABLE-only provider", version: fi.Version(1, 4),
			prov: func(p *fi.Info) { p.Domain.MRMode = fi.MR_SCALABLE }, hints: func(h *fi.Info) { h.Domain.MRMode = fi.MR_BASIC }},
		{name: "api 1.4 unspec from a provider without BASIC/SCALABLE", version: fi.Version(1, 4),
			prov: func(p *fi.Info) { p.Domain.MRMode = fi.MR_LOCAL }, hints: func(h *fi.Info) { h.Mode |= fi.LOCAL_MR }},
		{name: "api 1.4 BASIC", version: fi.Version(1, 4), hints: func(h *fi.Info) { h.Domain.MRMode = fi.MR_BASIC }, ok: true},
		{name: "SCALABLE from a BASIC-only provider", prov: func(p *fi.Info) { p.Domain.MRMode = fi.MR_BASIC },
			hints: func(h *fi.Info) { h.Domain.MRMode = fi.MR_SCALABLE }},
		{name: "BASIC from a SCALABLE-only provider", prov: func(p *fi.Info) { p.Domain.MRMode = fi.MR_SCALABLE },
			hints: func(h *fi.Info) { h.Domain.MRMode = fi.MR_BASIC }},
		{name: "HMEM mr_mode needs HMEM caps", prov: func(p *fi.Info) { p.Domain.MRMode = fi.MR_HMEM | fi.MR_LOCAL },
			hints: func(h *fi.Info) { h.Caps = fi.TAGGED; h.Domain.MRMode = fi.MR_LOCAL }, ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			version := tt.version
			if version == 0 {
				version = v117
			}
			prov := Entry(Tag64, fi.EP_RDM, fi.ADDR_PSMX2)
			if tt.prov != nil {
				tt.prov(prov)
			}
			hints := fiInfoHints()
			hints.Domain.MRMode = 0
			tt.hints(hints)
			err := Check(prov, hints, version)
			if tt.ok && err != nil {
				t.Errorf("Check = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, fi.ENODATA) {
				t.Errorf("Check = %v, want an fi.ENODATA error", err)
			}
		})
	}
}
