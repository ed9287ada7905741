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
//	+24 u64 word: in the handshake (isHandshake) the sender's endpoint id;
//	        in every other packet the receiver's session tag, 64 random
//	        bits the receiver chose for the connection and sent only in
//	        its handshake packet, to the address that proved it receives
//
// followed by the fields of its type. Types with a sequence number
// (tEager to tPing) travel in the connection's reliable flow. On a connection
// with authentication (auth.go) every packet after the handshake ends in
// an authTrailer.
const (
	pktMagic = 0x32f5
	// 3: the handshake proves the address and the job key, the header's
	// last word is the session tag (2 carried the source id there).
	pktVersion = 3
	hdrLen     = 32
)

// Packet types.
const (
	tConnReq   = 1 + iota // connect request (with or without a cookie)
	tConnRep              // connect reply
	tDisc                 // disconnect notice
	tAck                  // cumulative ACK
	tNak                  // NAK: the ack field is the PSN expected, then a SACK bitmap
	tEager                // first (or only) packet of an eager message
	tCont                 // a further packet of an eager message
	tRTS                  // rendezvous request to send
	tCTS                  // rendezvous clear to send: a grant
	tData                 // rendezvous data
	tPing                 // sequenced, empty: a liveness probe
	tChallenge            // the answer to a connect request without a valid cookie
	tMax
)

// Flags.
const (
	fAckReq = 1 << iota // answer with an ACK soon
	fFault              // tData, tEager, tCont: the sender's buffer is unreadable; the fetch fails, the message is dropped
	// fProbe: on a sequenced packet, the sender's timer fired and this is
	// the one packet it sent again; the receiver answers at once with an
	// ACK or NAK that also carries fProbe (flow.go: probe).
	fProbe
	// fAckLazy: with fAckReq, the sender asked only because the packet
	// ends its burst (not for credits): a receiver that completes a
	// message with it may let the ACK wait up to AckDelay for a packet
	// going back, as the application's answer usually is.
	fAckLazy
	// fBusy: on an ACK or NAK, the receiver is alive but refused the
	// packet at the PSN it expects (its limits are reached: admit.go);
	// the sender waits without resending until an ACK without it.
	fBusy
	// fAuth: on a connect request or reply, the sender wants every packet
	// of the connection authenticated (auth.go).
	fAuth
	// fFailover: on a probe, it went on another rail after a probe went
	// unanswered (flow.go, "Rails"): the receiver makes the rail it came
	// on its primary and answers there, flagged so too.
	fFailover
)

// The handshake (peer.go). A connect request and reply are hsLen bytes:
//
//	+32 u64 dst epid          +40 u64 instance of the sender's endpoint
//	+48 [16] nonce: the initiator's (in a reply: echoed)
//	+64 [16] request: the responder's cookie (zero: ask for one);
//	         reply: the responder's nonce
//	+80 u64 session tag the sender wants in the packets it receives
//	+88 u32 the sender's first PSN  +92 u16 its MTU ceiling  +94 u16 0
//	+96 u32 the largest eager message it takes
//	+100 u32 serial: the initiator's count of connections to this peer
//	+104 [8]u16 the sender's source ports, path 0..7 (0: no such path)
//	+120 [3][4]byte the sender's addresses on its further rails, at its
//	        id's port (Config.Rails; 0.0.0.0: none)
//	+132 u32 the sender's kernel (Config.KernelID; 0: unknown)
//	+136 [32] HMAC-SHA256 of bytes 0..136 with the job key (hsProof)
//
// A challenge is chLen bytes: +32 u64 dst epid, +40 [16] the request's
// nonce, +56 [16] cookie.
const (
	hsDstEPID   = 32
	hsInstance  = 40
	hsNonce     = 48
	hsCookie    = 64 // request; the responder's nonce in a reply
	hsSession   = 80
	hsPSN       = 88
	hsMTU       = 92
	hsEagerMax  = 96
	hsSerial    = 100
	hsPorts     = 104
	hsRails     = 120
	hsKernel    = 132
	hsProof     = 136
	hsLen       = hsProof + 32
	chDstEPID   = 32
	chNonce     = 40
	chCookie    = 56
	chLen       = chCookie + 16
	maxSrcPorts = 8
)

// Sizes of each type's header (the common header included).
var typeHdrLen = [tMax]int{
	tConnReq: hsLen, tConnRep: hsLen, tDisc: 40, tAck: hdrLen, tNak: hdrLen + 16,
	tEager: 64, tCont: 40, tRTS: 72, tCTS: 72, tData: 48, tPing: hdrLen,
	tChallenge: chLen,
}

// hasPayload: types whose packet carries message bytes after the header.
func hasPayload(t uint8) bool { return t == tEager || t == tCont || t == tData }

// isHandshake: types whose header word is the sender's endpoint id.
func isHandshake(t uint8) bool { return t == tConnReq || t == tConnRep || t == tChallenge }

// psn is a packet sequence number: 31 bits, advanced and compared modulo
// 2^31 (serial number arithmetic), which its methods do and plain
// arithmetic on it would not.
type psn uint32

// psnMask: PSNs are 31 bits.
const psnMask = 1<<31 - 1

// before reports a < b modulo 2^31 (a was sent before b).
func (a psn) before(b psn) bool { return uint32(a-b)&psnMask > psnMask/2 }

// to is b - a modulo 2^31: how far b is past a.
func (a psn) to(b psn) uint32 { return uint32(b-a) & psnMask }

// plus is a + n modulo 2^31.
func (a psn) plus(n uint32) psn { return (a + psn(n)) & psnMask }

// hdr is a decoded packet header: the common fields and the ones of its
// type that the protocol reads (unused ones stay zero).
type hdr struct {
	typ     uint8
	flags   uint16
	path    uint8
	psn     psn
	ack     psn
	dstConn uint32
	srcConn uint32
	// word is the header's last word: the sender's endpoint id in the
	// handshake, the receiver's session tag in any other packet.
	word uint64
	// disconnect
	instance uint64
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
// The handshake's own fields are read where they are checked (peer.go).
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
		psn:     psn(binary.LittleEndian.Uint32(b[8:])),
		ack:     psn(binary.LittleEndian.Uint32(b[12:])),
		dstConn: binary.LittleEndian.Uint32(b[16:]),
		srcConn: binary.LittleEndian.Uint32(b[20:]),
		word:    binary.LittleEndian.Uint64(b[24:]),
	}
	if h.psn > psnMask || h.ack > psnMask {
		return false
	}
	le := binary.LittleEndian
	switch t {
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
func putHdr(b []byte, t uint8, flags uint16, path uint8, seq, ack psn, dstConn, srcConn uint32, word uint64) {
	le := binary.LittleEndian
	le.PutUint16(b, pktMagic)
	b[2], b[3] = pktVersion, t
	le.PutUint16(b[4:], flags)
	b[6], b[7] = path, 0
	le.PutUint32(b[8:], uint32(seq))
	le.PutUint32(b[12:], uint32(ack))
	le.PutUint32(b[16:], dstConn)
	le.PutUint32(b[20:], srcConn)
	le.PutUint64(b[24:], word)
}

// setAck rewrites the ack field and flags of a built packet (retransmitted
// packets carry the current ack).
func setAck(b []byte, ack psn) { binary.LittleEndian.PutUint32(b[12:], uint32(ack)) }

func setFlags(b []byte, f uint16) { binary.LittleEndian.PutUint16(b[4:], f) }

func pktFlags(b []byte) uint16 { return binary.LittleEndian.Uint16(b[4:]) }

func pktPSN(b []byte) psn { return psn(binary.LittleEndian.Uint32(b[8:])) }

func setPath(b []byte, p uint8) { b[6] = p }

func put64(b []byte, off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }

func put32(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }

func put16(b []byte, off int, v uint16) { binary.LittleEndian.PutUint16(b[off:], v) }

func get64(b []byte, off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }

func get32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }

func get16(b []byte, off int) uint16 { return binary.LittleEndian.Uint16(b[off:]) }
