package provider

import (
	"bytes"
	"encoding/binary"
	"slices"
	"sync"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/internal/umem"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// Atomics: fi_atomic*, fi_fetch_atomic* and fi_compare_atomic* as RMA
// protocol messages (rma.go). A request names the op and datatype in its
// header flags (atomicFlags) and carries the RMA prefix (key, address,
// length in bytes), the operands and, for a compare, the compare values. The
// target applies the op element by element under atomicMu and answers: an
// ack, or for a fetch or compare an atomic-resp carrying the old values
// (a read-resp in all but name). Any count goes: a large request or
// answer travels by the wire's rendezvous.

// Datatypes and ops (enum fi_datatype, enum fi_op).
const (
	dtInt8 = iota
	dtUint8
	dtInt16
	dtUint16
	dtInt32
	dtUint32
	dtInt64
	dtUint64
	dtFloat
	dtDouble
	dtFloatComplex
	dtDoubleComplex
	dtLongDouble
	dtLongDoubleComplex
	dtLast
)

const (
	opMin = iota
	opMax
	opSum
	opProd
	opLor
	opLand
	opBor
	opBand
	opLxor
	opBxor
	opAtomicRead
	opAtomicWrite
	opCswap
	opCswapNe
	opCswapLe
	opCswapLt
	opCswapGe
	opCswapGt
	opMswap
	opLast
)

// Atomic kinds (AtomicKind).
const (
	AtomicWrite   = 0 // fi_atomic*
	AtomicFetch   = 1 // fi_fetch_atomic*
	AtomicCompare = 2 // fi_compare_atomic*
)

// RMA message kinds of the atomics (rma.go has the others).
const (
	rmaAtomic        = 7 // answered by an ack
	rmaAtomicFetch   = 8 // answered by an atomic-resp
	rmaAtomicCompare = 9 // answered by an atomic-resp
	rmaAtomicResp    = 10
)

// An atomic request names its op and datatype in the header flags (bits
// 16-23 and 24-31), so that its payload is the RMA prefix and the
// operands: an 8-byte fetch-add is one 32-byte payload, one shm cell.
const (
	atomicOpShift = 16
	atomicDtShift = 24
	atomicHdr     = rmaPrefix
)

// atomicFlags returns the header flags of an atomic request of kind
// kindMsg.
func atomicFlags(kindMsg uint32, op, dt int) uint32 {
	return hfRMA | kindMsg<<rmaKindShift | uint32(op)<<atomicOpShift | uint32(dt)<<atomicDtShift
}

// atomicChunk is what psm2 sizes the *valid answers by: its largest
// short active message (8128 bytes on hfi1 and shm). Larger counts work
// here too; the answer is the count libfabric users expect.
const atomicChunk = 8128

var dtSize = [dtLast]int{1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 8, 16, 16, 32}

func isInt(dt int) bool { return dt <= dtUint64 }
func isComplex(dt int) bool {
	return dt == dtFloatComplex || dt == dtDoubleComplex || dt == dtLongDoubleComplex
}

// AtomicValid answers fi_atomicvalid (kind AtomicWrite),
// fi_fetch_atomicvalid and fi_compare_atomicvalid: whether the provider
// does op on datatype dt, and how many elements fit psm2's chunk. psm2's
// first two check only the op, so they accept pairs its target then
// refuses (MIN on a complex, BOR on a float), which breaks callers that
// trust the answer (fabtests' fi_rdm_atomic -o all): here every kind
// checks the pair, against psm2's table; the counts are psm2's.
func AtomicValid(kind, dt, op int) (int, error) {
	if dt < 0 || dt >= dtLast || op < 0 || op >= opLast || !pairValid(dt, op) {
		return 0, fi.EOPNOTSUPP
	}
	size := dtSize[dt]
	switch kind {
	case AtomicWrite, AtomicFetch:
		if op > opBxor && op != opAtomicWrite && !(kind == AtomicFetch && op == opAtomicRead) {
			return 0, fi.EOPNOTSUPP
		}
		return atomicChunk / size, nil
	case AtomicCompare:
		if op < opCswap || op > opMswap {
			return 0, fi.EOPNOTSUPP
		}
		return atomicChunk / (2 * size), nil
	}
	return 0, fi.EINVAL
}

// pairValid says whether op applies to datatype dt (psm2's table).
func pairValid(dt, op int) bool {
	switch op {
	case opMin, opMax, opCswapLe, opCswapLt, opCswapGe, opCswapGt:
		return !isComplex(dt)
	case opLor, opLand, opBor, opBand, opLxor, opBxor, opMswap:
		return isInt(dt)
	case opSum, opProd, opAtomicRead, opAtomicWrite, opCswap, opCswapNe:
		return true
	}
	return false
}

// LongDoubleApply applies op to count long double (complex) elements; the
// C side of the library sets it (Go has no long double). Nil: such ops
// fail with EOPNOTSUPP.
var LongDoubleApply func(op, dt int, dst, src, cmp unsafe.Pointer, count int) bool

// The process's atomic lock (lockAtomics, fastrma.go) makes the ops of
// every endpoint of the process atomic with respect to each other, as
// psm2's process-wide atomic lock does: two domains may expose the same
// memory. atomicMu stands in for it where it has no page.
var atomicMu sync.Mutex

// atomicApply applies op to the n elements of dt at dst with operands src
// (and cmp), first copying the old values to res (if not nil).
func atomicApply(op, dt int, dst, src, cmp, res []byte) fi.Errno {
	if dt < 0 || dt >= dtLast || op < 0 || op >= opLast || !pairValid(dt, op) {
		return fi.EOPNOTSUPP
	}
	size := dtSize[dt]
	n := len(dst) / size
	if len(dst)%size != 0 || len(src) < n*size && op != opAtomicRead || isCompareOp(op) && len(cmp) < n*size {
		return fi.EINVAL
	}
	if n == 0 {
		return 0
	}
	lockAtomics()
	defer unlockAtomics()
	if res != nil {
		if copyIn(res[:n*size], dst) != 0 {
			return fi.EFAULT
		}
	}
	if op == opAtomicRead {
		return 0
	}
	if dt == dtLongDouble || dt == dtLongDoubleComplex {
		// C code: a fault there would kill the process, so the region's
		// ends are tried first (umem.Writable).
		if LongDoubleApply == nil || !umem.Writable(dst[:1]) || !umem.Writable(dst[len(dst)-1:]) {
			return fi.EOPNOTSUPP
		}
		// The operands may sit inside a Go object that holds pointers
		// (a wire's receive buffer), which cgo refuses to pass: copies.
		src, cmp = bytes.Clone(src), bytes.Clone(cmp)
		if !LongDoubleApply(op, dt, ptr(dst), ptr(src), ptr(cmp), n) {
			return fi.EOPNOTSUPP
		}
		return 0
	}
	if guardedApply(op, dt, ptr(dst), ptr(src), ptr(cmp), n) != 0 {
		return fi.EFAULT
	}
	return 0
}

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// guardedApply applies op in Go; a fault on the target memory (mapped
// when registered, unmapped since) is returned as its address instead of
// killing the process.
func guardedApply(op, dt int, d, s, c unsafe.Pointer, n int) (fault uintptr) {
	defer umem.Catch(umem.Guard(), &fault)
	switch dt {
	case dtInt8:
		applyInt[int8](op, d, s, c, n)
	case dtUint8:
		applyInt[uint8](op, d, s, c, n)
	case dtInt16:
		applyInt[int16](op, d, s, c, n)
	case dtUint16:
		applyInt[uint16](op, d, s, c, n)
	case dtInt32:
		applyInt[int32](op, d, s, c, n)
	case dtUint32:
		applyInt[uint32](op, d, s, c, n)
	case dtInt64:
		applyInt[int64](op, d, s, c, n)
	case dtUint64:
		applyInt[uint64](op, d, s, c, n)
	case dtFloat:
		applyReal[float32](op, d, s, c, n)
	case dtDouble:
		applyReal[float64](op, d, s, c, n)
	case dtFloatComplex:
		applyComplex[complex64](op, d, s, c, n)
	case dtDoubleComplex:
		applyComplex[complex128](op, d, s, c, n)
	}
	return 0
}

func isCompareOp(op int) bool { return op >= opCswap && op <= opMswap }

type integer interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64
}

type real interface{ ~float32 | ~float64 }

func elems[T any](p unsafe.Pointer, n int) []T {
	if p == nil {
		return nil
	}
	return unsafe.Slice((*T)(p), n)
}

func b2[T integer](b bool) T {
	if b {
		return 1
	}
	return 0
}

func applyInt[T integer](op int, d, s, c unsafe.Pointer, n int) {
	dst, src, cmp := elems[T](d, n), elems[T](s, n), elems[T](c, n)
	for i := range dst {
		x, y := dst[i], src[i]
		switch op {
		case opMin:
			x = min(x, y)
		case opMax:
			x = max(x, y)
		case opSum:
			x += y
		case opProd:
			x *= y
		case opLor:
			x = b2[T](x != 0 || y != 0)
		case opLand:
			x = b2[T](x != 0 && y != 0)
		case opBor:
			x |= y
		case opBand:
			x &= y
		case opLxor:
			x = b2[T]((x != 0) != (y != 0))
		case opBxor:
			x ^= y
		case opAtomicWrite:
			x = y
		case opMswap:
			x = y&cmp[i] | x&^cmp[i]
		default:
			if cswap(op, cmp[i], x) {
				x = y
			}
		}
		dst[i] = x
	}
}

func applyReal[T real](op int, d, s, c unsafe.Pointer, n int) {
	dst, src, cmp := elems[T](d, n), elems[T](s, n), elems[T](c, n)
	for i := range dst {
		x, y := dst[i], src[i]
		switch op {
		case opMin:
			if y < x {
				x = y
			}
		case opMax:
			if y > x {
				x = y
			}
		case opSum:
			x += y
		case opProd:
			x *= y
		case opAtomicWrite:
			x = y
		default:
			if cswap(op, cmp[i], x) {
				x = y
			}
		}
		dst[i] = x
	}
}

func applyComplex[T complex64 | complex128](op int, d, s, c unsafe.Pointer, n int) {
	dst, src, cmp := elems[T](d, n), elems[T](s, n), elems[T](c, n)
	for i := range dst {
		switch op {
		case opSum:
			dst[i] += src[i]
		case opProd:
			dst[i] *= src[i]
		case opAtomicWrite:
			dst[i] = src[i]
		case opCswap:
			if cmp[i] == dst[i] {
				dst[i] = src[i]
			}
		case opCswapNe:
			if cmp[i] != dst[i] {
				dst[i] = src[i]
			}
		}
	}
}

// cswap says whether a compare op with compare value c swaps at value x
// (FI_CSWAP_LE: c <= x, ...).
func cswap[T integer | real](op int, c, x T) bool {
	switch op {
	case opCswap:
		return c == x
	case opCswapNe:
		return c != x
	case opCswapLe:
		return c <= x
	case opCswapLt:
		return c < x
	case opCswapGe:
		return c >= x
	case opCswapGt:
		return c > x
	}
	return false
}

// Atomic starts an fi_atomic* (kind AtomicWrite), fi_fetch_atomic*
// (AtomicFetch) or fi_compare_atomic* (AtomicCompare) call. buf, cmp and
// res are struct fi_ioc arrays (Len counts elements of datatype dt) of the
// operands, compare values and results; the remote memory is addr/key at
// dest. For FI_ATOMIC_READ, buf is ignored (fi_atomic(3): it may be NULL,
// so the caller passes none).
func (ep *Endpoint) Atomic(kind int, buf, cmp, res []Iovec,
	dest, addr, key uint64, dt, op int, ctx unsafe.Pointer, flags uint64) error {
	if dt < 0 || dt >= dtLast || op < 0 || op >= opLast {
		return fi.EOPNOTSUPP
	}
	if _, err := AtomicValid(kind, dt, op); err != nil {
		return err
	}
	size := uint64(dtSize[dt])
	var vb, vc, vr [getinfo.IovLimit]Iovec
	// Element counts to bytes, into arrays of this call's own.
	conv := func(dst *[getinfo.IovLimit]Iovec, in []Iovec) ([]Iovec, bool) {
		n := len(in)
		if n > getinfo.IovLimit {
			return nil, false
		}
		for i := range in {
			if in[i].Len > 1<<40 {
				return nil, false
			}
			dst[i] = Iovec{Base: in[i].Base, Len: in[i].Len * size}
		}
		return dst[:n], true
	}
	if op == opAtomicRead {
		buf = nil // ignored (fi_atomic(3))
	}
	b, ok1 := conv(&vb, buf)
	c, ok2 := conv(&vc, cmp)
	r, ok3 := conv(&vr, res)
	if !ok1 || !ok2 || !ok3 {
		return fi.EINVAL
	}
	if flags&fi.TRIGGER != 0 {
		return ep.deferCall(&trigger{kind: trigAtomic, akind: kind, iov: slices.Clone(b), cmp: slices.Clone(c), res: slices.Clone(r),
			peer: dest, addr: addr, key: key, dt: dt, op: op, flags: flags}, ctx)
	}
	d := ep.dom
	d.lock()
	defer d.unlock()
	err := ep.atomicLocked(kind, b, c, r, dest, addr, key, dt, op, uintptr(ctx), flags)
	d.refreshFast()
	if err != 0 {
		return err
	}
	return nil
}

func (ep *Endpoint) atomicLocked(kind int, buf, cmp, res []Iovec, dest, addr, key uint64, dt, op int, ctx uintptr, flags uint64) fi.Errno {
	if !ep.enabled {
		return fi.EOPBADSTATE
	}
	e := &ep.engine
	size := uint64(dtSize[dt])
	if op == opAtomicRead {
		// The operand of an atomic read is ignored and may be NULL
		// (fi_atomic(3)); MPICH's MPI_Fetch_and_op(MPI_NO_OP) passes NULL.
		buf = nil
	}
	nbuf, errno := iovTotal(buf, ep.maxMsgSize)
	if errno != 0 {
		return errno
	}
	ncmp, errno := iovTotal(cmp, ep.maxMsgSize)
	if errno != 0 {
		return errno
	}
	nres, errno := iovTotal(res, ep.maxMsgSize)
	if errno != 0 {
		return errno
	}
	// The element count comes from the operands (the result buffers for
	// an atomic read, whose operand is ignored).
	n := nbuf
	if op == opAtomicRead {
		n, nbuf = nres, 0
	}
	if n%size != 0 || n == 0 || n > ep.maxMsgSize/2 ||
		kind != AtomicWrite && nres < n || kind == AtomicCompare && ncmp < n {
		return fi.EINVAL
	}
	if flags&fi.INJECT != 0 && (kind != AtomicWrite || n > ep.injectSize) {
		return fi.EMSGSIZE
	}
	o, errno := ep.rmaStart(dest, addr, key, ctx, flags, n, kind == AtomicWrite)
	if errno != 0 {
		return errno
	}
	o.Proto.atomic = true
	if kind != AtomicWrite {
		if len(res) == 1 {
			o.Buf = uintptr(res[0].Base)
		} else {
			o.Proto.iov = append(o.Proto.iov[:0], res...)
		}
	}
	ep.armAnswer(o)
	hdr := e.rma.scratch[:] // the wire copies it (SendCopy)
	binary.LittleEndian.PutUint64(hdr[0:], key)
	binary.LittleEndian.PutUint64(hdr[8:], addr)
	binary.LittleEndian.PutUint64(hdr[16:], n)
	iov := e.iov[:1]
	iov[0] = hdr
	gather := func(v []Iovec, limit uint64) {
		for i := range v {
			k := min(v[i].Len, limit)
			if k > 0 {
				iov = append(iov, v[i].Bytes()[:k])
			}
			limit -= k
		}
	}
	total := uint64(atomicHdr)
	if nbuf > 0 {
		gather(buf, n)
		total += n
	}
	kindMsg := uint32(rmaAtomic)
	switch kind {
	case AtomicFetch:
		kindMsg = rmaAtomicFetch
	case AtomicCompare:
		kindMsg = rmaAtomicCompare
		gather(cmp, n)
		total += n
	}
	h := &e.hdr
	*h = transport.Header{Flags: atomicFlags(kindMsg, op, dt), Tag: rmaID(o), Len: total}
	if len(iov) > getinfo.IovLimit {
		// More pieces than the wire's gather list: flatten them.
		flat := make([]byte, 0, total)
		for _, b := range iov {
			flat = append(flat, b...)
		}
		iov = append(iov[:0], flat)
	}
	started, errno := ep.rmaRequest(o, h, iov)
	if started {
		e.rma.stats.Atomics++
		e.rma.stats.AtomicBytes += total - atomicHdr
	}
	return errno
}

// atomicServe applies an atomic request at the target and answers it.
func (ep *Endpoint) atomicServe(h *transport.Header, src uint64, c transport.Conn, payload []byte) {
	kind := rmaKind(h)
	answer := func(errno fi.Errno, old []byte) {
		if kind == rmaAtomic {
			ep.rmaAnswer(c, rmaAck, h.Tag, errno)
			return
		}
		if errno != 0 {
			ep.rmaAnswer(c, rmaAtomicResp, h.Tag, errno)
			return
		}
		rh := transport.Header{Flags: hfRMA | rmaAtomicResp<<rmaKindShift, Tag: h.Tag, Len: uint64(len(old))}
		if len(old) <= rmaSmall {
			ep.rmaPostSmall(c, rh, old, rmaReplyCookie)
			return
		}
		// (a copy, so that small stack buffers never escape here)
		ep.rmaPost(c, rh, [][]byte{bytes.Clone(old)}, rmaReplyCookie, transport.SendCopy)
	}
	if len(payload) < atomicHdr {
		return
	}
	key := binary.LittleEndian.Uint64(payload[0:])
	addr := binary.LittleEndian.Uint64(payload[8:])
	n := binary.LittleEndian.Uint64(payload[16:])
	op := int(h.Flags >> atomicOpShift & 0xff)
	dt := int(h.Flags >> atomicDtShift)
	body := payload[atomicHdr:]
	var srcb, cmpb []byte
	switch {
	case n > uint64(len(body)) && !(op == opAtomicRead && len(body) == 0):
		answer(fi.EIO, nil)
		return
	case op == opAtomicRead:
	case kind == rmaAtomicCompare:
		if uint64(len(body)) != 2*n {
			answer(fi.EIO, nil)
			return
		}
		srcb, cmpb = body[:n], body[n:]
	default:
		srcb = body[:n]
	}
	access := fi.REMOTE_WRITE
	switch {
	case op == opAtomicRead:
		access = fi.REMOTE_READ
	case kind != rmaAtomic:
		access = fi.REMOTE_READ | fi.REMOTE_WRITE
	}
	va, mr, errno := ep.dom.mrs.resolve(key, addr, n, access)
	if errno != 0 {
		errno = rmaRemoteErr
	}
	ep.rmaCount(errno)
	var old []byte
	var small [rmaSmall]byte
	if errno == 0 {
		if kind != rmaAtomic {
			old = small[:min(n, rmaSmall)]
			if n > rmaSmall {
				old = make([]byte, n)
			}
		}
		errno = atomicApply(op, dt, cbytes(va, n), srcb, cmpb, old)
	}
	if errno == 0 {
		if op == opAtomicRead {
			if ep.remReadCntr != nil {
				ep.remReadCntr.inc()
			}
		} else {
			ep.rmaWritten(&transport.Header{}, src, va, n, mr)
		}
	}
	answer(errno, old)
}
