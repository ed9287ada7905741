package getinfo

import (
	"fmt"
	"math/bits"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// This file holds libfabric's generic hint semantics: which provider
// entries a set of hints accepts (Check) and how an accepted entry is
// narrowed to the hints (Alter). They follow the rules every libfabric
// provider built on the util layer applies, in the same order, so that the
// answers and the reasons match.

// Capability groups the generic rules work with.
const (
	primaryTxCaps = fi.MSG | fi.RMA | fi.TAGGED | fi.ATOMIC | fi.MULTICAST |
		fi.READ | fi.WRITE | fi.SEND | fi.COLLECTIVE | fi.NAMED_RX_CTX | fi.HMEM
	secondaryTxCaps = fi.TRIGGER | fi.FENCE | fi.RMA_PMEM
	primaryRxCaps   = fi.MSG | fi.RMA | fi.TAGGED | fi.ATOMIC | fi.REMOTE_READ |
		fi.REMOTE_WRITE | fi.RECV | fi.DIRECTED_RECV | fi.VARIABLE_MSG |
		fi.COLLECTIVE | fi.HMEM
	secondaryRxCaps = fi.MULTI_RECV | fi.TRIGGER | fi.RMA_PMEM | fi.SOURCE |
		fi.RMA_EVENT | fi.SOURCE_ERR

	primaryCaps   = primaryTxCaps | primaryRxCaps | fi.REMOTE_COMM | fi.LOCAL_COMM
	secondaryCaps = secondaryTxCaps | secondaryRxCaps | fi.SHARED_AV

	msgDirectionCaps = fi.SEND | fi.RECV
	rmaDirectionCaps = fi.READ | fi.WRITE | fi.REMOTE_READ | fi.REMOTE_WRITE

	// Rx-only bits a Tx attribute may carry (and the reverse); they are
	// ignored rather than rejected.
	ignoredTxCaps = fi.REMOTE_READ | fi.REMOTE_WRITE | fi.RECV | fi.DIRECTED_RECV |
		fi.VARIABLE_MSG | fi.MULTI_RECV | fi.SOURCE | fi.RMA_EVENT | fi.SOURCE_ERR
	ignoredRxCaps = fi.READ | fi.WRITE | fi.SEND | fi.FENCE | fi.MULTICAST | fi.NAMED_RX_CTX

	mrModeRMATarget = fi.MR_RAW | fi.MR_VIRT_ADDR | fi.MR_PROV_KEY | fi.MR_RMA_EVENT

	sharedContext = ^uint64(0) // FI_SHARED_CONTEXT (SIZE_MAX)
)

// mismatch is why an entry does not fit the hints; it wraps ENODATA.
type mismatch struct{ reason string }

func (m *mismatch) Error() string { return m.reason }
func (m *mismatch) Unwrap() error { return fi.ENODATA }

// NoMatch is an fi.ENODATA error saying why nothing fits: what fi_getinfo
// returns (and logs) for hints no entry satisfies.
func NoMatch(format string, args ...any) error {
	return &mismatch{fmt.Sprintf(format, args...)}
}

func version15(v uint32) bool { return fi.VersionGE(v, fi.Version(1, 5)) }

// Check reports whether prov satisfies hints (nil hints always do).
func Check(prov, hints *fi.Info, version uint32) error {
	if hints == nil {
		return nil
	}
	if hints.EP != nil {
		if err := checkEPType(prov.EP, hints.EP); err != nil {
			return err
		}
	}
	if hints.Caps&^prov.Caps != 0 {
		return NoMatch("unsupported capabilities %#x", hints.Caps&^prov.Caps)
	}
	if need := provMode(version, hints, prov); hints.Mode&need != need {
		return NoMatch("needed mode %#x not set", need)
	}
	if !validAddrFormat(prov.AddrFormat, hints.AddrFormat) {
		return NoMatch("address format %d not supported", hints.AddrFormat)
	}
	if hints.Fabric != nil {
		if err := checkFabricAttr(prov.Fabric, hints.Fabric); err != nil {
			return err
		}
	}
	if hints.Domain != nil {
		if err := checkDomainAttr(prov.Domain, hints, version); err != nil {
			return err
		}
	}
	if hints.EP != nil {
		if err := checkEPAttr(prov, hints); err != nil {
			return err
		}
	}
	if hints.Rx != nil {
		if err := checkRxAttr(prov, hints.Rx, hints.Mode); err != nil {
			return err
		}
	}
	if hints.Tx != nil {
		if err := checkTxAttr(prov.Tx, hints.Tx, hints.Mode); err != nil {
			return err
		}
	}
	return nil
}

// provMode is the mode an entry requires; FI_LOCAL_MR joins it when the
// domain needs local registration and the user speaks the old MR API.
func provMode(version uint32, hints, prov *fi.Info) uint64 {
	if !version15(version) || (hints.Domain != nil && hints.Domain.MRMode&fi.MR_LOCAL == 0) {
		if prov.Domain.MRMode&fi.MR_LOCAL != 0 {
			return prov.Mode | fi.LOCAL_MR
		}
	}
	return prov.Mode
}

func validAddrFormat(prov, user uint32) bool {
	if user == fi.FORMAT_UNSPEC || prov == fi.FORMAT_UNSPEC {
		return true
	}
	switch prov {
	case fi.SOCKADDR:
		return user <= fi.SOCKADDR_IN6
	case fi.SOCKADDR_IN:
		return user <= fi.SOCKADDR_IN
	case fi.SOCKADDR_IN6:
		return user <= fi.SOCKADDR_IN6
	case fi.SOCKADDR_IB:
		return user <= fi.SOCKADDR_IB
	}
	return prov == user
}

func checkEPType(prov, user *fi.EPAttr) error {
	if user.Type != fi.EP_UNSPEC && prov.Type != fi.EP_UNSPEC && user.Type != prov.Type {
		return NoMatch("unsupported endpoint type %d", user.Type)
	}
	return nil
}

func checkFabricAttr(prov, user *fi.FabricAttr) error {
	if user.ProvVersion > prov.ProvVersion {
		return NoMatch("unsupported provider version")
	}
	if !fi.VersionGE(user.APIVersion, prov.APIVersion) {
		return NoMatch("unsupported api version")
	}
	return nil
}

// Ranks of the ordered domain models: a hint may ask for a rank at least
// as large as the provider's (lower ranks are the more capable models).
func threadRank(t fi.Threading) int {
	switch t {
	case fi.THREAD_SAFE:
		return 1
	case fi.THREAD_FID:
		return 2
	case fi.THREAD_ENDPOINT:
		return 3
	case fi.THREAD_COMPLETION:
		return 4
	case fi.THREAD_DOMAIN:
		return 5
	case fi.THREAD_UNSPEC:
		return 6
	}
	return -1
}

func progressRank(p fi.Progress) int {
	switch p {
	case fi.PROGRESS_AUTO:
		return 1
	case fi.PROGRESS_MANUAL:
		return 2
	case fi.PROGRESS_UNSPEC:
		return 3
	}
	return -1
}

func rmRank(r fi.ResourceMgmt) int {
	switch r {
	case fi.RM_ENABLED:
		return 1
	case fi.RM_DISABLED:
		return 2
	case fi.RM_UNSPEC:
		return 3
	}
	return -1
}

// rmaTargetAllowed reports whether caps let the endpoint be an RMA target.
func rmaTargetAllowed(caps uint64) bool {
	if caps&(fi.RMA|fi.ATOMIC) == 0 {
		return false
	}
	if caps&(fi.REMOTE_WRITE|fi.REMOTE_READ) != 0 {
		return true
	}
	return caps&(fi.WRITE|fi.READ) == 0
}

// capMRMode drops the MR mode bits the requested caps do not need.
func capMRMode(caps uint64, mode int32) int32 {
	if caps&fi.HMEM == 0 {
		mode &^= fi.MR_HMEM
	}
	if !rmaTargetAllowed(caps) {
		if mode&(fi.MR_LOCAL|fi.MR_HMEM) == 0 {
			return 0
		}
		mode &^= mrModeRMATarget
	}
	return mode &^ (fi.MR_BASIC | fi.MR_SCALABLE)
}

func checkMRMode(version uint32, provMode int32, user *fi.Info) error {
	userMode := user.Domain.MRMode
	bad := func() error { return NoMatch("memory registration mode %#x not supported", userMode) }
	if provMode&fi.MR_LOCAL != 0 && user.Mode&fi.LOCAL_MR == 0 && userMode&fi.MR_LOCAL == 0 {
		return bad()
	}
	if !version15(version) {
		switch userMode {
		case fi.MR_UNSPEC:
			if provMode&(fi.MR_SCALABLE|fi.MR_BASIC) == 0 {
				return bad()
			}
		case fi.MR_BASIC, fi.MR_SCALABLE:
			if provMode&userMode == 0 {
				return bad()
			}
		default:
			return bad()
		}
		return nil
	}
	switch {
	case userMode&fi.MR_BASIC != 0:
		if userMode&^fi.MR_BASIC != 0 || provMode&fi.MR_BASIC == 0 {
			return bad()
		}
	case userMode&fi.MR_SCALABLE != 0:
		if userMode&^fi.MR_SCALABLE != 0 || provMode&fi.MR_SCALABLE == 0 {
			return bad()
		}
	default:
		need := capMRMode(user.Caps, provMode)
		if userMode != fi.MR_UNSPEC && userMode&need != need {
			return bad()
		}
	}
	return nil
}

func checkDomainAttr(prov *fi.DomainAttr, user *fi.Info, version uint32) error {
	u := user.Domain
	switch {
	case threadRank(u.Threading) < threadRank(prov.Threading):
		return NoMatch("invalid threading model %d", u.Threading)
	case progressRank(u.ControlProgress) < progressRank(prov.ControlProgress):
		return NoMatch("invalid control progress model %d", u.ControlProgress)
	case progressRank(u.DataProgress) < progressRank(prov.DataProgress):
		return NoMatch("invalid data progress model %d", u.DataProgress)
	case rmRank(u.ResourceMgmt) < rmRank(prov.ResourceMgmt):
		return NoMatch("invalid resource management model %d", u.ResourceMgmt)
	case prov.AVType != fi.AV_UNSPEC && u.AVType != fi.AV_UNSPEC && prov.AVType != u.AVType:
		return NoMatch("invalid AV type %d", u.AVType)
	case u.CQDataSize > prov.CQDataSize:
		return NoMatch("CQ data size %d too large (max %d)", u.CQDataSize, prov.CQDataSize)
	}
	if err := checkMRMode(version, prov.MRMode, user); err != nil {
		return err
	}
	if !version15(version) {
		return nil
	}
	switch {
	case u.CntrCnt > prov.CntrCnt:
		return NoMatch("counter count %d too large", u.CntrCnt)
	case u.MRIovLimit > prov.MRIovLimit:
		return NoMatch("MR iov limit %d too large", u.MRIovLimit)
	case u.Caps&^prov.Caps != 0:
		return NoMatch("domain caps %#x not supported", u.Caps&^prov.Caps)
	case u.Mode&prov.Mode != prov.Mode:
		return NoMatch("required domain mode %#x missing", prov.Mode)
	case u.MaxErrData > prov.MaxErrData:
		return NoMatch("max_err_data %d too large", u.MaxErrData)
	case u.MRCnt > prov.MRCnt:
		return NoMatch("MR count %d too large", u.MRCnt)
	}
	return nil
}

// maxTag is the largest tag a mem_tag_format allows.
func maxTag(format uint64) uint64 {
	if format == 0 {
		return 0
	}
	return ^uint64(0) >> (64 - bits.Len64(format))
}

func checkEPAttr(prov, user *fi.Info) error {
	p, u := prov.EP, user.EP
	if err := checkEPType(p, u); err != nil {
		return err
	}
	switch {
	case u.Protocol != fi.PROTO_UNSPEC && u.Protocol != p.Protocol:
		return NoMatch("unsupported protocol %d", u.Protocol)
	case u.ProtocolVersion != 0 && u.ProtocolVersion > p.ProtocolVersion:
		return NoMatch("unsupported protocol version %d", u.ProtocolVersion)
	case u.MaxMsgSize > p.MaxMsgSize:
		return NoMatch("max_msg_size %d too large", u.MaxMsgSize)
	}
	if err := checkCtxCnt("tx", u.TxCtxCnt, p.TxCtxCnt, prov.Domain.MaxEPTxCtx, prov.Domain.MaxEPStxCtx); err != nil {
		return err
	}
	if err := checkCtxCnt("rx", u.RxCtxCnt, p.RxCtxCnt, prov.Domain.MaxEPRxCtx, prov.Domain.MaxEPSrxCtx); err != nil {
		return err
	}
	if user.Caps&(fi.RMA|fi.ATOMIC) != 0 {
		switch {
		case u.MaxOrderRAWSize > p.MaxOrderRAWSize:
			return NoMatch("max_order_raw_size too large")
		case u.MaxOrderWARSize > p.MaxOrderWARSize:
			return NoMatch("max_order_war_size too large")
		case u.MaxOrderWAWSize > p.MaxOrderWAWSize:
			return NoMatch("max_order_waw_size too large")
		}
	}
	if u.AuthKeySize != 0 && u.AuthKeySize != p.AuthKeySize {
		return NoMatch("auth_key_size %d not supported (want %d)", u.AuthKeySize, p.AuthKeySize)
	}
	if user.Caps&fi.TAGGED != 0 && u.MemTagFormat != 0 && maxTag(u.MemTagFormat) > maxTag(p.MemTagFormat) {
		return NoMatch("tag format %#x wider than %#x", u.MemTagFormat, p.MemTagFormat)
	}
	return nil
}

func checkCtxCnt(dir string, user, prov, maxEP, maxShared uint64) error {
	if user > maxEP {
		if user == sharedContext {
			if maxShared == 0 {
				return NoMatch("shared %s context not supported", dir)
			}
			return nil
		}
		return NoMatch("%s_ctx_cnt %d exceeds %d", dir, user, maxEP)
	}
	if user == 0 && prov == sharedContext {
		return NoMatch("provider requires a shared %s context", dir)
	}
	return nil
}

func checkOps(caps, provCaps, mode, provMode, opFlags, provOpFlags, order, provOrder, comp, provComp uint64) error {
	switch {
	case caps&^provCaps != 0:
		return NoMatch("caps %#x not supported", caps&^provCaps)
	case mode&provMode != provMode:
		return NoMatch("needed mode %#x not set", provMode)
	case opFlags&^provOpFlags != 0:
		return NoMatch("op_flags %#x not supported", opFlags&^provOpFlags)
	case order&^provOrder != 0:
		return NoMatch("msg_order %#x not supported", order&^provOrder)
	case comp&^provComp != 0:
		return NoMatch("comp_order %#x not supported", comp&^provComp)
	}
	return nil
}

func checkRxAttr(prov *fi.Info, u *fi.RxAttr, infoMode uint64) error {
	p := prov.Rx
	if u.Mode != 0 {
		infoMode = u.Mode
	}
	if err := checkOps(u.Caps&^ignoredRxCaps, p.Caps, infoMode, p.Mode, u.OpFlags, p.OpFlags,
		u.MsgOrder, p.MsgOrder, u.CompOrder, p.CompOrder); err != nil {
		return err
	}
	switch {
	case u.TotalBufferedRecv > p.TotalBufferedRecv:
		return NoMatch("total_buffered_recv %d too large", u.TotalBufferedRecv)
	case u.Size > p.Size:
		return NoMatch("rx size %d too large", u.Size)
	case u.IovLimit > p.IovLimit:
		return NoMatch("rx iov_limit %d too large", u.IovLimit)
	}
	return nil
}

func checkTxAttr(p, u *fi.TxAttr, infoMode uint64) error {
	if u.Mode != 0 {
		infoMode = u.Mode
	}
	if err := checkOps(u.Caps&^ignoredTxCaps, p.Caps, infoMode, p.Mode, u.OpFlags, p.OpFlags,
		u.MsgOrder, p.MsgOrder, u.CompOrder, p.CompOrder); err != nil {
		return err
	}
	switch {
	case u.InjectSize > p.InjectSize:
		return NoMatch("inject_size %d too large", u.InjectSize)
	case u.Size > p.Size:
		return NoMatch("tx size %d too large", u.Size)
	case u.IovLimit > p.IovLimit:
		return NoMatch("tx iov_limit %d too large", u.IovLimit)
	case u.RMAIovLimit > p.RMAIovLimit:
		return NoMatch("rma_iov_limit %d too large", u.RMAIovLimit)
	}
	return nil
}

// grantCaps narrows an attribute's caps to the hints: the primary caps the
// hints asked for (all the entry offers when they asked for none) plus every
// secondary cap, completed with the direction bits.
func grantCaps(infoCaps, hintCaps, attrCaps uint64) uint64 {
	var caps uint64
	if hintCaps == 0 {
		caps = infoCaps&attrCaps&primaryCaps | attrCaps&secondaryCaps
	} else {
		caps = hintCaps&primaryCaps | attrCaps&secondaryCaps
	}
	if caps&(fi.MSG|fi.TAGGED) != 0 && caps&msgDirectionCaps == 0 {
		caps |= attrCaps & msgDirectionCaps
	}
	if caps&(fi.RMA|fi.ATOMIC) != 0 && caps&rmaDirectionCaps == 0 {
		caps |= attrCaps & rmaDirectionCaps
	}
	return caps
}

// infoCaps computes an entry's granted caps; remote access is dropped when
// the user's MR mode cannot describe a target buffer.
func infoCaps(prov, hints *fi.Info, version uint32) uint64 {
	if hints == nil {
		return prov.Caps
	}
	caps := grantCaps(prov.Caps, hints.Caps, prov.Caps)
	provMode := prov.Domain.MRMode
	if !rmaTargetAllowed(caps) || provMode&mrModeRMATarget == 0 {
		return caps
	}
	if hints.Domain != nil {
		userMode := hints.Domain.MRMode
		if (!version15(version) && userMode == fi.MR_UNSPEC) || userMode == fi.MR_BASIC ||
			userMode&provMode&mrModeRMATarget == provMode&mrModeRMATarget {
			return caps
		}
	}
	return caps &^ (fi.REMOTE_WRITE | fi.REMOTE_READ)
}

// Alter applies the hints to accepted entries.
func Alter(infos []*fi.Info, hints *fi.Info, version uint32) {
	for _, info := range infos {
		info.Caps = infoCaps(info, hints, version)
		if info.Domain.MRMode&fi.MR_LOCAL != 0 && (!version15(version) ||
			(hints != nil && hints.Domain != nil && hints.Domain.MRMode&(fi.MR_BASIC|fi.MR_SCALABLE) != 0)) {
			info.Mode |= fi.LOCAL_MR
		}
		if hints != nil {
			info.Handle = hints.Handle
		}
		var hd *fi.DomainAttr
		var he *fi.EPAttr
		var hr *fi.RxAttr
		var ht *fi.TxAttr
		if hints != nil {
			hd, he, hr, ht = hints.Domain, hints.EP, hints.Rx, hints.Tx
		}
		alterDomainAttr(info.Domain, hd, info.Caps, version)
		alterEPAttr(info.EP, he, info.Caps)
		alterRxAttr(info.Rx, hr, info.Caps)
		alterTxAttr(info.Tx, ht, info.Caps)
	}
}

func alterDomainAttr(a, h *fi.DomainAttr, caps uint64, version uint32) {
	var hintMode int32
	var hintCaps uint64
	if h != nil {
		hintMode, hintCaps = h.MRMode, h.Caps
	}
	switch {
	case hintMode&(fi.MR_BASIC|fi.MR_SCALABLE) != 0:
		a.MRMode = hintMode
	case !version15(version):
		if a.MRMode != 0 && a.MRMode != fi.MR_SCALABLE {
			a.MRMode = fi.MR_BASIC
		} else {
			a.MRMode = fi.MR_SCALABLE
		}
	default:
		a.MRMode &^= fi.MR_BASIC | fi.MR_SCALABLE
		if h != nil && hintMode&a.MRMode != a.MRMode {
			a.MRMode = capMRMode(caps, a.MRMode&hintMode)
		}
	}
	a.Caps = grantCaps(caps, hintCaps, a.Caps)
	if h == nil {
		return
	}
	override(&a.Threading, h.Threading)
	override(&a.ControlProgress, h.ControlProgress)
	override(&a.DataProgress, h.DataProgress)
	override(&a.AVType, h.AVType)
}

func alterEPAttr(a, h *fi.EPAttr, caps uint64) {
	if h == nil {
		return
	}
	if caps&(fi.RMA|fi.ATOMIC) != 0 {
		override(&a.MaxOrderRAWSize, h.MaxOrderRAWSize)
		override(&a.MaxOrderWARSize, h.MaxOrderWARSize)
		override(&a.MaxOrderWAWSize, h.MaxOrderWAWSize)
	}
	override(&a.TxCtxCnt, h.TxCtxCnt)
	override(&a.RxCtxCnt, h.RxCtxCnt)
}

func alterRxAttr(a *fi.RxAttr, h *fi.RxAttr, caps uint64) {
	if h == nil {
		a.Caps = grantCaps(caps, 0, a.Caps)
		return
	}
	a.Caps = grantCaps(caps, h.Caps, a.Caps)
	a.OpFlags = h.OpFlags
	a.TotalBufferedRecv = h.TotalBufferedRecv
	override(&a.Size, h.Size)
	override(&a.IovLimit, h.IovLimit)
}

func alterTxAttr(a *fi.TxAttr, h *fi.TxAttr, caps uint64) {
	if h == nil {
		a.Caps = grantCaps(caps, 0, a.Caps)
		return
	}
	a.Caps = grantCaps(caps, h.Caps, a.Caps)
	a.OpFlags = h.OpFlags
	override(&a.InjectSize, h.InjectSize)
	override(&a.Size, h.Size)
	override(&a.IovLimit, h.IovLimit)
	override(&a.RMAIovLimit, h.RMAIovLimit)
}

// override sets *dst to a hint's value when the hint gives one (non-zero);
// zero means "no preference" throughout fi_info.
func override[T comparable](dst *T, hint T) {
	var zero T
	if hint != zero {
		*dst = hint
	}
}
