/* cell.h: the cells C builds and parses (shm/cell.go): inline, eager, rendezvous request, FIN, RMA messages. */
#ifndef PSM2_FAST_CELL_H
#define PSM2_FAST_CELL_H

#include "ring.h"

/* The message header flags and cell flags C handles; a message with any
 * other is left to Go. */
#define PSM2_FAST_HFLAGS (HF_TAGGED | HF_DATA)
#define PSM2_FAST_CFLAGS CELL_HAS_DATA

/* An inline message as its head cell and up to PUSH_CELLS_MAX - 1
 * continuation cells carry it: the part of shm/cell.go's format C builds
 * and parses. */
struct psm2_inline {
	uint64_t len, epid, tag, data;
	uint32_t hflags;
	int with_data;		/* the data word travels (data != 0) */
};

/* psm2_inline_cells is the number of cells message m takes, or 0 if more
 * than max (shm's inlineCells). */
static inline int psm2_inline_cells(const struct psm2_inline *m, uint64_t max)
{
	uint64_t head = m->with_data ? INLINE_HEAD_DATA : INLINE_HEAD, n;

	if (m->len <= head)
		return 1;
	n = 1 + (m->len - head + CONT_PAYLOAD - 1) / CONT_PAYLOAD;
	return n <= max ? (int) n : 0;
}

/* psm2_inline_hdr writes the head cell payload h of inline message m,
 * all but its bytes (zeroed). */
static inline void psm2_inline_hdr(unsigned char *h, const struct psm2_inline *m)
{
	uint16_t short_len = (uint16_t) m->len;

	memset(h, 0, CELL_PAYLOAD);
	h[CELL_KIND] = CELL_INLINE;
	h[CELL_FLAGS] = m->with_data ? CELL_HAS_DATA : 0;
	memcpy(h + CELL_SHORT, &short_len, 2);
	memcpy(h + CELL_HFLAGS, &m->hflags, 4);
	memcpy(h + CELL_EPID, &m->epid, 8);
	memcpy(h + CELL_TAG, &m->tag, 8);
	if (m->with_data)
		memcpy(h + CELL_DATA, &m->data, 8);
}

/* psm2_head_parse parses the payload p of an inline message's head cell
 * into m and returns the cells the message takes, or 0 (another kind of
 * cell, a cell flag C does not know, or a longer message). */
static inline int psm2_head_parse(const unsigned char *p, struct psm2_inline *m)
{
	uint16_t short_len;

	if (p[CELL_KIND] != CELL_INLINE || (p[CELL_FLAGS] & ~PSM2_FAST_CFLAGS))
		return 0;
	memcpy(&short_len, p + CELL_SHORT, 2);
	memcpy(&m->hflags, p + CELL_HFLAGS, 4);
	m->len = short_len;
	m->with_data = (p[CELL_FLAGS] & CELL_HAS_DATA) != 0;
	memcpy(&m->epid, p + CELL_EPID, 8);
	memcpy(&m->tag, p + CELL_TAG, 8);
	m->data = 0;
	if (m->with_data)
		memcpy(&m->data, p + CELL_DATA, 8);
	return psm2_inline_cells(m, PUSH_CELLS_MAX);
}

/* psm2_inline_head is psm2_head_parse for a message C may deliver: 0 also
 * for a header flag C does not know (RMA, or any Go adds later). */
static inline int psm2_inline_head(const unsigned char *p, struct psm2_inline *m)
{
	int n = psm2_head_parse(p, m);

	return n && !(m->hflags & ~(uint32_t) PSM2_FAST_HFLAGS) ? n : 0;
}

/* psm2_inline_cont says whether c, the payload of a cell after a head, is
 * a continuation. */
static inline int psm2_inline_cont(const unsigned char *c) { return c[CONT_KIND] == CELL_CONT; }

/* psm2_inline_segs lists in seg the pieces of an inline message's cells
 * that hold its bytes, in order: the end of head cell payload h, then the
 * payloads of continuation cells cont[0..] (each a cell's payload, whose
 * bytes start at CONT_PAYLOAD_OFF), as psm2_inline_build lays them out and
 * psm2_inline_copy reads them. Returns the number of pieces (one a cell),
 * for psm2_ucopy_segs. */
static inline int psm2_inline_segs(struct psm2_seg *seg, const struct psm2_inline *m, unsigned char *h,
				   unsigned char *const *cont)
{
	uint64_t head = m->with_data ? INLINE_HEAD_DATA : INLINE_HEAD, off;
	int k = 1;

	seg[0].p = h + CELL_PAYLOAD - head;
	seg[0].n = m->len < head ? m->len : head;
	for (off = head; off < m->len; off += CONT_PAYLOAD, k++) {
		seg[k].p = cont[k - 1] + CONT_PAYLOAD_OFF;
		seg[k].n = m->len - off < CONT_PAYLOAD ? m->len - off : CONT_PAYLOAD;
	}
	return k;
}

/* psm2_inline_build writes the payloads of the cells of message m with
 * buf's m->len bytes into cells: the same cells as shm's sendInline. The
 * bytes go straight from buf into the cells under one guard (ucopy.c), so
 * buf may be the caller's. Returns how many cells it took, 0 if the
 * message takes more than max, or -1 if buf faulted. */
static inline int psm2_inline_build(uint64_t cells[][CELL_PAYLOAD / 8],
				    const struct psm2_inline *m, const void *buf, uint64_t max)
{
	unsigned char *h = (unsigned char *) cells[0], *cont[PUSH_CELLS_MAX - 1];
	struct psm2_seg seg[PUSH_CELLS_MAX];
	int n = psm2_inline_cells(m, max), nseg;

	if (!n)
		return 0;
	psm2_inline_hdr(h, m);
	for (int k = 1; k < n; k++) {
		cont[k - 1] = (unsigned char *) cells[k];
		cont[k - 1][CONT_KIND] = CELL_CONT;
	}
	nseg = psm2_inline_segs(seg, m, h, cont);
	if (n > 1 && seg[nseg - 1].n < CONT_PAYLOAD)	/* the last cell's rest is zero */
		memset((char *) seg[nseg - 1].p + seg[nseg - 1].n, 0, CONT_PAYLOAD - seg[nseg - 1].n);
	if (m->len && psm2_ucopy_segs(seg, nseg, (void *) buf, 0))
		return -1;
	return n;
}

/* psm2_inline_copy copies the message's bytes from its head cell's
 * payload p and its continuations' payloads cont[0..] to dst, straight
 * and under one guard (dst may be the caller's): 0, or -1 if dst
 * faulted. */
static inline int psm2_inline_copy(void *dst, const struct psm2_inline *m,
				   const unsigned char *p, const unsigned char *const *cont)
{
	struct psm2_seg seg[PUSH_CELLS_MAX];
	int nseg = psm2_inline_segs(seg, m, (unsigned char *) p, (unsigned char *const *) cont);

	return m->len ? psm2_ucopy_segs(seg, nseg, dst, 1) : 0;
}

/* psm2_eager_build writes the payload of the cell of eager message m,
 * whose bytes are in the sender's bounce buffer idx: the same cell as
 * shm's sendEager (which always carries the data word). */
static inline void psm2_eager_build(uint64_t cell[CELL_PAYLOAD / 8], const struct psm2_inline *m,
				    uint16_t idx)
{
	unsigned char *h = (unsigned char *) cell;

	memset(h, 0, CELL_PAYLOAD);
	h[CELL_KIND] = CELL_EAGER;
	h[CELL_FLAGS] = CELL_HAS_DATA;
	memcpy(h + CELL_SHORT, &idx, 2);
	memcpy(h + CELL_HFLAGS, &m->hflags, 4);
	memcpy(h + CELL_EPID, &m->epid, 8);
	memcpy(h + CELL_TAG, &m->tag, 8);
	memcpy(h + CELL_DATA, &m->data, 8);
	memcpy(h + CELL_LEN, &m->len, 8);
}

/* psm2_cell_head parses the header of a cell of kind kind that carries
 * one message (eager, RTS, answer in a buffer: hflags, length, sender,
 * tag, data) into m, and returns 1, or 0 for another kind of cell or a
 * cell flag outside cflags. */
static inline int psm2_cell_head(const unsigned char *p, unsigned char kind, unsigned cflags, struct psm2_inline *m)
{
	if (p[CELL_KIND] != kind || (p[CELL_FLAGS] & ~cflags))
		return 0;
	memcpy(&m->hflags, p + CELL_HFLAGS, 4);
	memcpy(&m->len, p + CELL_LEN, 8);
	memcpy(&m->epid, p + CELL_EPID, 8);
	memcpy(&m->tag, p + CELL_TAG, 8);
	m->with_data = (p[CELL_FLAGS] & CELL_HAS_DATA) != 0;
	m->data = 0;
	if (m->with_data)
		memcpy(&m->data, p + CELL_DATA, 8);
	return 1;
}

/* psm2_msg_head is psm2_cell_head for a message C may deliver: 0 also for
 * a header flag C does not know. */
static inline int psm2_msg_head(const unsigned char *p, unsigned char kind, unsigned cflags, struct psm2_inline *m)
{
	return psm2_cell_head(p, kind, cflags, m) && !(m->hflags & ~(uint32_t) PSM2_FAST_HFLAGS);
}

/* psm2_rma_cell_head is psm2_cell_head for an RMA protocol message in a
 * bounce buffer (kind CELL_EAGER, or CELL_ANSWER_BUF), with its buffer's
 * index: 0 for any other, and for one with message flags or data. */
static inline int psm2_rma_cell_head(const unsigned char *p, unsigned char kind, struct psm2_inline *m, uint16_t *idx)
{
	if (!psm2_cell_head(p, kind, CELL_HAS_DATA, m) || !(m->hflags & HF_RMA) ||
	    (m->hflags & (HF_TAGGED | HF_DATA)) || m->data)
		return 0;
	memcpy(idx, p + CELL_SHORT, 2);
	return 1;
}

/* psm2_eager_head parses the payload p of an eager cell into m and the
 * bounce buffer's index, and returns 1, or 0 when C must leave it to Go
 * (psm2_msg_head). */
static inline int psm2_eager_head(const unsigned char *p, struct psm2_inline *m, uint16_t *idx)
{
	/* (the stream flag is the caller's: psm2_eager_stream) */
	if (!psm2_msg_head(p, CELL_EAGER, PSM2_FAST_CFLAGS | CELL_STREAM, m))
		return 0;
	memcpy(idx, p + CELL_SHORT, 2);
	return 1;
}

/* psm2_eager_stream says whether the eager cell with payload p is
 * streamed (CELL_STREAM), with its stream's number in *seq. */
static inline int psm2_eager_stream(const unsigned char *p, uint64_t *seq)
{
	memcpy(seq, p + CELL_W5, 8);
	return (p[CELL_FLAGS] & CELL_STREAM) != 0;
}

/* psm2_rts_head parses the payload p of a rendezvous request (RTS) cell
 * into m, the sender's address of the data and the send id, and returns
 * 1, or 0 when C must leave it to Go (psm2_msg_head, or no data: Go drops
 * those). */
static inline int psm2_rts_head(const unsigned char *p, struct psm2_inline *m, uint64_t *addr,
				uint64_t *sid)
{
	if (!psm2_msg_head(p, CELL_RTS, PSM2_FAST_CFLAGS, m) || !m->len)
		return 0;
	memcpy(addr, p + CELL_W5, 8);
	memcpy(sid, p + CELL_W6, 8);
	return 1;
}

/* psm2_fin_build writes the payload of the FIN of send sid from endpoint
 * epid: shm's finCell with status 0 (the data was fetched). */
static inline void psm2_fin_build(uint64_t cell[CELL_PAYLOAD / 8], uint64_t epid, uint64_t sid)
{
	unsigned char *h = (unsigned char *) cell;

	memset(h, 0, CELL_PAYLOAD);
	h[CELL_KIND] = CELL_FIN;
	memcpy(h + CELL_EPID, &epid, 8);
	memcpy(h + CELL_TAG, &sid, 8);
}

/* psm2_pad_len is the length of an inline message with the data word
 * that takes exactly k cells (1 to PUSH_CELLS_MAX). */
static inline uint64_t psm2_pad_len(uint64_t k)
{
	return k == 1 ? 0 : INLINE_HEAD_DATA + (k - 2) * CONT_PAYLOAD + 1;
}

/* psm2_rma_head is psm2_head_parse for an RMA protocol message: 0 for
 * any other message, and for one with data or message flags. */
static inline int psm2_rma_head(const unsigned char *p, struct psm2_inline *m)
{
	int n = psm2_head_parse(p, m);

	return n && (m->hflags & HF_RMA) && !(m->hflags & (HF_TAGGED | HF_DATA)) && !m->with_data ? n : 0;
}

/* psm2_conts finds the cells - 1 continuation cells after the head cell
 * at position cons of ring r (mask+1 cells): 1 with their payloads in
 * cont if all are published continuations, else 0. */
static inline int psm2_conts(char *r, uint64_t mask, uint64_t cons, int cells, const unsigned char **cont)
{
	for (int k = 1; k < cells; k++) {
		const unsigned char *ck = (const unsigned char *) psm2_cell(r, mask, cons + (uint64_t) k);

		if (__atomic_load_n((const uint64_t *) (ck + CELL_SEQ), __ATOMIC_ACQUIRE) != cons + (uint64_t) k + 1 ||
		    !psm2_inline_cont(ck + CELL_PAYLOAD_OFF))
			return 0;
		cont[k - 1] = ck + CELL_PAYLOAD_OFF;
	}
	return 1;
}

#endif /* PSM2_FAST_CELL_H */
