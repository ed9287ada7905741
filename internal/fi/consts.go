package fi

// Version packs a major and minor API version as FI_VERSION does.
func Version(major, minor uint32) uint32 { return major<<16 | minor }

// VersionMajor and VersionMinor unpack a version made by Version.
func VersionMajor(v uint32) uint32 { return v >> 16 }
func VersionMinor(v uint32) uint32 { return v & 0xffff }

// VersionGE reports whether v1 >= v2 (FI_VERSION_GE).
func VersionGE(v1, v2 uint32) bool {
	return VersionMajor(v1) > VersionMajor(v2) ||
		(VersionMajor(v1) == VersionMajor(v2) && VersionMinor(v1) >= VersionMinor(v2))
}

// The API version this library implements (libfabric 1.17).
const (
	MajorVersion = 1
	MinorVersion = 17
)

// APIVersion is FI_VERSION(1, 17).
var APIVersion = Version(MajorVersion, MinorVersion)

// Capability and operation flag bits (fabric.h). Several names share a bit:
// the meaning depends on where the bit is used.
const (
	MSG               uint64 = 1 << 1
	RMA               uint64 = 1 << 2
	TAGGED            uint64 = 1 << 3
	ATOMIC            uint64 = 1 << 4
	MULTICAST         uint64 = 1 << 5
	COLLECTIVE        uint64 = 1 << 6
	READ              uint64 = 1 << 8
	WRITE             uint64 = 1 << 9
	RECV              uint64 = 1 << 10
	SEND              uint64 = 1 << 11
	TRANSMIT                 = SEND
	REMOTE_READ       uint64 = 1 << 12
	REMOTE_WRITE      uint64 = 1 << 13
	MULTI_RECV        uint64 = 1 << 16
	REMOTE_CQ_DATA    uint64 = 1 << 17
	MORE              uint64 = 1 << 18
	SYNC_ERR          uint64 = 1 << 58 // fi_av_insert: per-address errors in the context
	PEEK              uint64 = 1 << 19
	TRIGGER           uint64 = 1 << 20
	FENCE             uint64 = 1 << 21
	PRIORITY          uint64 = 1 << 22
	COMPLETION        uint64 = 1 << 24
	INJECT            uint64 = 1 << 25
	INJECT_COMPLETE   uint64 = 1 << 26
	TRANSMIT_COMPLETE uint64 = 1 << 27
	DELIVERY_COMPLETE uint64 = 1 << 28
	AFFINITY          uint64 = 1 << 29
	COMMIT_COMPLETE   uint64 = 1 << 30
	MATCH_COMPLETE    uint64 = 1 << 31
	PEER_TRANSFER     uint64 = 1 << 36
	AV_USER_ID        uint64 = 1 << 41
	PEER              uint64 = 1 << 43
	XPU_TRIGGER       uint64 = 1 << 44
	HMEM_HOST_ALLOC   uint64 = 1 << 45
	HMEM_DEVICE_ONLY  uint64 = 1 << 46
	HMEM              uint64 = 1 << 47
	VARIABLE_MSG      uint64 = 1 << 48
	RMA_PMEM          uint64 = 1 << 49
	SOURCE_ERR        uint64 = 1 << 50
	LOCAL_COMM        uint64 = 1 << 51
	REMOTE_COMM       uint64 = 1 << 52
	SHARED_AV         uint64 = 1 << 53
	PROV_ATTR_ONLY    uint64 = 1 << 54
	NUMERICHOST       uint64 = 1 << 55
	RMA_EVENT         uint64 = 1 << 56
	SOURCE            uint64 = 1 << 57
	NAMED_RX_CTX      uint64 = 1 << 58
	DIRECTED_RECV     uint64 = 1 << 59
	CLAIM             uint64 = 1 << 59
	DISCARD           uint64 = 1 << 58
	// fi_ep_bind flag.
	SELECTIVE_COMPLETION uint64 = 1 << 59
	// fi_getinfo flags (fi_domain.h / fabric.h share bit 57 with SOURCE).
	PROV_SPECIFIC uint64 = 1 << 31
)

// Mode bits.
const (
	CONTEXT           uint64 = 1 << 59
	MSG_PREFIX        uint64 = 1 << 58
	ASYNC_IOV         uint64 = 1 << 57
	RX_CQ_DATA        uint64 = 1 << 56
	LOCAL_MR          uint64 = 1 << 55
	NOTIFY_FLAGS_ONLY uint64 = 1 << 54
	RESTRICTED_COMP   uint64 = 1 << 53
	CONTEXT2          uint64 = 1 << 52
	BUFFERED_RECV     uint64 = 1 << 51
)

// Message ordering bits.
const (
	ORDER_NONE       uint64 = 0
	ORDER_RAR        uint64 = 1 << 0
	ORDER_RAW        uint64 = 1 << 1
	ORDER_RAS        uint64 = 1 << 2
	ORDER_WAR        uint64 = 1 << 3
	ORDER_WAW        uint64 = 1 << 4
	ORDER_WAS        uint64 = 1 << 5
	ORDER_SAR        uint64 = 1 << 6
	ORDER_SAW        uint64 = 1 << 7
	ORDER_SAS        uint64 = 1 << 8
	ORDER_STRICT     uint64 = 0x1FF
	ORDER_DATA       uint64 = 1 << 16
	ORDER_RMA_RAR    uint64 = 1 << 32
	ORDER_RMA_RAW    uint64 = 1 << 33
	ORDER_RMA_WAR    uint64 = 1 << 34
	ORDER_RMA_WAW    uint64 = 1 << 35
	ORDER_ATOMIC_RAR uint64 = 1 << 36
	ORDER_ATOMIC_RAW uint64 = 1 << 37
	ORDER_ATOMIC_WAR uint64 = 1 << 38
	ORDER_ATOMIC_WAW uint64 = 1 << 39
)

// Address formats (the anonymous enum in fabric.h).
const (
	FORMAT_UNSPEC uint32 = iota
	SOCKADDR
	SOCKADDR_IN
	SOCKADDR_IN6
	SOCKADDR_IB
	ADDR_PSMX
	ADDR_GNI
	ADDR_BGQ
	ADDR_MLX
	ADDR_STR
	ADDR_PSMX2
	ADDR_IB_UD
	ADDR_EFA
	ADDR_PSMX3
	ADDR_OPX
	ADDR_CXI
)

// AddrUnspec is FI_ADDR_UNSPEC / FI_ADDR_NOTAVAIL / FI_KEY_NOTAVAIL.
const AddrUnspec = ^uint64(0)

// AVType is enum fi_av_type.
type AVType int32

const (
	AV_UNSPEC AVType = iota
	AV_MAP
	AV_TABLE
)

// Memory registration mode bits (enum fi_mr_mode plus the FI_MR_* macros).
const (
	MR_UNSPEC     int32 = 0
	MR_BASIC      int32 = 1 << 0
	MR_SCALABLE   int32 = 1 << 1
	MR_LOCAL      int32 = 1 << 2
	MR_RAW        int32 = 1 << 3
	MR_VIRT_ADDR  int32 = 1 << 4
	MR_ALLOCATED  int32 = 1 << 5
	MR_PROV_KEY   int32 = 1 << 6
	MR_MMU_NOTIFY int32 = 1 << 7
	MR_RMA_EVENT  int32 = 1 << 8
	MR_ENDPOINT   int32 = 1 << 9
	MR_HMEM       int32 = 1 << 10
	MR_COLLECTIVE int32 = 1 << 11
)

// Progress is enum fi_progress.
type Progress int32

const (
	PROGRESS_UNSPEC Progress = iota
	PROGRESS_AUTO
	PROGRESS_MANUAL
)

// Threading is enum fi_threading.
type Threading int32

const (
	THREAD_UNSPEC Threading = iota
	THREAD_SAFE
	THREAD_FID
	THREAD_DOMAIN
	THREAD_COMPLETION
	THREAD_ENDPOINT
)

// ResourceMgmt is enum fi_resource_mgmt.
type ResourceMgmt int32

const (
	RM_UNSPEC ResourceMgmt = iota
	RM_DISABLED
	RM_ENABLED
)

// EPType is enum fi_ep_type.
type EPType int32

const (
	EP_UNSPEC EPType = iota
	EP_MSG
	EP_DGRAM
	EP_RDM
	EP_SOCK_STREAM
	EP_SOCK_DGRAM
)

// Endpoint protocols.
const (
	PROTO_UNSPEC uint32 = iota
	PROTO_RDMA_CM_IB_RC
	PROTO_IWARP
	PROTO_IB_UD
	PROTO_PSMX
	PROTO_UDP
	PROTO_SOCK_TCP
	PROTO_MXM
	PROTO_IWARP_RDM
	PROTO_IB_RDM
	PROTO_GNI
	PROTO_RXM
	PROTO_RXD
	PROTO_MLX
	PROTO_NETWORKDIRECT
	PROTO_PSMX2
	PROTO_SHM
	PROTO_MRAIL
	PROTO_RSTREAM
	PROTO_RDMA_CM_IB_XRC
	PROTO_EFA
	PROTO_PSMX3
	PROTO_RXM_TCP
	PROTO_OPX
	PROTO_CXI
	PROTO_XNET
)

// Traffic classes.
const (
	TC_UNSPEC           uint32 = 0
	TC_DSCP             uint32 = 0x100
	TC_LABEL            uint32 = 0x200
	TC_BEST_EFFORT             = TC_LABEL
	TC_LOW_LATENCY      uint32 = 0x201
	TC_DEDICATED_ACCESS uint32 = 0x202
	TC_BULK_DATA        uint32 = 0x203
	TC_SCAVENGER        uint32 = 0x204
	TC_NETWORK_CTRL     uint32 = 0x205
)

// BusType is enum fi_bus_type.
type BusType int32

const (
	BUS_UNKNOWN BusType = 0
	BUS_PCI     BusType = 1
)

// LinkState is enum fi_link_state.
type LinkState int32

const (
	LINK_UNKNOWN LinkState = iota
	LINK_DOWN
	LINK_UP
)

// Fid classes.
const (
	CLASS_UNSPEC uint64 = iota
	CLASS_FABRIC
	CLASS_DOMAIN
	CLASS_EP
	CLASS_SEP
	CLASS_RX_CTX
	CLASS_SRX_CTX
	CLASS_TX_CTX
	CLASS_STX_CTX
	CLASS_PEP
	CLASS_INTERFACE
	CLASS_AV
	CLASS_MR
	CLASS_EQ
	CLASS_CQ
	CLASS_CNTR
	CLASS_WAIT
	CLASS_POLL
	CLASS_CONNREQ
	CLASS_MC
	CLASS_NIC
	CLASS_AV_SET
	CLASS_MR_CACHE
	CLASS_MEM_MONITOR
	CLASS_PEER_CQ
	CLASS_PEER_SRX
	CLASS_LOG
	CLASS_PEER_AV
	CLASS_PEER_AV_SET
)

// Type is enum fi_type, the selector of fi_tostr.
type Type int32

const (
	TYPE_INFO Type = iota
	TYPE_EP_TYPE
	TYPE_CAPS
	TYPE_OP_FLAGS
	TYPE_ADDR_FORMAT
	TYPE_TX_ATTR
	TYPE_RX_ATTR
	TYPE_EP_ATTR
	TYPE_DOMAIN_ATTR
	TYPE_FABRIC_ATTR
	TYPE_THREADING
	TYPE_PROGRESS
	TYPE_PROTOCOL
	TYPE_MSG_ORDER
	TYPE_MODE
	TYPE_AV_TYPE
	TYPE_ATOMIC_TYPE
	TYPE_ATOMIC_OP
	TYPE_VERSION
	TYPE_EQ_EVENT
	TYPE_CQ_EVENT_FLAGS
	TYPE_MR_MODE
	TYPE_OP_TYPE
	TYPE_FID
	TYPE_COLLECTIVE_OP
	TYPE_HMEM_IFACE
	TYPE_CQ_FORMAT
	TYPE_LOG_LEVEL
	TYPE_LOG_SUBSYS
)

// Atomic datatypes (enum fi_datatype).
const (
	INT8 int32 = iota
	UINT8
	INT16
	UINT16
	INT32
	UINT32
	INT64
	UINT64
	FLOAT
	DOUBLE
	FLOAT_COMPLEX
	DOUBLE_COMPLEX
	LONG_DOUBLE
	LONG_DOUBLE_COMPLEX
	INT128
	UINT128
	DATATYPE_LAST       = INT128
	VOID          int32 = 256
)

// Atomic and collective operations (enum fi_op, enum fi_collective_op).
const (
	MIN int32 = iota
	MAX
	SUM
	PROD
	LOR
	LAND
	BOR
	BAND
	LXOR
	BXOR
	ATOMIC_READ
	ATOMIC_WRITE
	CSWAP
	CSWAP_NE
	CSWAP_LE
	CSWAP_LT
	CSWAP_GE
	CSWAP_GT
	MSWAP
	ATOMIC_OP_LAST
	NOOP int32 = 256
)

const (
	BARRIER int32 = iota
	BROADCAST
	ALLTOALL
	ALLREDUCE
	ALLGATHER
	REDUCE_SCATTER
	REDUCE
	SCATTER
	GATHER
)

// HMEM interfaces (enum fi_hmem_iface).
const (
	HMEM_SYSTEM int32 = iota
	HMEM_CUDA
	HMEM_ROCR
	HMEM_ZE
	HMEM_NEURON
	HMEM_SYNAPSEAI
)

// EQ events.
const (
	NOTIFY uint32 = iota
	CONNREQ
	CONNECTED
	SHUTDOWN
	MR_COMPLETE
	AV_COMPLETE
	JOIN_COMPLETE
)

// CQ formats (enum fi_cq_format).
const (
	CQ_FORMAT_UNSPEC int32 = iota
	CQ_FORMAT_CONTEXT
	CQ_FORMAT_MSG
	CQ_FORMAT_DATA
	CQ_FORMAT_TAGGED
)

// Wait objects (enum fi_wait_obj).
const (
	WAIT_NONE int32 = iota
	WAIT_UNSPEC
	WAIT_SET
	WAIT_FD
	WAIT_MUTEX_COND
	WAIT_YIELD
	WAIT_POLLFD
)

// Log levels (enum fi_log_level) and subsystems (enum fi_log_subsys).
type LogLevel int32

const (
	LOG_WARN LogLevel = iota
	LOG_TRACE
	LOG_INFO
	LOG_DEBUG
	LOG_MAX
)

type LogSubsys int32

const (
	LOG_CORE LogSubsys = iota
	LOG_FABRIC
	LOG_DOMAIN
	LOG_EP_CTRL
	LOG_EP_DATA
	LOG_AV
	LOG_CQ
	LOG_EQ
	LOG_MR
	LOG_CNTR
	LOG_SUBSYS_MAX
)

// Control commands for fi_control.
const (
	GETFIDFLAG int32 = iota
	SETFIDFLAG
	GETOPSFLAG
	SETOPSFLAG
	ALIAS
	GETWAIT
	ENABLE
	BACKLOG
	GET_RAW_MR
	MAP_RAW_MR
	UNMAP_KEY
	QUEUE_WORK
	CANCEL_WORK
	FLUSH_WORK
	REFRESH
	DUP
	GETWAITOBJ
	GET_VAL
	SET_VAL
	EXPORT_FID
)
