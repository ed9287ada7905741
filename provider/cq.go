package provider

import (
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
)

// CQAttr is struct fi_cq_attr.
type CQAttr struct {
	Size            uint64
	Flags           uint64
	Format          int32
	WaitObj         int32
	SignalingVector int32
	WaitCond        int32
	WaitSet         *WaitSet
}

// Sizes of the CQ entry formats in C (struct fi_cq_*_entry).
const (
	cqContextSize = 8
	cqMsgSize     = 24
	cqDataSize    = 40
	cqTaggedSize  = 48
	cqErrSize     = 80 // struct fi_cq_err_entry with err_data_size (API >= 1.5)
)

// cqEntry is one completion, success or error, in a format-neutral form.
type cqEntry struct {
	ctx   uintptr
	flags uint64
	len   uint64
	buf   uintptr
	data  uint64
	tag   uint64
	// The sender, looked up in av when a readfrom asks for it (as psm2
	// does): av nil means no source (a send, an error).
	srcEPID uint64
	av      *AV

	err     fi.Errno // 0: a success entry
	provErr int32
	olen    uint64
	errLen  int
	errData [getinfo.MaxErrData]byte
}

// CQ is a completion queue. Entries, successes and errors alike, sit in
// one ring in completion order; a read stops at an error entry, which
// fi_cq_readerr then takes.
type CQ struct {
	dom       *Domain
	format    int32
	stride    uintptr
	threshold bool // wait_cond FI_CQ_COND_THRESHOLD: SRead's cond is a count
	waiter

	ring []cqEntry // circular; guarded by the domain lock
	head int
	n    int

	bound  int  // endpoints bound; guarded by the domain lock
	closed bool // guarded by the domain lock

	sleepers atomic.Int32 // threads blocked in sread
	signaled atomic.Bool  // fi_cq_signal since the last sread
	wakeCh   chan struct{}

	fdArmed  atomic.Bool // a waiter may block on efd: signal it on the next entry
	fdRaised bool        // efd holds a count; guarded by the domain lock

	// fast is a page outside the Go heap: the idle fast path's words
	// (fastpath.go) and, at cqErrDataOff, the err_data handed out for
	// API < 1.5 or err_data_size 0, which C may keep until the next readerr.
	fast []byte
}

// OpenCQ opens a completion queue.
func (d *Domain) OpenCQ(attr *CQAttr) (*CQ, error) {
	if attr == nil {
		return nil, fi.EINVAL
	}
	cq := &CQ{dom: d, format: attr.Format, wakeCh: make(chan struct{}, 1)}
	switch attr.Format {
	case fi.CQ_FORMAT_UNSPEC:
		cq.format = fi.CQ_FORMAT_TAGGED
	case fi.CQ_FORMAT_CONTEXT, fi.CQ_FORMAT_MSG, fi.CQ_FORMAT_DATA, fi.CQ_FORMAT_TAGGED:
	default:
		return nil, fi.ENOSYS
	}
	cq.stride = [...]uintptr{0, cqContextSize, cqMsgSize, cqDataSize, cqTaggedSize}[cq.format]
	w, err := openWaiter(attr.WaitObj, attr.WaitSet, false)
	if err != nil {
		return nil, err
	}
	cq.waiter = w
	if attr.WaitCond != 0 && attr.WaitCond != 1 { // FI_CQ_COND_NONE, FI_CQ_COND_THRESHOLD
		cq.closeFD()
		return nil, fi.EINVAL
	}
	cq.threshold = attr.WaitCond == 1
	if attr.Flags&^fi.AFFINITY != 0 {
		cq.closeFD()
		return nil, fi.EBADFLAGS
	}
	size := attr.Size
	if size == 0 || size > 1<<20 {
		size = 1024
	}
	cq.ring = make([]cqEntry, size)
	if cq.fast = fastPage(); cq.fast != nil && d.fast != nil {
		atomic.StoreUint64(fastWord(cq.fast, cqDomain), uint64(uintptr(unsafe.Pointer(&d.fast[0]))))
		atomic.StoreUint64(fastWord(cq.fast, cqStride), uint64(cq.stride))
		atomic.StoreUint64(fastWord(cq.fast, cqLock), d.slotAddr(0))
	}
	if cq.ws != nil {
		cq.ws.add(cq)
	}
	if cq.fast != nil {
		d.lock()
		d.cqs = append(d.cqs, cq)
		d.regroup = true
		d.unlock()
	}
	if cq.hasFD() || cq.ws != nil {
		d.startProgress(true)
	}
	d.refs.Add(1)
	return cq, nil
}

func (cq *CQ) closeFD() {
	cq.closeWaiter()
}

// push appends an entry. The caller holds the domain lock. The ring grows
// rather than dropping a completion.
func (cq *CQ) push() *cqEntry {
	if cq.n == len(cq.ring) {
		bigger := make([]cqEntry, 2*len(cq.ring))
		for i := 0; i < cq.n; i++ {
			bigger[i] = cq.ring[(cq.head+i)%len(cq.ring)]
		}
		cq.ring, cq.head = bigger, 0
	}
	i := cq.head + cq.n
	if i >= len(cq.ring) {
		i -= len(cq.ring)
	}
	cq.n++
	cq.setAvail()
	e := &cq.ring[i]
	*e = cqEntry{}
	return e
}

// absorb moves the completions C queued in the CQ's page (fast/send.c:
// psm2_fast_send) into the ring, in their order, after every entry
// already there: C queues only behind the ring, and Domain.lock calls
// absorb before anything else under the lock adds an entry.
func (cq *CQ) absorb() {
	if cq.fast == nil {
		return
	}
	n := atomic.LoadUint64(fastWord(cq.fast, cqCQueued))
	if n == 0 {
		return
	}
	n = min(n, cqCCap)
	for i := range int(n) {
		w := (*[2]uint64)(unsafe.Pointer(&cq.fast[cqCEntries+i*cqCEntrySize]))
		e := cq.push()
		e.ctx, e.flags, e.len, e.buf, e.data, e.tag = uintptr(w[0]), w[1], 0, 0, 0, 0
	}
	atomic.StoreUint64(fastWord(cq.fast, cqCQueued), 0)
}

// notify tells waiters that entries were added: called once per progress
// or posting call that added any, with the domain lock held.
func (cq *CQ) notify() {
	if cq.sleepers.Load() > 0 {
		select {
		case cq.wakeCh <- struct{}{}:
		default:
		}
		cq.dom.wakeAllLocked()
	}
	if cq.hasFD() && cq.fdArmed.Swap(false) {
		cq.efd.Raise()
		cq.fdRaised = true
	}
	if cq.ws != nil {
		cq.ws.signal()
	}
}

// complete adds a success entry; av (nil for sends) resolves srcEPID for
// fi_cq_readfrom.
func (cq *CQ) complete(ctx uintptr, flags, length uint64, buf uintptr, data, tag, srcEPID uint64, av *AV) {
	e := cq.push()
	e.ctx, e.flags, e.len, e.buf, e.data, e.tag, e.srcEPID, e.av = ctx, flags, length, buf, data, tag, srcEPID, av
	cq.notify()
}

// completeErr adds an error entry.
func (cq *CQ) completeErr(ctx uintptr, flags, length uint64, buf uintptr, data, tag uint64, err fi.Errno, olen uint64, errData []byte) {
	e := cq.push()
	e.ctx, e.flags, e.len, e.buf, e.data, e.tag = ctx, flags, length, buf, data, tag
	e.err, e.olen, e.provErr = err, olen, -int32(err)
	e.errLen = copy(e.errData[:], errData)
	cq.notify()
}

// EntryWords is the size of one entry of the CQ's format
// (struct fi_cq_*_entry) in 64-bit words: Read's buf holds count times
// as many.
func (cq *CQ) EntryWords() int { return int(cq.stride / 8) }

// Read is fi_cq_read / fi_cq_readfrom: it drives progress, then copies up
// to count success entries into buf in the CQ's format, EntryWords words
// each (and their source addresses into src, if not nil: count words).
// EAGAIN: nothing to read; EAVAIL: an error entry is next.
func (cq *CQ) Read(buf []uint64, count int, src []uint64) (int, error) {
	if !cq.fits(buf, count, src) {
		return 0, fi.EINVAL
	}
	d := cq.dom
	d.lock()
	defer d.unlock()
	if cq.n == 0 || count > cq.n {
		d.progressLocked()
	}
	return cq.readLocked(buf, count, src)
}

// fits reports whether buf and src hold count entries.
func (cq *CQ) fits(buf []uint64, count int, src []uint64) bool {
	return count >= 0 && len(buf) >= count*cq.EntryWords() && (src == nil || len(src) >= count)
}

// sreadPass is one look of Sread: progress, then read if threshold
// entries (or an error) are there.
func (cq *CQ) sreadPass(buf []uint64, count int, src []uint64, threshold int) (int, error) {
	d := cq.dom
	d.lock()
	defer d.unlock()
	d.progressLocked()
	if cq.n >= threshold || (cq.n > 0 && cq.ring[cq.head].err != 0) {
		return cq.readLocked(buf, count, src)
	}
	return 0, fi.EAGAIN
}

func (cq *CQ) readLocked(buf []uint64, count int, src []uint64) (int, error) {
	if cq.n == 0 {
		if cq.fdRaised {
			cq.drainFD()
		}
		return 0, fi.EAGAIN
	}
	if count == 0 {
		return 0, nil
	}
	got, words := 0, cq.EntryWords()
	for got < count && cq.n > 0 {
		e := &cq.ring[cq.head]
		if e.err != 0 {
			break
		}
		if src != nil {
			a := fi.AddrUnspec
			if e.av != nil {
				var ok bool
				if a, ok = e.av.addrOfLocked(e.srcEPID); !ok {
					// An unknown sender: the entry becomes an
					// FI_EADDRNOTAVAIL error carrying its name.
					if got > 0 {
						break
					}
					e.err, e.provErr, e.olen = fi.EADDRNOTAVAIL, -int32(fi.EADDRNOTAVAIL), 0
					EPName{EPID: e.srcEPID}.put(e.errData[:EPNameLen])
					e.errLen = EPNameLen
					return 0, fi.EAVAIL
				}
			}
			src[got] = a
		}
		cq.write(buf[got*words:(got+1)*words], e)
		cq.pop()
		got++
	}
	if got == 0 {
		return 0, fi.EAVAIL
	}
	return got, nil
}

func (cq *CQ) pop() {
	cq.head++
	if cq.head == len(cq.ring) {
		cq.head = 0
	}
	cq.n--
	cq.setAvail()
}

func (cq *CQ) drainFD() {
	cq.efd.Lower()
	cq.fdRaised = false
}

// write stores e in w, one entry of the CQ's format.
func (cq *CQ) write(w []uint64, e *cqEntry) {
	w[0] = uint64(e.ctx)
	if len(w) > 1 {
		w[1] = e.flags
		w[2] = e.len
	}
	if len(w) > 3 {
		w[3] = uint64(e.buf)
		w[4] = e.data
	}
	if len(w) > 5 {
		w[5] = e.tag
	}
}

// CQErr is an error completion as fi_cq_readerr reports it (struct
// fi_cq_err_entry).
type CQErr struct {
	Ctx     uintptr
	Flags   uint64
	Len     uint64
	Buf     uintptr
	Data    uint64
	Tag     uint64
	OLen    uint64
	Err     int32 // a positive errno
	ProvErr int32
	// ErrDataLen is the length of the error data; ErrDataAddr is where
	// it is when ReadErr was given no buffer for it: memory the CQ keeps
	// until the next ReadErr, 0 when it has none for C to read.
	ErrDataLen  int
	ErrDataAddr uintptr
}

// ErrDataSized reports whether the CQ's fabric speaks API 1.5 or later,
// whose struct fi_cq_err_entry has err_data_size (the caller's err_data
// buffer); before it, the struct ends at err_data.
func (cq *CQ) ErrDataSized() bool { return cq.dom.api >= fi.Version(1, 5) }

// ReadErr is fi_cq_readerr: it takes the error entry at the head of the
// queue into out. errBuf, if not nil, is the caller's err_data buffer (API
// 1.5 and later): the error data is copied there and ErrDataLen says how
// much. EAGAIN if the head is not an error.
func (cq *CQ) ReadErr(out *CQErr, errBuf []byte) (int, error) {
	d := cq.dom
	d.lock()
	defer d.unlock()
	if cq.n == 0 || cq.ring[cq.head].err == 0 {
		return 0, fi.EAGAIN
	}
	e := &cq.ring[cq.head]
	*out = CQErr{Ctx: e.ctx, Flags: e.flags, Len: e.len, Buf: e.buf, Data: e.data, Tag: e.tag,
		OLen: e.olen, Err: int32(e.err), ProvErr: e.provErr}
	switch {
	case errBuf != nil:
		out.ErrDataLen = copy(errBuf, e.errData[:e.errLen])
	case e.errLen > 0:
		out.ErrDataLen = e.errLen
		if cq.fast != nil {
			b := cq.fast[cqErrDataOff : cqErrDataOff+getinfo.MaxErrData]
			copy(b, e.errData[:e.errLen])
			out.ErrDataAddr = uintptr(unsafe.Pointer(&b[0]))
		}
	}
	cq.pop()
	return 1, nil
}

// SRead is fi_cq_sread / fi_cq_sreadfrom: Read, blocking up to timeout
// milliseconds (negative: forever) until an entry is there. On a CQ whose
// wait_cond is FI_CQ_COND_THRESHOLD, cond is the value of the call's cond
// argument, a count (fi_cq(3): "interpreted as a size_t threshold", not a
// pointer to one), and the read waits for that many entries, at most
// count; otherwise cond is ignored. EAGAIN on timeout or fi_cq_signal.
func (cq *CQ) SRead(buf []uint64, count int, src []uint64, cond uintptr, timeout int) (int, error) {
	if cq.kind == fi.WAIT_NONE {
		return 0, fi.ENOSYS
	}
	if !cq.fits(buf, count, src) {
		return 0, fi.EINVAL
	}
	threshold := 1
	if cq.threshold && cond > 1 && count > 1 {
		threshold = int(min(cond, uintptr(count)))
	}
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(time.Duration(timeout) * time.Millisecond)
	}
	for {
		n, err := cq.sreadPass(buf, count, src, threshold)
		if err != fi.EAGAIN {
			return n, err
		}
		if cq.signaled.Swap(false) {
			return 0, fi.EAGAIN
		}
		if !cq.block(deadline) {
			return 0, fi.EAGAIN
		}
	}
}

// block sleeps until something may have changed: an arrival on a bound
// endpoint's wire, a completion added by another thread, fi_cq_signal, or
// the deadline (zero: none). It returns false once the deadline passed.
func (cq *CQ) block(deadline time.Time) bool {
	wait := 50 * time.Millisecond
	if !deadline.IsZero() {
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		wait = min(wait, left)
	}
	if cq.fast != nil {
		// Tell the C fast path first, under the domain lock: from now on
		// its sends leave their completions to Go, which wakes us. One it
		// queued before shows once the lock is taken (absorbed into the
		// ring): then there is no sleeping.
		w := fastWord(cq.fast, cqSleepers)
		d := cq.dom
		d.lock()
		atomic.AddUint64(w, 1)
		ready := cq.n > 0
		d.unlock()
		defer atomic.AddUint64(w, ^uint64(0))
		if ready {
			return true
		}
	}
	cq.sleepers.Add(1)
	cq.dom.waitArrival(cq.wakeCh, wait)
	cq.sleepers.Add(-1)
	return true
}

// Nap is a reader's wait on a machine crowded by other jobs
// (cmd/libfabric-psm2/cq.c): it sleeps as SRead does, on any CQ, until an
// arrival on a bound endpoint's wire, a completion, fi_cq_signal, or d.
func (cq *CQ) Nap(d time.Duration) {
	cq.block(time.Now().Add(d))
}

// Signal is fi_cq_signal: wake a thread blocked in SRead.
func (cq *CQ) Signal() error {
	cq.signaled.Store(true)
	select {
	case cq.wakeCh <- struct{}{}:
	default:
	}
	cq.dom.wakeAll()
	return nil
}

// SreadSpin is how long fi_cq_sread polls before it sleeps
// (FI_PSM2_SREAD_SPIN): the C side spins with its fast reads.
func (cq *CQ) SreadSpin() time.Duration { return cq.dom.sreadSpin() }

// YieldSpin is how long fi_cq_read answers that it found nothing before
// it yields the CPU once (FI_PSM2_YIELD_SPIN; 0: never).
func (cq *CQ) YieldSpin() time.Duration {
	return time.Duration(cq.dom.params.YieldSpin) * time.Microsecond
}

// sreadSpin is how long a blocking wait (fi_cq_sread, fi_cntr_wait) polls
// before it sleeps: FI_PSM2_SREAD_SPIN.
func (d *Domain) sreadSpin() time.Duration {
	return time.Duration(d.params.SreadSpin) * time.Microsecond
}

// StrError is fi_cq_strerror: the text of a provider errno.
func (cq *CQ) StrError(provErrno int) string {
	if provErrno < 0 {
		provErrno = -provErrno
	}
	return fi.Errno(provErrno).Error()
}

// WaitFD is fi_control(FI_GETWAIT) of a CQ opened with FI_WAIT_FD.
func (cq *CQ) WaitFD() (int, error) {
	fd, err := cq.waitFD()
	if err == nil {
		cq.fdArmed.Store(true)
	}
	return fd, err
}

// ready reports whether the CQ has an entry after a progress pass; it arms
// the fd first so an entry that arrives after the check still raises it.
func (cq *CQ) ready() bool {
	if cq.hasFD() {
		cq.fdArmed.Store(true)
	}
	d := cq.dom
	d.lock()
	d.progressLocked()
	n := cq.n
	if n == 0 && cq.fdRaised {
		cq.drainFD()
	}
	d.unlock()
	return n > 0
}

// Close closes the CQ; EBUSY while endpoints are bound to it.
func (cq *CQ) Close() error {
	d := cq.dom
	d.lock()
	if cq.closed {
		d.unlock()
		return fi.EINVAL
	}
	if cq.bound > 0 {
		d.unlock()
		return fi.EBUSY
	}
	cq.closed = true
	for i, c := range d.cqs {
		if c == cq {
			d.cqs = append(d.cqs[:i], d.cqs[i+1:]...)
			d.regroup = true
			break
		}
	}
	d.unlock()
	if cq.ws != nil {
		cq.ws.remove(cq)
	}
	cq.closeFD()
	if cq.fast != nil {
		freeFastPage(cq.fast)
		cq.fast = nil
	}
	d.refs.Add(-1)
	return nil
}
