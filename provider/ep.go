package provider

import (
	"encoding/binary"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
	"github.com/gopsm2/libfabric-psm2/provider/names"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Endpoint is an RDM or DGRAM endpoint: a transmit and a receive context
// on one wire endpoint, with its own matching engine (msg.go).
type Endpoint struct {
	dom        *Domain
	typ        fi.EPType
	caps       uint64
	addrFormat uint32
	txFlags    atomic.Uint64
	rxFlags    atomic.Uint64
	ctxNum     int
	epid       uint64
	tp         transport.Endpoint
	waiters    atomic.Int32 // threads sleeping on tp

	// Bindings; set before Enable, guarded by the domain lock.
	av       *AV
	eq       *EQ
	txCQ     *CQ
	sharedTx bool // opened with tx_ctx_cnt FI_SHARED_CONTEXT: binds an STX (stx.go)
	stx      *STX
	rxCQ     *CQ
	txSel    bool // FI_SELECTIVE_COMPLETION on the transmit CQ
	rxSel    bool
	sendCntr *Cntr
	recvCntr *Cntr
	rmaCntrs []*Cntr // every counter bound with an RMA flag (for unbinding)
	// The RMA counters (rma.go): this endpoint's completed reads
	// (FI_READ) and writes (FI_WRITE), and the reads and writes other
	// endpoints did here (FI_REMOTE_READ, FI_REMOTE_WRITE).
	readCntr, writeCntr, remReadCntr, remWriteCntr *Cntr
	cops                                           [aoCap]*op // the ops C posted that Go adopted, by entry (fastrma.go)

	enabled bool
	closed  bool

	statsStop, statsDone chan struct{} // the statistics goroutine (stats.go)
	service              uint32        // registered with the name server (a SEP's context is not: the SEP is)
	registered           bool
	sep                  *SEP // the scalable endpoint this is a context of, or nil
	sepIdx               int  // and its index there

	minMultiRecv uint64
	injectSize   uint64
	maxMsgSize   uint64
	tagMask      uint64

	engine // the data path's state, msg.go

	fast    fastEP // the C posting fast path's page (fastep.go)
	hasRing bool   // the wire has a C-readable ring (RingProbe); set at Enable
}

// Endpoint option names (FI_OPT_ENDPOINT level).
const (
	optLevelEndpoint = 0
	optMinMultiRecv  = 0
)

// defaultMinMultiRecv is the FI_OPT_MIN_MULTI_RECV default: 0, as psm2
// (a buffer is released once full).
const defaultMinMultiRecv = 0

// OpenEndpoint opens an endpoint for info.
func (d *Domain) OpenEndpoint(info *fi.Info, context uintptr) (*Endpoint, error) {
	if err := checkEPInfo(info); err != nil {
		return nil, err
	}
	ctxNum, err := d.prov.allocContexts(1)
	if err != nil {
		return nil, err
	}
	ep, err := d.openEndpoint(info, ctxNum, 0, 1)
	if err != nil {
		d.prov.freeContext(ctxNum)
		return nil, err
	}
	ep.service = serviceOf(info, uint32(pid()&0x7FFF)<<16+uint32(ctxNum))
	if d.prov.names() != nil {
		d.prov.register(ep.service, ep.name(), names.OpAdd)
		ep.registered = true
	}
	return ep, nil
}

// checkEPInfo checks what OpenEndpoint and OpenSEP take from info.
func checkEPInfo(info *fi.Info) error {
	if info == nil {
		return fi.EINVAL
	}
	typ := epType(info)
	if typ != fi.EP_RDM && typ != fi.EP_DGRAM {
		return fi.EINVAL
	}
	caps := info.Caps
	if caps == 0 {
		caps = getinfo.Caps
	}
	if caps&^(getinfo.Caps|fi.COLLECTIVE) != 0 || caps&fi.COLLECTIVE != 0 && typ != fi.EP_RDM {
		return fi.EINVAL
	}
	if info.EP != nil && info.EP.AuthKey != nil && len(info.EP.AuthKey) != getinfo.AuthKeySize {
		return fi.EINVAL
	}
	return nil
}

// epType is info's endpoint type, RDM when unspecified.
func epType(info *fi.Info) fi.EPType {
	if info.EP != nil && info.EP.Type != fi.EP_UNSPEC {
		return info.EP.Type
	}
	return fi.EP_RDM
}

// serviceOf is the service an endpoint registers with the name server:
// the one of info's source address if it names one, else def.
func serviceOf(info *fi.Info, def uint32) uint32 {
	if len(info.SrcAddr) >= EPNameLen {
		if n, err := UnmarshalEPName(info.SrcAddr); err == nil && n.Service != AnyService {
			return n.Service
		}
	}
	return def
}

// openEndpoint opens the endpoint of context number ctxNum (allocated by
// the caller, who frees it if this fails) for a checked info. port, if not
// 0, is the only UDP port its network wire may bind; otherwise it takes
// one from the host's cursor and moves the cursor on by block ports.
func (d *Domain) openEndpoint(info *fi.Info, ctxNum int, port uint16, block int) (*Endpoint, error) {
	typ := epType(info)
	caps := info.Caps
	if caps == 0 {
		caps = getinfo.Caps
	}
	uuid := d.uuid
	if info.EP != nil && info.EP.AuthKey != nil {
		copy(uuid[:], info.EP.AuthKey)
	}
	ep := &Endpoint{dom: d, typ: typ, caps: caps, addrFormat: info.AddrFormat, ctxNum: ctxNum,
		minMultiRecv: defaultMinMultiRecv, injectSize: uint64(d.params.InjectSize),
		maxMsgSize: getinfo.MaxMsgSize, tagMask: ^uint64(0)}
	if d.layout == TagLayoutTag60 {
		ep.tagMask = 1<<60 - 1
	}
	ep.sharedTx = info.EP != nil && info.EP.TxCtxCnt == fi.SHARED_CONTEXT
	if info.Tx != nil {
		ep.txFlags.Store(info.Tx.OpFlags)
		if info.Tx.InjectSize != 0 && info.Tx.InjectSize < ep.injectSize {
			ep.injectSize = info.Tx.InjectSize
		}
	}
	if info.Rx != nil {
		ep.rxFlags.Store(info.Rx.OpFlags)
	}
	if info.EP != nil && info.EP.MaxMsgSize != 0 && info.EP.MaxMsgSize < ep.maxMsgSize {
		ep.maxMsgSize = info.EP.MaxMsgSize
	}
	nc, err := d.prov.netConfig()
	if err != nil {
		d.log.Warnf(fi.LOG_EP_CTRL, "choosing the network address: %v", err)
		return nil, fi.EADDRNOTAVAIL
	}
	if port != 0 {
		nc.hfi.PortFirst, nc.hfi.PortLast = port, port
	}
	nc.hfi.PortBlock = block
	// A wire may hold packets for a later poll only if someone polls
	// when the application stops: not in an unlocked domain
	// (FI_PSM2_LOCK_LEVEL=0), where no second thread may enter.
	var stalled, arrived func()
	if d.locking {
		stalled, arrived = d.armUnsentLocked, d.netArrived
	}
	tp, err := d.prov.wire(wireConfig{
		job:         uuid,
		ctx:         ctxNum,
		connTimeout: time.Duration(d.params.ConnTimeout) * time.Second,
		rndvThresh:  d.prov.rndvThreshold(),
		disableCMA:  d.prov.disableCMA(),
		linger:      time.Duration(d.params.Timeout) * time.Second,
		net:         nc,
		stalled:     stalled,
		arrived:     arrived,
	})
	if err != nil {
		if port == 0 {
			d.log.Warnf(fi.LOG_EP_CTRL, "opening the endpoint's wires: %v", err)
		}
		return nil, wireErrno(err)
	}
	ep.epid = tp.EPID()
	noteOwnEndpoint(ep.epid)
	ep.tp = tp
	ep.engine.init(ep)
	ep.openFast()
	ep.startStats()
	d.refs.Add(1)
	return ep, nil
}

// TxOpFlags and RxOpFlags are the default op flags from the info.
func (ep *Endpoint) TxOpFlags() uint64 { return ep.txFlags.Load() }

// RxOpFlags is the default receive op flags.
func (ep *Endpoint) RxOpFlags() uint64 { return ep.rxFlags.Load() }

// SetTxOpFlags and SetRxOpFlags change the defaults (FI_SETOPSFLAG).
func (ep *Endpoint) SetTxOpFlags(f uint64) { ep.txFlags.Store(f) }

// SetRxOpFlags changes the default receive op flags.
func (ep *Endpoint) SetRxOpFlags(f uint64) { ep.rxFlags.Store(f) }

// Bind binds an AV, CQ, counter or EQ (fi_ep_bind).
func (ep *Endpoint) Bind(obj any, flags uint64) error {
	d := ep.dom
	d.lock()
	defer d.unlock()
	if ep.closed {
		return fi.EINVAL
	}
	if ep.enabled {
		// A scalable endpoint's context is enabled with its first role
		// when the other is opened later (MPICH opens, binds and
		// enables the transmit context before it opens the receive
		// context): the later role's CQ and counters bind to the
		// running endpoint.
		switch obj.(type) {
		case *CQ, *Cntr:
			if ep.sep == nil {
				return fi.EOPBADSTATE
			}
			ep.dom.regroup = true // a CQ may join the context's slot
			defer ep.syncFastLocked()
		default:
			return fi.EOPBADSTATE
		}
	}
	switch o := obj.(type) {
	case *AV:
		if o == nil || o.dom != d {
			return fi.EINVAL
		}
		if flags != 0 {
			return fi.EBADFLAGS
		}
		if ep.av != nil {
			return fi.EINVAL
		}
		ep.av = o
		o.eps = append(o.eps, ep)
		for i, n := range o.names { // inserted before any endpoint was bound
			if o.valid[i] {
				noteLocalName(ep.epid, n)
			}
		}
	case *STX:
		if o == nil || o.dom != d || o.closed || !ep.sharedTx || ep.stx != nil {
			return fi.EINVAL
		}
		if flags != 0 {
			return fi.EBADFLAGS
		}
		ep.stx = o
		o.eps++
	case *CQ:
		if o == nil || o.dom != d {
			return fi.EINVAL
		}
		if flags&^(fi.TRANSMIT|fi.RECV|fi.SELECTIVE_COMPLETION) != 0 {
			return fi.EBADFLAGS
		}
		if flags&(fi.TRANSMIT|fi.RECV) == 0 {
			return fi.EINVAL
		}
		if flags&fi.TRANSMIT != 0 {
			if ep.txCQ != nil {
				return fi.EINVAL
			}
			ep.txCQ, ep.txSel = o, flags&fi.SELECTIVE_COMPLETION != 0
			o.bound++
		}
		if flags&fi.RECV != 0 {
			if ep.rxCQ != nil {
				return fi.EINVAL
			}
			ep.rxCQ, ep.rxSel = o, flags&fi.SELECTIVE_COMPLETION != 0
			o.bound++
		}
	case *Cntr:
		if o == nil || o.dom != d {
			return fi.EINVAL
		}
		const all = fi.SEND | fi.RECV | fi.READ | fi.WRITE | fi.REMOTE_READ | fi.REMOTE_WRITE
		if flags&^all != 0 {
			return fi.EBADFLAGS
		}
		if flags == 0 {
			return fi.EINVAL
		}
		if flags&fi.SEND != 0 {
			ep.sendCntr = o
			o.bound.Add(1)
		}
		if flags&fi.RECV != 0 {
			ep.recvCntr = o
			o.bound.Add(1)
		}
		if flags&(fi.READ|fi.WRITE|fi.REMOTE_READ|fi.REMOTE_WRITE) != 0 {
			ep.rmaCntrs = append(ep.rmaCntrs, o)
			o.bound.Add(1)
		}
		if flags&fi.READ != 0 {
			ep.readCntr = o
		}
		if flags&fi.WRITE != 0 {
			ep.writeCntr = o
		}
		if flags&fi.REMOTE_READ != 0 {
			ep.remReadCntr = o
		}
		if flags&fi.REMOTE_WRITE != 0 {
			ep.remWriteCntr = o
		}
	case *EQ:
		if o == nil {
			return fi.EINVAL
		}
		ep.eq = o
	default:
		return fi.EINVAL
	}
	return nil
}

// Enable enables the endpoint: it needs an AV.
func (ep *Endpoint) Enable() error {
	d := ep.dom
	d.lock()
	defer d.unlock()
	return ep.enableLocked()
}

func (ep *Endpoint) enableLocked() error {
	d := ep.dom
	if ep.closed {
		return fi.EINVAL
	}
	if ep.enabled {
		return nil
	}
	if ep.av == nil {
		return fi.ENOAV
	}
	if ep.sharedTx && ep.stx == nil {
		return fi.EINVAL // its transmit context is the STX it must be bound to
	}
	ep.enabled = true
	d.eps = append(d.eps, ep)
	if w, ok := ep.tp.(netWire); ok && w.Networked() {
		d.armUnsentLocked() // someone polls the network when the application does not
	}
	d.publishRings()
	ep.syncFastLocked()
	return nil
}

// GetOpt is fi_getopt: the option's value into val (native byte order),
// and its size. A val shorter than the size gives ETOOSMALL.
func (ep *Endpoint) GetOpt(level, name int, val []byte) (int, error) {
	if level != optLevelEndpoint || name != optMinMultiRecv {
		return 0, fi.ENOPROTOOPT
	}
	if len(val) < 8 {
		return 8, fi.ETOOSMALL
	}
	ep.dom.lock()
	binary.NativeEndian.PutUint64(val, ep.minMultiRecv)
	ep.dom.unlock()
	return 8, nil
}

// SetOpt is fi_setopt: val is the option's value (native byte order), of
// exactly its size.
func (ep *Endpoint) SetOpt(level, name int, val []byte) error {
	if level != optLevelEndpoint || name != optMinMultiRecv {
		return fi.ENOPROTOOPT
	}
	if len(val) != 8 {
		return fi.EINVAL
	}
	ep.dom.lock()
	ep.minMultiRecv = binary.NativeEndian.Uint64(val)
	ep.dom.unlock()
	return nil
}

// TxSizeLeft and RxSizeLeft: the queues are unbounded once enabled.
func (ep *Endpoint) TxSizeLeft() (int64, error) {
	if !ep.enabled {
		return 0, fi.EOPBADSTATE
	}
	return 0x7fffffff, nil
}

// RxSizeLeft is fi_rx_size_left.
func (ep *Endpoint) RxSizeLeft() (int64, error) { return ep.TxSizeLeft() }

// Close closes the endpoint. Operations still pending are dropped without
// completions, as fi_close(3) allows.
func (ep *Endpoint) Close() error {
	d := ep.dom
	d.lock()
	if ep.closed {
		d.unlock()
		return fi.EINVAL
	}
	for _, g := range ep.coll.groups {
		if g != nil {
			d.unlock()
			return fi.EBUSY // a joined collective group (its fid_mc) is open
		}
	}
	ep.closed = true
	ep.detachLocked()
	if ep.av != nil {
		for i, e := range ep.av.eps {
			if e == ep {
				ep.av.eps = append(ep.av.eps[:i], ep.av.eps[i+1:]...)
				break
			}
		}
	}
	rma := ep.rmaStatsLocked()
	refused := ep.engine.refusals
	var statsGroups []transport.Counters
	if d.params.PrintStats > 0 {
		statsGroups = ep.statsGroupsLocked(nil)
	}
	d.unlock()
	ep.stopStats()
	// Threads asleep on the wire are woken and let go before it closes.
	for ep.waiters.Load() > 0 {
		ep.tp.Wake()
		runtime.Gosched()
	}
	if delay := d.params.Delay; delay > 0 {
		time.Sleep(time.Duration(delay) * time.Second)
	}
	if d.prov.names() != nil && ep.registered {
		d.prov.register(ep.service, ep.name(), names.OpDel)
	}
	err := ep.tp.Close()
	if r, ok := ep.tp.(transport.Reporter); ok {
		d.log.Infof(fi.LOG_EP_CTRL, "endpoint %#x closed: %s; rma %+v; messages held back at the limits %d", ep.epid, r.Report(), rma, refused)
	}
	if d.params.PrintStats > 0 {
		ep.printFinalStats(statsGroups)
	}
	ep.closeFast()
	d.prov.freeContext(ep.ctxNum)
	d.refs.Add(-1)
	if err != nil {
		d.log.Warnf(fi.LOG_EP_CTRL, "closing endpoint: %v", err)
	}
	return nil
}

// detachLocked stops a closing (or, resetLocked, disabled) endpoint's
// work and lets go of its CQs, counters and STX; the AV stays.
func (ep *Endpoint) detachLocked() {
	d := ep.dom
	ep.dropSendQ()
	ep.syncFastLocked()
	if d.trigPending > 0 {
		d.dropTriggersLocked(ep, nil)
	}
	d.removeEPLocked(ep)
	if ep.txCQ != nil {
		ep.txCQ.bound--
	}
	if ep.rxCQ != nil {
		ep.rxCQ.bound--
	}
	if ep.stx != nil {
		ep.stx.eps--
	}
	for _, c := range append([]*Cntr{ep.sendCntr, ep.recvCntr}, ep.rmaCntrs...) {
		if c != nil {
			c.bound.Add(-1)
		}
	}
}

// resetLocked returns an enabled endpoint to its state before Enable,
// with no CQ, counter or STX bound (its AV stays): a scalable endpoint's
// context whose fi_tx_context and fi_rx_context fids were all closed, so
// that the application can close what it had bound to them. Its wire
// stays open, and receives still posted stay posted.
func (ep *Endpoint) resetLocked() {
	if ep.closed {
		return
	}
	ep.enabled = false
	ep.detachLocked()
	ep.txCQ, ep.rxCQ, ep.txSel, ep.rxSel, ep.stx = nil, nil, false, false, nil
	ep.sendCntr, ep.recvCntr, ep.rmaCntrs = nil, nil, nil
	ep.readCntr, ep.writeCntr, ep.remReadCntr, ep.remWriteCntr = nil, nil, nil, nil
	ep.syncFastLocked()
}

// poll services the wire once; the caller holds the domain lock.
func (ep *Endpoint) poll() int {
	ep.events = 0
	if ep.sendQ.n > 0 {
		ep.flushSendQ()
	}
	if len(ep.rma.out) > 0 {
		ep.rmaFlush()
	}
	if ep.rma.watched > 0 {
		// Answers that will never come: an idle poll (the C side's
		// safety net sends one every 10 ms) or every 64th looks.
		if ep.polls++; ep.polls%64 == 0 || ep.tp.Idle() {
			ep.rmaSweep()
		}
	}
	if ep.tp.Idle() {
		return ep.events
	}
	ep.inPoll = true
	ep.tp.Poll((*epEvents)(ep), pollBudget)
	ep.inPoll = false
	if ep.sendQ.n > 0 {
		ep.flushSendQ() // the poll may have made room
	}
	if len(ep.rma.out) > 0 {
		ep.rmaFlush()
	}
	return ep.events
}

// RingProbe is the wire's receive ring, for the C side's idle check.
func (ep *Endpoint) RingProbe() uint64 { return ringProbe(ep.tp) }

// probes appends the arrival words of wire tp (transport.Prober) to dst:
// none if it is no Prober (then C never takes the domain for idle).
func probes(tp transport.Endpoint, dst []uint64) []uint64 {
	if p, ok := tp.(transport.Prober); ok {
		return p.Probes(dst)
	}
	return dst
}

// ringProbe is wire tp's message ring (transport.MessageRing), 0 if none.
func ringProbe(tp transport.Endpoint) uint64 {
	if r, ok := tp.(transport.MessageRing); ok {
		return r.RingProbe()
	}
	return 0
}

// pollBudget bounds the packets one poll takes, so one busy peer cannot
// hold the lock for long.
const pollBudget = 64
