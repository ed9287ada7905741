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
)

// This file converts between C struct fi_info (and its attribute structs)
// and fi.Info. Everything allocated for C is malloc'd piece by piece so
// that any fi_freeinfo can release it.

func goStr(s *C.char) string {
	if s == nil {
		return ""
	}
	return C.GoString(s)
}

func goBytes(p unsafe.Pointer, n C.size_t) []byte {
	if p == nil {
		return nil
	}
	return C.GoBytes(p, C.int(n))
}

func cStr(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

func cBytes(b []byte) unsafe.Pointer {
	if b == nil {
		return nil
	}
	p := C.malloc(C.size_t(max(len(b), 1)))
	if len(b) > 0 {
		C.memcpy(p, unsafe.Pointer(&b[0]), C.size_t(len(b)))
	}
	return p
}

func txFromC(a *C.struct_fi_tx_attr) *fi.TxAttr {
	if a == nil {
		return nil
	}
	return &fi.TxAttr{
		Caps: uint64(a.caps), Mode: uint64(a.mode), OpFlags: uint64(a.op_flags),
		MsgOrder: uint64(a.msg_order), CompOrder: uint64(a.comp_order),
		InjectSize: uint64(a.inject_size), Size: uint64(a.size),
		IovLimit: uint64(a.iov_limit), RMAIovLimit: uint64(a.rma_iov_limit),
		TClass: uint32(a.tclass),
	}
}

func rxFromC(a *C.struct_fi_rx_attr) *fi.RxAttr {
	if a == nil {
		return nil
	}
	return &fi.RxAttr{
		Caps: uint64(a.caps), Mode: uint64(a.mode), OpFlags: uint64(a.op_flags),
		MsgOrder: uint64(a.msg_order), CompOrder: uint64(a.comp_order),
		TotalBufferedRecv: uint64(a.total_buffered_recv), Size: uint64(a.size),
		IovLimit: uint64(a.iov_limit),
	}
}

func epFromC(a *C.struct_fi_ep_attr) *fi.EPAttr {
	if a == nil {
		return nil
	}
	e := &fi.EPAttr{
		Type: fi.EPType(a._type), Protocol: uint32(a.protocol),
		ProtocolVersion: uint32(a.protocol_version), MaxMsgSize: uint64(a.max_msg_size),
		MsgPrefixSize: uint64(a.msg_prefix_size), MaxOrderRAWSize: uint64(a.max_order_raw_size),
		MaxOrderWARSize: uint64(a.max_order_war_size), MaxOrderWAWSize: uint64(a.max_order_waw_size),
		MemTagFormat: uint64(a.mem_tag_format), TxCtxCnt: uint64(a.tx_ctx_cnt),
		RxCtxCnt: uint64(a.rx_ctx_cnt), AuthKeySize: uint64(a.auth_key_size),
	}
	if a.auth_key != nil {
		e.AuthKey = goBytes(unsafe.Pointer(a.auth_key), a.auth_key_size)
	}
	return e
}

func domainFromC(a *C.struct_fi_domain_attr) *fi.DomainAttr {
	if a == nil {
		return nil
	}
	d := &fi.DomainAttr{
		Domain: fi.MakePtr(unsafe.Pointer(a.domain)), Name: goStr(a.name),
		Threading: fi.Threading(a.threading), ControlProgress: fi.Progress(a.control_progress),
		DataProgress: fi.Progress(a.data_progress), ResourceMgmt: fi.ResourceMgmt(a.resource_mgmt),
		AVType: fi.AVType(a.av_type), MRMode: int32(a.mr_mode), MRKeySize: uint64(a.mr_key_size),
		CQDataSize: uint64(a.cq_data_size), CQCnt: uint64(a.cq_cnt), EPCnt: uint64(a.ep_cnt),
		TxCtxCnt: uint64(a.tx_ctx_cnt), RxCtxCnt: uint64(a.rx_ctx_cnt),
		MaxEPTxCtx: uint64(a.max_ep_tx_ctx), MaxEPRxCtx: uint64(a.max_ep_rx_ctx),
		MaxEPStxCtx: uint64(a.max_ep_stx_ctx), MaxEPSrxCtx: uint64(a.max_ep_srx_ctx),
		CntrCnt: uint64(a.cntr_cnt), MRIovLimit: uint64(a.mr_iov_limit),
		Caps: uint64(a.caps), Mode: uint64(a.mode), AuthKeySize: uint64(a.auth_key_size),
		MaxErrData: uint64(a.max_err_data), MRCnt: uint64(a.mr_cnt), TClass: uint32(a.tclass),
	}
	if a.auth_key != nil {
		d.AuthKey = goBytes(unsafe.Pointer(a.auth_key), a.auth_key_size)
	}
	return d
}

func fabricFromC(a *C.struct_fi_fabric_attr) *fi.FabricAttr {
	if a == nil {
		return nil
	}
	return &fi.FabricAttr{
		Fabric: fi.MakePtr(unsafe.Pointer(a.fabric)), Name: goStr(a.name),
		ProvName: goStr(a.prov_name), ProvVersion: uint32(a.prov_version),
		APIVersion: uint32(a.api_version),
	}
}

func nicFromC(n *C.struct_fid_nic) *fi.Nic {
	if n == nil {
		return nil
	}
	out := &fi.Nic{}
	if d := n.device_attr; d != nil {
		out.Device = &fi.DeviceAttr{
			Name: goStr(d.name), DeviceID: goStr(d.device_id),
			DeviceVersion: goStr(d.device_version), VendorID: goStr(d.vendor_id),
			Driver: goStr(d.driver), Firmware: goStr(d.firmware),
		}
	}
	if b := n.bus_attr; b != nil {
		out.Bus = &fi.BusAttr{Type: fi.BusType(b.bus_type)}
		if out.Bus.Type == fi.BUS_PCI {
			pci := (*C.struct_fi_pci_attr)(unsafe.Pointer(&b.attr))
			out.Bus.PCI = fi.PCIAttr{
				DomainID: uint16(pci.domain_id), BusID: uint8(pci.bus_id),
				DeviceID: uint8(pci.device_id), FunctionID: uint8(pci.function_id),
			}
		}
	}
	if l := n.link_attr; l != nil {
		out.Link = &fi.LinkAttr{
			Address: goStr(l.address), MTU: uint64(l.mtu), Speed: uint64(l.speed),
			State: fi.LinkState(l.state), NetworkType: goStr(l.network_type),
		}
	}
	return out
}

// infoFromC reads one C fi_info (not its list) into Go.
func infoFromC(c *C.struct_fi_info) *fi.Info {
	if c == nil {
		return nil
	}
	return &fi.Info{
		Caps: uint64(c.caps), Mode: uint64(c.mode), AddrFormat: uint32(c.addr_format),
		SrcAddr:    goBytes(c.src_addr, c.src_addrlen),
		DestAddr:   goBytes(c.dest_addr, c.dest_addrlen),
		SrcAddrLen: uint64(c.src_addrlen), DestAddrLen: uint64(c.dest_addrlen),
		Handle: fi.MakePtr(unsafe.Pointer(c.handle)),
		Tx:     txFromC(c.tx_attr), Rx: rxFromC(c.rx_attr), EP: epFromC(c.ep_attr),
		Domain: domainFromC(c.domain_attr), Fabric: fabricFromC(c.fabric_attr),
		Nic: nicFromC(c.nic),
	}
}

func calloc[T any]() *T {
	var zero T
	return (*T)(C.calloc(1, C.size_t(unsafe.Sizeof(zero))))
}

func nicToC(n *fi.Nic) *C.struct_fid_nic {
	c := C.psm2_nic_new()
	if c == nil {
		return nil
	}
	if d := n.Device; d != nil {
		c.device_attr.name = cStr(d.Name)
		c.device_attr.device_id = cStr(d.DeviceID)
		c.device_attr.device_version = cStr(d.DeviceVersion)
		c.device_attr.vendor_id = cStr(d.VendorID)
		c.device_attr.driver = cStr(d.Driver)
		c.device_attr.firmware = cStr(d.Firmware)
	}
	if b := n.Bus; b != nil {
		c.bus_attr.bus_type = uint32(b.Type)
		if b.Type == fi.BUS_PCI {
			pci := (*C.struct_fi_pci_attr)(unsafe.Pointer(&c.bus_attr.attr))
			pci.domain_id = C.uint16_t(b.PCI.DomainID)
			pci.bus_id = C.uint8_t(b.PCI.BusID)
			pci.device_id = C.uint8_t(b.PCI.DeviceID)
			pci.function_id = C.uint8_t(b.PCI.FunctionID)
		}
	}
	if l := n.Link; l != nil {
		c.link_attr.address = cStr(l.Address)
		c.link_attr.mtu = C.size_t(l.MTU)
		c.link_attr.speed = C.size_t(l.Speed)
		c.link_attr.state = uint32(l.State)
		c.link_attr.network_type = cStr(l.NetworkType)
	}
	return c
}

// infoToC allocates one C fi_info holding info. It returns nil when
// memory runs out (nothing is leaked then).
func infoToC(info *fi.Info) *C.struct_fi_info {
	c := calloc[C.struct_fi_info]()
	if c == nil {
		return nil
	}
	c.caps = C.uint64_t(info.Caps)
	c.mode = C.uint64_t(info.Mode)
	c.addr_format = C.uint32_t(info.AddrFormat)
	c.src_addr = cBytes(info.SrcAddr)
	c.src_addrlen = C.size_t(info.SrcAddrLen)
	c.dest_addr = cBytes(info.DestAddr)
	c.dest_addrlen = C.size_t(info.DestAddrLen)
	c.handle = (*C.struct_fid)(info.Handle.Pointer())
	if t := info.Tx; t != nil {
		a := calloc[C.struct_fi_tx_attr]()
		if a == nil {
			return freeOnError(c)
		}
		a.caps, a.mode, a.op_flags = C.uint64_t(t.Caps), C.uint64_t(t.Mode), C.uint64_t(t.OpFlags)
		a.msg_order, a.comp_order = C.uint64_t(t.MsgOrder), C.uint64_t(t.CompOrder)
		a.inject_size, a.size = C.size_t(t.InjectSize), C.size_t(t.Size)
		a.iov_limit, a.rma_iov_limit = C.size_t(t.IovLimit), C.size_t(t.RMAIovLimit)
		a.tclass = C.uint32_t(t.TClass)
		c.tx_attr = a
	}
	if r := info.Rx; r != nil {
		a := calloc[C.struct_fi_rx_attr]()
		if a == nil {
			return freeOnError(c)
		}
		a.caps, a.mode, a.op_flags = C.uint64_t(r.Caps), C.uint64_t(r.Mode), C.uint64_t(r.OpFlags)
		a.msg_order, a.comp_order = C.uint64_t(r.MsgOrder), C.uint64_t(r.CompOrder)
		a.total_buffered_recv, a.size = C.size_t(r.TotalBufferedRecv), C.size_t(r.Size)
		a.iov_limit = C.size_t(r.IovLimit)
		c.rx_attr = a
	}
	if e := info.EP; e != nil {
		a := calloc[C.struct_fi_ep_attr]()
		if a == nil {
			return freeOnError(c)
		}
		a._type = uint32(e.Type)
		a.protocol, a.protocol_version = C.uint32_t(e.Protocol), C.uint32_t(e.ProtocolVersion)
		a.max_msg_size, a.msg_prefix_size = C.size_t(e.MaxMsgSize), C.size_t(e.MsgPrefixSize)
		a.max_order_raw_size = C.size_t(e.MaxOrderRAWSize)
		a.max_order_war_size = C.size_t(e.MaxOrderWARSize)
		a.max_order_waw_size = C.size_t(e.MaxOrderWAWSize)
		a.mem_tag_format = C.uint64_t(e.MemTagFormat)
		a.tx_ctx_cnt, a.rx_ctx_cnt = C.size_t(e.TxCtxCnt), C.size_t(e.RxCtxCnt)
		a.auth_key_size = C.size_t(e.AuthKeySize)
		a.auth_key = (*C.uint8_t)(cBytes(e.AuthKey))
		c.ep_attr = a
	}
	if d := info.Domain; d != nil {
		a := calloc[C.struct_fi_domain_attr]()
		if a == nil {
			return freeOnError(c)
		}
		a.domain = (*C.struct_fid_domain)(d.Domain.Pointer())
		a.name = cStr(d.Name)
		a.threading = uint32(d.Threading)
		a.control_progress, a.data_progress = uint32(d.ControlProgress), uint32(d.DataProgress)
		a.resource_mgmt, a.av_type = uint32(d.ResourceMgmt), uint32(d.AVType)
		a.mr_mode = C.int(d.MRMode)
		a.mr_key_size, a.cq_data_size = C.size_t(d.MRKeySize), C.size_t(d.CQDataSize)
		a.cq_cnt, a.ep_cnt = C.size_t(d.CQCnt), C.size_t(d.EPCnt)
		a.tx_ctx_cnt, a.rx_ctx_cnt = C.size_t(d.TxCtxCnt), C.size_t(d.RxCtxCnt)
		a.max_ep_tx_ctx, a.max_ep_rx_ctx = C.size_t(d.MaxEPTxCtx), C.size_t(d.MaxEPRxCtx)
		a.max_ep_stx_ctx, a.max_ep_srx_ctx = C.size_t(d.MaxEPStxCtx), C.size_t(d.MaxEPSrxCtx)
		a.cntr_cnt, a.mr_iov_limit = C.size_t(d.CntrCnt), C.size_t(d.MRIovLimit)
		a.caps, a.mode = C.uint64_t(d.Caps), C.uint64_t(d.Mode)
		a.auth_key = (*C.uint8_t)(cBytes(d.AuthKey))
		a.auth_key_size = C.size_t(d.AuthKeySize)
		a.max_err_data, a.mr_cnt = C.size_t(d.MaxErrData), C.size_t(d.MRCnt)
		a.tclass = C.uint32_t(d.TClass)
		c.domain_attr = a
	}
	if f := info.Fabric; f != nil {
		a := calloc[C.struct_fi_fabric_attr]()
		if a == nil {
			return freeOnError(c)
		}
		a.fabric = (*C.struct_fid_fabric)(f.Fabric.Pointer())
		a.name, a.prov_name = cStr(f.Name), cStr(f.ProvName)
		a.prov_version, a.api_version = C.uint32_t(f.ProvVersion), C.uint32_t(f.APIVersion)
		c.fabric_attr = a
	}
	if info.Nic != nil {
		if c.nic = nicToC(info.Nic); c.nic == nil {
			return freeOnError(c)
		}
	}
	return c
}

func freeOnError(c *C.struct_fi_info) *C.struct_fi_info {
	C.psm2_freeinfo(c)
	return nil
}

// infoListToC converts a list; on allocation failure it frees what it
// built and returns nil.
func infoListToC(infos []*fi.Info) *C.struct_fi_info {
	var head, tail *C.struct_fi_info
	for _, info := range infos {
		c := infoToC(info)
		if c == nil {
			C.psm2_freeinfo(head)
			return nil
		}
		if head == nil {
			head = c
		} else {
			tail.next = c
		}
		tail = c
	}
	return head
}
