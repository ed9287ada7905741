package fi

// Info mirrors struct fi_info. A nil attribute pointer stands for a NULL
// attribute pointer in C.
type Info struct {
	Caps       uint64
	Mode       uint64
	AddrFormat uint32
	SrcAddr    []byte // nil: NULL
	DestAddr   []byte // nil: NULL
	// SrcAddrLen and DestAddrLen are src_addrlen and dest_addrlen. They
	// usually equal the slices' lengths, but a provider may report the
	// size of its address format with no address (psm2 does).
	SrcAddrLen  uint64
	DestAddrLen uint64
	Handle      Ptr
	Tx          *TxAttr
	Rx          *RxAttr
	EP          *EPAttr
	Domain      *DomainAttr
	Fabric      *FabricAttr
	Nic         *Nic
}

// TxAttr mirrors struct fi_tx_attr.
type TxAttr struct {
	Caps        uint64
	Mode        uint64
	OpFlags     uint64
	MsgOrder    uint64
	CompOrder   uint64
	InjectSize  uint64
	Size        uint64
	IovLimit    uint64
	RMAIovLimit uint64
	TClass      uint32
}

// RxAttr mirrors struct fi_rx_attr.
type RxAttr struct {
	Caps              uint64
	Mode              uint64
	OpFlags           uint64
	MsgOrder          uint64
	CompOrder         uint64
	TotalBufferedRecv uint64
	Size              uint64
	IovLimit          uint64
}

// EPAttr mirrors struct fi_ep_attr. AuthKeySize is kept apart from AuthKey
// because C callers may set a size with a NULL key (a query).
type EPAttr struct {
	Type            EPType
	Protocol        uint32
	ProtocolVersion uint32
	MaxMsgSize      uint64
	MsgPrefixSize   uint64
	MaxOrderRAWSize uint64
	MaxOrderWARSize uint64
	MaxOrderWAWSize uint64
	MemTagFormat    uint64
	TxCtxCnt        uint64
	RxCtxCnt        uint64
	AuthKeySize     uint64
	AuthKey         []byte
}

// DomainAttr mirrors struct fi_domain_attr.
type DomainAttr struct {
	Domain          Ptr // struct fid_domain *, carried only
	Name            string
	Threading       Threading
	ControlProgress Progress
	DataProgress    Progress
	ResourceMgmt    ResourceMgmt
	AVType          AVType
	MRMode          int32
	MRKeySize       uint64
	CQDataSize      uint64
	CQCnt           uint64
	EPCnt           uint64
	TxCtxCnt        uint64
	RxCtxCnt        uint64
	MaxEPTxCtx      uint64
	MaxEPRxCtx      uint64
	MaxEPStxCtx     uint64
	MaxEPSrxCtx     uint64
	CntrCnt         uint64
	MRIovLimit      uint64
	Caps            uint64
	Mode            uint64
	AuthKey         []byte
	AuthKeySize     uint64
	MaxErrData      uint64
	MRCnt           uint64
	TClass          uint32
}

// FabricAttr mirrors struct fi_fabric_attr.
type FabricAttr struct {
	Fabric      Ptr // struct fid_fabric *, carried only
	Name        string
	ProvName    string
	ProvVersion uint32
	APIVersion  uint32
}

// Nic mirrors struct fid_nic with its three attribute structs. A nil
// sub-attribute stands for a NULL pointer.
type Nic struct {
	Device *DeviceAttr
	Bus    *BusAttr
	Link   *LinkAttr
}

// DeviceAttr mirrors struct fi_device_attr.
type DeviceAttr struct {
	Name, DeviceID, DeviceVersion, VendorID, Driver, Firmware string
}

// BusAttr mirrors struct fi_bus_attr (PCI is the only bus type with data).
type BusAttr struct {
	Type BusType
	PCI  PCIAttr
}

// PCIAttr mirrors struct fi_pci_attr.
type PCIAttr struct {
	DomainID   uint16
	BusID      uint8
	DeviceID   uint8
	FunctionID uint8
}

// LinkAttr mirrors struct fi_link_attr.
type LinkAttr struct {
	Address     string
	MTU         uint64
	Speed       uint64
	State       LinkState
	NetworkType string
}

// Clone returns a deep copy of info (nil for nil), as fi_dupinfo does.
func (info *Info) Clone() *Info {
	if info == nil {
		return nil
	}
	c := *info
	c.SrcAddr = cloneBytes(info.SrcAddr)
	c.DestAddr = cloneBytes(info.DestAddr)
	if info.Tx != nil {
		t := *info.Tx
		c.Tx = &t
	}
	if info.Rx != nil {
		r := *info.Rx
		c.Rx = &r
	}
	if info.EP != nil {
		e := *info.EP
		e.AuthKey = cloneBytes(info.EP.AuthKey)
		c.EP = &e
	}
	if info.Domain != nil {
		d := *info.Domain
		d.AuthKey = cloneBytes(info.Domain.AuthKey)
		c.Domain = &d
	}
	if info.Fabric != nil {
		f := *info.Fabric
		c.Fabric = &f
	}
	if info.Nic != nil {
		n := Nic{}
		if info.Nic.Device != nil {
			d := *info.Nic.Device
			n.Device = &d
		}
		if info.Nic.Bus != nil {
			b := *info.Nic.Bus
			n.Bus = &b
		}
		if info.Nic.Link != nil {
			l := *info.Nic.Link
			n.Link = &l
		}
		c.Nic = &n
	}
	return &c
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}
