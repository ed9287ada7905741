/* answerfuzz.c: the initiator's answer path against hostile answers.
 *
 * An atomic, RMA read or RMA write this process posted (Go's, armed in
 * the endpoint page's table, or C's own: psm2_fast_atomic, psm2_fast_rma)
 * is completed in C when its answer leads the endpoint's ring while
 * fi_cq_read reads its transmit CQ (cmd/libfabric-psm2/fast/atomic.c:
 * psm2_fast_answers): an ack, the old values or the bytes read, inline or
 * in the bounce buffer of ours its request went in (CELL_ANSWER_BUF). The
 * target can write anything into our ring, into the buffers it holds and
 * into our busy word, and can race with the call. This drives the
 * library's own code (the fast path's .c files built into this program)
 * with a fake domain page, CQ page and two endpoint pages whose transmit
 * CQ it is (or not), each with an armed table of random entries (free, a
 * Go op's, C-posted, adopted, done; ids that name their entry or not;
 * lengths from 0 to past the longest inline answer; result buffers, a few
 * of them bad; AO_DEST naming the peer's slot, now and then past the
 * table, a bounce buffer, AO_RMA), a peer table of descriptors (with the
 * AV's rx_ctx_bits, which the slot has already been rotated by), our
 * bounce buffers, their busy word and holder table. Each round fills the
 * rings with answers built as a target builds them (psm2_inline_build,
 * psm2_eager_build) for the entries, then mutated (tag, length, header
 * flags, cell kind and flags, data word, buffer index, continuation cells,
 * sequence words, the consumer counter) or repeated, and random cells; and
 * asks for 0 to 8 entries of a random CQ format.
 *
 * Every page, ring, table, bounce buffer, result buffer and the output
 * buffer ends at a guard page; the bounce buffers also start at one, and
 * a result buffer is exactly its entry's length. The check is a model that
 * knows only what the test set up, not the table C reads: in ring order,
 * until the first cell C must leave to Go, it completes an answer that is
 * well formed and names an entry armed or posted with its id and length,
 * and (in a buffer) the very buffer the op's request went in, one of ours,
 * still handed to the op's peer; copies its bytes, writes its completion
 * (the op's context; FI_ATOMIC or FI_RMA, FI_READ or FI_WRITE as Go's
 * rmaMaybeDone gives them), gives the buffer back, marks the entry (free
 * if Go never knew of it, else done for Go to reap) and counts it. After
 * each call everything the call may touch must be as the model left it:
 * the result buffers (their answer's bytes and nothing else), the output
 * buffer (the entries, nothing past them), the bounce buffers, busy words
 * and holder tables, the rings (consumer counters moved over the answers
 * completed), the descriptors and the pages (entry states, EPF_ARMED, the
 * lock slot's count and lock word).
 *
 * Then rounds race: a thread (on another CPU) flips a word of the cells at
 * a ring's head or of the bounce buffers back and forth while the call
 * runs, and what is checked is what no timing may change: no more entries
 * than asked for, each the completion of an op that was armed or posted,
 * with its flags, each op completed once, and nothing changed but those
 * ops' entries, result buffers, bounce buffers (given back: theirs only)
 * and the counts.
 *
 * FASTFUZZ_ITERS sets the number of rounds (default 30000, about a
 * second, and an eighth as many racing; 3000 under valgrind, about 15
 * seconds, and none racing: valgrind runs one thread at a time). */
#define _GNU_SOURCE	/* (pthread_setaffinity_np, CPU_SET) */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "check.h"
#include "fuzz.h"
#include "node.h"
#include "../cmd/libfabric-psm2/fast/fast.h"
#include "../cmd/libfabric-psm2/fast/atomic.h"
#include "../cmd/libfabric-psm2/fast/page.h"

#define NEP 2
#define NSLOT 16			/* a peer table's slots */
#define NDESC 4				/* descriptors in it */
#define NBUF_MAX 8			/* our bounce buffers, at most */
#define POOL_BYTES (2 * 8192)
#define LEN_MAX (ATOMIC_MAX + 16)	/* an entry's length, at most */
#define RES_BYTES (LEN_MAX + 64)	/* a result buffer's area: the buffer at its end */
#define NOUT 8
#define ENTRY ((uint64_t) sizeof(struct fi_cq_tagged_entry))
#define MAXUNITS 8
#define SLOT(dom, k) ((char *) (dom) + DOMF_SLOTS + (k) * LSLOT_SIZE)

_Static_assert(sizeof(struct fi_cq_tagged_entry) == 48, "a tagged entry is six words");

static const int ring_log[NEP] = { 7, 5 };

/* An armed-table entry as the test wrote it. */
struct op {
	uint64_t state, id, len, ctx;
	uint64_t slot;		/* (C-posted) its peer's slot */
	int bidx;		/* the bounce buffer its request went in, -1: none */
	int rma;		/* AO_RMA: an RMA read or write */
	int bad;		/* its result buffer faults */
	unsigned char *res;	/* its result buffer, at the end of its area */
};

struct ep {
	uint64_t *f, *peers, *desc, *busy;
	int32_t *holder;
	char *ring;
	unsigned char *pool, *bufs, *area[AO_CAP];
	struct op op[AO_CAP];
	int32_t idx[NDESC];	/* the descriptors' peer indices */
	int bufs_ok[NDESC];	/* their bounce-buffer words are set */
	int at[NSLOT];		/* the descriptor in each slot, -1: none */
	uint64_t slot[NDESC];	/* each descriptor's slot */
	uint64_t nb, bs, npeers, bits, armed;
	int log, ring_on, txcq, locked;	/* (a ring; its transmit CQ is ours; its lock slot is the CQ's) */
};

struct world {
	uint64_t *dom, *cq;
	struct ep ep[NEP];
	struct ep *eps[DOMF_MAX_EPS];	/* the domain page's list */
	uint64_t neps, stride;
	size_t count;
	unsigned char *outbuf, *out, *bad;
	int cq_dom, cq_lock, cq_empty, locking;
};

static struct {
	long inl, inbuf, ack, rma, fault, full, idxgo;
} st;

static int live(uint64_t state)
{
	return state == AO_ARMED || state == AO_CPOSTED || state == AO_ADOPTED;
}

static int is_answer(uint32_t hf)
{
	return hf == (HF_RMA | RMA_ACK << RMA_KIND_SHIFT) || hf == (HF_RMA | RMA_ATOMIC_RESP << RMA_KIND_SHIFT) ||
	       hf == (HF_RMA | RMA_READ_RESP << RMA_KIND_SHIFT);
}

/* inline_cells is the cells of an inline message of len bytes without
 * the data word (shm/cell.go). */
static uint64_t inline_cells(uint64_t len)
{
	return len <= INLINE_HEAD ? 1 : 1 + (len - INLINE_HEAD + CONT_PAYLOAD - 1) / CONT_PAYLOAD;
}

static unsigned char *cell_at(char *r, uint64_t mask, uint64_t pos)
{
	return (unsigned char *) r + RING_HDR + (pos & mask) * CELL_SIZE;
}

static void fill_rnd(unsigned char *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i += 8) {
		uint64_t v = rnd();

		memcpy(p + i, &v, n - i < 8 ? n - i : 8);
	}
}

/* --- the model ------------------------------------------------------------ */

/* op_peer is the descriptor of the peer op o was posted to, -1 if the
 * table has none there. */
static int op_peer(const struct ep *e, const struct op *o)
{
	return o->slot < e->npeers ? e->at[o->slot] : -1;
}

/* head_waits says whether e's ring starts with a published cell of a kind
 * an answer comes in, with an answer's header flags (the hint the call
 * looks at before it takes the lock). */
static int head_waits(const struct ep *e)
{
	uint64_t mask = ((uint64_t) 1 << e->log) - 1, cons = *(uint64_t *) (e->ring + RING_CONS);
	const unsigned char *c = cell_at(e->ring, mask, cons), *p = c + CELL_PAYLOAD_OFF;
	uint32_t hf;

	if (!e->ring_on || *(const uint64_t *) (c + CELL_SEQ) != cons + 1 ||
	    (p[CELL_KIND] != CELL_INLINE && p[CELL_KIND] != CELL_EAGER && p[CELL_KIND] != CELL_ANSWER_BUF))
		return 0;
	memcpy(&hf, p + CELL_HFLAGS, 4);
	return is_answer(hf);
}

/* model_ep completes the answers at the head of e's ring into out (up to
 * count entries) and returns how many. */
static size_t model_ep(struct world *w, struct ep *e, int k, unsigned char *out, size_t count)
{
	uint64_t mask = ((uint64_t) 1 << e->log) - 1, *consp = (uint64_t *) (e->ring + RING_CONS);
	uint64_t *adone = (uint64_t *) (SLOT(w->dom, 0) + LSLOT_ADONE);
	size_t got = 0;

	if (!e->ring_on)
		return 0;
	while (got < count && e->armed) {
		uint64_t cons = *consp, cells = 1, len, tag, data, ent[6] = { 0 };
		unsigned char *c = cell_at(e->ring, mask, cons), *p = c + CELL_PAYLOAD_OFF;
		uint64_t *a;
		uint32_t hf;
		uint16_t sl;
		int idx = -1, pi;
		struct op *o;

		if (*(uint64_t *) (c + CELL_SEQ) != cons + 1)
			break;
		memcpy(&hf, p + CELL_HFLAGS, 4);
		memcpy(&sl, p + CELL_SHORT, 2);
		memcpy(&tag, p + CELL_TAG, 8);
		memcpy(&data, p + CELL_DATA, 8);
		note("ep %d cell %lu: kind %u flags %#x short %u hflags %#x tag %#lx", k, (unsigned long) cons,
		     p[CELL_KIND], p[CELL_FLAGS], sl, hf, (unsigned long) tag);
		/* An answer without message flags or an error (the data word). */
		if (!is_answer(hf))
			break;
		if (p[CELL_KIND] == CELL_INLINE) {
			if (p[CELL_FLAGS])
				break;
			len = sl;
			cells = inline_cells(len);
			if (cells > PUSH_CELLS_MAX)
				break;
		} else if (p[CELL_KIND] == CELL_ANSWER_BUF) {
			if ((p[CELL_FLAGS] & ~CELL_HAS_DATA) || ((p[CELL_FLAGS] & CELL_HAS_DATA) && data))
				break;
			memcpy(&len, p + CELL_LEN, 8);
			idx = sl;
		} else {
			break;
		}
		/* The entry the tag names, as the test armed it. */
		o = &e->op[(tag & 0xffffffffu) % AO_CAP];
		note("  entry %lu: state %lu id %#lx len %lu bidx %d slot %#lx, answer len %lu idx %d",
		     (unsigned long) ((tag & 0xffffffffu) % AO_CAP), (unsigned long) o->state, (unsigned long) o->id,
		     (unsigned long) o->len, o->bidx, (unsigned long) o->slot, (unsigned long) len, idx);
		if (!live(o->state) || o->id != tag || o->len != len)
			break;
		if (idx >= 0) {
			/* Our buffer idx, the one the op's request went in,
			 * still handed to the op's peer. */
			pi = op_peer(e, o);
			if (o->state == AO_ARMED || idx != o->bidx || (uint64_t) idx >= e->nb || !len || len > e->bs ||
			    pi < 0 || !e->bufs_ok[pi] || !(*e->busy >> idx & 1) || e->holder[idx] != e->idx[pi]) {
				if (o->state != AO_ARMED && idx == o->bidx)
					st.idxgo++;
				note("  the buffer is not the op's own, held by its peer (%d): Go's", pi);
				break;
			}
			if (o->bad) {
				st.fault++;
				note("  bad result buffer: Go's");
				break;
			}
			memcpy(o->res, e->bufs + (uint64_t) idx * e->bs, len);
			e->holder[idx] = -1;
			*e->busy &= ~((uint64_t) 1 << idx);
			st.inbuf++;
		} else {
			unsigned char *dst = o->res;
			uint64_t part = len < INLINE_HEAD ? len : INLINE_HEAD;

			for (uint64_t i = 1; i < cells; i++) {
				unsigned char *ck = cell_at(e->ring, mask, cons + i);

				if (*(uint64_t *) (ck + CELL_SEQ) != cons + i + 1 || ck[CELL_PAYLOAD_OFF + CONT_KIND] != CELL_CONT)
					goto out;
			}
			if (o->bad && len) {
				st.fault++;
				note("  bad result buffer: Go's");
				break;
			}
			/* The head's bytes end its payload; each continuation's
			 * follow its kind byte. */
			memcpy(dst, p + CELL_PAYLOAD - INLINE_HEAD, part);
			for (uint64_t i = 1; i < cells; i++) {
				unsigned char *ck = cell_at(e->ring, mask, cons + i) + CELL_PAYLOAD_OFF + CONT_PAYLOAD_OFF;
				uint64_t n = len - part < CONT_PAYLOAD ? len - part : CONT_PAYLOAD;

				memcpy(dst + part, ck, n);
				part += n;
			}
			if (len)
				st.inl++;
			else
				st.ack++;
		}
		ent[0] = o->ctx;
		ent[1] = (o->rma ? FI_RMA : FI_ATOMIC) | (len ? FI_READ : FI_WRITE);
		if (o->rma)
			st.rma++;
		memcpy(out + got * w->stride, ent, w->stride < ENTRY ? w->stride : ENTRY);
		got++;
		e->armed--;
		e->f[EPF_ARMED] = e->armed;
		a = e->f + EPF_AOPS + (o - e->op) * AO_WORDS;
		if (o->state == AO_CPOSTED) {
			o->state = AO_FREE;
		} else {
			o->state = AO_DONE;
			++*adone;
		}
		a[AO_STATE] = o->state;
		*consp = cons + cells;
		note("  completed (%lu cells)", (unsigned long) cells);
	}
out:
	if (got == count)
		st.full++;
	return got;
}

/* model_answers is psm2_fast_answers' contract: nothing unless an
 * endpoint whose transmit CQ this is has entries armed and an answer at
 * its ring's head; nothing unless the CQ's lock slot is there and the CQ
 * holds no older entry; then the endpoints of the CQ's lock slot, in the
 * domain page's order. */
static size_t model_answers(struct world *w)
{
	uint64_t neps = w->neps < DOMF_MAX_EPS ? w->neps : DOMF_MAX_EPS, i;
	size_t got = 0;

	if (!w->cq_dom)
		return 0;
	for (i = 0; i < neps; i++) {
		struct ep *e = w->eps[i];

		if (e && e->armed && e->txcq && head_waits(e))
			break;
	}
	if (i == neps) {
		note("no answer waits");
		return 0;
	}
	if (!w->cq_lock || !w->cq_empty) {
		note("no lock slot, or the CQ holds older entries");
		return 0;
	}
	for (i = 0; i < neps && got < w->count; i++) {
		struct ep *e = w->eps[i];

		if (e && e->txcq && e->locked)
			got += model_ep(w, e, (int) (e - w->ep), w->out + got * w->stride, w->count - got);
	}
	return got;
}

/* --- the hostile round ---------------------------------------------------- */

/* gen_op arms entry i of e's table: a state; an id that names the entry
 * (now and then one that names another, never found here); a length; a
 * result buffer that ends at its area's end (now and then one that
 * faults); a context; for a C-posted op (and now and then a Go op's
 * entry, as if left over), its peer's slot (mostly one
 * with a descriptor; any slot of the table, now and then one far past
 * it), its request's buffer (none, one of ours, one we do not have, an
 * index no buffer has) and its class. */
static void gen_op(struct world *w, struct ep *e, int i)
{
	static const uint64_t states[] = { AO_FREE, AO_FREE, AO_ARMED, AO_ARMED, AO_ARMED, AO_CPOSTED,
					   AO_CPOSTED, AO_CPOSTED, AO_ADOPTED, AO_ADOPTED, AO_DONE };
	static const uint64_t lens[] = { 0, 0, 0, 1, 8, 24, 31, 32, 33, 87, 88, 142, 143, 4096,
					 ATOMIC_MAX - 1, ATOMIC_MAX, ATOMIC_MAX + 1 };
	struct op *o = &e->op[i];
	uint64_t *a = e->f + EPF_AOPS + i * AO_WORDS, low;
	int cposted;

	o->state = pick(states, 11);
	cposted = o->state == AO_CPOSTED || o->state == AO_ADOPTED || (o->state != AO_ARMED && rnd() % 2);
	low = (rnd() % (0xffffffffu / AO_CAP)) * AO_CAP + (uint64_t) i;
	if (rnd() % 16 == 0)
		low = (uint32_t) rnd();
	o->id = (cposted ? C_TAG_GEN : rnd() % C_TAG_GEN) << 32 | low;
	o->len = rnd() % 2 ? pick(lens, 17) : rnd() % (LEN_MAX + 1);
	o->ctx = rnd();
	o->slot = 0;
	o->bidx = -1;
	o->rma = 0;
	if (o->state == AO_ARMED && rnd() % 8 == 0) {
		/* A Go op's entry with a buffer and a peer in AO_DEST, as if
		 * a C-posted op's had been left there (Go writes 0: the
		 * check that only C-posted ops lent a buffer must not rely
		 * on it). */
		o->slot = e->slot[rnd() % NDESC];
		o->bidx = (int) (rnd() % e->nb);
	} else if (cposted) {
		o->slot = rnd() % 4 ? e->slot[rnd() % NDESC] : rnd() % NSLOT;
		if (rnd() % 32 == 0)
			o->slot = rnd() & (((uint64_t) 1 << 48) - 1);
		o->rma = rnd() % 3 == 0;
		switch (rnd() % 16) {
		case 0: case 1: case 2: case 3: case 4: break;
		case 5: o->bidx = (int) (e->nb + rnd() % (64 - e->nb)); break;
		case 6: o->bidx = (int) (64 + rnd() % 191); break;
		default: o->bidx = (int) (rnd() % e->nb); break;
		}
		if (o->bidx >= 0 && (o->len > e->bs || !o->len) && rnd() % 4)
			o->len = 1 + rnd() % (e->bs < LEN_MAX ? e->bs : LEN_MAX);
	}
	o->bad = o->len && rnd() % 32 == 0;
	o->res = e->area[i] + RES_BYTES - o->len;
	a[AO_STATE] = o->state;
	a[AO_ID] = o->id;
	a[AO_BUF] = (uint64_t) (uintptr_t) (o->bad ? w->bad + rnd() % 64 : o->res);
	a[AO_LEN] = o->len;
	a[AO_CTX] = o->ctx;
	a[AO_DEST] = o->slot | (uint64_t) (o->bidx + 1) << 48 | (o->rma ? AO_RMA : 0);
}

/* gen_unit builds the cells of one answer into cells and returns how
 * many: for an entry (mostly a live one), inline or (for a C-posted op
 * whose request went in a buffer) in that buffer, named by one cell.
 * Three in four are sound; the others have one thing wrong: the tag,
 * the length, the header flags, the data word, the buffer index, a
 * continuation's kind, the inline length, the cell's flags or kind. Now
 * and then a random cell instead. */
static uint64_t gen_unit(struct ep *e, uint64_t cells[][CELL_PAYLOAD / 8])
{
	static unsigned char bytes[LEN_MAX];
	static const uint64_t kinds[] = { RMA_ACK, RMA_ATOMIC_RESP, RMA_READ_RESP };
	static const uint64_t ckinds[] = { CELL_INLINE, CELL_ANSWER_BUF, CELL_EAGER, CELL_CONT, CELL_RTS };
	struct op *o = &e->op[rnd() % AO_CAP];
	struct psm2_inline m = { 0 };
	unsigned char *h = (unsigned char *) cells[0];
	int sound = rnd() % 4 != 0, inbuf;
	uint16_t idx;
	uint64_t k = 1;

	for (int t = 0; t < 3 && !live(o->state); t++)
		o = &e->op[rnd() % AO_CAP];
	if (rnd() % 16 == 0) {
		/* A random cell, now and then with an answer's flags and a
		 * live entry's tag. */
		for (int i = 0; i < CELL_PAYLOAD / 8; i++)
			cells[0][i] = rnd();
		h[CELL_KIND] = (unsigned char) (rnd() % 2 ? pick(ckinds, 5) : rnd() % 12);
		if (rnd() % 2)
			h[CELL_FLAGS] = 0;
		if (rnd() % 2) {
			uint32_t hf = HF_RMA | (uint32_t) pick(kinds, 3) << RMA_KIND_SHIFT;

			memcpy(h + CELL_HFLAGS, &hf, 4);
			memcpy(h + CELL_TAG, &o->id, 8);
		}
		return 1;
	}
	inbuf = o->bidx >= 0 && rnd() % 4 != 0;
	idx = (uint16_t) o->bidx;
	m.epid = rnd();
	m.tag = o->id;
	m.len = o->len;
	m.hflags = HF_RMA | (uint32_t) (m.len ? (rnd() % 2 ? RMA_ATOMIC_RESP : RMA_READ_RESP) : RMA_ACK) << RMA_KIND_SHIFT;
	if (rnd() % 8 == 0)
		m.hflags = HF_RMA | (uint32_t) pick(kinds, 3) << RMA_KIND_SHIFT;
	if (!sound) {
		switch (rnd() % 10) {
		case 0: m.tag = e->op[rnd() % AO_CAP].id; break;
		case 1: m.tag ^= (uint64_t) 1 << (rnd() % 64); break;
		case 2: m.tag = (m.tag & ~(uint64_t) 0xffffffffu) | (uint32_t) (m.tag + (rnd() % 2 ? AO_CAP : 1)); break;
		case 3: m.len = rnd() % 2 ? m.len + (rnd() % 2 ? 1 : -1) : rnd() % 4 ? 0 : rnd() % LEN_MAX; break;
		case 4: m.len = rnd() % 2 ? e->bs + 1 + rnd() % 64 : rnd(); break;
		case 5: m.hflags ^= (uint32_t) 1 << (rnd() % 32); break;
		case 6:
			if (rnd() % 2)
				m.hflags = HF_RMA | (uint32_t) (rnd() % 12) << RMA_KIND_SHIFT;
			else
				m.hflags |= (uint32_t) (1 + rnd() % 16) << (rnd() % 2 ? ATOMIC_OP_SHIFT : ATOMIC_DT_SHIFT);
			break;
		case 7:
			m.with_data = 1;
			m.data = rnd() % 2 ? rnd() : 0;
			break;
		case 8:
			switch (rnd() % 4) {
			case 0: idx = (uint16_t) ((idx + 1) % e->nb); break;
			case 1: idx = (uint16_t) (e->nb + rnd() % (64 - e->nb)); break;
			case 2: idx = (uint16_t) (64 + rnd() % 300); break;
			default: idx = (uint16_t) rnd(); break;
			}
			if (!inbuf && o->bidx < 0 && e->nb)
				inbuf = 1;
			break;
		default: break;
		}
	}
	fill_rnd(bytes, m.len < LEN_MAX ? m.len : LEN_MAX);
	if (inbuf) {
		/* The answer over the request, in our buffer; one cell names
		 * it (the target's psm2_serve_one). */
		uint64_t n = m.len < e->bs ? m.len : e->bs;

		if (idx < e->nb)
			memcpy(e->bufs + (uint64_t) idx * e->bs, bytes, n < LEN_MAX ? n : LEN_MAX);
		psm2_eager_build(cells[0], &m, idx);
		h[CELL_KIND] = CELL_ANSWER_BUF;
	} else {
		int n;

		if (m.len > ATOMIC_MAX)
			m.len = ATOMIC_MAX;
		n = psm2_inline_build(cells, &m, bytes, PUSH_CELLS_MAX);
		if (n == 0 && m.with_data) {
			/* (the data word makes it one cell too long) */
			m.with_data = 0;
			n = psm2_inline_build(cells, &m, bytes, PUSH_CELLS_MAX);
		}
		if (n <= 0) {
			fprintf(stderr, "psm2_inline_build of %lu bytes: %d\n", (unsigned long) m.len, n);
			exit(2);
		}
		k = (uint64_t) n;
		if (!sound && k > 1 && rnd() % 8 == 0)
			((unsigned char *) cells[1 + rnd() % (k - 1)])[CONT_KIND] = (unsigned char) (rnd() % 12);
		if (!sound && rnd() % 8 == 0) {
			uint16_t sl = rnd() % 2 ? (uint16_t) rnd() : (uint16_t) (m.len + 1);

			memcpy(h + CELL_SHORT, &sl, 2);
		}
	}
	if (!sound && rnd() % 8 == 0)
		h[CELL_FLAGS] = (unsigned char) rnd();
	if (!sound && rnd() % 8 == 0)
		h[CELL_KIND] = (unsigned char) (rnd() % 2 ? pick(ckinds, 5) : rnd() % 12);
	return k;
}

/* unit is gen_unit for fuzz_fill_ring. */
static uint64_t unit(void *e, uint64_t cells[][CELL_PAYLOAD / 8])
{
	return gen_unit(e, cells);
}

/* fill_ring writes e's ring: up to MAXUNITS answers, as fuzz_fill_ring
 * leaves a ring. */
static void fill_ring(struct ep *e)
{
	fuzz_fill_ring(e->ring, (uint64_t) 1 << e->log, fuzz_counter(), rnd() % (MAXUNITS + 1), unit, e);
}

/* setup_ep makes endpoint e's part of a round: our bounce buffers, the
 * peer table (the AV's bits, descriptors in random slots, some past the
 * table's length, some without our buffers' words), the armed table, the
 * buffers' busy word (the target writes it too) and holder table (each
 * C-posted op's buffer mostly handed to its peer, now and then to another
 * or to none, or its busy bit clear), the page's words, the ring. */
static void setup_ep(struct world *w, struct ep *e)
{
	static const uint64_t sizes[] = { 64, 128, 256, 4096, 8192 };
	static const uint64_t bits[] = { 0, 0, 0, 1, 2, 2, 4, 7, 8, 9, 12 };
	uint64_t *f = e->f, max, slot = (uint64_t) (uintptr_t) SLOT(w->dom, 0);

	e->bs = pick(sizes, 5);
	max = POOL_BYTES / e->bs < NBUF_MAX ? POOL_BYTES / e->bs : NBUF_MAX;
	e->nb = 1 + rnd() % max;
	e->bufs = e->pool + POOL_BYTES - e->nb * e->bs;
	e->bits = pick(bits, 11);
	e->npeers = rnd() % 4 ? NSLOT : 1 + rnd() % NSLOT;
	for (int s = 0; s < NSLOT; s++) {
		e->at[s] = -1;
		e->peers[s] = 0;
	}
	for (int i = 0; i < NDESC; i++) {
		uint64_t *d = e->desc + i * (FP_SIZE / 8);
		uint64_t s;

		do
			s = rnd() % NSLOT;
		while (e->at[s] >= 0);
		e->at[s] = i;
		e->slot[i] = s;
		e->peers[s] = (uint64_t) (uintptr_t) d;
		e->idx[i] = (int32_t) (rnd() % 256) * NDESC + i;
		memset(d, 0, FP_SIZE);
		d[FP_OK] = 1;
		d[FP_IDX] = (uint64_t) e->idx[i];
		d[FP_BUSY] = (uint64_t) (uintptr_t) e->busy;
		d[FP_BUFS] = (uint64_t) (uintptr_t) e->bufs;
		d[FP_BUF_SIZE] = e->bs;
		d[FP_ALL_BUFS] = ((uint64_t) 1 << e->nb) - 1;
		d[FP_HOLDER] = (uint64_t) (uintptr_t) e->holder;
		d[FP_EAGER_MAX] = e->bs;
		e->bufs_ok[i] = rnd() % 16 != 0;
		if (!e->bufs_ok[i])
			d[rnd() % 3 == 0 ? FP_BUSY : rnd() % 2 ? FP_BUFS : FP_HOLDER] = 0;
	}
	for (int i = 0; i < AO_CAP; i++)
		gen_op(w, e, i);
	for (int i = 0; i < 64; i++)
		e->holder[i] = -1;
	*e->busy = rnd();
	for (uint64_t i = 0; i < e->nb; i++)
		if (rnd() % 4 == 0)
			e->holder[i] = e->idx[rnd() % NDESC];
	for (int i = 0; i < AO_CAP; i++) {
		const struct op *o = &e->op[i];
		int pi = op_peer(e, o);

		if (o->bidx < 0 || (uint64_t) o->bidx >= e->nb)
			continue;
		*e->busy |= (uint64_t) 1 << o->bidx;
		switch (rnd() % 8) {
		case 0: e->holder[o->bidx] = e->idx[rnd() % NDESC]; break;
		case 1: e->holder[o->bidx] = -1; break;
		case 2: *e->busy &= ~((uint64_t) 1 << o->bidx); break;
		default: e->holder[o->bidx] = pi >= 0 ? e->idx[pi] : e->idx[rnd() % NDESC]; break;
		}
	}
	e->armed = 0;
	for (int i = 0; i < AO_CAP; i++)
		e->armed += live(e->op[i].state);
	if (rnd() % 16 == 0)
		e->armed = rnd() % 4;
	e->ring_on = rnd() % 32 != 0;
	e->txcq = rnd() % 16 != 0;
	e->locked = rnd() % 16 != 0;
	f[EPF_ARMED] = e->armed;
	f[EPF_RING] = e->ring_on ? (uint64_t) (uintptr_t) e->ring | (uint64_t) e->log : 0;
	f[EPF_TX_CQ] = e->txcq ? (uint64_t) (uintptr_t) w->cq : (uint64_t) (uintptr_t) w->cq + 4096;
	f[EPF_LOCK] = e->locked ? slot : slot + LSLOT_SIZE;
	f[EPF_NPEERS] = e->npeers;
	f[EPF_RX_BITS] = e->bits;
	fill_ring(e);
}

/* round_setup makes one round's world: the domain page's list (one or
 * both endpoints, either order, a hole), the CQ page (its lock slot, Go's
 * ring and C's queue now and then not empty), the CQ format, the count,
 * the endpoints. */
static void round_setup(struct world *w)
{
	static const uint64_t strides[] = { sizeof(struct fi_cq_entry), sizeof(struct fi_cq_msg_entry),
					    sizeof(struct fi_cq_data_entry), sizeof(struct fi_cq_tagged_entry) };
	char *dom = (char *) w->dom;
	uint64_t *eps = (uint64_t *) (dom + DOMF_EPS);
	int first = (int) (rnd() % 2);

	memset(w->eps, 0, sizeof(w->eps));
	w->eps[0] = &w->ep[first];
	w->eps[1] = &w->ep[1 - first];
	switch (rnd() % 8) {
	case 0: w->eps[rnd() % 2] = NULL; w->neps = 2; break;
	case 1: w->neps = 1; break;
	case 2: w->eps[2] = w->eps[1]; w->eps[1] = NULL; w->neps = 3; break;
	default: w->neps = 2; break;
	}
	if (rnd() % 64 == 0)
		w->neps = 0;
	for (int i = 0; i < DOMF_MAX_EPS; i++)
		eps[i] = (uint64_t) (uintptr_t) (w->eps[i] ? w->eps[i]->f : NULL);
	*(uint64_t *) (dom + DOMF_NEPS) = w->neps;
	w->locking = rnd() % 8 != 0;
	*(uint32_t *) (dom + DOMF_LOCKING) = (uint32_t) w->locking;
	*(uint64_t *) (SLOT(dom, 0) + LSLOT_ADONE) = rnd() % 4;
	w->cq_dom = rnd() % 64 != 0;
	w->cq_lock = rnd() % 64 != 0;
	w->cq_empty = rnd() % 16 != 0;
	w->cq[CQF_DOMAIN] = w->cq_dom ? (uint64_t) (uintptr_t) dom : 0;
	w->cq[CQF_LOCK] = w->cq_lock ? (uint64_t) (uintptr_t) SLOT(dom, 0) : 0;
	w->cq[CQF_COUNT] = 0;
	w->cq[CQF_CQUEUED] = 0;
	if (!w->cq_empty)
		w->cq[rnd() % 2 ? CQF_COUNT : CQF_CQUEUED] = 1 + rnd() % 3;
	w->stride = pick(strides, 4);
	w->cq[CQF_STRIDE] = w->stride;
	w->count = rnd() % (NOUT + 1);
	w->out = w->outbuf + NOUT * ENTRY - w->count * w->stride;	/* (ends at the guard) */
	memset(w->outbuf, 0xa5, NOUT * ENTRY);
	for (int i = 0; i < NEP; i++)
		setup_ep(w, &w->ep[i]);
}

/* check_round runs psm2_fast_answers on the round's world, then the model
 * on the same world, and compares. Returns 0 if they agree. */
static int check_round(struct world *w, long round, unsigned char *before, unsigned char *after, int *nprint)
{
	const unsigned char *a = after, *b = before;
	ssize_t got;
	size_t want;
	int bad = 0;

	save(before);
	got = psm2_fast_answers(w->cq, w->out, w->count);
	save(after);
	if (got < 0 || (size_t) got > w->count) {
		bad = 1;
		if (*nprint > 0)
			printf("round %ld: %zd entries for %zu asked\n", round, got, w->count);
	}
	put_back(before);
	ntrace = 0;
	want = model_answers(w);
	for (int i = 0; i < nareas; a += areas[i].n, b += areas[i].n, i++)
		if (area_differs(i, round, a, b, nprint))
			bad = 1;
	/* (a lock left held, reported above, would hang the next round) */
	*(uint32_t *) (SLOT(w->dom, 0) + LSLOT_LOCK) = 0;
	if (got != (ssize_t) want) {
		bad = 1;
		if (*nprint > 0)
			printf("round %ld: psm2_fast_answers completed %zd, the model %zu (of %zu asked)\n", round, got,
			       want, w->count);
	}
	if (bad && (*nprint)-- > 0)
		for (int i = 0; i < ntrace; i++)
			printf("    %s\n", trace[i]);
	return bad;
}

/* --- racing rounds --------------------------------------------------------- */

/* The racer makes race_on writes (RACE_WRITES a call, a few microseconds'
 * worth): for each call, one target, written back and forth between what
 * it held and a changed value (a target that changes a word between the
 * call's two reads of it): a sequence word, kind byte, length, header
 * flags, tag or LEN word of one of the first cells from a ring's consumer
 * counter on, or a word of the bounce buffers. Otherwise it waits
 * (spinning, and yielding: a wake-up from a futex takes longer than a
 * round). race_in says it is in the middle of a write (race_stop waits
 * for it to leave). */
#define RACE_WRITES 256

static int race_on, race_in, race_quit, race_gen;
static struct world *race_w;
static uint64_t race_rng = 0x2545f4914f6cdd1dull;
static long race_writes, raced;

static uint64_t race_rnd(void)
{
	race_rng ^= race_rng << 13;
	race_rng ^= race_rng >> 7;
	race_rng ^= race_rng << 17;
	return race_rng;
}

struct target {
	unsigned char *p;
	int n;			/* bytes: 1, 2, 4 or 8 */
	uint64_t v[2];		/* what it held, the other value */
};

static void race_pick(struct target *t)
{
	static const int off[] = { CELL_KIND, CELL_SHORT, CELL_HFLAGS, CELL_TAG, CELL_LEN };
	static const int len[] = { 1, 2, 4, 8, 8 };
	uint64_t x = race_rnd();
	struct ep *e = &race_w->ep[x % NEP];
	uint64_t mask = ((uint64_t) 1 << e->log) - 1, cons = *(uint64_t *) (e->ring + RING_CONS);
	unsigned char *c = cell_at(e->ring, mask, cons + (x >> 1) % 3);

	switch ((x >> 3) % 8) {
	case 0: t->p = c + CELL_SEQ; t->n = 8; break;
	case 1: t->p = cell_at(e->ring, mask, cons + 1 + (x >> 6) % 3) + CELL_PAYLOAD_OFF + CONT_KIND; t->n = 1; break;
	case 7: t->p = e->bufs + ((x >> 6) % (e->nb * e->bs) & ~(uint64_t) 7); t->n = 8; break;
	default: {
		int f = (int) ((x >> 6) % 5);

		t->p = c + CELL_PAYLOAD_OFF + off[f];
		t->n = len[f];
		break;
	}
	}
	t->v[0] = 0;
	memcpy(&t->v[0], t->p, (size_t) t->n);
	x = race_rnd();
	t->v[1] = x % 4 ? t->v[0] ^ (uint64_t) 1 << (x >> 2) % (uint64_t) (8 * t->n) : x % 8 ? t->v[0] + 1 : race_rnd();
}

static void race_write(const struct target *t, uint64_t v)
{
	switch (t->n) {
	case 1: __atomic_store_n(t->p, (uint8_t) v, __ATOMIC_RELAXED); break;
	case 2: __atomic_store_n((uint16_t *) t->p, (uint16_t) v, __ATOMIC_RELAXED); break;
	case 4: __atomic_store_n((uint32_t *) t->p, (uint32_t) v, __ATOMIC_RELAXED); break;
	default: __atomic_store_n((uint64_t *) t->p, v, __ATOMIC_RELEASE); break;
	}
}

static void *racer(void *arg)
{
	struct target t = { 0 };
	unsigned idle = 0, flip = 0;
	int gen = -1;

	(void) arg;
	while (!__atomic_load_n(&race_quit, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&race_in, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&race_on, __ATOMIC_SEQ_CST) <= 0) {
			__atomic_store_n(&race_in, 0, __ATOMIC_SEQ_CST);
			if (++idle % 16 == 0)
				sched_yield();	/* (valgrind runs one thread at a time) */
			else
				__builtin_ia32_pause();
			continue;
		}
		__atomic_sub_fetch(&race_on, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&race_gen, __ATOMIC_SEQ_CST) != gen) {
			gen = __atomic_load_n(&race_gen, __ATOMIC_SEQ_CST);
			race_pick(&t);
			flip = 0;
		}
		race_write(&t, t.v[++flip & 1]);
		__atomic_add_fetch(&race_writes, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&race_in, 0, __ATOMIC_SEQ_CST);
	}
	return NULL;
}

/* race_cpus puts this thread and thread th on two different CPUs, if it
 * may run on two: without, the two may share one, and a call never sees
 * a write. */
static void race_cpus(pthread_t th)
{
	cpu_set_t all, one;
	int me = sched_getcpu(), other = -1;

	if (me < 0 || sched_getaffinity(0, sizeof(all), &all) || CPU_COUNT(&all) < 2)
		return;
	for (int i = 0; i < CPU_SETSIZE && other < 0; i++)
		if (i != me && CPU_ISSET(i, &all))
			other = i;
	CPU_ZERO(&one);
	CPU_SET(me, &one);
	pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	CPU_ZERO(&one);
	CPU_SET(other, &one);
	pthread_setaffinity_np(th, sizeof(one), &one);
}

/* race_start lets the racer go and returns once it writes. */
static void race_start(void)
{
	long n = __atomic_load_n(&race_writes, __ATOMIC_SEQ_CST);

	__atomic_add_fetch(&race_gen, 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&race_on, RACE_WRITES, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&race_writes, __ATOMIC_SEQ_CST) == n)
		sched_yield();
}

static void race_stop(void)
{
	__atomic_store_n(&race_on, 0, __ATOMIC_SEQ_CST);
	while (__atomic_load_n(&race_in, __ATOMIC_SEQ_CST))
		sched_yield();
}

/* was is the word at p as before holds it (saved: not aligned). */
static uint64_t was(unsigned char *before, const void *p, size_t n)
{
	uint64_t v = 0;

	memcpy(&v, saved(before, p), n);
	return v;
}

/* check_race runs psm2_fast_answers while the racer writes, and checks
 * what no timing may change (the header comment); each change it allows
 * is copied into before, which then must match everything but the cells
 * and the bounce buffers. Returns 0 if all holds. */
static int check_race(struct world *w, long round, unsigned char *before, int *nprint)
{
	uint64_t *adone = (uint64_t *) (SLOT(w->dom, 0) + LSLOT_ADONE), want_adone = 0;
	int done[NEP][AO_CAP] = { { 0 } }, ndone = 0, seen[NEP][AO_CAP] = { { 0 } };
	char why[200] = "";
	ssize_t got;
	long n0;

	save(before);
	race_start();
	n0 = __atomic_load_n(&race_writes, __ATOMIC_SEQ_CST);
	got = psm2_fast_answers(w->cq, w->out, w->count);
	raced += __atomic_load_n(&race_writes, __ATOMIC_SEQ_CST) != n0;
	race_stop();
	if (got < 0 || (size_t) got > w->count) {
		snprintf(why, sizeof(why), "%zd entries for %zu asked", got, w->count);
		goto bad;
	}
	for (int k = 0; k < NEP; k++) {
		struct ep *e = &w->ep[k];
		uint64_t n = 0, cleared, busy0 = was(before, e->busy, 8);
		uint64_t cons0 = was(before, e->ring + RING_CONS, 8), cons = *(uint64_t *) (e->ring + RING_CONS);
		uint64_t mine = 0;

		for (int i = 0; i < AO_CAP; i++) {
			const struct op *o = &e->op[i];
			uint64_t *a = e->f + EPF_AOPS + i * AO_WORDS;

			if (a[AO_STATE] == o->state)
				continue;
			if (!live(o->state) || a[AO_STATE] != (o->state == AO_CPOSTED ? AO_FREE : AO_DONE)) {
				snprintf(why, sizeof(why), "ep %d entry %d went from state %lu to %lu", k, i,
					 (unsigned long) o->state, (unsigned long) a[AO_STATE]);
				goto bad;
			}
			done[k][i] = 1;
			n++;
			want_adone += o->state != AO_CPOSTED;
			if (o->bidx >= 0 && o->bidx < 64)
				mine |= (uint64_t) 1 << o->bidx;
			memcpy(saved(before, &a[AO_STATE]), &a[AO_STATE], 8);
			/* (its result buffer: anything, but nothing before it) */
			if (!o->bad && o->len)
				memcpy(saved(before, o->res), o->res, o->len);
		}
		ndone += (int) n;
		if (e->f[EPF_ARMED] != e->armed - n) {
			snprintf(why, sizeof(why), "ep %d: %lu completed, EPF_ARMED went from %lu to %lu", k,
				 (unsigned long) n, (unsigned long) e->armed, (unsigned long) e->f[EPF_ARMED]);
			goto bad;
		}
		memcpy(saved(before, &e->f[EPF_ARMED]), &e->f[EPF_ARMED], 8);
		if (cons - cons0 < n || cons - cons0 > n * PUSH_CELLS_MAX) {
			snprintf(why, sizeof(why), "ep %d: %lu completed over %lu cells", k, (unsigned long) n,
				 (unsigned long) (cons - cons0));
			goto bad;
		}
		memcpy(saved(before, e->ring + RING_CONS), &cons, 8);
		/* Buffers given back: only completed ops' own, each both
		 * ways (holder, busy bit). */
		cleared = busy0 & ~*e->busy;
		if ((*e->busy & ~busy0) || (cleared & ~mine)) {
			snprintf(why, sizeof(why), "ep %d: busy word %#lx became %#lx (completed ops' buffers %#lx)", k,
				 (unsigned long) busy0, (unsigned long) *e->busy, (unsigned long) mine);
			goto bad;
		}
		for (int i = 0; i < 64; i++) {
			int32_t h0 = (int32_t) was(before, &e->holder[i], 4);

			if ((h0 != e->holder[i]) != (int) (cleared >> i & 1) || (h0 != e->holder[i] && e->holder[i] != -1)) {
				snprintf(why, sizeof(why), "ep %d: buffer %d's holder went from %d to %d, busy bit %lu", k,
					 i, h0, e->holder[i], (unsigned long) (cleared >> i & 1));
				goto bad;
			}
		}
		memcpy(saved(before, e->busy), e->busy, 8);
		memcpy(saved(before, e->holder), e->holder, 64 * 4);
		/* (the racer's: the cells and the buffers) */
		memcpy(saved(before, e->ring + RING_HDR), e->ring + RING_HDR, ((size_t) 1 << e->log) * CELL_SIZE);
		memcpy(saved(before, e->pool), e->pool, POOL_BYTES);
	}
	if (ndone != got || *adone != was(before, adone, 8) + want_adone) {
		snprintf(why, sizeof(why), "%zd entries, %d ops completed, %lu of them for Go to reap, its count moved %lu",
			 got, ndone, (unsigned long) want_adone, (unsigned long) (*adone - was(before, adone, 8)));
		goto bad;
	}
	memcpy(saved(before, adone), adone, 8);
	/* Each entry an op completed, once, with its flags. */
	for (ssize_t j = 0; j < got; j++) {
		uint64_t ent[6] = { 0 }, n = w->stride < ENTRY ? w->stride : ENTRY;
		int found = 0;

		memcpy(ent, w->out + j * w->stride, n);
		for (int k = 0; k < NEP && !found; k++)
			for (int i = 0; i < AO_CAP && !found; i++) {
				const struct op *o = &w->ep[k].op[i];
				uint64_t flags = (o->rma ? FI_RMA : FI_ATOMIC) | (o->len ? FI_READ : FI_WRITE);

				if (done[k][i] && !seen[k][i] && ent[0] == o->ctx && (n < 16 || ent[1] == flags) &&
				    !ent[2] && !ent[3] && !ent[4] && !ent[5])
					found = seen[k][i] = 1;
			}
		if (!found) {
			snprintf(why, sizeof(why), "entry %zd (context %#lx, flags %#lx) is no completed op's", j,
				 (unsigned long) ent[0], (unsigned long) ent[1]);
			goto bad;
		}
	}
	if (got)
		memcpy(saved(before, w->out), w->out, (size_t) got * w->stride);
	for (int i = 0; i < nareas; i++)
		if (memcmp(areas[i].p, before + areas[i].off, areas[i].n)) {
			size_t o = 0;

			while (((unsigned char *) areas[i].p)[o] == before[areas[i].off + o])
				o++;
			snprintf(why, sizeof(why), "%s changed at byte %zu", areas[i].name, o);
			goto bad;
		}
	return 0;
bad:
	if ((*nprint)-- > 0)
		printf("racing round %ld: %s\n", round, why);
	*(uint32_t *) (SLOT(w->dom, 0) + LSLOT_LOCK) = 0;
	return 1;
}

int main(void)
{
	static struct world w;
	long iters = ct_under_valgrind() ? 3000 : 30000, races, bad = 0, rbad = 0, entries = 0;
	long prev;
	unsigned char *before, *after;
	int nprint = 10;
	pthread_t th;

	if (getenv("FASTFUZZ_ITERS"))
		iters = atol(getenv("FASTFUZZ_ITERS"));
	races = ct_under_valgrind() ? 0 : iters / 8;
	/* (a lock the call never lets go of hangs the next take of it) */
	alarm((unsigned) (60 + iters / (ct_under_valgrind() ? 20 : 1000)));
	setvbuf(stdout, NULL, _IOLBF, 0);	/* (what it found, before a fault kills it) */
	if (fuzz_catch_faults("answerfuzz"))
		return 2;
	w.dom = guarded(4096);
	w.cq = guarded(4096);
	w.outbuf = guarded(NOUT * ENTRY);
	w.bad = fenced(0, 4096);	/* (nothing there: a result buffer the application got wrong) */
	memset(w.dom, 0, 4096);
	memset(w.cq, 0, 4096);
	w.cq[CQF_DOMAIN] = (uint64_t) (uintptr_t) w.dom;
	for (int k = 0; k < NEP; k++) {
		struct ep *e = &w.ep[k];

		e->f = guarded(4096);
		memset(e->f, 0, 4096);
		e->f[EPF_DOMAIN] = (uint64_t) (uintptr_t) w.dom;
		e->peers = guarded(NSLOT * 8);
		e->f[EPF_PEERS] = (uint64_t) (uintptr_t) e->peers;
		e->desc = guarded(NDESC * FP_SIZE);
		e->busy = guarded(8);
		e->holder = guarded(64 * 4);
		e->log = ring_log[k];
		e->ring = guarded(RING_HDR + ((size_t) 1 << e->log) * CELL_SIZE);
		memset(e->ring, 0, RING_HDR + ((size_t) 1 << e->log) * CELL_SIZE);
		e->pool = fenced(POOL_BYTES, 1);
		memset(e->pool, 0, POOL_BYTES);
		for (int i = 0; i < AO_CAP; i++) {
			e->area[i] = guarded(RES_BYTES);
			fill_rnd(e->area[i], RES_BYTES);
		}
	}

	area("domain page", w.dom, 4096, 0);
	area("CQ page", w.cq, 4096, 0);
	area("output buffer", w.outbuf, NOUT * ENTRY, 0);
	for (int k = 0; k < NEP; k++) {
		static const char *const names[NEP][8] = {
			{ "endpoint page 0", "peer table 0", "descriptors 0", "busy word 0", "holder table 0",
			  "ring 0 (128 cells)", "bounce buffers 0", "result buffers 0" },
			{ "endpoint page 1", "peer table 1", "descriptors 1", "busy word 1", "holder table 1",
			  "ring 1 (32 cells)", "bounce buffers 1", "result buffers 1" },
		};
		struct ep *e = &w.ep[k];

		area(names[k][0], e->f, 4096, 0);
		area(names[k][1], e->peers, NSLOT * 8, 0);
		area(names[k][2], e->desc, NDESC * FP_SIZE, 0);
		area(names[k][3], e->busy, 8, 0);
		area(names[k][4], e->holder, 64 * 4, 0);
		area(names[k][5], e->ring, RING_HDR + ((size_t) 1 << e->log) * CELL_SIZE, 0);
		area(names[k][6], e->pool, POOL_BYTES, 0);
		for (int i = 0; i < AO_CAP; i++)
			area(names[k][7], e->area[i], RES_BYTES, 0);
	}
	before = malloc(area_bytes);
	after = malloc(area_bytes);
	if (!before || !after)
		return 2;

	for (long round = 0; round < iters; round++) {
		prev = st.inl + st.inbuf + st.ack;
		fuzz_round = round;
		round_setup(&w);
		if (check_round(&w, round, before, after, &nprint))
			bad++;
		entries += st.inl + st.inbuf + st.ack - prev;
	}
	CHECK(bad == 0, "%ld rounds of hostile answers: %ld differ from the model", iters, bad);
	CHECK(iters < 1000 || (st.inl && st.inbuf && st.ack && st.rma && st.fault && st.full && st.idxgo),
	      "every kind of completion made and refused (inline %ld, in a buffer %ld, acks %ld, RMA %ld; faults %ld, "
	      "count reached %ld, own buffer refused %ld)",
	      st.inl, st.inbuf, st.ack, st.rma, st.fault, st.full, st.idxgo);
	printf("%ld rounds, %ld answers completed: %ld inline, %ld in our buffer, %ld acks (%ld RMA); "
	       "%ld left for a faulting result buffer, %ld for one of our buffers not held for the op's peer\n",
	       iters, entries, st.inl, st.inbuf, st.ack, st.rma, st.fault, st.idxgo);

	/* The same worlds, while a target writes. */
	race_w = &w;
	if (races && pthread_create(&th, NULL, racer, NULL)) {
		perror("pthread_create");
		return 2;
	}
	if (races)
		race_cpus(th);
	entries = 0;
	for (long round = 0; round < races; round++) {
		fuzz_round = iters + round;
		round_setup(&w);
		if (check_race(&w, round, before, &nprint))
			rbad++;
		for (int k = 0; k < NEP; k++)
			for (int i = 0; i < AO_CAP; i++)
				entries += w.ep[k].f[EPF_AOPS + i * AO_WORDS + AO_STATE] != w.ep[k].op[i].state;
	}
	__atomic_store_n(&race_quit, 1, __ATOMIC_SEQ_CST);
	if (races)
		pthread_join(th, NULL);
	CHECK(rbad == 0, "%ld racing rounds: %ld broke what no timing may change", races, rbad);
	printf("%ld racing rounds, %ld answers completed, %ld writes by the racer, %ld calls written under\n", races,
	       entries, race_writes, raced);
	free(before);
	free(after);
	return finish("answerfuzz");
}
