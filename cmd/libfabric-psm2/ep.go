package main

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider"
	"github.com/gopsm2/libfabric-psm2/provider/atomicop"
)

// psm2go_ep_open opens an endpoint; info may be NULL (the provider's
// defaults), as in psm2.
//
//export psm2go_ep_open
func psm2go_ep_open(dc *C.struct_psm2_domain, info *C.struct_fi_info, out **C.struct_fid_ep, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_ep_open")
	d := domainObj(dc)
	if d == nil || out == nil {
		return -C.int(fi.EINVAL)
	}
	ep, err := d.OpenEndpoint(infoFromC(info), uintptr(context))
	if err != nil {
		return errnoOf(err)
	}
	c := newCEP(ep, context)
	if c == nil {
		ep.Close()
		return -C.int(fi.ENOMEM)
	}
	*out = &c.ep_fid
	return 0
}

// newCEP makes the C endpoint of ep (nil: out of memory; the caller
// closes ep).
func newCEP(ep *provider.Endpoint, context unsafe.Pointer) *C.struct_psm2_ep {
	slot := objTable.ep.register(ep)
	c := C.psm2_ep_new(context)
	if c == nil || slot == 0 {
		objTable.ep.release(slot)
		C.free(unsafe.Pointer(c))
		return nil
	}
	c.handle = newHandle(ep)
	c.slot = C.uint32_t(slot)
	c.tx_op_flags = C.uint64_t(ep.TxOpFlags())
	c.rx_op_flags = C.uint64_t(ep.RxOpFlags())
	c.fast = (*C.uint64_t)(ep.FastPath())
	return c
}

// freeCEP lets go of the C endpoint of a closed endpoint.
func freeCEP(c *C.struct_psm2_ep) {
	objTable.ep.release(uint32(c.slot))
	deleteHandle(c.handle)
	c.handle, c.slot, c.fast = nil, 0, nil
	C.psm2_retire(&c.ep_fid.fid, C.sizeof_struct_fid_ep, C.sizeof_struct_psm2_ep)
}

func epObj(c *C.struct_psm2_ep) *provider.Endpoint {
	if c == nil {
		return nil
	}
	return handleObj[provider.Endpoint](c.handle)
}

// psm2go_ep_close closes the endpoint itself (ep.c frees aliases and
// refuses while any is open).
//
//export psm2go_ep_close
func psm2go_ep_close(c *C.struct_psm2_ep) (ret C.int) {
	defer guardInt(&ret, "psm2go_ep_close")
	ep := epObj(c)
	if ep == nil {
		return -C.int(fi.EINVAL)
	}
	if err := ep.Close(); err != nil {
		return errnoOf(err)
	}
	freeCEP(c)
	return 0
}

//export psm2go_ep_bind
func psm2go_ep_bind(c *C.struct_psm2_ep, h unsafe.Pointer, flags C.uint64_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_ep_bind")
	ep := epObj(c)
	if ep == nil {
		return -C.int(fi.EINVAL)
	}
	switch o := handleValue(h).(type) {
	case *provider.AV, *provider.CQ, *provider.Cntr, *provider.EQ, *provider.STX:
		return errnoOf(ep.Bind(o, uint64(flags)))
	}
	return -C.int(fi.EINVAL)
}

//export psm2go_ep_set_opflags
func psm2go_ep_set_opflags(c *C.struct_psm2_ep, tx, rx C.uint64_t) {
	defer guardVoid("psm2go_ep_set_opflags")
	if ep := epObj(c); ep != nil {
		ep.SetTxOpFlags(uint64(tx))
		ep.SetRxOpFlags(uint64(rx))
	}
}

//export psm2go_ep_enable
func psm2go_ep_enable(c *C.struct_psm2_ep) (ret C.int) {
	defer guardInt(&ret, "psm2go_ep_enable")
	ep := epObj(c)
	if ep == nil {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(ep.Enable())
}

// psm2go_ep_release_ctx: the last fid of a scalable endpoint's context
// closed.
//
//export psm2go_ep_release_ctx
func psm2go_ep_release_ctx(c *C.struct_psm2_ep) (ret C.int) {
	defer guardInt(&ret, "psm2go_ep_release_ctx")
	ep := epObj(c)
	if ep == nil {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(ep.ReleaseContext())
}

// psm2go_ep_enable_role is fi_enable on a scalable endpoint's
// fi_tx_context (role 1) or fi_rx_context (role 2).
//
//export psm2go_ep_enable_role
func psm2go_ep_enable_role(c *C.struct_psm2_ep, role C.int) (ret C.int) {
	defer guardInt(&ret, "psm2go_ep_enable_role")
	ep := epObj(c)
	if ep == nil {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(ep.EnableRole(uint8(role)))
}

//export psm2go_ep_cancel
func psm2go_ep_cancel(c *C.struct_psm2_ep, context unsafe.Pointer) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_ep_cancel")
	ep := epObj(c)
	if ep == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	return C.ssize_t(errnoOf(ep.Cancel(context)))
}

//export psm2go_ep_getopt
func psm2go_ep_getopt(c *C.struct_psm2_ep, level, name C.int, val unsafe.Pointer, optlen *C.size_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_ep_getopt")
	ep := epObj(c)
	if ep == nil || val == nil || optlen == nil {
		return -C.int(fi.EINVAL)
	}
	n, err := ep.GetOpt(int(level), int(name), cView(val, min(*optlen, 64)))
	if n > 0 {
		*optlen = C.size_t(n)
	}
	return errnoOf(err)
}

//export psm2go_ep_setopt
func psm2go_ep_setopt(c *C.struct_psm2_ep, level, name C.int, val unsafe.Pointer, optlen C.size_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_ep_setopt")
	ep := epObj(c)
	if ep == nil || val == nil {
		return -C.int(fi.EINVAL)
	}
	// No option is longer than 64 bytes: a longer optlen stays wrong.
	return errnoOf(ep.SetOpt(int(level), int(name), cView(val, min(optlen, 64))))
}

//export psm2go_ep_getname
func psm2go_ep_getname(c *C.struct_psm2_ep, addr unsafe.Pointer, addrlen *C.size_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_ep_getname")
	ep := epObj(c)
	if ep == nil || addrlen == nil {
		return -C.int(fi.EINVAL)
	}
	return getname(addr, addrlen, ep.Name)
}

// getname is fi_getname's C side for a name that name copies into a
// buffer (an endpoint's, a scalable endpoint's).
func getname(addr unsafe.Pointer, addrlen *C.size_t, name func([]byte) (int, error)) C.int {
	want := *addrlen
	n, err := name(cView(addr, min(want, 64))) // a name is 16 bytes, its string 27
	*addrlen = C.size_t(n)
	if addr == nil && want >= C.size_t(n) {
		return -C.int(fi.EINVAL) // room claimed but no buffer
	}
	return errnoOf(err)
}

//export psm2go_ep_setname
func psm2go_ep_setname(c *C.struct_psm2_ep, addr unsafe.Pointer, addrlen C.size_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_ep_setname")
	ep := epObj(c)
	if ep == nil || addr == nil {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(ep.SetName(cView(addr, min(addrlen, provider.EPNameLen))))
}

// psm2go_ep_size_left is fi_tx_size_left (tx set) and fi_rx_size_left.
//
//export psm2go_ep_size_left
func psm2go_ep_size_left(slot C.uint32_t, tx C.int) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_ep_size_left")
	ep := objTable.ep.lookup(uint32(slot))
	if ep == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	var n int64
	var err error
	if tx != 0 {
		n, err = ep.TxSizeLeft()
	} else {
		n, err = ep.RxSizeLeft()
	}
	if err != nil {
		return C.ssize_t(errnoOf(err))
	}
	return C.ssize_t(n)
}

// psm2go_ep_send is every send of the msg and tagged tables: iov holds
// count entries; flags says which API and carries the op flags (see
// ep.c).
//
//export psm2go_ep_send
func psm2go_ep_send(slot C.uint32_t, iov *C.struct_iovec, count C.size_t, dest, tag, data C.uint64_t,
	context unsafe.Pointer, flags C.uint64_t) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_ep_send")
	ep := objTable.ep.lookup(uint32(slot))
	if ep == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	v, ok := iovecs(unsafe.Pointer(iov), count)
	if !ok {
		return -C.ssize_t(fi.EINVAL)
	}
	err := ep.Send(v, uint64(dest), uint64(tag), uint64(data), context, uint64(flags))
	return C.ssize_t(errnoOf(err))
}

// psm2go_ep_rma is every call of the rma table: iov (count entries) is the
// local memory, dest the peer, addr and key the remote memory; flags has
// FI_READ or FI_WRITE and the op flags (see ep.c).
//
//export psm2go_ep_rma
func psm2go_ep_rma(slot C.uint32_t, iov *C.struct_iovec, count C.size_t, dest, addr, key, data C.uint64_t,
	context unsafe.Pointer, flags C.uint64_t) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_ep_rma")
	ep := objTable.ep.lookup(uint32(slot))
	if ep == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	v, ok := iovecs(unsafe.Pointer(iov), count)
	if !ok {
		return -C.ssize_t(fi.EINVAL)
	}
	err := ep.RMA(v, uint64(dest), uint64(addr), uint64(key), uint64(data), context, uint64(flags))
	return C.ssize_t(errnoOf(err))
}

// Long double atomics are done in C (atomic.c): Go has no such type.
func init() {
	atomicop.LongDoubleApply = func(op, dt int, dst, src, cmp unsafe.Pointer, count int) bool {
		return C.psm2_ld_apply(C.int(op), C.int(dt), dst, src, cmp, C.size_t(count)) == 0
	}
}

// psm2go_ep_atomic is every call of the atomic table: kind 0 atomic, 1
// fetch, 2 compare; buf, cmp and res are struct fi_ioc arrays (see ep.c).
//
//export psm2go_ep_atomic
func psm2go_ep_atomic(slot C.uint32_t, kind C.int, buf unsafe.Pointer, nbuf C.size_t, cmp unsafe.Pointer, ncmp C.size_t,
	res unsafe.Pointer, nres C.size_t, dest, addr, key C.uint64_t, datatype, op C.int,
	context unsafe.Pointer, flags C.uint64_t) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_ep_atomic")
	ep := objTable.ep.lookup(uint32(slot))
	if ep == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	if op == C.FI_ATOMIC_READ {
		buf, nbuf = nil, 0 // ignored, and may be NULL (fi_atomic(3))
	}
	b, ok1 := iovecs(buf, nbuf) // struct fi_ioc has struct iovec's layout
	c, ok2 := iovecs(cmp, ncmp)
	r, ok3 := iovecs(res, nres)
	if !ok1 || !ok2 || !ok3 {
		return -C.ssize_t(fi.EINVAL)
	}
	err := ep.Atomic(int(kind), b, c, r, uint64(dest), uint64(addr), uint64(key),
		int(datatype), int(op), context, uint64(flags))
	return C.ssize_t(errnoOf(err))
}

// psm2go_atomic_valid answers the *atomicvalid calls (kind as above).
//
//export psm2go_atomic_valid
func psm2go_atomic_valid(kind, datatype, op C.int, count *C.size_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_atomic_valid")
	n, err := provider.AtomicValid(int(kind), int(datatype), int(op))
	if err != nil {
		return errnoOf(err)
	}
	*count = C.size_t(n)
	return 0
}

// psm2go_ep_recv is every receive of the msg and tagged tables.
//
//export psm2go_ep_recv
func psm2go_ep_recv(slot C.uint32_t, iov *C.struct_iovec, count C.size_t, src, tag, ignore C.uint64_t,
	context unsafe.Pointer, flags C.uint64_t) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_ep_recv")
	ep := objTable.ep.lookup(uint32(slot))
	if ep == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	v, ok := iovecs(unsafe.Pointer(iov), count)
	if !ok {
		return -C.ssize_t(fi.EINVAL)
	}
	err := ep.Recv(v, uint64(src), uint64(tag), uint64(ignore), context, uint64(flags))
	return C.ssize_t(errnoOf(err))
}

// Layouts the views below rely on: provider.Iovec is struct iovec, and
// struct fi_ioc (addr, count) is laid out as struct iovec is.
var (
	_ [unsafe.Sizeof(C.struct_iovec{}) - unsafe.Sizeof(provider.Iovec{})]byte
	_ [unsafe.Sizeof(provider.Iovec{}) - unsafe.Sizeof(C.struct_iovec{})]byte
	_ [unsafe.Offsetof(C.struct_iovec{}.iov_len) - unsafe.Offsetof(provider.Iovec{}.Len)]byte
	_ [unsafe.Offsetof(provider.Iovec{}.Len) - unsafe.Offsetof(C.struct_iovec{}.iov_len)]byte
	_ [unsafe.Sizeof(C.struct_fi_ioc{}) - unsafe.Sizeof(provider.Iovec{})]byte
	_ [unsafe.Sizeof(provider.Iovec{}) - unsafe.Sizeof(C.struct_fi_ioc{})]byte
	_ [unsafe.Offsetof(C.struct_fi_ioc{}.count) - unsafe.Offsetof(provider.Iovec{}.Len)]byte
	_ [unsafe.Offsetof(provider.Iovec{}.Len) - unsafe.Offsetof(C.struct_fi_ioc{}.count)]byte
)

// maxIovecs bounds the entries a view takes: far above any iov_limit, so
// the provider answers a long array with its own FI_EINVAL, and far below
// what could make the view's length overflow.
const maxIovecs = 1 << 20

// iovecs views the application's count struct iovec (or struct fi_ioc)
// entries at p as a []provider.Iovec, without copying: the one place a C
// array of buffers becomes a Go slice. ok is false for a NULL array with
// entries, or a count no call could mean.
func iovecs(p unsafe.Pointer, count C.size_t) (v []provider.Iovec, ok bool) {
	switch {
	case count == 0:
		return nil, true
	case p == nil || count > maxIovecs:
		return nil, false
	}
	return unsafe.Slice((*provider.Iovec)(p), int(count)), true
}
