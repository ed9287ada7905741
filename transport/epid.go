package transport

import "encoding/binary"

// An endpoint id (the first word of the psm2 endpoint name) says how to
// reach the endpoint. With a network wire:
//
//	bits 63..32  IPv4 address (network byte order read as a big-endian number)
//	bits 31..16  UDP port of the endpoint's receive socket
//	bits 15..8   context (the endpoint's number in its process)
//	bit  3       0
//	bits 2..0    version, 2
//
// Without one (shm only, PSM2_DEVICES without hfi), as PSM2's shm-only
// ids: bits 63..32 the process id, bit 3 set.
//
// Two endpoints with network wires are on the same host exactly when
// their addresses are equal (each host's endpoints bind the host's
// address; an address is never shared by two hosts of one job). The port
// is unique per host and address, so the id is unique in the job.
const (
	epidVersion  = 2
	epidShmOnly  = 1 << 3
	epidVerMask  = 7
	epidCtxShift = 8
)

// NetEPID is the id of an endpoint whose network wire receives at
// ip:port, with context ctx.
func NetEPID(ip [4]byte, port uint16, ctx uint8) uint64 {
	return uint64(binary.BigEndian.Uint32(ip[:]))<<32 | uint64(port)<<16 | uint64(ctx)<<epidCtxShift | epidVersion
}

// ShmEPID is the id of an endpoint without a network wire: process pid,
// context ctx.
func ShmEPID(pid int, ctx uint8) uint64 {
	return uint64(uint32(pid))<<32 | uint64(ctx)<<epidCtxShift | epidShmOnly | epidVersion
}

// EPIDAddr returns the network address inside endpoint id epid, and
// whether the endpoint can be reached over the network at all.
func EPIDAddr(epid uint64) (ip [4]byte, port uint16, ok bool) {
	binary.BigEndian.PutUint32(ip[:], uint32(epid>>32))
	port = uint16(epid >> 16)
	ok = epid&epidVerMask == epidVersion && epid&epidShmOnly == 0 && port != 0 && ip != [4]byte{}
	return ip, port, ok
}

// EPIDCtx is the context of endpoint id epid.
func EPIDCtx(epid uint64) uint8 { return uint8(epid >> epidCtxShift) }

// SameHost reports whether endpoint ids a and b name endpoints of one
// host: their addresses are equal.
func SameHost(a, b uint64) bool { return a>>32 == b>>32 }

// ContextEPID is the id of context i of the scalable endpoint whose
// context 0 has id base, and whether it can exist. A scalable endpoint's
// contexts are endpoints of their own, opened together so that their ids
// follow from the first: context i has context number ctx+i and, with a
// network wire, UDP port port+i. So one 16-byte name (base and the count)
// addresses all of them, and a peer needs no query to reach context i.
func ContextEPID(base uint64, i int) (uint64, bool) {
	if i < 0 || int(EPIDCtx(base))+i > 0xFF {
		return 0, false
	}
	id := base + uint64(i)<<epidCtxShift
	if base&epidShmOnly != 0 {
		return id, true
	}
	if int(uint16(base>>16))+i > 0xFFFF {
		return 0, false
	}
	return id + uint64(i)<<16, true
}

// EPIDPort is the UDP port inside endpoint id epid (0 for an id without
// a network wire).
func EPIDPort(epid uint64) uint16 {
	if epid&epidShmOnly != 0 {
		return 0
	}
	return uint16(epid >> 16)
}
