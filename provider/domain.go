package provider

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
)

// Domain is an open psm2 domain: the attributes every object opened from it
// shares, the lock that serializes its data path, and its progress engine.
//
// Locking. Every data-path entry of Go (posting, completion reads,
// progress) holds d.mu unless locking is off (FI_PSM2_LOCK_LEVEL=0 with no
// progress goroutine): one lock per domain keeps the matching engine, the
// CQs and the wires consistent without per-object locks, and an
// uncontended lock is a few nanoseconds. d.mu is the words of the domain
// page's lock slots, all of them: the C fast paths take only the slot of
// the endpoint or CQ they act for, so threads on endpoints that share
// nothing C touches do not contend (lockgroup.go).
type Domain struct {
	trigCntrs   []*Cntr // counters with triggered calls waiting (trigger.go); the lock
	trigPending int     // those calls
	fabric      *Fabric
	prov        *Provider
	log         logger
	params      Params

	api          uint32
	caps         uint64
	threading    fi.Threading
	dataProgress fi.Progress
	mrMode       int32
	avType       fi.AVType
	addrFormat   uint32 // the fi_info's addr_format: FI_ADDR_STR makes AV names strings
	layout       TagLayout
	uuid         UUID
	locking      bool

	mu  domLock
	eps []*Endpoint // enabled endpoints, polled by progress; guarded by mu
	cqs []*CQ       // open CQs with a fast-path page; guarded by mu

	// fastLock: mu is the futex words in the domain page that the C fast
	// paths share (lock.go, fastep.go, lockgroup.go).
	fastLock bool
	// regroup: a binding changed; unlock puts endpoints and CQs into
	// lock slots again (lockgroup.go). slotsUsed: slots in use (1 + the
	// words of mu.more).
	regroup   bool
	slotsUsed int

	refs       atomic.Int64 // objects open on the domain
	disconnect atomic.Uint32
	closed     bool

	mrs  mrTable
	prog *progressThread
	// sendQMover moves queued sends nobody else moves and polls network
	// wires the application leaves alone (sendq.go); moverRef is the same
	// pointer for the receive thread, which takes no lock.
	sendQMover *sendQMover
	moverRef   atomic.Pointer[sendQMover]
	// passes counts progress passes; the mover polls a wire with unsent
	// packets only when the application made none for a tick.
	passes atomic.Uint64
	fast   []byte // the idle fast path's domain block (fastpath.go)
	blind  bool   // an enabled endpoint has a receive queue C cannot probe (fastpath.go)
}

// OpenDomain opens a domain of the fabric for info (from fi_getinfo).
func (f *Fabric) OpenDomain(info *fi.Info) (*Domain, error) {
	if info == nil || f == nil {
		return nil, fi.EINVAL
	}
	if f.closed.Load() {
		return nil, fi.EINVAL
	}
	p := f.prov
	d := &Domain{fabric: f, prov: p, log: p.log, params: p.params, api: fi.APIVersion,
		caps: info.Caps, threading: fi.THREAD_SAFE, dataProgress: fi.PROGRESS_MANUAL,
		avType: fi.AV_UNSPEC, uuid: p.params.UUID, addrFormat: info.AddrFormat}
	if info.Fabric != nil && info.Fabric.APIVersion != 0 {
		d.api = info.Fabric.APIVersion
	}
	if a := info.Domain; a != nil {
		if a.Name != "" && !strings.HasPrefix(strings.ToLower(a.Name), getinfo.DomainPrefix) {
			return nil, fmt.Errorf("domain %q: %w", a.Name, fi.EINVAL)
		}
		if a.Threading != fi.THREAD_UNSPEC {
			d.threading = a.Threading
		}
		if a.DataProgress == fi.PROGRESS_AUTO {
			d.dataProgress = fi.PROGRESS_AUTO
		}
		d.mrMode = a.MRMode
		d.avType = a.AVType
		if a.AuthKeySize == getinfo.AuthKeySize && len(a.AuthKey) == getinfo.AuthKeySize {
			copy(d.uuid[:], a.AuthKey)
		} else if a.AuthKeySize != 0 && a.AuthKey != nil {
			return nil, fmt.Errorf("domain auth_key of %d bytes: %w", a.AuthKeySize, fi.EINVAL)
		}
	}
	if info.EP != nil && len(info.EP.AuthKey) == getinfo.AuthKeySize {
		copy(d.uuid[:], info.EP.AuthKey)
	}
	d.layout = p.lockTagLayout(info)
	d.disconnect.Store(boolU32(p.params.Disconnect))
	d.locking = !(p.params.LockLevelSet && p.params.LockLevel == 0) || d.dataProgress == fi.PROGRESS_AUTO
	d.mrs.init()
	d.fast = fastPage()
	if d.fast != nil && !raceEnabled {
		d.fastLock = true
		d.slotsUsed = 1
		d.mu.w = fastWord32(d.fast, domSlots+slotLock)
		if d.locking {
			atomic.StoreUint32(fastWord32(d.fast, domLocking), 1)
		}
		d.publishALock()
	}
	f.domains.Add(1)
	if d.dataProgress == fi.PROGRESS_AUTO {
		d.startProgress(false)
	}
	d.log.Infof(fi.LOG_DOMAIN, "domain opened: layout %v, progress %v, uuid %v", d.layout, d.dataProgress, d.uuid)
	return d, nil
}

func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// Close closes the domain; it fails with EBUSY while objects are open on it.
func (d *Domain) Close() error {
	if d.refs.Load() > 0 {
		return fi.EBUSY
	}
	d.lock()
	if d.closed {
		d.unlock()
		return fi.EINVAL
	}
	d.closed = true
	d.unlock()
	d.stopProgress()
	d.stopSendQ()
	if d.fast != nil {
		freeFastPage(d.fast)
		d.fast = nil
	}
	d.fabric.domains.Add(-1)
	return nil
}

// APIVersion is the libfabric API version the domain was opened for.
func (d *Domain) APIVersion() uint32 { return d.api }

// MRMode is the domain's memory registration mode.
func (d *Domain) MRMode() int32 { return d.mrMode }

// GetDisconnect and SetDisconnect are fi_get_val/fi_set_val of
// FI_PSM2_DISCONNECT on the domain.
func (d *Domain) GetDisconnect() uint32 { return d.disconnect.Load() }

// SetDisconnect sets FI_PSM2_DISCONNECT for the domain's endpoints.
func (d *Domain) SetDisconnect(v uint32) { d.disconnect.Store(boolU32(v != 0)) }

func (d *Domain) fabricOf() *Fabric { return d.fabric }

func (d *Domain) lock() {
	if d.locking {
		d.mu.lock()
	}
	if d.fastLock {
		if d.slotsSay(slotCQueued) {
			d.absorbLocked() // before anything adds a CQ entry
		}
		if d.slotsSay(slotQueued) {
			d.drainLocked()
		}
		if d.slotsSay(slotADone) {
			d.reapLocked()
		}
		if d.slotsSay(slotCPosted) {
			d.adoptLocked()
		}
	}
}

func (d *Domain) unlock() {
	// C delivers for the endpoints the domain page lists (fastpath.go:
	// domEPs); each says whether it may now.
	if d.fastLock && len(d.eps) <= maxFastEPs {
		for _, ep := range d.eps {
			ep.syncDeliverLocked()
		}
	}
	if d.regroup {
		d.regroupLocked()
	}
	if d.locking {
		d.mu.unlock()
	}
}

// progressLocked services every enabled endpoint once and returns how many
// events that produced. The caller holds the lock.
func (d *Domain) progressLocked() int {
	d.passes.Add(1)
	n := 0
	for _, ep := range d.eps {
		n += ep.poll()
	}
	if d.trigPending > 0 {
		d.runTriggersLocked() // after the wires' callbacks, never inside
	}
	d.refreshFast()
	return n
}

// progress runs one progress pass under the lock.
func (d *Domain) progress() int {
	d.lock()
	defer d.unlock()
	return d.progressLocked()
}

func (d *Domain) removeEPLocked(ep *Endpoint) {
	for i, e := range d.eps {
		if e == ep {
			d.eps = append(d.eps[:i], d.eps[i+1:]...)
			if ep.fast.page != nil {
				atomic.StoreUint64(fastWord(ep.fast.page, epfLock), d.slotAddr(0))
			}
			d.publishRings()
			return
		}
	}
}

// lockTagLayout picks the tag layout at the first domain of the process
// and keeps it for every later one (as psm2 does): tag60 when the info
// carries CQ data with tagged or msg caps, tag64 otherwise, unless
// FI_PSM2_TAG_LAYOUT forces one.
func (p *Provider) lockTagLayout(info *fi.Info) TagLayout {
	p.layoutOnce.Do(func() {
		l := p.params.TagLayout
		if l == TagLayoutAuto {
			l = TagLayoutTag64
			if info.Caps&(fi.TAGGED|fi.MSG) != 0 && info.Domain != nil && info.Domain.CQDataSize != 0 {
				l = TagLayoutTag60
			}
		}
		p.layout = l
	})
	return p.layout
}
