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

//export psm2go_wait_open
func psm2go_wait_open(fc *C.struct_psm2_fabric, attr *C.struct_fi_wait_attr, out **C.struct_fid_wait) (ret C.int) {
	defer guardInt(&ret, "psm2go_wait_open")
	f := fabricObj(fc)
	if f == nil || attr == nil || out == nil {
		return -C.int(fi.EINVAL)
	}
	ws, err := f.OpenWaitSet(&provider.WaitAttr{WaitObj: int32(attr.wait_obj), Flags: uint64(attr.flags)})
	if err != nil {
		return errnoOf(err)
	}
	c := C.psm2_wait_new()
	if c == nil {
		ws.Close()
		return -C.int(fi.ENOMEM)
	}
	c.handle = newHandle(ws)
	*out = &c.wait_fid
	return 0
}

func waitObj(c *C.struct_psm2_wait) *provider.WaitSet {
	if c == nil {
		return nil
	}
	return handleObj[provider.WaitSet](c.handle)
}

//export psm2go_wait_wait
func psm2go_wait_wait(c *C.struct_psm2_wait, timeout C.int) (ret C.int) {
	defer guardInt(&ret, "psm2go_wait_wait")
	ws := waitObj(c)
	if ws == nil {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(ws.Wait(int(timeout)))
}

//export psm2go_wait_waitfd
func psm2go_wait_waitfd(c *C.struct_psm2_wait, obj *C.int32_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_wait_waitfd")
	ws := waitObj(c)
	if ws == nil {
		return -C.int(fi.EINVAL)
	}
	if obj != nil {
		*obj = C.int32_t(ws.WaitObj())
	}
	fd, err := ws.WaitFD()
	if err != nil {
		return errnoOf(err)
	}
	return C.int(fd)
}

//export psm2go_wait_close
func psm2go_wait_close(c *C.struct_psm2_wait) (ret C.int) {
	defer guardInt(&ret, "psm2go_wait_close")
	ws := waitObj(c)
	if ws == nil {
		return -C.int(fi.EINVAL)
	}
	if err := ws.Close(); err != nil {
		return errnoOf(err)
	}
	deleteHandle(c.handle)
	c.handle = nil
	C.psm2_retire(&c.wait_fid.fid, C.sizeof_struct_fid_wait, C.sizeof_struct_psm2_wait)
	return 0
}

// psm2go_trywait is fi_trywait; fabric.c has checked that every fid is one
// of our CQs, EQs or wait sets.
//
//export psm2go_trywait
func psm2go_trywait(fc *C.struct_psm2_fabric, fids **C.struct_fid, count C.int) (ret C.int) {
	defer guardInt(&ret, "psm2go_trywait")
	f := fabricObj(fc)
	if f == nil || count < 0 {
		return -C.int(fi.EINVAL)
	}
	var objs []provider.Waitable
	if count > 0 {
		objs = make([]provider.Waitable, 0, int(count))
		for _, fid := range unsafe.Slice(fids, int(count)) {
			w, ok := handleValue(C.psm2_fid_handle(fid)).(provider.Waitable)
			if !ok {
				return -C.int(fi.EINVAL)
			}
			objs = append(objs, w)
		}
	}
	return errnoOf(f.TryWait(objs))
}

// ---- poll sets ----

//export psm2go_poll_open
func psm2go_poll_open(dc *C.struct_psm2_domain, attr *C.struct_fi_poll_attr, out **C.struct_fid_poll) (ret C.int) {
	defer guardInt(&ret, "psm2go_poll_open")
	d := domainObj(dc)
	if d == nil || attr == nil || out == nil {
		return -C.int(fi.EINVAL)
	}
	ps, err := d.OpenPollSet(&provider.PollAttr{Flags: uint64(attr.flags)})
	if err != nil {
		return errnoOf(err)
	}
	c := C.psm2_poll_new()
	if c == nil {
		ps.Close()
		return -C.int(fi.ENOMEM)
	}
	c.handle = newHandle(ps)
	*out = &c.poll_fid
	return 0
}

func pollObj(c *C.struct_psm2_poll) *provider.PollSet {
	if c == nil {
		return nil
	}
	return handleObj[provider.PollSet](c.handle)
}

//export psm2go_poll_poll
func psm2go_poll_poll(c *C.struct_psm2_poll, ctxs *unsafe.Pointer, count C.int) (ret C.int) {
	defer guardInt(&ret, "psm2go_poll_poll")
	ps := pollObj(c)
	if ps == nil || count < 0 {
		return -C.int(fi.EINVAL)
	}
	var out []uintptr
	if count > 0 && ctxs != nil {
		// The application's void *context[count], written as addresses.
		out = unsafe.Slice((*uintptr)(unsafe.Pointer(ctxs)), int(count))
	}
	n, err := ps.Poll(out)
	if err != nil {
		return errnoOf(err)
	}
	return C.int(n)
}

//export psm2go_poll_add
func psm2go_poll_add(c *C.struct_psm2_poll, h unsafe.Pointer, context unsafe.Pointer, flags C.uint64_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_poll_add")
	ps := pollObj(c)
	w, ok := handleValue(h).(provider.Waitable)
	if ps == nil || !ok {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(ps.Add(w, uintptr(context), uint64(flags)))
}

//export psm2go_poll_del
func psm2go_poll_del(c *C.struct_psm2_poll, h unsafe.Pointer, flags C.uint64_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_poll_del")
	ps := pollObj(c)
	w, ok := handleValue(h).(provider.Waitable)
	if ps == nil || !ok {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(ps.Del(w, uint64(flags)))
}

//export psm2go_poll_close
func psm2go_poll_close(c *C.struct_psm2_poll) (ret C.int) {
	defer guardInt(&ret, "psm2go_poll_close")
	ps := pollObj(c)
	if ps == nil {
		return -C.int(fi.EINVAL)
	}
	if err := ps.Close(); err != nil {
		return errnoOf(err)
	}
	deleteHandle(c.handle)
	c.handle = nil
	C.psm2_retire(&c.poll_fid.fid, C.sizeof_struct_fid_poll, C.sizeof_struct_psm2_poll)
	return 0
}
