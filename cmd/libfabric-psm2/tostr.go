package main

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
)

// appendC appends s to the C string in buf (capacity n), truncating and
// always NUL-terminating, as libfabric's string building does.
func appendC(buf *C.char, n C.size_t, s string) {
	if buf == nil || n == 0 {
		return
	}
	b := cView(unsafe.Pointer(buf), n)
	used := 0
	for used < len(b) && b[used] != 0 {
		used++
	}
	if used >= len(b)-1 {
		b[len(b)-1] = 0
		return
	}
	k := copy(b[used:len(b)-1], s)
	b[used+k] = 0
}

// tostrValue reads the C value behind data as the Go value fi.Tostr
// expects for typ.
func tostrValue(typ fi.Type, data unsafe.Pointer) any {
	switch typ {
	case fi.TYPE_INFO:
		return infoFromC((*C.struct_fi_info)(data))
	case fi.TYPE_TX_ATTR:
		return txFromC((*C.struct_fi_tx_attr)(data))
	case fi.TYPE_RX_ATTR:
		return rxFromC((*C.struct_fi_rx_attr)(data))
	case fi.TYPE_EP_ATTR:
		return epFromC((*C.struct_fi_ep_attr)(data))
	case fi.TYPE_DOMAIN_ATTR:
		return domainFromC((*C.struct_fi_domain_attr)(data))
	case fi.TYPE_FABRIC_ATTR:
		return fabricFromC((*C.struct_fi_fabric_attr)(data))
	case fi.TYPE_CAPS, fi.TYPE_OP_FLAGS, fi.TYPE_MSG_ORDER, fi.TYPE_MODE, fi.TYPE_CQ_EVENT_FLAGS:
		return *(*uint64)(data)
	case fi.TYPE_ADDR_FORMAT, fi.TYPE_PROTOCOL:
		return *(*uint32)(data)
	case fi.TYPE_EQ_EVENT:
		return uint32(*(*int32)(data))
	case fi.TYPE_EP_TYPE:
		return fi.EPType(*(*int32)(data))
	case fi.TYPE_THREADING:
		return fi.Threading(*(*int32)(data))
	case fi.TYPE_PROGRESS:
		return fi.Progress(*(*int32)(data))
	case fi.TYPE_AV_TYPE:
		return fi.AVType(*(*int32)(data))
	case fi.TYPE_LOG_LEVEL:
		return fi.LogLevel(*(*int32)(data))
	case fi.TYPE_LOG_SUBSYS:
		return fi.LogSubsys(*(*int32)(data))
	case fi.TYPE_ATOMIC_TYPE, fi.TYPE_ATOMIC_OP, fi.TYPE_OP_TYPE, fi.TYPE_COLLECTIVE_OP,
		fi.TYPE_HMEM_IFACE, fi.TYPE_CQ_FORMAT, fi.TYPE_MR_MODE:
		return *(*int32)(data)
	}
	return nil
}

// psm2go_tostr formats data of type typ into buf (capacity n, empty on
// entry), as fi_tostr_r does, including libfabric's way of cutting the text
// to the buffer (FI_TYPE_FID is handled on the C side).
//
//export psm2go_tostr
func psm2go_tostr(buf *C.char, n C.size_t, data unsafe.Pointer, typ C.int) {
	defer guardVoid("psm2go_tostr")
	t := fi.Type(typ)
	appendC(buf, n, fi.TostrR(t, tostrValue(t, data), int(n)))
}

// psm2go_nic_tostr is the tostr op of our fid_nic.
//
//export psm2go_nic_tostr
func psm2go_nic_tostr(nic *C.struct_fid_nic, buf *C.char, n C.size_t) {
	defer guardVoid("psm2go_nic_tostr")
	appendC(buf, n, fi.TostrNic(nicFromC(nic)))
}
