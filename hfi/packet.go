package hfi

import "encoding/binary"

// The packet format (docs/hfi.md). Every packet starts with a 32-byte
// common header, little-endian:
//
//	+0  u16 magic 0x32f5      +2  u8 version     +3  u8 type
//	+4  u16 flags             +6  u8 path        +7  u8 0
//	+8  u32 psn (31 bits)     +12 u32 ack: every psn before it was received
//	+16 u32 dstConn: the receiver's id of this connection (0 in a connect request)
//	+20 u32 srcConn: the sender's id of it
//	+24 u64 srcEPID
//
// followed by the fields of its type. Types with a sequence number
// (isSequenced) travel in the connection's reliable flow.
const (
	pktMagic   = 0x32f5
	pktVersion = 2 // 2: an eager message's last packet may be padded
	hdrLen     = 32
)

// Packet types.
const (
	tConnReq = 1 + iota // connect request
	tConnRep            // connect reply
	tDisc               // disconnect notice
	tAck                // cumulative ACK
	tNak                // NAK: the ack field is the PSN expected, then a SACK bitmap
	tEager              // first (or only) packet of an eager message
	tCont               // a further packet of an eager message
	tRTS                // rendezvous request to send
	tCTS                // rendezvous clear to send: a grant
	tData               // rendezvous data
	tPing               // sequenced, empty: a liveness probe
	tMax
)

// Flags.
const (
	fAckReq = 1 << iota // answer with an ACK soon
	fFault              // tData: the sender's buffer is unreadable; the fetch fails
	// fProbe: on a sequenced packet, the sender's timer fired and this is
	// the one packet it sent again; the receiver answers at once with an
	// ACK or NAK that also carries fProbe (flow.go: probe).
	fProbe
	// fAckLazy: with fAckReq, the sender asked only because the packet
	// ends its burst (not for credits): a receiver that completes a
	// message with it may let the ACK wait up to AckDelay for a packet
	// going back, as the application's answer usually is.
	fAckLazy
)

// Sizes of each type's header (the common header included).
var typeHdrLen = [tMax]int{
	tConnReq: 72, tConnRep: 72, tDisc: 40, tAck: hdrLen, tNak: hdrLen + 16,
	tEager: 64, tCont: 40, tRTS: 72, tCTS: 72, tData: 48, tPing: hdrLen,
}

// hasPayload: types whose packet carries message bytes after the header.
func hasPayload(t uint8) bool { return t == tEager || t == tCont || t == tData }

// isSequenced: types that take a PSN in the reliable flow.
func isSequenced(t uint8) bool { return t >= tEager && t <= tPing }

// psnMask: PSNs are 31 bits, compared modulo 2^31.
const psnMask = 1<<31 - 1

// psnLess reports a < b modulo 2^31 (a is before b).
func psnLess(a, b uint32) bool { return (a-b)&psnMask > psnMask/2 }

// psnDiff is b - a modulo 2^31.
func psnDiff(a, b uint32) uint32 { return (b - a) & psnMask }

// hdr is a decoded packet header: the common fields and the ones of its
// type that the protocol reads (unused ones stay zero).
type hdr struct {
	typ     uint8
	flags   uint16
	path    uint8
	psn     uint32
	ack     uint32
	dstConn uint32
	srcConn uint32
	srcEPID uint64
	// connect
	job      [16]byte
	dstEPID  uint64
	instance uint64
	result   uint32
	mtu      uint32
	// messages
	tag, data uint64
	hflags    uint32
	msgLen    uint64
	sendID    uint64
	fetchID   uint64
	off       uint64
	n         uint64 // CTS: grant length
	total     uint64 // CTS: bytes the receiver takes in all
	payload   []byte
	// NAK: which of the 128 PSNs after the expected one have arrived
	// (bit k of sack[k/64]: PSN ack+1+k)
	sack [2]uint64
}

// decode parses packet b. It returns false for anything malformed: a
// wrong magic or version, an unknown type, a packet shorter than its
// type's header, a payload on a type without one, a PSN over 31 bits.
func decode(b []byte, h *hdr) bool {
	if len(b) < hdrLen || binary.LittleEndian.Uint16(b) != pktMagic || b[2] != pktVersion {
		return false
	}
	t := b[3]
	if t == 0 || t >= tMax || len(b) < typeHdrLen[t] {
		return false
	}
	if !hasPayload(t) && len(b) != typeHdrLen[t] {
		return false
	}
	*h = hdr{
		typ:     t,
		flags:   binary.LittleEndian.Uint16(b[4:]),
		path:    b[6],
		psn:     binary.LittleEndian.Uint32(b[8:]),
		ack:     binary.LittleEndian.Uint32(b[12:]),
		dstConn: binary.LittleEndian.Uint32(b[16:]),
		srcConn: binary.LittleEndian.Uint32(b[20:]),
		srcEPID: binary.LittleEndian.Uint64(b[24:]),
	}
	if h.psn > psnMask || h.ack > psnMask {
		return false
	}
	le := binary.LittleEndian
	switch t {
	case tConnReq, tConnRep:
		copy(h.job[:], b[32:48])
		h.dstEPID = le.Uint64(b[48:])
		h.instance = le.Uint64(b[56:])
		h.result = le.Uint32(b[64:])
		h.mtu = le.Uint32(b[68:])
	case tDisc:
		h.instance = le.Uint64(b[32:])
	case tNak:
		h.sack[0], h.sack[1] = le.Uint64(b[32:]), le.Uint64(b[40:])
	case tEager:
		h.tag, h.data = le.Uint64(b[32:]), le.Uint64(b[40:])
		h.hflags = le.Uint32(b[48:])
		h.msgLen = le.Uint64(b[56:])
		h.payload = b[64:]
		if uint64(len(h.payload)) > h.msgLen {
			return false
		}
	case tCont:
		h.off = le.Uint64(b[32:])
		h.payload = b[40:]
	case tRTS:
		h.tag, h.data = le.Uint64(b[32:]), le.Uint64(b[40:])
		h.hflags = le.Uint32(b[48:])
		h.msgLen = le.Uint64(b[56:])
		h.sendID = le.Uint64(b[64:])
	case tCTS:
		h.sendID, h.fetchID = le.Uint64(b[32:]), le.Uint64(b[40:])
		h.off, h.n = le.Uint64(b[48:]), le.Uint64(b[56:])
		h.total = le.Uint64(b[64:])
		if h.off > h.total || h.n > h.total-h.off {
			return false
		}
	case tData:
		h.fetchID, h.off = le.Uint64(b[32:]), le.Uint64(b[40:])
		h.payload = b[48:]
	}
	return true
}

// putHdr writes the common header of a packet of type t into b.
func putHdr(b []byte, t uint8, flags uint16, path uint8, psn, ack, dstConn, srcConn uint32, srcEPID uint64) {
	le := binary.LittleEndian
	le.PutUint16(b, pktMagic)
	b[2], b[3] = pktVersion, t
	le.PutUint16(b[4:], flags)
	b[6], b[7] = path, 0
	le.PutUint32(b[8:], psn)
	le.PutUint32(b[12:], ack)
	le.PutUint32(b[16:], dstConn)
	le.PutUint32(b[20:], srcConn)
	le.PutUint64(b[24:], srcEPID)
}

// setAck rewrites the ack field and flags of a built packet (retransmitted
// packets carry the current ack).
func setAck(b []byte, ack uint32) { binary.LittleEndian.PutUint32(b[12:], ack) }

func setFlags(b []byte, f uint16) { binary.LittleEndian.PutUint16(b[4:], f) }

func pktFlags(b []byte) uint16 { return binary.LittleEndian.Uint16(b[4:]) }

func pktPSN(b []byte) uint32 { return binary.LittleEndian.Uint32(b[8:]) }

func setPath(b []byte, p uint8) { b[6] = p }

func put64(b []byte, off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }

func put32(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }
