package main

/*
#include <stdlib.h>
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider"
)

//export psm2go_eq_open
func psm2go_eq_open(fc *C.struct_psm2_fabric, attr *C.struct_fi_eq_attr, out **C.struct_fid_eq, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_eq_open")
	f := fabricObj(fc)
	if f == nil || attr == nil || out == nil {
		return -C.int(fi.EINVAL)
	}
	a := &provider.EQAttr{
		Size: uint64(attr.size), Flags: uint64(attr.flags), WaitObj: int32(attr.wait_obj),
		SignalingVector: int32(attr.signaling_vector),
	}
	if a.WaitObj == fi.WAIT_SET {
		ws, rc := waitSetOf(attr.wait_set)
		if rc != 0 {
			return rc
		}
		a.WaitSet = ws
	}
	eq, err := f.OpenEQ(a)
	if err != nil {
		return errnoOf(err)
	}
	c := C.psm2_eq_new(context, fc.fabric_fid.api_version)
	if c == nil {
		eq.Close()
		return -C.int(fi.ENOMEM)
	}
	c.handle = newHandle(eq)
	*out = &c.eq_fid
	return 0
}

func eqObj(c *C.struct_psm2_eq) *provider.EQ {
	if c == nil {
		return nil
	}
	return handleObj[provider.EQ](c.handle)
}

// cBuf views the C buffer buf of n bytes (nil for none).
func cBuf(buf unsafe.Pointer, n C.size_t) []byte {
	return cView(buf, n)
}

// psm2go_eq_read is fi_eq_read, or fi_eq_sread when blocking is set.
//
//export psm2go_eq_read
func psm2go_eq_read(c *C.struct_psm2_eq, event *C.uint32_t, buf unsafe.Pointer, length C.size_t,
	flags C.uint64_t, timeout C.int, blocking C.int) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_eq_read")
	eq := eqObj(c)
	if eq == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	var (
		n   int
		ev  uint32
		err error
	)
	if blocking != 0 {
		n, ev, err = eq.SRead(cBuf(buf, length), uint64(flags), int(timeout))
	} else {
		n, ev, err = eq.Read(cBuf(buf, length), uint64(flags))
	}
	if err != nil {
		return C.ssize_t(errnoOf(err))
	}
	if event != nil {
		*event = C.uint32_t(ev)
	}
	return C.ssize_t(n)
}

// psm2go_eq_readerr is fi_eq_readerr. err_data follows libfabric: with API
// 1.5 or later and a buffer from the caller (err_data and err_data_size
// set), the data is copied into it and err_data_size says how much;
// otherwise err_data points at the EQ's own copy, valid until the next
// readerr. Before 1.5 the struct has no err_data_size, so it is not
// written.
//
//export psm2go_eq_readerr
func psm2go_eq_readerr(c *C.struct_psm2_eq, buf *C.struct_fi_eq_err_entry, flags C.uint64_t) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_eq_readerr")
	eq := eqObj(c)
	if eq == nil || buf == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	var e provider.EQErrEntry
	n, err := eq.ReadErr(&e, uint64(flags))
	if err != nil {
		return C.ssize_t(errnoOf(err))
	}
	newAPI := fi.VersionGE(uint32(c.api_version), fi.Version(1, 5))
	userData, userSize := buf.err_data, C.size_t(0)
	if newAPI {
		userSize = buf.err_data_size
	}
	// fid and context are carried as addresses; store them as such.
	*(*uintptr)(unsafe.Pointer(&buf.fid)) = e.Fid
	*(*uintptr)(unsafe.Pointer(&buf.context)) = e.Context
	buf.data = C.uint64_t(e.Data)
	buf.err = C.int(e.Err)
	buf.prov_errno = C.int(e.ProvErrno)
	switch {
	case newAPI && userData != nil && userSize > 0 && len(e.ErrData) > 0:
		k := copy(cView(userData, userSize), e.ErrData)
		buf.err_data_size = C.size_t(k)
	case len(e.ErrData) > 0:
		C.free(c.err_data)
		c.err_data = C.CBytes(e.ErrData)
		buf.err_data = c.err_data
		if newAPI {
			buf.err_data_size = C.size_t(len(e.ErrData))
		}
	default:
		buf.err_data = nil
		if newAPI {
			buf.err_data_size = 0
		}
	}
	return C.ssize_t(n)
}

// psm2go_eq_write is fi_eq_write. With provider.EQErr in flags, buf is a
// struct fi_eq_err_entry, queued as an error entry (its err_data is
// copied).
//
//export psm2go_eq_write
func psm2go_eq_write(c *C.struct_psm2_eq, event C.uint32_t, buf unsafe.Pointer, length C.size_t, flags C.uint64_t) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_eq_write")
	eq := eqObj(c)
	if eq == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	if uint64(flags)&provider.EQErr != 0 {
		if buf == nil || uintptr(length) < unsafe.Sizeof(C.struct_fi_eq_err_entry{}) {
			return -C.ssize_t(fi.EINVAL)
		}
		ce := (*C.struct_fi_eq_err_entry)(buf)
		e := provider.EQErrEntry{
			Fid: uintptr(unsafe.Pointer(ce.fid)), Context: uintptr(ce.context), Data: uint64(ce.data),
			Err: int32(ce.err), ProvErrno: int32(ce.prov_errno),
		}
		if ce.err_data != nil && ce.err_data_size > 0 {
			e.ErrData = C.GoBytes(ce.err_data, C.int(ce.err_data_size))
		}
		if _, err := eq.WriteErr(uint32(event), &e); err != nil {
			return C.ssize_t(errnoOf(err))
		}
		return C.ssize_t(length)
	}
	n, err := eq.Write(uint32(event), cBuf(buf, length), uint64(flags))
	if err != nil {
		return C.ssize_t(errnoOf(err))
	}
	return C.ssize_t(n)
}

//export psm2go_eq_strerror
func psm2go_eq_strerror(c *C.struct_psm2_eq, provErrno C.int, buf *C.char, length C.size_t) {
	defer guardVoid("psm2go_eq_strerror")
	var s string
	if eq := eqObj(c); eq != nil {
		s = eq.StrError(int(provErrno))
	} else {
		s = fi.Errno(absInt(int(provErrno))).Error()
	}
	cstrCopy(buf, length, s)
}

// psm2go_eq_waitfd stores the EQ's wait object in obj and returns its fd
// for FI_GETWAIT, or a negative FI_E* code.
//
//export psm2go_eq_waitfd
func psm2go_eq_waitfd(c *C.struct_psm2_eq, obj *C.int32_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_eq_waitfd")
	eq := eqObj(c)
	if eq == nil {
		return -C.int(fi.EINVAL)
	}
	if obj != nil {
		*obj = C.int32_t(eq.WaitObj())
	}
	fd, err := eq.WaitFD()
	if err != nil {
		return errnoOf(err)
	}
	return C.int(fd)
}

//export psm2go_eq_close
func psm2go_eq_close(c *C.struct_psm2_eq) (ret C.int) {
	defer guardInt(&ret, "psm2go_eq_close")
	eq := eqObj(c)
	if eq == nil {
		return -C.int(fi.EINVAL)
	}
	if err := eq.Close(); err != nil {
		return errnoOf(err)
	}
	C.free(c.err_data)
	deleteHandle(c.handle)
	c.handle, c.err_data = nil, nil
	C.psm2_retire(&c.eq_fid.fid, C.sizeof_struct_fid_eq, C.sizeof_struct_psm2_eq)
	return 0
}
