package fi

// Over 600 lines: fi_tostr for every type libfabric names, table-driven and
// checked entry by entry against Debian's libfabric.

import (
	"encoding/binary"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unsafe"
)

// The text formats below follow libfabric 1.17's fi_tostr (src/fi_tostr.c,
// the nic and address printers in src/common.c, the log names in
// src/log.c) exactly, including its odd corners; tostr_test.go checks them
// against testdata/tostr.golden, which Debian's libfabric produced.

// VersionString is what fi_tostr prints for TYPE_VERSION: the release
// number of a release build, whose build id is empty.
const VersionString = "1.17.0"

// TostrBufSize is the size of fi_tostr's static buffer: fi_tostr(data, t)
// gives TostrR(t, v, TostrBufSize).
const TostrBufSize = 8192

// FidString is what the shim knows about the fid given to
// fi_tostr(fid, FI_TYPE_FID): the pointer and, when the fid's ops have a
// tostr operation (FI_CHECK_OP true), the text that operation wrote into
// an empty buffer.
type FidString struct {
	Fid      uintptr
	HasTostr bool
	Tostr    string
}

// Tostr formats v as libfabric's fi_tostr(data, t) does. The dynamic type of v for each t:
//
//	TYPE_INFO *Info; TYPE_EP_TYPE EPType; TYPE_CAPS, TYPE_OP_FLAGS, TYPE_MSG_ORDER, TYPE_MODE,
//	TYPE_CQ_EVENT_FLAGS uint64; TYPE_ADDR_FORMAT uint32; TYPE_TX_ATTR *TxAttr;
//	TYPE_RX_ATTR *RxAttr; TYPE_EP_ATTR *EPAttr; TYPE_DOMAIN_ATTR *DomainAttr;
//	TYPE_FABRIC_ATTR *FabricAttr; TYPE_THREADING Threading; TYPE_PROGRESS Progress;
//	TYPE_PROTOCOL uint32; TYPE_AV_TYPE AVType; TYPE_ATOMIC_TYPE, TYPE_ATOMIC_OP,
//	TYPE_OP_TYPE, TYPE_COLLECTIVE_OP, TYPE_HMEM_IFACE, TYPE_CQ_FORMAT int32;
//	TYPE_MR_MODE int32 (the int mr_mode bits); TYPE_VERSION: v ignored (nil);
//	TYPE_EQ_EVENT uint32; TYPE_LOG_LEVEL LogLevel; TYPE_LOG_SUBSYS LogSubsys;
//	TYPE_FID FidString (or *FidString, or *Nic for a nic with libfabric's default ops).
//
// For the integer types any Go integer type is accepted; it is converted
// the way libfabric reads the value (as an int, a uint32 or a uint64).
// A value of another type is a bug in the caller and panics.
//
// libfabric returns NULL, not a string, when data is NULL, whatever the
// type; the shim must do the same (for TYPE_VERSION it passes no data and
// Tostr gives the version). Given a nil pointer (or nil v), Tostr returns
// "". An unknown t gives "Unknown type".
//
// Tostr is fi_tostr to the byte: it is TostrR(t, v, TostrBufSize), the
// text libfabric leaves in its 8192-byte static buffer. For any fi_info of
// ordinary size that is the whole text; for one whose text before the nic
// passes 4096 bytes, libfabric's nic printer garbles it (see TostrR), and
// so does Tostr.
func Tostr(t Type, v any) string {
	return TostrR(t, v, TostrBufSize)
}

// TostrR returns what libfabric's fi_tostr_r(buf, size, data, t) leaves in
// buf (without the NUL), v as for Tostr. Libfabric's truncation is not a
// plain cut: each piece is cut to leave two bytes free, addresses to leave
// one, a flag list cut just after a ", " loses it, and the nic printer is
// handed the space left instead of the buffer size. So when the text
// before the nic fills half the buffer or more, each nic line is written
// over the text at that offset and only the last one ("network_type")
// stays (see the test cases "trunc ... info psm2"). Where that libfabric
// bug writes past the end of the buffer, TostrR cuts the text at size-1.
// For size 0 libfabric returns NULL; TostrR returns "".
func TostrR(t Type, v any, size int) string {
	if size <= 0 {
		return ""
	}
	w := cbuf{size: size}
	format(&w, t, v)
	if len(w.b) > size-1 {
		w.b = w.b[:size-1]
	}
	return string(w.b)
}

// TostrNic formats a Nic the way libfabric's default nic tostr op does (used for
// info->nic and FI_TYPE_FID of a nic). A nil nic gives "" (libfabric has no nic
// to call then); a nil sub-attribute, which libfabric would dereference, prints
// as a zeroed one.
func TostrNic(n *Nic) string {
	if n == nil {
		return ""
	}
	w := cbuf{}
	writeNic(&w, 0, n)
	return string(w.b)
}

// FormatAddr formats an address of the given format the way fi_tostr prints
// src_addr and dest_addr: nil gives "(null)"; a format libfabric cannot print
// (FI_FORMAT_UNSPEC, unknown or provider-specific formats, a sockaddr whose
// family inet_ntop rejects) gives "". Fields libfabric would read past the end
// of a short addr read as zero. FI_ADDR_BGQ and FI_ADDR_MLX print the address
// of addr's first byte, which is libfabric's output when addr aliases the C
// buffer.
func FormatAddr(format uint32, addr []byte) string {
	if addr == nil {
		return "(null)"
	}
	return straddr(format, addr)
}

// cbuf reproduces a C string being built in a buffer of size bytes with
// libfabric's helpers. size 0 stands for an unbounded buffer. b is the
// string (it may run past size-1 only where libfabric overflows).
type cbuf struct {
	b    []byte
	size int
}

// catn appends s as ofi_strncatf(buf, n, "%s", s) does: the write starts
// at strnlen(buf, n) and may use n-1-that bytes including the NUL. When
// that count is negative (only for the nic printer, see writeNic) the
// size_t wraps and the write is unbounded.
func (w *cbuf) catn(n int, s string) {
	if w.size == 0 {
		w.b = append(w.b, s...)
		return
	}
	l := min(len(w.b), n)
	room := n - 1 - l
	switch {
	case room < 0:
		w.b = append(w.b[:l], s...)
	case room > 0:
		w.b = append(w.b[:l], s[:min(len(s), room-1)]...)
	}
}

func (w *cbuf) cat(s string) { w.catn(w.size, s) }

// removeComma drops a trailing ", " (ofi_remove_comma), wherever the
// string ends, even after a cut.
func (w *cbuf) removeComma() {
	if n := len(w.b); n >= 2 && w.b[n-2] == ',' && w.b[n-1] == ' ' {
		w.b = w.b[:n-2]
	}
}

// snprintfEnd appends s as snprintf(buf+strlen, size-strlen, "%s", s)
// does: the address printer may fill the buffer to size-1.
func (w *cbuf) snprintfEnd(s string) {
	if w.size == 0 {
		w.b = append(w.b, s...)
		return
	}
	if room := w.size - len(w.b); room > 0 {
		w.b = append(w.b, s[:min(len(s), room-1)]...)
	}
}

func format(w *cbuf, t Type, v any) {
	if t == TYPE_VERSION {
		w.cat(VersionString)
		return
	}
	if isNil(v) {
		return
	}
	switch t {
	case TYPE_INFO:
		writeInfo(w, want[*Info](t, v))
	case TYPE_EP_TYPE:
		w.cat(enumName(epTypeNames, int64(asInt32(t, v))))
	case TYPE_CAPS:
		writeFlags(w, capsNames, asUint64(t, v))
	case TYPE_OP_FLAGS:
		writeFlags(w, opFlagNames, asUint64(t, v))
	case TYPE_ADDR_FORMAT:
		w.cat(addrFormatName(asUint32(t, v)))
	case TYPE_TX_ATTR:
		writeTxAttr(w, "", want[*TxAttr](t, v))
	case TYPE_RX_ATTR:
		writeRxAttr(w, "", want[*RxAttr](t, v))
	case TYPE_EP_ATTR:
		writeEPAttr(w, "", want[*EPAttr](t, v))
	case TYPE_DOMAIN_ATTR:
		writeDomainAttr(w, "", want[*DomainAttr](t, v))
	case TYPE_FABRIC_ATTR:
		writeFabricAttr(w, "", want[*FabricAttr](t, v))
	case TYPE_THREADING:
		w.cat(enumName(threadingNames, int64(asInt32(t, v))))
	case TYPE_PROGRESS:
		w.cat(enumName(progressNames, int64(asInt32(t, v))))
	case TYPE_PROTOCOL:
		w.cat(protocolName(asUint32(t, v)))
	case TYPE_MSG_ORDER:
		writeFlags(w, msgOrderNames, asUint64(t, v))
	case TYPE_MODE:
		writeFlags(w, modeNames, asUint64(t, v))
	case TYPE_AV_TYPE:
		w.cat(enumName(avTypeNames, int64(asInt32(t, v))))
	case TYPE_ATOMIC_TYPE:
		w.cat(enumName(datatypeNames, int64(asInt32(t, v))))
	case TYPE_ATOMIC_OP:
		w.cat(enumName(atomicOpNames, int64(asInt32(t, v))))
	case TYPE_EQ_EVENT:
		w.cat(enumName(eqEventNames, int64(asInt32(t, v))))
	case TYPE_CQ_EVENT_FLAGS:
		writeFlags(w, cqEventFlagNames, asUint64(t, v))
	case TYPE_MR_MODE:
		writeFlags(w, mrModeNames, uint64(uint32(asInt32(t, v))))
	case TYPE_OP_TYPE:
		w.cat(enumName(opTypeNames, int64(asInt32(t, v))))
	case TYPE_FID:
		writeFid(w, v)
	case TYPE_COLLECTIVE_OP:
		w.cat(enumName(collectiveOpNames, int64(asInt32(t, v))))
	case TYPE_HMEM_IFACE:
		w.cat(enumName(hmemIfaceNames, int64(asInt32(t, v))))
	case TYPE_CQ_FORMAT:
		w.cat(enumName(cqFormatNames, int64(asInt32(t, v))))
	case TYPE_LOG_LEVEL:
		// The enum is unsigned in C: negative values are out of range too.
		w.cat(enumName(logLevelNames, int64(uint32(asInt32(t, v)))))
	case TYPE_LOG_SUBSYS:
		w.cat(enumName(logSubsysNames, int64(uint32(asInt32(t, v)))))
	default:
		w.cat("Unknown type")
	}
}

// isNil reports whether v stands for a NULL data pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

func want[T any](t Type, v any) T {
	x, ok := v.(T)
	if !ok {
		var zero T
		panic(fmt.Sprintf("fi.Tostr: type %d wants %T, got %T", t, zero, v))
	}
	return x
}

// integer returns v's bits as a uint64 (sign-extended for signed types).
func integer(t Type, v any) uint64 {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return uint64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return rv.Uint()
	}
	panic(fmt.Sprintf("fi.Tostr: type %d wants an integer, got %T", t, v))
}

func asUint64(t Type, v any) uint64 { return integer(t, v) }
func asUint32(t Type, v any) uint32 { return uint32(integer(t, v)) }
func asInt32(t Type, v any) int32   { return int32(integer(t, v)) }

// ---- enums ----

type enumNames map[int64]string

func enumName(names enumNames, v int64) string {
	if s, ok := names[v]; ok {
		return s
	}
	return "Unknown"
}

func sequence(first int64, names ...string) enumNames {
	m := make(enumNames, len(names))
	for i, s := range names {
		m[first+int64(i)] = s
	}
	return m
}

var (
	epTypeNames = sequence(0, "FI_EP_UNSPEC", "FI_EP_MSG", "FI_EP_DGRAM",
		"FI_EP_RDM", "FI_EP_SOCK_STREAM", "FI_EP_SOCK_DGRAM")
	addrFormatNames = sequence(0, "FI_FORMAT_UNSPEC", "FI_SOCKADDR",
		"FI_SOCKADDR_IN", "FI_SOCKADDR_IN6", "FI_SOCKADDR_IB", "FI_ADDR_PSMX",
		"FI_ADDR_GNI", "FI_ADDR_BGQ", "FI_ADDR_MLX", "FI_ADDR_STR",
		"FI_ADDR_PSMX2", "FI_ADDR_IB_UD", "FI_ADDR_EFA", "FI_ADDR_PSMX3",
		"FI_ADDR_OPX", "FI_ADDR_CXI")
	progressNames = sequence(0, "FI_PROGRESS_UNSPEC", "FI_PROGRESS_AUTO",
		"FI_PROGRESS_MANUAL")
	threadingNames = sequence(0, "FI_THREAD_UNSPEC", "FI_THREAD_SAFE",
		"FI_THREAD_FID", "FI_THREAD_DOMAIN", "FI_THREAD_COMPLETION",
		"FI_THREAD_ENDPOINT")
	resourceMgmtNames = sequence(0, "FI_RM_UNSPEC", "FI_RM_DISABLED",
		"FI_RM_ENABLED")
	avTypeNames = sequence(0, "FI_AV_UNSPEC", "FI_AV_MAP", "FI_AV_TABLE")
	// FI_PROTO_MRAIL (17) has no name in libfabric's printer.
	protocolNames = enumNames{
		int64(PROTO_UNSPEC): "FI_PROTO_UNSPEC", int64(PROTO_RDMA_CM_IB_RC): "FI_PROTO_RDMA_CM_IB_RC",
		int64(PROTO_IWARP): "FI_PROTO_IWARP", int64(PROTO_IB_UD): "FI_PROTO_IB_UD",
		int64(PROTO_PSMX): "FI_PROTO_PSMX", int64(PROTO_PSMX2): "FI_PROTO_PSMX2",
		int64(PROTO_UDP): "FI_PROTO_UDP", int64(PROTO_SOCK_TCP): "FI_PROTO_SOCK_TCP",
		int64(PROTO_IB_RDM): "FI_PROTO_IB_RDM", int64(PROTO_IWARP_RDM): "FI_PROTO_IWARP_RDM",
		int64(PROTO_GNI): "FI_PROTO_GNI", int64(PROTO_RXM): "FI_PROTO_RXM",
		int64(PROTO_RXD): "FI_PROTO_RXD", int64(PROTO_MLX): "FI_PROTO_MLX",
		int64(PROTO_NETWORKDIRECT): "FI_PROTO_NETWORKDIRECT", int64(PROTO_SHM): "FI_PROTO_SHM",
		int64(PROTO_RSTREAM): "FI_PROTO_RSTREAM", int64(PROTO_RDMA_CM_IB_XRC): "FI_PROTO_RDMA_CM_IB_XRC",
		int64(PROTO_EFA): "FI_PROTO_EFA", int64(PROTO_PSMX3): "FI_PROTO_PSMX3",
		int64(PROTO_RXM_TCP): "FI_PROTO_RXM_TCP", int64(PROTO_OPX): "FI_PROTO_OPX",
		int64(PROTO_CXI): "FI_PROTO_CXI", int64(PROTO_XNET): "FI_PROTO_XNET",
	}
	datatypeNames = sequence(0, "FI_INT8", "FI_UINT8", "FI_INT16",
		"FI_UINT16", "FI_INT32", "FI_UINT32", "FI_INT64", "FI_UINT64",
		"FI_FLOAT", "FI_DOUBLE", "FI_FLOAT_COMPLEX", "FI_DOUBLE_COMPLEX",
		"FI_LONG_DOUBLE", "FI_LONG_DOUBLE_COMPLEX", "FI_INT128", "FI_UINT128")
	atomicOpNames = sequence(0, "FI_MIN", "FI_MAX", "FI_SUM", "FI_PROD",
		"FI_LOR", "FI_LAND", "FI_BOR", "FI_BAND", "FI_LXOR", "FI_BXOR",
		"FI_ATOMIC_READ", "FI_ATOMIC_WRITE", "FI_CSWAP", "FI_CSWAP_NE",
		"FI_CSWAP_LE", "FI_CSWAP_LT", "FI_CSWAP_GE", "FI_CSWAP_GT", "FI_MSWAP")
	collectiveOpNames = sequence(0, "FI_BARRIER", "FI_BROADCAST",
		"FI_ALLTOALL", "FI_ALLREDUCE", "FI_ALLGATHER", "FI_REDUCE_SCATTER",
		"FI_REDUCE", "FI_SCATTER", "FI_GATHER")
	eqEventNames = sequence(0, "FI_NOTIFY", "FI_CONNREQ", "FI_CONNECTED",
		"FI_SHUTDOWN", "FI_MR_COMPLETE", "FI_AV_COMPLETE", "FI_JOIN_COMPLETE")
	opTypeNames = sequence(0, "FI_OP_RECV", "FI_OP_SEND", "FI_OP_TRECV",
		"FI_OP_TSEND", "FI_OP_READ", "FI_OP_WRITE", "FI_OP_ATOMIC",
		"FI_OP_FETCH_ATOMIC", "FI_OP_COMPARE_ATOMIC", "FI_OP_CNTR_SET",
		"FI_OP_CNTR_ADD")
	hmemIfaceNames = sequence(0, "FI_HMEM_SYSTEM", "FI_HMEM_CUDA",
		"FI_HMEM_ROCR", "FI_HMEM_ZE", "FI_HMEM_NEURON", "FI_HMEM_SYNAPSEAI")
	cqFormatNames = sequence(0, "FI_CQ_FORMAT_UNSPEC", "FI_CQ_FORMAT_CONTEXT",
		"FI_CQ_FORMAT_MSG", "FI_CQ_FORMAT_DATA", "FI_CQ_FORMAT_TAGGED")
	logLevelNames  = sequence(0, "warn", "trace", "info", "debug")
	logSubsysNames = sequence(0, "core", "fabric", "domain", "ep_ctrl",
		"ep_data", "av", "cq", "eq", "mr", "cntr")
	busTypeNames   = sequence(0, "FI_BUS_UNKNOWN", "FI_BUS_PCI")
	linkStateNames = sequence(0, "FI_LINK_UNKNOWN", "FI_LINK_DOWN", "FI_LINK_UP")
)

// addrFormatName and protocolName name values outside their enums by the
// FI_PROV_SPECIFIC bit.
func addrFormatName(f uint32) string {
	if s, ok := addrFormatNames[int64(f)]; ok {
		return s
	}
	if uint64(f)&PROV_SPECIFIC != 0 {
		return "Provider specific"
	}
	return "Unknown"
}

func protocolName(p uint32) string {
	if s, ok := protocolNames[int64(p)]; ok {
		return s
	}
	if uint64(p)&PROV_SPECIFIC != 0 {
		return "Provider specific"
	}
	return "Unknown"
}

// ---- flag lists ----

type flagName struct {
	bit  uint64
	name string
}

// The lists are in libfabric's printing order, which is not bit order.
var (
	capsNames = []flagName{
		{MSG, "FI_MSG"}, {RMA, "FI_RMA"}, {TAGGED, "FI_TAGGED"},
		{ATOMIC, "FI_ATOMIC"}, {MULTICAST, "FI_MULTICAST"},
		{COLLECTIVE, "FI_COLLECTIVE"}, {READ, "FI_READ"}, {WRITE, "FI_WRITE"},
		{RECV, "FI_RECV"}, {SEND, "FI_SEND"}, {REMOTE_READ, "FI_REMOTE_READ"},
		{REMOTE_WRITE, "FI_REMOTE_WRITE"}, {MULTI_RECV, "FI_MULTI_RECV"},
		{REMOTE_CQ_DATA, "FI_REMOTE_CQ_DATA"}, {TRIGGER, "FI_TRIGGER"},
		{FENCE, "FI_FENCE"}, {VARIABLE_MSG, "FI_VARIABLE_MSG"},
		{RMA_PMEM, "FI_RMA_PMEM"}, {SOURCE_ERR, "FI_SOURCE_ERR"},
		{LOCAL_COMM, "FI_LOCAL_COMM"}, {REMOTE_COMM, "FI_REMOTE_COMM"},
		{SHARED_AV, "FI_SHARED_AV"}, {RMA_EVENT, "FI_RMA_EVENT"},
		{SOURCE, "FI_SOURCE"}, {NAMED_RX_CTX, "FI_NAMED_RX_CTX"},
		{DIRECTED_RECV, "FI_DIRECTED_RECV"}, {HMEM, "FI_HMEM"},
	}
	opFlagNames = []flagName{
		{MULTICAST, "FI_MULTICAST"}, {MULTI_RECV, "FI_MULTI_RECV"},
		{REMOTE_CQ_DATA, "FI_REMOTE_CQ_DATA"}, {MORE, "FI_MORE"},
		{PEEK, "FI_PEEK"}, {TRIGGER, "FI_TRIGGER"}, {FENCE, "FI_FENCE"},
		{COMPLETION, "FI_COMPLETION"}, {INJECT, "FI_INJECT"},
		{INJECT_COMPLETE, "FI_INJECT_COMPLETE"},
		{TRANSMIT_COMPLETE, "FI_TRANSMIT_COMPLETE"},
		{DELIVERY_COMPLETE, "FI_DELIVERY_COMPLETE"},
		{MATCH_COMPLETE, "FI_MATCH_COMPLETE"}, {AFFINITY, "FI_AFFINITY"},
		{CLAIM, "FI_CLAIM"}, {DISCARD, "FI_DISCARD"},
	}
	msgOrderNames = []flagName{
		{ORDER_RAR, "FI_ORDER_RAR"}, {ORDER_RAW, "FI_ORDER_RAW"},
		{ORDER_RAS, "FI_ORDER_RAS"}, {ORDER_WAR, "FI_ORDER_WAR"},
		{ORDER_WAW, "FI_ORDER_WAW"}, {ORDER_WAS, "FI_ORDER_WAS"},
		{ORDER_SAR, "FI_ORDER_SAR"}, {ORDER_SAW, "FI_ORDER_SAW"},
		{ORDER_SAS, "FI_ORDER_SAS"}, {ORDER_RMA_RAR, "FI_ORDER_RMA_RAR"},
		{ORDER_RMA_RAW, "FI_ORDER_RMA_RAW"}, {ORDER_RMA_WAR, "FI_ORDER_RMA_WAR"},
		{ORDER_RMA_WAW, "FI_ORDER_RMA_WAW"},
		{ORDER_ATOMIC_RAR, "FI_ORDER_ATOMIC_RAR"},
		{ORDER_ATOMIC_RAW, "FI_ORDER_ATOMIC_RAW"},
		{ORDER_ATOMIC_WAR, "FI_ORDER_ATOMIC_WAR"},
		{ORDER_ATOMIC_WAW, "FI_ORDER_ATOMIC_WAW"},
	}
	modeNames = []flagName{
		{CONTEXT, "FI_CONTEXT"}, {MSG_PREFIX, "FI_MSG_PREFIX"},
		{ASYNC_IOV, "FI_ASYNC_IOV"}, {RX_CQ_DATA, "FI_RX_CQ_DATA"},
		{LOCAL_MR, "FI_LOCAL_MR"}, {NOTIFY_FLAGS_ONLY, "FI_NOTIFY_FLAGS_ONLY"},
		{RESTRICTED_COMP, "FI_RESTRICTED_COMP"}, {CONTEXT2, "FI_CONTEXT2"},
		{BUFFERED_RECV, "FI_BUFFERED_RECV"},
	}
	cqEventFlagNames = []flagName{
		{SEND, "FI_SEND"}, {RECV, "FI_RECV"}, {RMA, "FI_RMA"},
		{ATOMIC, "FI_ATOMIC"}, {MSG, "FI_MSG"}, {TAGGED, "FI_TAGGED"},
		{READ, "FI_READ"}, {WRITE, "FI_WRITE"}, {REMOTE_READ, "FI_REMOTE_READ"},
		{REMOTE_WRITE, "FI_REMOTE_WRITE"}, {REMOTE_CQ_DATA, "FI_REMOTE_CQ_DATA"},
		{MULTI_RECV, "FI_MULTI_RECV"}, {MORE, "FI_MORE"}, {CLAIM, "FI_CLAIM"},
	}
	mrModeNames = []flagName{
		{uint64(MR_BASIC), "FI_MR_BASIC"}, {uint64(MR_SCALABLE), "FI_MR_SCALABLE"},
		{uint64(MR_LOCAL), "FI_MR_LOCAL"}, {uint64(MR_RAW), "FI_MR_RAW"},
		{uint64(MR_VIRT_ADDR), "FI_MR_VIRT_ADDR"},
		{uint64(MR_ALLOCATED), "FI_MR_ALLOCATED"},
		{uint64(MR_PROV_KEY), "FI_MR_PROV_KEY"},
		{uint64(MR_MMU_NOTIFY), "FI_MR_MMU_NOTIFY"},
		{uint64(MR_RMA_EVENT), "FI_MR_RMA_EVENT"},
		{uint64(MR_ENDPOINT), "FI_MR_ENDPOINT"}, {uint64(MR_HMEM), "FI_MR_HMEM"},
		{uint64(MR_COLLECTIVE), "FI_MR_COLLECTIVE"},
	}
)

// writeFlags prints each set flag followed by ", " and then drops the
// last separator, as libfabric does piece by piece.
func writeFlags(w *cbuf, names []flagName, v uint64) {
	for _, f := range names {
		if v&f.bit != 0 {
			w.cat(f.name + ", ")
		}
	}
	w.removeComma()
}

// writeCompOrder prints comp_order: NONE or STRICT from the low nine
// ordering bits (nothing for a partial set), then FI_ORDER_DATA.
func writeCompOrder(w *cbuf, v uint64) {
	switch v & ORDER_STRICT {
	case ORDER_NONE:
		w.cat("FI_ORDER_NONE, ")
	case ORDER_STRICT:
		w.cat("FI_ORDER_STRICT, ")
	}
	if v&ORDER_DATA != 0 {
		w.cat("FI_ORDER_DATA, ")
	}
	w.removeComma()
}

// ---- structs ----

func (w *cbuf) list(prefix, key string, names []flagName, v uint64) {
	w.cat(prefix + tab + key + ": [ ")
	writeFlags(w, names, v)
	w.cat(" ]\n")
}

func (w *cbuf) field(prefix, key, value string) {
	w.cat(prefix + tab + key + ": " + value + "\n")
}

// labelled prints "key: " and the value as two pieces, as libfabric does
// for enum fields.
func (w *cbuf) labelled(prefix, key, value string) {
	w.cat(prefix + tab + key + ": ")
	w.cat(value)
	w.cat("\n")
}

const tab = "    "

func u64(v uint64) string { return strconv.FormatUint(v, 10) }

// cstr is printf's %s of a nullable string: glibc prints NULL as "(null)".
func cstr(s string) string {
	if s == "" {
		return "(null)"
	}
	return s
}

// ptr is printf's %p.
func ptr(p uintptr) string {
	if p == 0 {
		return "(nil)"
	}
	return "0x" + strconv.FormatUint(uint64(p), 16)
}

func writeTxAttr(w *cbuf, prefix string, a *TxAttr) {
	if a == nil {
		w.cat(prefix + "fi_tx_attr: (null)\n")
		return
	}
	w.cat(prefix + "fi_tx_attr:\n")
	w.list(prefix, "caps", capsNames, a.Caps)
	w.list(prefix, "mode", modeNames, a.Mode)
	w.list(prefix, "op_flags", opFlagNames, a.OpFlags)
	w.list(prefix, "msg_order", msgOrderNames, a.MsgOrder)
	w.cat(prefix + tab + "comp_order: [ ")
	writeCompOrder(w, a.CompOrder)
	w.cat(" ]\n")
	w.field(prefix, "inject_size", u64(a.InjectSize))
	w.field(prefix, "size", u64(a.Size))
	w.field(prefix, "iov_limit", u64(a.IovLimit))
	w.field(prefix, "rma_iov_limit", u64(a.RMAIovLimit))
	w.field(prefix, "tclass", fmt.Sprintf("0x%x", a.TClass))
}

func writeRxAttr(w *cbuf, prefix string, a *RxAttr) {
	if a == nil {
		w.cat(prefix + "fi_rx_attr: (null)\n")
		return
	}
	w.cat(prefix + "fi_rx_attr:\n")
	w.list(prefix, "caps", capsNames, a.Caps)
	w.list(prefix, "mode", modeNames, a.Mode)
	w.list(prefix, "op_flags", opFlagNames, a.OpFlags)
	w.list(prefix, "msg_order", msgOrderNames, a.MsgOrder)
	w.cat(prefix + tab + "comp_order: [ ")
	writeCompOrder(w, a.CompOrder)
	w.cat(" ]\n")
	w.field(prefix, "total_buffered_recv", u64(a.TotalBufferedRecv))
	w.field(prefix, "size", u64(a.Size))
	w.field(prefix, "iov_limit", u64(a.IovLimit))
}

// ctxCnt prints an endpoint's tx_ctx_cnt or rx_ctx_cnt: the key and the
// value are separate pieces.
func (w *cbuf) ctxCnt(prefix, key string, v uint64) {
	w.cat(prefix + tab + key + ": ")
	if v == SHARED_CONTEXT {
		w.cat("FI_SHARED_CONTEXT\n")
	} else {
		w.cat(u64(v) + "\n")
	}
}

func writeEPAttr(w *cbuf, prefix string, a *EPAttr) {
	if a == nil {
		w.cat(prefix + "fi_ep_attr: (null)\n")
		return
	}
	w.cat(prefix + "fi_ep_attr:\n")
	w.labelled(prefix, "type", enumName(epTypeNames, int64(a.Type)))
	w.labelled(prefix, "protocol", protocolName(a.Protocol))
	// protocol_version is printed with %d.
	w.field(prefix, "protocol_version", strconv.FormatInt(int64(int32(a.ProtocolVersion)), 10))
	w.field(prefix, "max_msg_size", u64(a.MaxMsgSize))
	w.field(prefix, "msg_prefix_size", u64(a.MsgPrefixSize))
	w.field(prefix, "max_order_raw_size", u64(a.MaxOrderRAWSize))
	w.field(prefix, "max_order_war_size", u64(a.MaxOrderWARSize))
	w.field(prefix, "max_order_waw_size", u64(a.MaxOrderWAWSize))
	w.field(prefix, "mem_tag_format", fmt.Sprintf("0x%016x", a.MemTagFormat))
	w.ctxCnt(prefix, "tx_ctx_cnt", a.TxCtxCnt)
	w.ctxCnt(prefix, "rx_ctx_cnt", a.RxCtxCnt)
	w.field(prefix, "auth_key_size", u64(a.AuthKeySize))
}

func writeDomainAttr(w *cbuf, prefix string, a *DomainAttr) {
	if a == nil {
		w.cat(prefix + "fi_domain_attr: (null)\n")
		return
	}
	w.cat(prefix + "fi_domain_attr:\n")
	// libfabric prints the domain pointer with %x: its low 32 bits.
	w.field(prefix, "domain", fmt.Sprintf("0x%x", uint32(a.Domain.Addr())))
	w.field(prefix, "name", cstr(a.Name))
	w.labelled(prefix, "threading", enumName(threadingNames, int64(a.Threading)))
	w.labelled(prefix, "control_progress", enumName(progressNames, int64(a.ControlProgress)))
	w.labelled(prefix, "data_progress", enumName(progressNames, int64(a.DataProgress)))
	w.labelled(prefix, "resource_mgmt", enumName(resourceMgmtNames, int64(a.ResourceMgmt)))
	w.labelled(prefix, "av_type", enumName(avTypeNames, int64(a.AVType)))
	w.list(prefix, "mr_mode", mrModeNames, uint64(uint32(a.MRMode)))
	w.field(prefix, "mr_key_size", u64(a.MRKeySize))
	w.field(prefix, "cq_data_size", u64(a.CQDataSize))
	w.field(prefix, "cq_cnt", u64(a.CQCnt))
	w.field(prefix, "ep_cnt", u64(a.EPCnt))
	w.field(prefix, "tx_ctx_cnt", u64(a.TxCtxCnt))
	w.field(prefix, "rx_ctx_cnt", u64(a.RxCtxCnt))
	w.field(prefix, "max_ep_tx_ctx", u64(a.MaxEPTxCtx))
	w.field(prefix, "max_ep_rx_ctx", u64(a.MaxEPRxCtx))
	w.field(prefix, "max_ep_stx_ctx", u64(a.MaxEPStxCtx))
	w.field(prefix, "max_ep_srx_ctx", u64(a.MaxEPSrxCtx))
	w.field(prefix, "cntr_cnt", u64(a.CntrCnt))
	w.field(prefix, "mr_iov_limit", u64(a.MRIovLimit))
	w.list(prefix, "caps", capsNames, a.Caps)
	w.list(prefix, "mode", modeNames, a.Mode)
	w.field(prefix, "auth_key_size", u64(a.AuthKeySize))
	w.field(prefix, "max_err_data", u64(a.MaxErrData))
	w.field(prefix, "mr_cnt", u64(a.MRCnt))
	w.field(prefix, "tclass", fmt.Sprintf("0x%x", a.TClass))
}

func writeFabricAttr(w *cbuf, prefix string, a *FabricAttr) {
	if a == nil {
		w.cat(prefix + "fi_fabric_attr: (null)\n")
		return
	}
	w.cat(prefix + "fi_fabric_attr:\n")
	w.field(prefix, "name", cstr(a.Name))
	w.field(prefix, "prov_name", cstr(a.ProvName))
	w.field(prefix, "prov_version", fmt.Sprintf("%d.%d", VersionMajor(a.ProvVersion), VersionMinor(a.ProvVersion)))
	w.field(prefix, "api_version", fmt.Sprintf("%d.%d", VersionMajor(a.APIVersion), VersionMinor(a.APIVersion)))
}

func writeInfo(w *cbuf, info *Info) {
	w.cat("fi_info:\n")
	w.list("", "caps", capsNames, info.Caps)
	w.list("", "mode", modeNames, info.Mode)
	w.labelled("", "addr_format", addrFormatName(info.AddrFormat))
	w.field("", "src_addrlen", u64(info.SrcAddrLen))
	w.field("", "dest_addrlen", u64(info.DestAddrLen))
	w.cat(tab + "src_addr: ")
	writeAddr(w, info.AddrFormat, info.SrcAddr)
	w.cat("\n")
	w.cat(tab + "dest_addr: ")
	writeAddr(w, info.AddrFormat, info.DestAddr)
	w.cat("\n")
	w.cat(tab + "handle: " + ptr(info.Handle.Addr()) + "\n")
	writeTxAttr(w, tab, info.Tx)
	writeRxAttr(w, tab, info.Rx)
	writeEPAttr(w, tab, info.EP)
	writeDomainAttr(w, tab, info.Domain)
	writeFabricAttr(w, tab, info.Fabric)
	if info.Nic == nil {
		w.cat(tab + "nic: (nil)\n")
	} else {
		writeNicOp(w, info.Nic)
	}
}

func writeAddr(w *cbuf, format uint32, addr []byte) {
	if addr == nil {
		w.cat("(null)")
		return
	}
	w.snprintfEnd(straddr(format, addr))
}

// writeFid prints a TYPE_FID value: the fid's own tostr text, or the
// pointer.
func writeFid(w *cbuf, v any) {
	var f FidString
	switch x := v.(type) {
	case FidString:
		f = x
	case *FidString:
		f = *x
	case *Nic:
		writeNicOp(w, x)
		return
	default:
		panic(fmt.Sprintf("fi.Tostr: TYPE_FID wants FidString, got %T", v))
	}
	switch {
	case f.Fid == 0:
	case f.HasTostr:
		w.snprintfEnd(f.Tostr)
	default:
		w.cat("fid: " + ptr(f.Fid) + "\n")
	}
}

// writeNicOp calls the nic's tostr op as libfabric does: with the whole
// buffer but, as its length, only what is left of it.
func writeNicOp(w *cbuf, n *Nic) {
	limit := 0
	if w.size != 0 {
		limit = w.size - min(len(w.b), w.size)
	}
	writeNic(w, limit, n)
}

// writeNic is the default nic tostr op writing into a buffer it believes
// to be limit bytes long (unbounded when w is).
func writeNic(w *cbuf, limit int, n *Nic) {
	cat := func(s string) { w.catn(limit, s) }
	const p2, p3, p4 = tab + tab, tab + tab + tab, tab + tab + tab + tab

	dev := n.Device
	if dev == nil {
		dev = &DeviceAttr{}
	}
	bus := n.Bus
	if bus == nil {
		bus = &BusAttr{}
	}
	link := n.Link
	if link == nil {
		link = &LinkAttr{}
	}

	cat(tab + "nic:\n")
	cat(p2 + "fi_device_attr:\n")
	cat(p3 + "name: " + cstr(dev.Name) + "\n")
	cat(p3 + "device_id: " + cstr(dev.DeviceID) + "\n")
	cat(p3 + "device_version: " + cstr(dev.DeviceVersion) + "\n")
	cat(p3 + "vendor_id: " + cstr(dev.VendorID) + "\n")
	cat(p3 + "driver: " + cstr(dev.Driver) + "\n")
	cat(p3 + "firmware: " + cstr(dev.Firmware) + "\n")

	cat(p2 + "fi_bus_attr:\n")
	cat(p3 + "bus_type: ")
	cat(enumName(busTypeNames, int64(bus.Type)))
	cat("\n")
	if bus.Type == BUS_PCI {
		cat(p3 + "fi_pci_attr:\n")
		cat(p4 + "domain_id: " + strconv.Itoa(int(bus.PCI.DomainID)) + "\n")
		cat(p4 + "bus_id: " + strconv.Itoa(int(bus.PCI.BusID)) + "\n")
		cat(p4 + "device_id: " + strconv.Itoa(int(bus.PCI.DeviceID)) + "\n")
		cat(p4 + "function_id: " + strconv.Itoa(int(bus.PCI.FunctionID)) + "\n")
	}

	cat(p2 + "fi_link_attr:\n")
	cat(p3 + "address: " + cstr(link.Address) + "\n")
	cat(p3 + "mtu: " + u64(link.MTU) + "\n")
	cat(p3 + "speed: " + u64(link.Speed) + "\n")
	cat(p3 + "state: ")
	cat(enumName(linkStateNames, int64(link.State)))
	cat("\n" + p3 + "network_type: " + cstr(link.NetworkType) + "\n")
}

// ---- addresses (ofi_straddr) ----

const (
	afInet  = 2
	afInet6 = 10
)

// field returns n bytes of addr from off, zero past its end.
func addrBytes(addr []byte, off, n int) []byte {
	b := make([]byte, n)
	if off < len(addr) {
		copy(b, addr[off:])
	}
	return b
}

func hostU16(a []byte, off int) uint16 { return binary.NativeEndian.Uint16(addrBytes(a, off, 2)) }
func hostU32(a []byte, off int) uint32 { return binary.NativeEndian.Uint32(addrBytes(a, off, 4)) }
func hostU64(a []byte, off int) uint64 { return binary.NativeEndian.Uint64(addrBytes(a, off, 8)) }
func netU16(a []byte, off int) uint16  { return binary.BigEndian.Uint16(addrBytes(a, off, 2)) }
func netU64(a []byte, off int) uint64  { return binary.BigEndian.Uint64(addrBytes(a, off, 8)) }
func hexStr(v uint64) string           { return strconv.FormatUint(v, 16) }

// straddr is ofi_straddr's text for a non-NULL address, "" where it
// prints nothing.
func straddr(format uint32, a []byte) string {
	switch format {
	case SOCKADDR:
		switch hostU16(a, 0) {
		case afInet:
			return sockaddrIn(a)
		case afInet6:
			return sockaddrIn6(a)
		}
		return ""
	case SOCKADDR_IN:
		return sockaddrIn(a)
	case SOCKADDR_IN6:
		return sockaddrIn6(a)
	case ADDR_EFA:
		return "fi_addr_efa://[" + ntop6(addrBytes(a, 0, 16)) + "]:" +
			strconv.FormatUint(uint64(hostU16(a, 16)), 10) + ":" +
			strconv.FormatUint(uint64(hostU32(a, 20)), 10)
	case SOCKADDR_IB:
		// struct ofi_sockaddr_ib: family, pkey, flowinfo, GID at 8,
		// sid at 24, sid_mask at 32, scope_id at 40; network order.
		return "fi_sockaddr_ib://[" + ntop6(addrBytes(a, 8, 16)) + "]" +
			":0x" + hexStr(uint64(netU16(a, 2))) +
			":0x" + hexStr((netU64(a, 24)>>16)&0xfff) +
			":0x" + hexStr(netU64(a, 40)&0xff)
	case ADDR_PSMX:
		return "fi_addr_psmx://" + hexStr(hostU64(a, 0))
	case ADDR_PSMX2:
		return "fi_addr_psmx2://" + hexStr(hostU64(a, 0)) + ":" + hexStr(hostU64(a, 8))
	case ADDR_PSMX3:
		return "fi_addr_psmx3://" + hexStr(hostU64(a, 0)) + ":" + hexStr(hostU64(a, 8)) +
			":" + hexStr(hostU64(a, 16)) + ":" + hexStr(hostU64(a, 24))
	case ADDR_GNI:
		return "fi_addr_gni://" + hexStr(hostU64(a, 0))
	case ADDR_BGQ:
		return fmt.Sprintf("fi_addr_bgq://%p", unsafe.SliceData(a))
	case ADDR_OPX:
		return fmt.Sprintf("fi_addr_opx://%016x", hostU64(a, 0))
	case ADDR_MLX:
		return fmt.Sprintf("fi_addr_mlx://%p", unsafe.SliceData(a))
	case ADDR_IB_UD:
		// GID, then qpn (32 bits) at 16, lid at 20, pkey at 22, sl at 26.
		return "fi_addr_ib_ud://" + ntop6(addrBytes(a, 0, 16)) +
			":" + hexStr(uint64(hostU32(a, 16))) +
			"/" + hexStr(uint64(hostU16(a, 20))) +
			"/" + hexStr(uint64(hostU16(a, 22))) +
			"/" + hexStr(uint64(addrBytes(a, 26, 1)[0]))
	case ADDR_STR:
		s, _, _ := strings.Cut(string(a), "\x00")
		return s
	case ADDR_CXI:
		return fmt.Sprintf("fi_addr_cxi://0x%08x", hostU32(a, 0))
	}
	return ""
}

// inetNtop formats the address at src the way inet_ntop(family, ...)
// does; ok is false for a family it rejects.
func inetNtop(family uint16, src []byte) (string, bool) {
	switch family {
	case afInet:
		return ntop4(src[:4]), true
	case afInet6:
		return ntop6(src[:16]), true
	}
	return "", false
}

// sockaddrIn formats a struct sockaddr_in, whose family field picks the
// address format inet_ntop reads from the sin_addr offset.
func sockaddrIn(a []byte) string {
	s, ok := inetNtop(hostU16(a, 0), addrBytes(a, 4, 16))
	if !ok {
		return ""
	}
	return "fi_sockaddr_in://" + s + ":" + strconv.Itoa(int(netU16(a, 2)))
}

func sockaddrIn6(a []byte) string {
	s, ok := inetNtop(hostU16(a, 0), addrBytes(a, 8, 16))
	if !ok {
		return ""
	}
	return "fi_sockaddr_in6://[" + s + "]:" + strconv.Itoa(int(netU16(a, 2)))
}

func ntop4(b []byte) string {
	return fmt.Sprintf("%d.%d.%d.%d", b[0], b[1], b[2], b[3])
}

// ntop6 is glibc's inet_ntop for AF_INET6: the first longest run of two
// or more zero words becomes "::", and an address whose first five words
// are zero and sixth is 0 or ffff (but not "::" or "::1" style runs of
// seven or more) ends in dotted IPv4.
func ntop6(b []byte) string {
	var words [8]uint16
	for i := range words {
		words[i] = binary.BigEndian.Uint16(b[2*i:])
	}
	bestBase, bestLen := -1, 0
	curBase, curLen := -1, 0
	for i, x := range words {
		if x == 0 {
			if curBase == -1 {
				curBase, curLen = i, 1
			} else {
				curLen++
			}
			continue
		}
		if curBase != -1 {
			if bestBase == -1 || curLen > bestLen {
				bestBase, bestLen = curBase, curLen
			}
			curBase = -1
		}
	}
	if curBase != -1 && (bestBase == -1 || curLen > bestLen) {
		bestBase, bestLen = curBase, curLen
	}
	if bestBase != -1 && bestLen < 2 {
		bestBase = -1
	}

	var sb strings.Builder
	for i := 0; i < len(words); i++ {
		if bestBase != -1 && i >= bestBase && i < bestBase+bestLen {
			if i == bestBase {
				sb.WriteByte(':')
			}
			continue
		}
		if i != 0 {
			sb.WriteByte(':')
		}
		if i == 6 && bestBase == 0 && (bestLen == 6 || (bestLen == 5 && words[5] == 0xffff)) {
			sb.WriteString(ntop4(b[12:16]))
			return sb.String()
		}
		sb.WriteString(hexStr(uint64(words[i])))
	}
	if bestBase != -1 && bestBase+bestLen == len(words) {
		sb.WriteByte(':')
	}
	return sb.String()
}
