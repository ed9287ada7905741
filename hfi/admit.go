package hfi

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/gopsm2/libfabric-psm2/transport"
)

// Limits. What a peer sends costs the receiver memory only within these
// bounds, and at a bound the receiver holds the sender back instead of
// dropping anything for good:
//
//   - peers: at most MaxPeers slots, PeersPerHost of one address; a slot
//     is given only after the handshake proved the address and the job
//     key, and dead peers' slots are taken back when needed (peer.go);
//   - an eager message longer than eagerMax (told in the handshake) is
//     malformed; one of several packets reserves its length in
//     ReasmBytes at its first packet, and its buffer grows with what
//     arrives;
//   - packets past a gap are kept in buffers of one size, at most
//     OOOBytes of them; past that they are dropped, and sent again;
//   - the start of a new message (an eager head, a request to send) is
//     delivered only if the reassembly budget and the provider
//     (transport.Admitter: its unexpected messages, RMA requests) take
//     it. If not, the receiver keeps the packet (within OOOBytes) or
//     drops it, does not acknowledge it, and answers with fBusy: the
//     sender stops resending and only probes, which keeps the
//     connection alive. The receiver tries again after rnrFirst, backing
//     off to rnrMax, and once the message is taken, acknowledges; the
//     sender then sends again whatever did not arrive.
const (
	MaxPeers            = 1<<16 - 1 // a slot is the low 16 bits of a connection id
	DefaultPeersPerHost = 1024
	DefaultReasmBytes   = 32 << 20
	DefaultOOOBytes     = 32 << 20
	// minEagerMax: every endpoint takes eager messages of this length,
	// so a sender may use it before the handshake tells it more.
	minEagerMax = 65536
	minDatagram = 576 - 28 // the smallest IP MTU a host must take, less IP and UDP headers

	rnrFirst = int64(time.Millisecond)
	rnrMax   = int64(16 * time.Millisecond)
)

type admitter = transport.Admitter

// eagerLimit is the largest eager message an endpoint takes: its
// rendezvous threshold (a peer's may be higher than ours) or 64 KiB,
// whichever is more, and at most half the reassembly budget.
func eagerLimit(thresh, reasm int) uint64 {
	return uint64(min(max(thresh, minEagerMax), reasm/2))
}

// Kinds of refusal, each logged once (warnOnce).
const (
	warnPeers = 1 << iota
	warnReasm
	warnOOO
	warnAdmit
)

func (e *Endpoint) warnOnce(kind uint8, format string, args ...any) {
	if e.warned&kind != 0 || e.cfg.Warn == nil {
		return
	}
	e.warned |= kind
	e.cfg.Warn(fmt.Sprintf(format, args...))
}

// admit reports whether in-order packet h from p may be processed now:
// anything but the start of a new message may; a new message only within
// the reassembly budget and if the provider takes it.
func (e *Endpoint) admit(p *peer, h *hdr) bool {
	switch h.typ {
	case tEager:
		if h.msgLen > e.eagerMax {
			return true // malformed: process drops it
		}
		if uint64(len(h.payload)) < h.msgLen && e.asmUsed+h.msgLen > uint64(e.cfg.ReasmBytes) {
			e.warnOnce(warnReasm, "hfi: %d bytes of eager messages being reassembled (FI_PSM2_REASM_BYTES): senders held back", e.asmUsed)
			return false
		}
	case tRTS:
	default:
		return true
	}
	if e.adm == nil {
		return true
	}
	e.admHdr = transport.Header{Tag: h.tag, Data: h.data, Flags: h.hflags, Len: h.msgLen}
	if !e.adm.Admit(&e.admHdr, p.epid, h.typ == tRTS) {
		e.warnOnce(warnAdmit, "hfi: the provider's limits are reached (FI_PSM2_UNEXP_BYTES, FI_PSM2_UNEXP_COUNT or RMA requests waiting): senders held back")
		return false
	}
	return true
}

// refuse: in-order packet b (at p.expect) was not admitted. It is kept
// (unless it is kept already, or the budget is spent), not acknowledged,
// and the sender is told that we are busy.
func (e *Endpoint) refuse(p *peer, b []byte, kept bool) {
	e.stats.Refused++
	if !p.rnr {
		p.rnr, p.rnrWait = true, rnrFirst
	}
	if !kept {
		if s := e.slot(p, p.expect); *s == nil {
			if k := e.keepBuf(len(b)); k != nil {
				copy(k, b)
				*s = k
				p.nKept++
			} else {
				p.rnrLost = true
			}
		}
	}
	p.rnrAt = e.clock.Now() + p.rnrWait
	e.owe(p, true)
}

// retryAdmit (p.rnr's timer): try the refused packet again. If it was
// not kept, the sender is asked for it with a plain ACK.
func (e *Endpoint) retryAdmit(p *peer, now int64) int {
	p.rnrWait = min(2*p.rnrWait, rnrMax)
	p.rnrAt = now + p.rnrWait
	if s := e.slot(p, p.expect); *s != nil {
		return e.drainKept(p)
	}
	p.rnr, p.rnrLost = false, false
	e.sendCtl(p, tAck, 0)
	return 0
}

// slot is where p keeps the packet with PSN psn.
func (e *Endpoint) slot(p *peer, seq psn) *[]byte {
	if p.kept == nil {
		p.kept = make([][]byte, 1<<bits.Len(uint(e.cfg.Credits-1)))
	}
	return &p.kept[uint32(seq)&uint32(len(p.kept)-1)]
}

// keepBuf returns a buffer for a packet of n bytes to keep past a gap,
// nil past the budget (OOOBytes).
func (e *Endpoint) keepBuf(n int) []byte {
	if n > e.keptSize {
		return nil
	}
	if k := len(e.keptFree); k > 0 {
		b := e.keptFree[k-1]
		e.keptFree = e.keptFree[:k-1]
		return b[:n]
	}
	if (e.keptN+1)*e.keptSize > e.cfg.OOOBytes {
		e.warnOnce(warnOOO, "hfi: %d bytes of packets kept past gaps (FI_PSM2_OOO_BYTES): later ones are dropped and sent again", e.keptN*e.keptSize)
		return nil
	}
	e.keptN++
	return make([]byte, n, e.keptSize)
}

// unkeep gives a kept packet's buffer back.
func (e *Endpoint) unkeep(s *[]byte) {
	e.keptFree = append(e.keptFree, (*s)[:0])
	*s = nil
}

// dropKept lets go of every packet p keeps.
func (e *Endpoint) dropKept(p *peer) {
	if p.nKept > 0 {
		for i := range p.kept {
			if p.kept[i] != nil {
				e.unkeep(&p.kept[i])
			}
		}
	}
	p.nKept = 0
}

// startAsm reserves n bytes for p's eager message being reassembled.
func (e *Endpoint) startAsm(p *peer, n uint64) {
	e.endAsm(p)
	if k := len(e.asmPool); k > 0 {
		p.asm = e.asmPool[k-1]
		e.asmPool = e.asmPool[:k-1]
	}
	p.asm = p.asm[:0]
	p.asmOn, p.asmGot = true, 0
	e.asmUsed += n
	p.asmHdr.Len = n
}

// asmKeep: reassembly buffers kept for reuse, at most this many, each at
// most asmKeepCap bytes.
const (
	asmKeep    = 8
	asmKeepCap = 1 << 20
)

// abortAsm abandons p's reassembly, failing with err the receive that
// took the message early, if one did.
func (e *Endpoint) abortAsm(p *peer, err error) {
	if f := p.asmFetch; f != 0 {
		e.failFetch(f-1, err)
	}
	e.endAsm(p)
}

// endAsm ends p's reassembly (done or abandoned): its reservation goes,
// and its buffer to the pool. A receive still waiting for the message
// (one abandoned without abortAsm: the connection reset) fails.
func (e *Endpoint) endAsm(p *peer) {
	if f := p.asmFetch; f != 0 {
		e.failFetch(f-1, transport.ErrPeerDead)
	}
	p.asmDrop = false
	if p.asmOn {
		p.asmOn = false
		e.asmUsed -= p.asmHdr.Len
	}
	if p.asm != nil {
		if len(e.asmPool) < asmKeep && cap(p.asm) <= asmKeepCap {
			e.asmPool = append(e.asmPool, p.asm[:0])
		}
		p.asm = nil
	}
}
