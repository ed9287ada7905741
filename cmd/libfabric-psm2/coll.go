package main

// Collectives: AV sets, joined groups and the collective operations
// (coll.c has the ops tables; provider/coll.go the work).

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider"
)

func avSetObj(c *C.struct_psm2_av_set) *provider.AVSet {
	if c == nil {
		return nil
	}
	return handleObj[provider.AVSet](c.handle)
}

//export psm2go_av_set
func psm2go_av_set(c *C.struct_psm2_av, attr *C.struct_fi_av_set_attr, out **C.struct_fid_av_set, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_av_set")
	av := avObj(c)
	if av == nil || attr == nil || out == nil {
		return -C.int(fi.EINVAL)
	}
	if attr.flags != 0 || attr.comm_key_size != 0 {
		return -C.int(fi.EINVAL) // no FI_UNIVERSE, no comm keys
	}
	set, err := av.NewSet(uint64(attr.count), uint64(attr.start_addr), uint64(attr.end_addr), uint64(attr.stride))
	if err != nil {
		return errnoOf(err)
	}
	s := C.psm2_av_set_new(context)
	if s == nil {
		return -C.int(fi.ENOMEM)
	}
	s.handle = newHandle(set)
	*out = &s.set_fid
	return 0
}

//export psm2go_av_set_close
func psm2go_av_set_close(c *C.struct_psm2_av_set) (ret C.int) {
	defer guardInt(&ret, "psm2go_av_set_close")
	if avSetObj(c) == nil {
		return -C.int(fi.EINVAL)
	}
	deleteHandle(c.handle)
	c.handle = nil
	C.psm2_retire(&c.set_fid.fid, C.sizeof_struct_fid_av_set, C.sizeof_struct_psm2_av_set)
	return 0
}

// The operations of coll.c's SET_* (fi_ops_av_set).
const (
	setUnion = iota
	setIntersect
	setDiff
	setInsert
	setRemove
	setAddr
)

//export psm2go_av_set_op
func psm2go_av_set_op(c *C.struct_psm2_av_set, op C.int, other *C.struct_psm2_av_set, addr C.uint64_t, out *C.uint64_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_av_set_op")
	s := avSetObj(c)
	if s == nil {
		return -C.int(fi.EINVAL)
	}
	switch op {
	case setUnion:
		return errnoOf(s.Union(avSetObj(other)))
	case setIntersect:
		return errnoOf(s.Intersect(avSetObj(other)))
	case setDiff:
		return errnoOf(s.Diff(avSetObj(other)))
	case setInsert:
		return errnoOf(s.Insert(uint64(addr)))
	case setRemove:
		return errnoOf(s.Remove(uint64(addr)))
	case setAddr:
		*out = C.uint64_t(s.Addr())
		return 0
	}
	return -C.int(fi.EINVAL)
}

//export psm2go_join
func psm2go_join(slot C.uint32_t, set *C.struct_psm2_av_set, fid unsafe.Pointer, context unsafe.Pointer, out *C.uint64_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_join")
	ep, s := objTable.ep.lookup(uint32(slot)), avSetObj(set)
	if ep == nil || s == nil {
		return -C.int(fi.EINVAL)
	}
	// The fid_mc's address is set before the event can be read.
	_, err := ep.Join(s, uintptr(fid), uintptr(context), func(a uint64) { *out = C.uint64_t(a) })
	return errnoOf(err)
}

//export psm2go_leave
func psm2go_leave(slot C.uint32_t, addr C.uint64_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_leave")
	ep := objTable.ep.lookup(uint32(slot))
	if ep == nil {
		return -C.int(fi.EINVAL)
	}
	return errnoOf(ep.Leave(uint64(addr)))
}

//export psm2go_collective
func psm2go_collective(slot C.uint32_t, kind C.int, buf, result unsafe.Pointer, count C.size_t, addr, root C.uint64_t,
	dt, op C.int, context unsafe.Pointer) (ret C.ssize_t) {
	defer guardSsize(&ret, "psm2go_collective")
	ep := objTable.ep.lookup(uint32(slot))
	if ep == nil {
		return -C.ssize_t(fi.EINVAL)
	}
	if err := ep.Collective(int(kind), buf, result, uint64(count), uint64(addr), uint64(root), int(dt), int(op), context); err != nil {
		return C.ssize_t(errnoOf(err))
	}
	return 0
}

//export psm2go_query_collective
func psm2go_query_collective(kind, op, dt C.int, count, size, members *C.size_t) (ret C.int) {
	defer guardInt(&ret, "psm2go_query_collective")
	n, sz, err := provider.CollQuery(int(kind), int(dt), int(op))
	if err != nil {
		return errnoOf(err)
	}
	*count, *size, *members = C.size_t(n), C.size_t(sz), C.size_t(provider.CollMaxMembers)
	return 0
}
