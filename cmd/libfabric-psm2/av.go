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

// psm2go_av_open opens an AV; attr may be NULL (the defaults), as in psm2.
//
//export psm2go_av_open
func psm2go_av_open(dc *C.struct_psm2_domain, attr *C.struct_fi_av_attr, out **C.struct_fid_av, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_av_open")
	d := domainObj(dc)
	if d == nil || out == nil {
		return -C.int(fi.EINVAL)
	}
	a := &provider.AVAttr{}
	if attr != nil {
		a.Type = fi.AVType(attr._type)
		a.RxCtxBits = int(attr.rx_ctx_bits)
		a.Count = uint64(attr.count)
		a.EPPerNode = uint64(attr.ep_per_node)
		a.Name = goStr(attr.name)
		a.MapAddr = uintptr(attr.map_addr)
		a.Flags = uint64(attr.flags)
	}
	av, err := d.OpenAV(a)
	if err != nil {
		return errnoOf(err)
	}
	if attr != nil && a.Name != "" && attr.map_addr == nil {
		// fi_av(3): a named AV opened with map_addr 0 returns the one
		// it uses (the table of its fi_addr_t values).
		*(*uintptr)(unsafe.Pointer(&attr.map_addr)) = av.MapAddr()
	}
	c := C.psm2_av_new(context)
	if c == nil {
		av.Close()
		return -C.int(fi.ENOMEM)
	}
	c.handle = newHandle(av)
	av.Fid = uintptr(unsafe.Pointer(c))
	*out = &c.av_fid
	return 0
}

func avObj(c *C.struct_psm2_av) *provider.AV {
	if c == nil {
		return nil
	}
	return handleObj[provider.AV](c.handle)
}

//export psm2go_av_close
func psm2go_av_close(c *C.struct_psm2_av) (ret C.int) {
	defer guardInt(&ret, "psm2go_av_close")
	av := avObj(c)
	if av == nil {
		return -C.int(fi.EINVAL)
	}
	if err := av.Close(); err != nil {
		return errnoOf(err)
	}
	deleteHandle(c.handle)
	c.handle = nil
	C.psm2_retire(&c.av_fid.fid, C.sizeof_struct_fid_av, C.sizeof_struct_psm2_av)
	return 0
}

//export psm2go_av_bind
func psm2go_av_bind(c *C.struct_psm2_av, h unsafe.Pointer, flags C.uint64_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_av_bind")
	av, eq := avObj(c), handleObj[provider.EQ](h)
	if av == nil || eq == nil {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(av.Bind(eq, uint64(flags)))
}

// avCount turns an AV call's result into the C return value.
func avCount(n int, err error) C.int {
	if err != nil {
		return errnoOf(err)
	}
	return C.int(n)
}

//export psm2go_av_insert
func psm2go_av_insert(c *C.struct_psm2_av, addr unsafe.Pointer, count C.size_t, out *C.uint64_t, flags C.uint64_t, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_av_insert")
	av := avObj(c)
	if av == nil {
		return -C.int(fi.EINVAL)
	}
	if count > provider.MaxAVCount || (addr == nil && count > 0) {
		return -C.int(fi.EINVAL)
	}
	n := int(count)
	outs := avAddrs(out, n)
	var syncErr []int32
	if uint64(flags)&fi.SYNC_ERR != 0 && context != nil {
		syncErr = unsafe.Slice((*int32)(context), n) // FI_SYNC_ERR: context is an int array
	}
	if av.StrNames() {
		// FI_ADDR_STR: addr is an array of char * (fi_av(3)).
		strs := make([]string, n)
		for i, p := range unsafe.Slice((**C.char)(addr), n) {
			strs[i] = goStr(p)
		}
		return avCount(av.InsertStr(strs, outs, syncErr, uint64(flags), uintptr(context)))
	}
	names := unsafe.Slice((*byte)(addr), n*provider.EPNameLen)
	return avCount(av.Insert(names, outs, syncErr, uint64(flags), uintptr(context)))
}

// avAddrs views the application's fi_addr_t array of n entries (nil for
// NULL).
func avAddrs(p *C.uint64_t, n int) []uint64 {
	if p == nil {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(p)), n)
}

//export psm2go_av_insertsvc
func psm2go_av_insertsvc(c *C.struct_psm2_av, node, service *C.char, out *C.uint64_t, flags C.uint64_t, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_av_insertsvc")
	av := avObj(c)
	if av == nil {
		return -C.int(fi.EINVAL)
	}
	return avCount(av.InsertSvc(goStr(node), goStr(service), avAddrs(out, 1), uint64(flags), uintptr(context)))
}

//export psm2go_av_insertsym
func psm2go_av_insertsym(c *C.struct_psm2_av, node *C.char, nodecnt C.size_t, service *C.char, svccnt C.size_t,
	out *C.uint64_t, flags C.uint64_t, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_av_insertsym")
	av := avObj(c)
	if av == nil {
		return -C.int(fi.EINVAL)
	}
	return avCount(av.InsertSym(goStr(node), int(nodecnt), goStr(service), int(svccnt),
		nil, uint64(flags), uintptr(context)))
}

//export psm2go_av_remove
func psm2go_av_remove(c *C.struct_psm2_av, addrs *C.uint64_t, count C.size_t, flags C.uint64_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_av_remove")
	av := avObj(c)
	if av == nil {
		return -C.int(fi.EINVAL)
	}
	if count > provider.MaxAVCount || (addrs == nil && count > 0) {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(av.Remove(avAddrs(addrs, int(count)), uint64(flags)))
}

//export psm2go_av_lookup
func psm2go_av_lookup(c *C.struct_psm2_av, addr C.uint64_t, buf unsafe.Pointer, addrlen *C.size_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_av_lookup")
	av := avObj(c)
	if av == nil || addrlen == nil {
		return -C.int(fi.EINVAL)
	}
	var dst []byte
	if buf != nil {
		dst = cView(buf, min(*addrlen, 64)) // a name is 16 bytes, its string 27
	}
	n, err := av.Lookup(uint64(addr), dst)
	if err != nil {
		return errnoOf(err)
	}
	*addrlen = C.size_t(n)
	return 0
}

//export psm2go_av_straddr
func psm2go_av_straddr(c *C.struct_psm2_av, addr unsafe.Pointer, buf *C.char, length *C.size_t) {
	defer guardVoid("psm2go_av_straddr")
	av := avObj(c)
	if av == nil || length == nil {
		return
	}
	if addr == nil {
		return
	}
	var dst []byte
	if buf != nil {
		dst = cView(unsafe.Pointer(buf), *length)
	}
	// The name is in the AV's format: a string (FI_ADDR_STR) or 16 bytes.
	var n provider.EPName
	if av.StrNames() {
		n, _ = provider.ParseEPNameString(goStr((*C.char)(addr)))
	} else {
		n, _ = provider.UnmarshalEPName(cView(addr, provider.EPNameLen))
	}
	*length = C.size_t(provider.Straddr(n, dst))
}
