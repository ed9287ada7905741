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
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
)

//export psm2go_mr_reg
func psm2go_mr_reg(dc *C.struct_psm2_domain, iov *C.struct_iovec, count C.size_t,
	access, offset, key, flags C.uint64_t, out **C.struct_fid_mr, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_mr_reg")
	d := domainObj(dc)
	if d == nil || out == nil || iov == nil || count == 0 || count > getinfo.MRIovLimit {
		return -C.int(fi.EINVAL)
	}
	civ := unsafe.Slice(iov, int(count))
	segs := make([]provider.MRIov, len(civ))
	for i := range civ {
		segs[i] = provider.MRIov{Base: uintptr(civ[i].iov_base), Len: uint64(civ[i].iov_len)}
	}
	mr, err := d.RegMR(segs, uint64(access), uint64(offset), uint64(key), uint64(flags), uintptr(context))
	if err != nil {
		return errnoOf(err)
	}
	c := C.psm2_mr_new(context, C.uint64_t(mr.Key()))
	if c == nil {
		mr.Close()
		return -C.int(fi.ENOMEM)
	}
	c.handle = newHandle(mr)
	*out = &c.mr_fid
	return 0
}

func mrObj(c *C.struct_psm2_mr) *provider.MR {
	if c == nil {
		return nil
	}
	return handleObj[provider.MR](c.handle)
}

//export psm2go_mr_close
func psm2go_mr_close(c *C.struct_psm2_mr) (ret C.int) {
	defer guardInt(&ret, "psm2go_mr_close")
	mr := mrObj(c)
	if mr == nil {
		return -C.int(fi.EINVAL)
	}
	if err := mr.Close(); err != nil {
		return errnoOf(err)
	}
	deleteHandle(c.handle)
	c.handle = nil
	C.psm2_retire(&c.mr_fid.fid, C.sizeof_struct_fid_mr, C.sizeof_struct_psm2_mr)
	return 0
}

//export psm2go_mr_bind
func psm2go_mr_bind(c *C.struct_psm2_mr, h unsafe.Pointer, flags C.uint64_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_mr_bind")
	mr := mrObj(c)
	obj := handleValue(h)
	if mr == nil || obj == nil {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(mr.Bind(obj, uint64(flags)))
}

//export psm2go_mr_base
func psm2go_mr_base(c *C.struct_psm2_mr) (ret C.uint64_t) {
	defer guardU64(&ret, "psm2go_mr_base")
	mr := mrObj(c)
	if mr == nil {
		return 0
	}
	if iov := mr.Iov(); len(iov) > 0 {
		return C.uint64_t(iov[0].Base)
	}
	return 0
}
