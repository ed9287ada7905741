package fastc

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -O2 -Wall -Wno-unused-function
#include <stdlib.h>
#include "cell.h"
#include "match.h"
#include "stream.h"
#include "page.h"

static int fastc_build(void *cells, struct psm2_inline *m, const void *buf)
{
	return psm2_inline_build((uint64_t (*)[CELL_PAYLOAD / 8]) cells, m, buf, FAST_INLINE_CELLS);
}

// fastc_parse parses the n cell payloads at cells and copies the message
// to dst: the cells it took, or 0 (left to Go).
static int fastc_parse(const unsigned char *cells, int n, struct psm2_inline *m, void *dst)
{
	const unsigned char *cont[PUSH_CELLS_MAX];
	int k = psm2_inline_head(cells, m);

	if (!k || k > n)
		return 0;
	for (int i = 1; i < k; i++) {
		if (!psm2_inline_cont(cells + i * CELL_PAYLOAD))
			return 0;
		cont[i - 1] = cells + i * CELL_PAYLOAD;
	}
	psm2_inline_copy(dst, m, cells, cont);
	return k;
}

static void fastc_eager_build(void *cell, struct psm2_inline *m, uint16_t idx)
{
	psm2_eager_build((uint64_t *) cell, m, idx);
}

// fastc_match builds an endpoint page whose queue holds the n receives of
// q (each EPF_RQ_WORDS words; past its head, mid-mapping) and a peer table of np fi_addrs whose descriptors
// name peers[i] (0: no descriptor), and asks psm2_rq_match.
static int fastc_match(const uint64_t *q, uint64_t n, uint64_t mask, uint64_t caps,
		       const uint64_t *peers, uint64_t np, int tagged, uint64_t tag, uint64_t epid)
{
	uint64_t *f = calloc(PAGE_BYTES / 8, 8), *rq = calloc(EPF_RQ_CAP * EPF_RQ_WORDS, 8);
	uint64_t *tab = calloc(np ? np : 1, 8);
	uint64_t *desc = calloc(np ? np : 1, 16 * 8);
	uint64_t head = n < EPF_RQ_CAP ? (EPF_RQ_CAP - n) / 2 : 0;
	int i;

	if (!f || !rq || !tab || !desc || n > EPF_RQ_CAP) {
		free(f), free(rq), free(tab), free(desc);
		return -2;
	}
	for (uint64_t k = 0; k < np; k++) {
		if (peers[k]) {
			desc[k * 16 + FP_PEER] = peers[k];
			tab[k] = (uint64_t) (uintptr_t) &desc[k * 16];
		}
	}
	f[EPF_TAG_MASK] = mask;
	f[EPF_CAPS] = caps;
	f[EPF_NPEERS] = np;
	f[EPF_PEERS] = (uint64_t) (uintptr_t) tab;
	memcpy(rq + head * EPF_RQ_WORDS, q, n * EPF_RQ_WORDS * 8);
	f[EPF_RQ] = (uint64_t) (uintptr_t) rq;
	f[EPF_RQ_HEAD] = head;
	f[EPF_RQ_COUNT] = n;
	i = psm2_rq_match(f, n, tagged, tag, epid);
	free(f), free(rq), free(tab), free(desc);
	return i;
}

// fastc_held_run is what fi_cq_read's delivery does with an unexpected
// message at the head of the ring of probe word w, no receive queued: the
// position after the run it leaves there (psm2_held_run), or 0.
static uint64_t fastc_held_run(uint64_t w)
{
	char *r = psm2_probe_ring(w);
	uint64_t mask = psm2_probe_mask(w);
	uint64_t cons = __atomic_load_n((const uint64_t *) (r + RING_CONS), __ATOMIC_ACQUIRE);
	const unsigned char *c = (const unsigned char *) psm2_cell(r, mask, cons);
	struct psm2_inline m;
	uint16_t idx;
	int cells;

	if (__atomic_load_n((const uint64_t *) (c + CELL_SEQ), __ATOMIC_ACQUIRE) != cons + 1)
		return 0;
	if (!(cells = psm2_inline_head(c + CELL_PAYLOAD_OFF, &m))) {
		if (!psm2_eager_head(c + CELL_PAYLOAD_OFF, &m, &idx))
			return 0;
		cells = 1;
	}
	return psm2_held_run(NULL, r, mask, cons + (uint64_t) cells, 0);
}
*/
import "C"

import "unsafe"

// CellPayload is the payload bytes of a cell, as C knows it.
const CellPayload = C.CELL_PAYLOAD

// MaxCells is the most cells C builds or parses for one message.
const MaxCells = C.PUSH_CELLS_MAX

// Inline is an inline message's header as C builds and parses it.
type Inline struct {
	Len, EPID, Tag, Data uint64
	HFlags               uint32
	WithData             bool // the data word travels
}

func toC(m Inline) C.struct_psm2_inline {
	var c C.struct_psm2_inline
	c.len, c.epid, c.tag, c.data = C.uint64_t(m.Len), C.uint64_t(m.EPID), C.uint64_t(m.Tag), C.uint64_t(m.Data)
	c.hflags = C.uint32_t(m.HFlags)
	if m.WithData {
		c.with_data = 1
	}
	return c
}

// Build returns the cell payloads (CellPayload bytes each) C builds for m
// with payload p (len(p) == m.Len), or nil if C would not send it inline.
func Build(m Inline, p []byte) []byte {
	cells := make([]byte, MaxCells*CellPayload)
	c := toC(m)
	var buf unsafe.Pointer
	if len(p) > 0 {
		buf = unsafe.Pointer(&p[0])
	}
	n := C.fastc_build(unsafe.Pointer(&cells[0]), &c, buf)
	if n <= 0 {
		return nil
	}
	return cells[:int(n)*CellPayload]
}

// Parse returns what C reads from cell payloads (up to MaxCells,
// CellPayload bytes each): the header and the message's bytes, or ok false when C
// leaves the cells to Go.
func Parse(cells []byte) (m Inline, payload []byte, ok bool) {
	if len(cells) < CellPayload {
		return m, nil, false
	}
	var c C.struct_psm2_inline
	dst := make([]byte, MaxCells*CellPayload)
	k := C.fastc_parse((*C.uchar)(unsafe.Pointer(&cells[0])), C.int(len(cells)/CellPayload), &c,
		unsafe.Pointer(&dst[0]))
	if k == 0 {
		return m, nil, false
	}
	m = Inline{Len: uint64(c.len), EPID: uint64(c.epid), Tag: uint64(c.tag), Data: uint64(c.data),
		HFlags: uint32(c.hflags), WithData: c.with_data != 0}
	return m, dst[:m.Len], true
}

// BuildEager returns the cell payload C builds for eager message m (whose
// bytes are in the sender's bounce buffer idx).
func BuildEager(m Inline, idx uint16) []byte {
	cell := make([]byte, CellPayload)
	c := toC(m)
	C.fastc_eager_build(unsafe.Pointer(&cell[0]), &c, C.uint16_t(idx))
	return cell
}

// ParseEager returns what C reads from an eager cell's payload: the header
// and the bounce buffer's index, or ok false when C leaves it to Go.
func ParseEager(cell []byte) (m Inline, idx uint16, ok bool) {
	if len(cell) < CellPayload {
		return m, 0, false
	}
	var c C.struct_psm2_inline
	var i C.uint16_t
	if C.psm2_eager_head((*C.uchar)(unsafe.Pointer(&cell[0])), &c, &i) == 0 {
		return m, 0, false
	}
	m = Inline{Len: uint64(c.len), EPID: uint64(c.epid), Tag: uint64(c.tag), Data: uint64(c.data),
		HFlags: uint32(c.hflags), WithData: c.with_data != 0}
	return m, uint16(i), true
}

// ParseRTS returns what C reads from a rendezvous request cell's payload:
// the header, the sender's address of the data and the send id, or ok
// false when C leaves it to Go.
func ParseRTS(cell []byte) (m Inline, addr, sid uint64, ok bool) {
	if len(cell) < CellPayload {
		return m, 0, 0, false
	}
	var c C.struct_psm2_inline
	var a, s C.uint64_t
	if C.psm2_rts_head((*C.uchar)(unsafe.Pointer(&cell[0])), &c, &a, &s) == 0 {
		return m, 0, 0, false
	}
	m = Inline{Len: uint64(c.len), EPID: uint64(c.epid), Tag: uint64(c.tag), Data: uint64(c.data),
		HFlags: uint32(c.hflags), WithData: c.with_data != 0}
	return m, uint64(a), uint64(s), true
}

// BuildFIN returns the payload of the FIN cell C pushes after it fetched
// send sid of a rendezvous, as endpoint epid.
func BuildFIN(epid, sid uint64) []byte {
	cell := make([]byte, CellPayload)
	C.psm2_fin_build((*C.uint64_t)(unsafe.Pointer(&cell[0])), C.uint64_t(epid), C.uint64_t(sid))
	return cell
}

// Cells returns the cells C counts for an inline message of n bytes, with
// the data word or not (psm2_inline_cells), or 0 past MaxCells.
func Cells(n uint64, withData bool) int {
	m := C.struct_psm2_inline{len: C.uint64_t(n)}
	if withData {
		m.with_data = 1
	}
	return int(C.psm2_inline_cells(&m, C.PUSH_CELLS_MAX))
}

// StreamCopy copies n bytes of stream seq from src to dst as C's
// receiver does (psm2_stream_copy), reading the sender's stream word w:
// true, or false when C would leave the message to Go.
func StreamCopy(w *uint64, seq uint64, dst, src unsafe.Pointer, n int) bool {
	return C.psm2_stream_copy((*C.uint64_t)(unsafe.Pointer(w)), C.uint64_t(seq), (*C.char)(dst), (*C.char)(src),
		C.uint64_t(n)) == 0
}

// PadLen is the length C gives an error answer with the data word that
// must fill k cells (psm2_pad_len).
func PadLen(k int) uint64 { return uint64(C.psm2_pad_len(C.uint64_t(k))) }

// UCopy copies src to dst with the fast path's guarded copy (ucopy.c):
// false if either faulted, or if its fault handler could not be installed.
func UCopy(dst, src unsafe.Pointer, n int) bool {
	if C.psm2_ucopy_ready() == 0 {
		return false
	}
	return C.psm2_ucopy(dst, src, C.size_t(n)) == 0
}

// UApply applies atomic op (enum fi_op) to count elements of integer
// datatype dt at dst as the C target does (psm2_uapply, ucopy.c), old
// values to old: 0, -1 (dst faulted) or -2 (not an op or type C applies).
func UApply(op, dt int, dst, src, cmp, old unsafe.Pointer, count int) int {
	return int(C.psm2_uapply(C.int(op), C.int(dt), dst, src, cmp, old, C.size_t(count)))
}

// RQ is a receive as C queues it in the endpoint page.
type RQ struct {
	Buf, Len, Src, Tag, Ignore, Context, Flags uint64
}

// Match returns the index of the first receive of q that psm2_rq_match
// gives a message (tagged, tag, from epid), or -1, for an endpoint with
// tag mask mask and caps caps whose fi_addr i is the peer peers[i] (0:
// not connected).
func Match(q []RQ, mask, caps uint64, peers []uint64, tagged bool, tag, epid uint64) int {
	words := make([]uint64, len(q)*int(C.EPF_RQ_WORDS)+1)
	for i, r := range q {
		w := words[i*int(C.EPF_RQ_WORDS):]
		w[C.RQ_BUF], w[C.RQ_LEN], w[C.RQ_SRC], w[C.RQ_TAG] = r.Buf, r.Len, r.Src, r.Tag
		w[C.RQ_IGNORE], w[C.RQ_CONTEXT], w[C.RQ_FLAGS] = r.Ignore, r.Context, r.Flags
	}
	t := 0
	if tagged {
		t = 1
	}
	var pp *C.uint64_t
	if len(peers) > 0 {
		pp = (*C.uint64_t)(unsafe.Pointer(&peers[0]))
	}
	return int(C.fastc_match((*C.uint64_t)(unsafe.Pointer(&words[0])), C.uint64_t(len(q)), C.uint64_t(mask),
		C.uint64_t(caps), pp, C.uint64_t(len(peers)), C.int(t), C.uint64_t(tag), C.uint64_t(epid)))
}

// RQCap is how many receives C queues at most.
const RQCap = C.EPF_RQ_CAP

// PeerSlot is psm2_peer_slot (page.h): fi_addr a's slot in the peer table
// of an endpoint page whose AV has bits receive-context bits.
func PeerSlot(a uint64, bits int) uint64 {
	var page [C.EPF_RX_BITS + 1]uint64
	page[C.EPF_RX_BITS] = uint64(bits)
	return uint64(C.psm2_peer_slot((*C.uint64_t)(unsafe.Pointer(&page[0])), C.uint64_t(a)))
}

// HeldRun reports whether C's delivery leaves the messages in the ring of
// probe word w there for receives not posted yet (psm2_held_run), as it
// does when no receive is queued.
func HeldRun(w uint64) bool { return C.fastc_held_run(C.uint64_t(w)) != 0 }
