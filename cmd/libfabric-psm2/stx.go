package main

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider"
)

// psm2go_stx_open is fi_stx_context (provider/stx.go).
//
//export psm2go_stx_open
func psm2go_stx_open(dc *C.struct_psm2_domain, out **C.struct_fid_stx, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_stx_open")
	d := domainObj(dc)
	if d == nil || out == nil {
		return -C.int(fi.EINVAL)
	}
	s, err := d.OpenSTX()
	if err != nil {
		return errnoOf(err)
	}
	c := C.psm2_stx_new(context)
	if c == nil {
		s.Close()
		return -C.int(fi.ENOMEM)
	}
	c.handle = newHandle(s)
	*out = &c.stx_fid
	return 0
}

//export psm2go_stx_close
func psm2go_stx_close(c *C.struct_psm2_stx) (ret C.int) {
	defer guardInt(&ret, "psm2go_stx_close")
	if c == nil {
		return -C.int(fi.EINVAL)
	}
	s := handleObj[provider.STX](c.handle)
	if s == nil {
		return -C.int(fi.EINVAL)
	}
	if err := s.Close(); err != nil {
		return errnoOf(err)
	}
	deleteHandle(c.handle)
	c.handle = nil
	C.psm2_retire(&c.stx_fid.fid, C.sizeof_struct_fid_stx, C.sizeof_struct_psm2_stx)
	return 0
}
