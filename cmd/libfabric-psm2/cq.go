package main

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"time"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
)

//export psm2go_cq_open
func psm2go_cq_open(dc *C.struct_psm2_domain, attr *C.struct_fi_cq_attr, out **C.struct_fid_cq, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_cq_open")
	d := domainObj(dc)
	if d == nil || attr == nil || out == nil {
		return -C.int(fi.EINVAL)
	}
	a := &provider.CQAttr{
		Size: uint64(attr.size), Flags: uint64(attr.flags), Format: int32(attr.format),
		WaitObj: int32(attr.wait_obj), SignalingVector: int32(attr.signaling_vector),
		WaitCond: int32(attr.wait_cond),
	}
	if a.WaitObj == fi.WAIT_SET {
		ws, rc := waitSetOf(attr.wait_set)
		if rc != 0 {
			return rc
		}
		a.WaitSet = ws
	}
	cq, err := d.OpenCQ(a)
	if err != nil {
		return errnoOf(err)
	}
	slot := objTable.cq.register(cq)
	c := C.psm2_cq_new(context, C.int32_t(a.WaitObj))
	if c == nil || slot == 0 {
		objTable.cq.release(slot)
		C.free(unsafe.Pointer(c))
		cq.Close()
		return -C.int(fi.ENOMEM)
	}
	c.handle = newHandle(cq)
	c.slot = C.uint32_t(slot)
	c.fast = (*C.uint64_t)(cq.FastPath())
	c.spin_ns = C.uint64_t(cq.SreadSpin().Nanoseconds())
	c.yield_ns = C.uint64_t(cq.YieldSpin().Nanoseconds())
	c.yield_next = c.yield_ns
	c.yield_least = c.yield_ns
	*out = &c.cq_fid
	return 0
}

func cqObj(c *C.struct_psm2_cq) *provider.CQ {
	if c == nil {
		return nil
	}
	return handleObj[provider.CQ](c.handle)
}

// psm2go_cq_read is fi_cq_read and fi_cq_readfrom (src NULL for read).
//
//export psm2go_cq_read
func psm2go_cq_read(slot C.uint32_t, buf unsafe.Pointer, count C.size_t, src *C.uint64_t) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_cq_read")
	cq := objTable.cq.lookup(uint32(slot))
	if cq == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	b, s, n0, ok := cqView(cq, buf, count, src)
	if !ok {
		return -C.ssize_t(fi.EINVAL)
	}
	n, err := cq.Read(b, n0, s)
	if err != nil {
		return C.ssize_t(errnoOf(err))
	}
	return C.ssize_t(n)
}

//export psm2go_cq_readerr
func psm2go_cq_readerr(slot C.uint32_t, buf *C.struct_fi_cq_err_entry, flags C.uint64_t) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_cq_readerr")
	cq := objTable.cq.lookup(uint32(slot))
	if cq == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	if buf == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	// Before API 1.5 the struct ends at err_data: err_data_size is
	// neither read nor written.
	sized := cq.ErrDataSized()
	var errBuf []byte
	if sized && buf.err_data != nil && buf.err_data_size > 0 {
		errBuf = cView(buf.err_data, min(buf.err_data_size, C.size_t(getinfo.MaxErrData)))
	}
	var e provider.CQErr
	n, err := cq.ReadErr(&e, errBuf)
	if err != nil {
		return C.ssize_t(errnoOf(err))
	}
	// Contexts and buffers are carried as addresses; store them as such.
	*(*uintptr)(unsafe.Pointer(&buf.op_context)) = e.Ctx
	*(*uintptr)(unsafe.Pointer(&buf.buf)) = e.Buf
	buf.flags = C.uint64_t(e.Flags)
	buf.len = C.size_t(e.Len)
	buf.data = C.uint64_t(e.Data)
	buf.tag = C.uint64_t(e.Tag)
	buf.olen = C.size_t(e.OLen)
	buf.err = C.int(e.Err)
	buf.prov_errno = C.int(e.ProvErr)
	switch {
	case errBuf != nil:
		buf.err_data_size = C.size_t(e.ErrDataLen)
	default:
		*(*uintptr)(unsafe.Pointer(&buf.err_data)) = e.ErrDataAddr
		if sized {
			buf.err_data_size = C.size_t(e.ErrDataLen)
		}
	}
	return C.ssize_t(n)
}

//export psm2go_cq_sread
func psm2go_cq_sread(slot C.uint32_t, buf unsafe.Pointer, count C.size_t, src *C.uint64_t, cond unsafe.Pointer, timeout C.int) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_cq_sread")
	cq := objTable.cq.lookup(uint32(slot))
	if cq == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	b, s, n0, ok := cqView(cq, buf, count, src)
	if !ok {
		return -C.ssize_t(fi.EINVAL)
	}
	// cond is a value, not a pointer (FI_CQ_COND_THRESHOLD: a count).
	n, err := cq.SRead(b, n0, s, uintptr(cond), int(timeout))
	if err != nil {
		return C.ssize_t(errnoOf(err))
	}
	return C.ssize_t(n)
}

// psm2go_local_procs is provider.LocalProcs, for cq.c's choice of how
// long to spin before a yield (read at most every 10 ms of idleness).
//
//export psm2go_local_procs
func psm2go_local_procs() (ret C.int) {
	defer guardInt(&ret, "psm2go_local_procs")
	return C.int(provider.LocalProcs())
}

// psm2go_cq_nap is CQ.Nap, for cq.c: a reader that waits on a machine
// crowded by other jobs sleeps until an arrival wakes it, at most ns
// nanoseconds.
//
//export psm2go_cq_nap
func psm2go_cq_nap(slot C.uint32_t, ns C.int64_t) {
	defer guardVoid("psm2go_cq_nap")
	if cq := objTable.cq.lookup(uint32(slot)); cq != nil && ns > 0 {
		cq.Nap(time.Duration(ns))
	}
}

//export psm2go_cq_signal
func psm2go_cq_signal(c *C.struct_psm2_cq) (ret C.int) {
	defer guardInt(&ret, "psm2go_cq_signal")
	cq := cqObj(c)
	if cq == nil {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(cq.Signal())
}

//export psm2go_cq_strerror
func psm2go_cq_strerror(c *C.struct_psm2_cq, provErrno C.int, buf *C.char, length C.size_t) {
	defer guardVoid("psm2go_cq_strerror")
	var s string
	if cq := cqObj(c); cq != nil {
		s = cq.StrError(int(provErrno))
	} else {
		s = fi.Errno(absInt(int(provErrno))).Error()
	}
	cstrCopy(buf, length, s)
}

func absInt(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// psm2go_cq_waitfd returns the CQ's fd for FI_GETWAIT, or a negative
// FI_E* code.
//
//export psm2go_cq_waitfd
func psm2go_cq_waitfd(c *C.struct_psm2_cq) (ret C.int) {
	defer guardInt(&ret, "psm2go_cq_waitfd")
	cq := cqObj(c)
	if cq == nil {
		return -C.int(fi.EINVAL)
	}
	fd, err := cq.WaitFD()
	if err != nil {
		return errnoOf(err)
	}
	return C.int(fd)
}

//export psm2go_cq_close
func psm2go_cq_close(c *C.struct_psm2_cq) (ret C.int) {
	defer guardInt(&ret, "psm2go_cq_close")
	cq := cqObj(c)
	if cq == nil {
		return -C.int(fi.EINVAL)
	}
	if err := cq.Close(); err != nil {
		return errnoOf(err)
	}
	objTable.cq.release(uint32(c.slot))
	deleteHandle(c.handle)
	c.handle, c.slot = nil, 0
	C.psm2_retire(&c.cq_fid.fid, C.sizeof_struct_fid_cq, C.sizeof_struct_psm2_cq)
	return 0
}

// maxCQRead bounds the entries one read takes: a read returns at most
// count entries, so a larger count only means fewer than asked.
const maxCQRead = 1 << 20

// cqView views the application's buffer of count entries of cq's format
// (struct fi_cq_*_entry), and its fi_addr_t array if src is not NULL, as
// Go slices of words: the one place a CQ read's C memory becomes Go's.
// ok is false for a NULL buffer with entries.
func cqView(cq *provider.CQ, buf unsafe.Pointer, count C.size_t, src *C.uint64_t) (b, s []uint64, n int, ok bool) {
	if count == 0 {
		return nil, nil, 0, true
	}
	if buf == nil {
		return nil, nil, 0, false
	}
	n = int(min(count, maxCQRead))
	b = unsafe.Slice((*uint64)(buf), n*cq.EntryWords())
	if src != nil {
		s = unsafe.Slice((*uint64)(unsafe.Pointer(src)), n)
	}
	return b, s, n, true
}
