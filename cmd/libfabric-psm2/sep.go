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

// psm2go_sep_open is fi_scalable_ep (provider/sep.go): the SEP and a C
// endpoint for each of its contexts, which sep.c hands out as aliases.
//
//export psm2go_sep_open
func psm2go_sep_open(dc *C.struct_psm2_domain, info *C.struct_fi_info, out **C.struct_fid_ep, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_sep_open")
	d := domainObj(dc)
	if d == nil || out == nil {
		return -C.int(fi.EINVAL)
	}
	s, err := d.OpenSEP(infoFromC(info))
	if err != nil {
		return errnoOf(err)
	}
	c := C.psm2_sep_new(context, C.int32_t(s.Len()))
	if c == nil {
		s.Close()
		return -C.int(fi.ENOMEM)
	}
	ctx := unsafe.Slice(c.ctx, s.Len())
	for i, ep := range s.Contexts() {
		if ctx[i] = newCEP(ep, context); ctx[i] == nil {
			s.Close()
			freeSEP(c)
			return -C.int(fi.ENOMEM)
		}
	}
	c.ep.handle = newHandle(s)
	*out = &c.ep.ep_fid
	return 0
}

// freeSEP lets go of the C side of a closed SEP.
func freeSEP(c *C.struct_psm2_sep) {
	for _, e := range unsafe.Slice(c.ctx, int(c.n)) {
		if e != nil {
			freeCEP(e)
		}
	}
	C.free(unsafe.Pointer(c.ctx))
	c.ctx, c.n = nil, 0
	if c.ep.handle != nil {
		deleteHandle(c.ep.handle)
		c.ep.handle = nil
	}
	C.psm2_retire(&c.ep.ep_fid.fid, C.sizeof_struct_fid_ep, C.sizeof_struct_psm2_sep)
}

func sepObj(c *C.struct_psm2_sep) *provider.SEP {
	if c == nil {
		return nil
	}
	return handleObj[provider.SEP](c.ep.handle)
}

//export psm2go_sep_close
func psm2go_sep_close(c *C.struct_psm2_sep) (ret C.int) {
	defer guardInt(&ret, "psm2go_sep_close")
	s := sepObj(c)
	if s == nil {
		return -C.int(fi.EINVAL)
	}
	if err := s.Close(); err != nil {
		return errnoOf(err)
	}
	freeSEP(c)
	return 0
}

//export psm2go_sep_bind
func psm2go_sep_bind(c *C.struct_psm2_sep, h unsafe.Pointer, flags C.uint64_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_sep_bind")
	s := sepObj(c)
	if s == nil {
		return -C.int(fi.EINVAL)
	}
	switch o := handleValue(h).(type) {
	case *provider.AV, *provider.EQ:
		return errnoOf(s.Bind(o, uint64(flags)))
	}
	return -C.int(fi.EINVAL)
}

//export psm2go_sep_enable
func psm2go_sep_enable(c *C.struct_psm2_sep) (ret C.int) {
	defer guardInt(&ret, "psm2go_sep_enable")
	s := sepObj(c)
	if s == nil {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(s.Enable())
}

// psm2go_sep_ctx records that context i's role was opened.
//
//export psm2go_sep_ctx
func psm2go_sep_ctx(c *C.struct_psm2_sep, i C.int, role C.int) (ret C.int) {
	defer guardInt(&ret, "psm2go_sep_ctx")
	s := sepObj(c)
	if s == nil {
		return -C.int(fi.EINVAL)
	}
	_, err := s.Context(int(i), uint8(role))
	return errnoOf(err)
}

//export psm2go_sep_getname
func psm2go_sep_getname(c *C.struct_psm2_sep, addr unsafe.Pointer, addrlen *C.size_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_sep_getname")
	s := sepObj(c)
	if s == nil || addrlen == nil {
		return -C.int(fi.EINVAL)
	}
	return getname(addr, addrlen, s.Name)
}
