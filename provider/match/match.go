package match

import (
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// The match spaces.
const (
	Untagged uint8 = 0 // FI_MSG
	Tagged   uint8 = 1 // FI_TAGGED
)

// Free is the Kind of an op not in use; every other kind is the
// provider's.
const Free uint8 = 0

// Key is the tag and ignore bits a receive of space sp matches with: an
// untagged receive takes any message of its space, a tagged one compares
// the bits of the tag mask that ignore does not set.
func Key(sp uint8, tag, ignore, mask uint64) (uint64, uint64) {
	if sp == Untagged {
		return 0, ^uint64(0)
	}
	return tag & mask, ignore | ^mask
}

// Op is a send, a receive, or another operation the provider names on the
// wire by its ID. The engine reads Space, Tag, Ign, Src, Ctx and Flags
// (FI_MULTI_RECV) and Released; the rest is the provider's.
type Op[X any] struct {
	ID    uint64 // the index in the table: the cookie the wire carries
	Kind  uint8  // Free, or one of the provider's kinds
	Space uint8  // Untagged or Tagged
	Ctx   uintptr
	Flags uint64 // the caller's op flags
	Buf   uintptr
	Len   uint64
	Tag   uint64 // a receive's tag and ignore bits, from Key
	Ign   uint64
	Src   uint64 // a directed receive's source epid; any source when 0
	next  *Op[X]

	// Multi-receive: bytes used of the buffer, children in flight, and
	// whether the buffer was released (below min_multi_recv).
	Used     uint64
	Inflight int
	Released bool
	Parent   *Op[X]

	// What matched, for the completion.
	RTag    uint64
	RData   uint64
	RHFlags uint32
	RLen    uint64 // the message's length
	RSrc    uint64 // sender epid

	Gen   uint32 // bumped each time the op is reused: RMA ids carry it
	Proto X      // the protocol's state beyond matching
}

// Matches reports whether receive o takes a message with tag from src.
func (o *Op[X]) Matches(tag, src uint64) bool {
	return (o.Src == 0 || o.Src == src) && (tag^o.Tag)&^o.Ign == 0
}

// multi reports whether o is a multi-receive buffer, which stays posted
// until Released.
func (o *Op[X]) multi() bool { return o.Flags&fi.MULTI_RECV != 0 }

// Unexpected is an arrived message no receive has taken yet.
type Unexpected struct {
	Hdr     transport.Header
	Src     uint64 // the sender's epid
	Payload []byte // eager data (pooled), nil for rendezvous
	Rndv    transport.Rndv
	IsRndv  bool
	Claim   uintptr // context of the FI_CLAIM that owns it
	next    *Unexpected
}

// Next is the message after u in its queue, nil at the end.
func (u *Unexpected) Next() *Unexpected { return u.next }
