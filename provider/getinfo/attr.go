package getinfo

import "github.com/gopsm2/libfabric-psm2/internal/fi"

// Capability sets of the psm2 provider (fi_psm2(7)).
const (
	txCaps = fi.MSG | fi.SEND | fi.TAGGED | fi.RMA | fi.READ | fi.WRITE |
		fi.ATOMIC | fi.NAMED_RX_CTX | fi.TRIGGER
	rxCaps = fi.SOURCE | fi.SOURCE_ERR | fi.RMA_EVENT | fi.MSG | fi.RECV |
		fi.TAGGED | fi.RMA | fi.REMOTE_READ | fi.REMOTE_WRITE | fi.ATOMIC |
		fi.DIRECTED_RECV | fi.MULTI_RECV | fi.TRIGGER
	domainCaps = fi.SHARED_AV | fi.LOCAL_COMM | fi.REMOTE_COMM
	// Caps is every capability the provider can grant.
	Caps = txCaps | rxCaps | domainCaps

	rmaTxCaps = txCaps &^ (fi.TAGGED | fi.MSG | fi.SEND)
	rmaRxCaps = rxCaps &^ (fi.TAGGED | fi.MSG | fi.RECV | fi.DIRECTED_RECV | fi.MULTI_RECV)
	rmaCaps   = rmaTxCaps | rmaRxCaps | domainCaps

	opFlags = fi.INJECT | fi.MULTI_RECV | fi.COMPLETION | fi.TRIGGER |
		fi.INJECT_COMPLETE | fi.TRANSMIT_COMPLETE | fi.DELIVERY_COMPLETE

	msgOrder = fi.ORDER_SAS |
		fi.ORDER_RAR | fi.ORDER_RMA_RAR | fi.ORDER_ATOMIC_RAR |
		fi.ORDER_RAW | fi.ORDER_RMA_RAW | fi.ORDER_ATOMIC_RAW |
		fi.ORDER_WAR | fi.ORDER_RMA_WAR | fi.ORDER_ATOMIC_WAR |
		fi.ORDER_WAW | fi.ORDER_RMA_WAW | fi.ORDER_ATOMIC_WAW
)

// Limits and identities reported in fi_info.
const (
	FabricName = "psm2"
	ProvName   = "psm2"
	// DomainPrefix is what a domain name hint must start with.
	DomainPrefix = "hfi1"

	// ProtocolVersion is PSM2's API version, 2.2.
	ProtocolVersion = 0x0202
	// MaxMsgSize is the largest message: 2^32-1 rounded down to 4 KiB.
	MaxMsgSize = (1<<32 - 1) &^ 0xFFF
	// RMAOrderSize bounds the ordered RMA size.
	RMAOrderSize = 4096
	// MRIovLimit is the largest iov count of one registration.
	MRIovLimit = 65535
	// IovLimit is the largest iov count of a send: a 64-byte header
	// carries the lengths.
	IovLimit = 64/4 - 3
	// MaxErrData is the err_data room of a CQ error entry (holds a string
	// address).
	MaxErrData = 64
	// AuthKeySize is the job key size.
	AuthKeySize = 16
	// tagGeneric is FI_TAG_GENERIC.
	tagGeneric = 0xAAAAAAAAAAAAAAAA

	// MaxContexts is how many endpoints (transmit/receive contexts) one
	// process may open. It is our own limit, not a hardware one: each
	// endpoint maps shared-memory queues and a socket.
	MaxContexts = 256
	// MaxSEPContexts is how many contexts one scalable endpoint may have:
	// each is an endpoint of its own (its shm segment, rings and socket),
	// opened with consecutive context numbers and UDP ports.
	MaxSEPContexts = 64
)

// ProvVersion is the provider version, 117.0 as in libfabric 1.17.
var ProvVersion = fi.Version(117, 0)

// Template returns a fresh copy of the full-featured fi_info every entry
// starts from (the TAG64 shape).
func Template() *fi.Info {
	return &fi.Info{
		Caps:       Caps,
		Mode:       fi.CONTEXT,
		AddrFormat: fi.ADDR_PSMX2,
		Tx: &fi.TxAttr{
			Caps:        txCaps,
			Mode:        fi.CONTEXT,
			OpFlags:     opFlags,
			MsgOrder:    msgOrder,
			CompOrder:   fi.ORDER_NONE,
			InjectSize:  64,
			Size:        ^uint64(0),
			IovLimit:    IovLimit,
			RMAIovLimit: 1,
		},
		Rx: &fi.RxAttr{
			Caps:              rxCaps,
			Mode:              fi.CONTEXT,
			OpFlags:           opFlags,
			MsgOrder:          msgOrder,
			CompOrder:         fi.ORDER_NONE,
			TotalBufferedRecv: ^uint64(0),
			Size:              ^uint64(0),
			IovLimit:          1,
		},
		EP: &fi.EPAttr{
			Type:            fi.EP_RDM,
			Protocol:        fi.PROTO_PSMX2,
			ProtocolVersion: ProtocolVersion,
			MaxMsgSize:      MaxMsgSize,
			MaxOrderRAWSize: RMAOrderSize,
			MaxOrderWARSize: RMAOrderSize,
			MaxOrderWAWSize: RMAOrderSize,
			MemTagFormat:    tagGeneric,
			TxCtxCnt:        1,
			RxCtxCnt:        1,
			AuthKeySize:     AuthKeySize,
		},
		Domain: &fi.DomainAttr{
			Name:            DomainPrefix,
			Threading:       fi.THREAD_SAFE,
			ControlProgress: fi.PROGRESS_AUTO, // lowered to MANUAL unless asked
			DataProgress:    fi.PROGRESS_AUTO,
			ResourceMgmt:    fi.RM_ENABLED,
			AVType:          fi.AV_UNSPEC,
			MRMode:          fi.MR_SCALABLE | fi.MR_BASIC,
			MRKeySize:       8,
			CQCnt:           65535,
			EPCnt:           65535,
			TxCtxCnt:        1,
			RxCtxCnt:        1,
			MaxEPTxCtx:      1,
			MaxEPRxCtx:      1,
			MaxEPStxCtx:     1,
			CntrCnt:         65535,
			MRIovLimit:      MRIovLimit,
			Caps:            domainCaps,
			AuthKeySize:     AuthKeySize,
			MaxErrData:      MaxErrData,
			MRCnt:           65535,
		},
		Fabric: &fi.FabricAttr{
			Name:        FabricName,
			ProvVersion: ProvVersion,
		},
	}
}

// The three shapes the provider offers.
type EntryKind int

const (
	Tag64   EntryKind = iota // 64-bit tags, no CQ data
	Tag60                    // 60-bit tags, 32-bit CQ data
	RMAOnly                  // RMA and atomics only, 64-bit CQ data
)

// Entry builds one entry of the given kind for an endpoint type and
// address format.
func Entry(kind EntryKind, ep fi.EPType, format uint32) *fi.Info {
	info := Template()
	info.AddrFormat = format
	info.EP.Type = ep
	switch kind {
	case Tag60:
		info.EP.MemTagFormat >>= 4
		info.Domain.CQDataSize = 4
	case RMAOnly:
		info.Caps = rmaCaps
		info.Mode = 0
		info.Tx.Caps, info.Tx.Mode = rmaTxCaps, 0
		info.Rx.Caps, info.Rx.Mode = rmaRxCaps, 0
		info.Domain.CQDataSize = 8
	}
	return info
}

// Nic is the fid_nic every entry carries: there is no hardware to
// describe, so every field is unknown, as with a real HFI whose sysfs
// entry cannot be read.
func Nic() *fi.Nic {
	return &fi.Nic{
		Device: &fi.DeviceAttr{},
		Bus:    &fi.BusAttr{Type: fi.BUS_UNKNOWN},
		Link:   &fi.LinkAttr{State: fi.LINK_UNKNOWN},
	}
}
