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

// openFabric is the provider's fabric entry: attr names the fabric to
// open (its name must be psm2).
func openFabric(attr *C.struct_fi_fabric_attr, out **C.struct_fid_fabric, context unsafe.Pointer) C.int {
	if attr == nil || out == nil {
		return -C.int(fi.EINVAL)
	}
	f, err := lib.prov.OpenFabric(fabricFromC(attr))
	if err != nil {
		return errnoOf(err)
	}
	c := calloc[C.struct_psm2_fabric]()
	if c == nil {
		f.Close()
		return -C.int(fi.ENOMEM)
	}
	c.fabric_fid.fid.fclass = C.size_t(fi.CLASS_FABRIC)
	c.fabric_fid.fid.context = context
	c.fabric_fid.fid.ops = &C.psm2_fabric_fi_ops
	c.fabric_fid.ops = &C.psm2_fabric_ops
	c.fabric_fid.api_version = attr.api_version
	c.handle = newHandle(f)
	*out = &c.fabric_fid
	return 0
}

//export psm2go_fabric_close
func psm2go_fabric_close(c *C.struct_psm2_fabric) (ret C.int) {
	defer guardInt(&ret, "psm2go_fabric_close")
	if c == nil {
		return -C.int(fi.EINVAL)
	}
	f, ok := handleValue(c.handle).(*provider.Fabric)
	if !ok {
		return -C.int(fi.EINVAL)
	}
	if err := f.Close(); err != nil {
		return errnoOf(err)
	}
	deleteHandle(c.handle)
	c.handle = nil
	C.psm2_retire(&c.fabric_fid.fid, C.sizeof_struct_fid_fabric, C.sizeof_struct_psm2_fabric)
	return 0
}

// errnoOf is the C return code for err: 0 for nil, else the negative FI_E*
// code. The common cases (nil, a bare fi.Errno) cost a comparison and a
// type assertion, with no allocation; only wrapped errors go through
// fi.ToErrno's errors.As.
func errnoOf(err error) C.int {
	if err == nil {
		return 0
	}
	if e, ok := err.(fi.Errno); ok {
		return -C.int(e)
	}
	return -C.int(fi.ToErrno(err))
}

// fabricObj is the Go fabric behind a C fabric (nil for NULL or a stale
// one).
func fabricObj(c *C.struct_psm2_fabric) *provider.Fabric {
	if c == nil {
		return nil
	}
	return handleObj[provider.Fabric](c.handle)
}

// cstrCopy writes s into buf (capacity n) as a NUL-terminated string,
// truncated to fit.
func cstrCopy(buf *C.char, n C.size_t, s string) {
	if buf == nil || n == 0 {
		return
	}
	dst := cView(unsafe.Pointer(buf), n)
	k := copy(dst[:len(dst)-1], s)
	dst[k] = 0
}
