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
)

//export psm2go_cntr_open
func psm2go_cntr_open(dc *C.struct_psm2_domain, attr *C.struct_fi_cntr_attr, out **C.struct_fid_cntr, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_cntr_open")
	d := domainObj(dc)
	if d == nil || attr == nil || out == nil {
		return -C.int(fi.EINVAL)
	}
	a := &provider.CntrAttr{Events: int32(attr.events), WaitObj: int32(attr.wait_obj), Flags: uint64(attr.flags)}
	if a.WaitObj == fi.WAIT_SET {
		ws, rc := waitSetOf(attr.wait_set)
		if rc != 0 {
			return rc
		}
		a.WaitSet = ws
	}
	cn, err := d.OpenCntr(a)
	if err != nil {
		return errnoOf(err)
	}
	slot := objTable.cntr.register(cn)
	c := C.psm2_cntr_new(context, C.int32_t(a.WaitObj))
	if c == nil || slot == 0 {
		objTable.cntr.release(slot)
		C.free(unsafe.Pointer(c))
		cn.Close()
		return -C.int(fi.ENOMEM)
	}
	c.handle = newHandle(cn)
	c.slot = C.uint32_t(slot)
	*out = &c.cntr_fid
	return 0
}

// psm2go_cntr_read is fi_cntr_read (errors 0) and fi_cntr_readerr (1).
//
//export psm2go_cntr_read
func psm2go_cntr_read(slot C.uint32_t, errors C.int) (ret C.uint64_t) {
	defer guardU64(&ret, "psm2go_cntr_read")
	c := objTable.cntr.lookup(uint32(slot))
	if c == nil {
		return 0
	}
	if errors != 0 {
		return C.uint64_t(c.ReadErr())
	}
	return C.uint64_t(c.Read())
}

// The ops of psm2go_cntr_update, as cntr.c numbers them.
const (
	cntrAdd = iota
	cntrSet
	cntrAddErr
	cntrSetErr
)

//export psm2go_cntr_update
func psm2go_cntr_update(slot C.uint32_t, op C.int, value C.uint64_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_cntr_update")
	c := objTable.cntr.lookup(uint32(slot))
	if c == nil {
		return -C.int(fi.EINVAL)
	}
	v := uint64(value)
	switch op {
	case cntrAdd:
		return errnoOf(c.Add(v))
	case cntrSet:
		return errnoOf(c.Set(v))
	case cntrAddErr:
		return errnoOf(c.AddErr(v))
	case cntrSetErr:
		return errnoOf(c.SetErr(v))
	}
	return -C.int(fi.EINVAL)
}

//export psm2go_cntr_wait
func psm2go_cntr_wait(slot C.uint32_t, threshold C.uint64_t, timeout C.int) (ret C.int) {
	defer guardInt(&ret, "psm2go_cntr_wait")
	c := objTable.cntr.lookup(uint32(slot))
	if c == nil {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(c.Wait(uint64(threshold), int(timeout)))
}

// The counter of a triggered call (provider/trigger.go).
func init() {
	provider.TriggerOf = func(ctx unsafe.Pointer) (*provider.Cntr, uint64, error) {
		var c *C.struct_psm2_cntr
		var thr C.uint64_t
		if C.psm2_trigger_cntr(ctx, &c, &thr) != 0 {
			return nil, 0, fi.EINVAL
		}
		cn := cntrObj(c)
		if cn == nil {
			return nil, 0, fi.EINVAL
		}
		return cn, uint64(thr), nil
	}
}

func cntrObj(c *C.struct_psm2_cntr) *provider.Cntr {
	if c == nil {
		return nil
	}
	return handleObj[provider.Cntr](c.handle)
}

//export psm2go_cntr_waitfd
func psm2go_cntr_waitfd(c *C.struct_psm2_cntr) (ret C.int) {
	defer guardInt(&ret, "psm2go_cntr_waitfd")
	cn := cntrObj(c)
	if cn == nil {
		return -C.int(fi.EINVAL)
	}
	fd, err := cn.WaitFD()
	if err != nil {
		return errnoOf(err)
	}
	return C.int(fd)
}

//export psm2go_cntr_close
func psm2go_cntr_close(c *C.struct_psm2_cntr) (ret C.int) {
	defer guardInt(&ret, "psm2go_cntr_close")
	cn := cntrObj(c)
	if cn == nil {
		return -C.int(fi.EINVAL)
	}
	if err := cn.Close(); err != nil {
		return errnoOf(err)
	}
	objTable.cntr.release(uint32(c.slot))
	deleteHandle(c.handle)
	c.handle, c.slot = nil, 0
	C.psm2_retire(&c.cntr_fid.fid, C.sizeof_struct_fid_cntr, C.sizeof_struct_psm2_cntr)
	return 0
}
