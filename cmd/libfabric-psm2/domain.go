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

// domainObj is the Go domain behind a C domain.
func domainObj(c *C.struct_psm2_domain) *provider.Domain {
	if c == nil {
		return nil
	}
	return handleObj[provider.Domain](c.handle)
}

//export psm2go_domain_open
func psm2go_domain_open(fc *C.struct_psm2_fabric, info *C.struct_fi_info, out **C.struct_fid_domain, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_domain_open")
	f := fabricObj(fc)
	if f == nil || info == nil || out == nil {
		return -C.int(fi.EINVAL)
	}
	d, err := f.OpenDomain(infoFromC(info))
	if err != nil {
		return errnoOf(err)
	}
	c := C.psm2_domain_new(fc, context)
	if c == nil {
		d.Close()
		return -C.int(fi.ENOMEM)
	}
	c.handle = newHandle(d)
	*out = &c.domain_fid
	return 0
}

//export psm2go_domain_close
func psm2go_domain_close(c *C.struct_psm2_domain) (ret C.int) {
	defer guardInt(&ret, "psm2go_domain_close")
	d := domainObj(c)
	if d == nil {
		return -C.int(fi.EINVAL)
	}
	if err := d.Close(); err != nil {
		return errnoOf(err)
	}
	deleteHandle(c.handle)
	c.handle = nil
	C.psm2_retire(&c.domain_fid.fid, C.sizeof_struct_fid_domain, C.sizeof_struct_psm2_domain)
	return 0
}

//export psm2go_domain_get_disconnect
func psm2go_domain_get_disconnect(c *C.struct_psm2_domain, val *C.uint32_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_domain_get_disconnect")
	d := domainObj(c)
	if d == nil || val == nil {
		return -C.int(fi.EINVAL)
	}
	*val = C.uint32_t(d.GetDisconnect())
	return 0
}

//export psm2go_domain_set_disconnect
func psm2go_domain_set_disconnect(c *C.struct_psm2_domain, val C.uint32_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_domain_set_disconnect")
	d := domainObj(c)
	if d == nil {
		return -C.int(fi.EINVAL)
	}
	d.SetDisconnect(uint32(val))
	return 0
}

// waitSetOf resolves the wait_set of an attribute struct (for
// FI_WAIT_SET): it must be one of our wait sets.
func waitSetOf(w *C.struct_fid_wait) (*provider.WaitSet, C.int) {
	if w == nil {
		return nil, -C.int(fi.EINVAL)
	}
	ws := handleObj[provider.WaitSet](C.psm2_fid_handle(&w.fid))
	if ws == nil {
		return nil, -C.int(fi.EINVAL)
	}
	return ws, 0
}
