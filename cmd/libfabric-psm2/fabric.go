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
		return -C.int(fi.ToErrno(err))
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
func psm2go_fabric_close(c *C.struct_psm2_fabric) C.int {
	if c == nil {
		return -C.int(fi.EINVAL)
	}
	f, ok := handleValue(c.handle).(*provider.Fabric)
	if !ok {
		return -C.int(fi.EINVAL)
	}
	if err := f.Close(); err != nil {
		return -C.int(fi.ToErrno(err))
	}
	deleteHandle(c.handle)
	c.handle = nil
	C.free(unsafe.Pointer(c))
	return 0
}
