/* servefuzz.c: the target's serve path against hostile requests.
 *
 * A peer process places small atomic, RMA write and RMA read requests in
 * our ring, inline or in one of its bounce buffers, and C serves them
 * inside fi_cq_read (cmd/libfabric-psm2/fast/serve.c: psm2_fast_serve).
 * The peer can write anything into that ring and into its buffers. This
 * drives the library's own serve code (the fast path's .c files built
 * into this program) with a fake domain page (its MR table: 1-3 regions
 * the test registered, some read-only or write-only, among hostile
 * entries: empty, wrong key, no access, a length past the end of memory),
 * two endpoint pages, a sender's descriptor, its answer ring and its
 * bounce buffers. Each round fills the request rings with requests built
 * as an initiator builds them, aimed near the ends of the regions, then
 * mutated (key, address, length, header flags, op, datatype, cell kind
 * and flags, sender, buffer index, sequence words, ring counters), and
 * with random cells.
 *
 * Every ring, buffer and region ends at a guard page; the regions and
 * the bounce buffers also start at one, and a wide inaccessible span
 * follows the buffers, so a plain access out of bounds kills the test.
 * The copies C guards against faults (psm2_ucopy) survive a guard page,
 * so the check is a model that knows only what the test registered, not
 * the table C reads: it serves the requests at the head of each ring in
 * order while each is well formed, from the known sender, inside a
 * registered region that grants its access, and its answer fits in the
 * answer ring, applies each to shadow memory and builds its answer. After
 * each call everything the call may touch must be as the model left it:
 * the regions and the memory around them, the request rings (their
 * consumer counters moved by the cells of the requests served, which the
 * call returns), the answer ring (only the cells of the answers, inside
 * its capacity), the bounce buffers and their busy word, the doorbell,
 * the endpoint and domain pages (lock words released).
 *
 * FASTFUZZ_ITERS sets the number of rounds (default 50000, about a
 * second; 5000 under valgrind, about ten). */
#include <signal.h>
#include <stdarg.h>
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
#include "../cmd/libfabric-psm2/fast/match.h"

#define RLOG 7
#define RCELLS (1 << RLOG)
#define RBYTES(log) (RING_HDR + ((size_t) 1 << (log)) * CELL_SIZE)
#define NANS 2
#define POOL_BYTES (4 * 8192)
#define POOL_TAIL ((size_t) 16 << 20)
#define NMEM 3
#define MEM_RO 2		/* mapped read-only: an MR over it may grant write all the same */
#define MAXMR 3
#define MAXREQ 6
#define REQ_MAX (ATOMIC_MAX + 8192)
#define CPU_MARK (~(uint64_t) 0)

static const int ans_log[NANS] = { 4, 7 };
static const size_t mem_bytes[NMEM] = { 320, 3 * 4096, 4096 };
static const uint64_t dt_size[] = ATOMIC_DT_SIZES;

/* An MR the test registered: its key, the region's address and length,
 * the RMA address of its first byte and the access it grants. */
struct mr {
	uint64_t key, base, len, rs, access;
	int mem;
};

struct world {
	uint64_t *dom, *cq, *ep[2], *sd, *decoy, *slotw, *busy;
	uint32_t *alock, *bwait, *bseq;
	char *ring[2], *ans[NANS];
	unsigned char *pool, *mem[NMEM];
	struct mr mr[MAXMR];
	int nmr, ans_i, nhostile;
	uint64_t hostile[DOMF_MR_CAP];	/* keys of hostile entries */
	uint64_t peer, alias, stranger, self;
};

/* --- the model ------------------------------------------------------------ */

static struct {
	long write, read, atomic, fetch, inbuf, efault, eager, full;
} st;

/* The library's builder and shm's format disagree on an answer's cells. */
static int model_wrong;

struct msg {
	uint32_t hflags;
	uint64_t len, epid, tag;
};

static int sender_ok(const struct world *w, uint64_t epid)
{
	return epid == w->peer && w->sd[FP_OK];
}

/* model_mr returns the address of n bytes at RMA address addr of the MR
 * the test registered with key, if it grants access: the request's RMA
 * range must lie in the MR's, [rs, rs + len). */
static uint64_t model_mr(const struct world *w, uint64_t key, uint64_t addr, uint64_t n, uint64_t access, int *ro)
{
	for (int i = 0; i < w->nmr; i++) {
		const struct mr *m = &w->mr[i];
		uint64_t off = addr - m->rs;

		if (m->key != key)
			continue;
		if ((m->access & access) != access || off > m->len || n > m->len - off)
			return 0;
		*ro = m->mem == MEM_RO;
		return m->base + off;
	}
	return 0;
}

/* inline_cells is the cells of an inline message of len bytes without
 * the data word (shm/cell.go: a head of INLINE_HEAD bytes, then
 * continuations of CONT_PAYLOAD). */
static uint64_t inline_cells(uint64_t len)
{
	return len <= INLINE_HEAD ? 1 : 1 + (len - INLINE_HEAD + CONT_PAYLOAD - 1) / CONT_PAYLOAD;
}

static char *cell_at(char *r, uint64_t mask, uint64_t pos)
{
	return r + RING_HDR + (pos & mask) * CELL_SIZE;
}

/* model_reserve reserves k cells of the answer ring as a producer does
 * (internal/ring/slots.go): room by the producers' copy of the consumer
 * counter, else by the counter itself. */
static int model_reserve(struct world *w, uint64_t k, uint64_t *at)
{
	char *r = w->ans[w->ans_i];
	uint64_t *h = (uint64_t *) r, size = (uint64_t) 1 << ans_log[w->ans_i], pos = h[RING_PROD / 8];

	if (pos + k - h[RING_SEEN / 8] > size) {
		if (pos + k - h[RING_CONS / 8] > size)
			return -1;
		h[RING_SEEN / 8] = h[RING_CONS / 8];
	}
	w->slotw[SLOT_N] = k;
	w->slotw[SLOT_POS] = pos;
	h[RING_PROD / 8] = pos + k;
	h[RING_PROD_CPU / 8] = CPU_MARK;
	*at = pos;
	return 0;
}

static void model_commit(struct world *w, uint64_t pos, const uint64_t cells[][CELL_PAYLOAD / 8], uint64_t k)
{
	uint64_t mask = ((uint64_t) 1 << ans_log[w->ans_i]) - 1;

	for (uint64_t i = 0; i < k; i++) {
		char *c = cell_at(w->ans[w->ans_i], mask, pos + i);

		memcpy(c + CELL_PAYLOAD_OFF, cells[i], CELL_PAYLOAD);
		*(uint64_t *) (c + CELL_SEQ) = pos + i + 1;
	}
}

static void model_bell(struct world *w)
{
	if (*w->bwait)
		++*w->bseq;
}

/* model_answer pushes the inline answer a with bytes b (k cells): 0 if the
 * ring has no room. */
static int model_answer(struct world *w, const struct psm2_inline *a, const void *b, uint64_t k)
{
	uint64_t cells[PUSH_CELLS_MAX][CELL_PAYLOAD / 8], pos;

	if ((uint64_t) psm2_inline_build(cells, a, b, PUSH_CELLS_MAX) != k)
		model_wrong = 1;
	if (model_reserve(w, k, &pos))
		return 0;
	model_commit(w, pos, (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, k);
	return 1;
}

/* model_apply applies op to the count elements of datatype dt at dst
 * (provider/atomicop: element by element, sums and products wrapping),
 * the old values to old. */
static void model_apply(int op, int dt, unsigned char *dst, const unsigned char *src, const unsigned char *cmp,
			unsigned char *old, uint64_t count)
{
	uint64_t sz = dt_size[dt];
	int sgn = dt % 2 == 0;	/* FI_INT8, FI_INT16, ...: signed */

	for (uint64_t i = 0; i < count; i++) {
		uint64_t x = 0, y = 0, c = 0, r;
		int64_t sx, sy, sc;
		int sh = (int) (64 - 8 * sz);

		memcpy(&x, dst + i * sz, sz);
		memcpy(old + i * sz, dst + i * sz, sz);
		if (op == FI_ATOMIC_READ)
			continue;
		memcpy(&y, src + i * sz, sz);
		if (cmp)
			memcpy(&c, cmp + i * sz, sz);
		/* (compares in the datatype's own sign) */
		sx = sgn ? (int64_t) (x << sh) >> sh : (int64_t) (x ^ (1ull << 63));
		sy = sgn ? (int64_t) (y << sh) >> sh : (int64_t) (y ^ (1ull << 63));
		sc = sgn ? (int64_t) (c << sh) >> sh : (int64_t) (c ^ (1ull << 63));
		switch (op) {
		case FI_MIN: r = sy < sx ? y : x; break;
		case FI_MAX: r = sy > sx ? y : x; break;
		case FI_SUM: r = x + y; break;
		case FI_PROD: r = x * y; break;
		case FI_LOR: r = x || y; break;
		case FI_LAND: r = x && y; break;
		case FI_BOR: r = x | y; break;
		case FI_BAND: r = x & y; break;
		case FI_LXOR: r = !x != !y; break;
		case FI_BXOR: r = x ^ y; break;
		case FI_ATOMIC_WRITE: r = y; break;
		case FI_CSWAP: r = sc == sx ? y : x; break;
		case FI_CSWAP_NE: r = sc != sx ? y : x; break;
		case FI_CSWAP_LE: r = sc <= sx ? y : x; break;
		case FI_CSWAP_LT: r = sc < sx ? y : x; break;
		case FI_CSWAP_GE: r = sc >= sx ? y : x; break;
		case FI_CSWAP_GT: r = sc > sx ? y : x; break;
		default: r = (y & c) | (x & ~c); break;	/* FI_MSWAP */
		}
		memcpy(dst + i * sz, &r, sz);
	}
}

/* model_done: a request served from bounce buffer idx gives the buffer
 * back; then the doorbell. */
static void model_done(struct world *w, int idx)
{
	if (idx >= 0)
		*w->busy &= ~((uint64_t) 1 << idx);
	model_bell(w);
}

/* model_serve serves request m with bytes req (in bounce buffer idx, or
 * -1: inline) as Go's rmaServe or atomicServe does when it succeeds, or
 * returns 0: Go's to serve, and nothing changed (but a write's bytes,
 * when the answer ring is full). */
static int model_serve(struct world *w, const struct msg *m, unsigned char *req, int idx)
{
	uint32_t kind = (m->hflags >> RMA_KIND_SHIFT) & 0xff;
	int op = (int) ((m->hflags >> ATOMIC_OP_SHIFT) & 0xff), dt = (int) (m->hflags >> ATOMIC_DT_SHIFT), ro = 0;
	uint64_t key, addr, n, va, body, want, access, k, pos;
	uint64_t cells[PUSH_CELLS_MAX][CELL_PAYLOAD / 8];
	unsigned char old[ATOMIC_MAX];
	struct psm2_inline a = { .epid = w->self, .tag = m->tag };

	if (m->len < RMA_PREFIX)
		return 0;
	memcpy(&key, req, 8);
	memcpy(&addr, req + 8, 8);
	memcpy(&n, req + 16, 8);
	note("  kind %u op %d dt %d key %#lx addr %#lx n %lu len %lu idx %d", kind, op, dt, (unsigned long) key,
	     (unsigned long) addr, (unsigned long) n, (unsigned long) m->len, idx);
	if (kind == RMA_WRITE || kind == RMA_READ) {
		if (m->hflags != (HF_RMA | kind << RMA_KIND_SHIFT) || !n ||
		    (kind == RMA_READ ? n > ATOMIC_MAX || m->len != RMA_PREFIX : m->len - RMA_PREFIX != n))
			return 0;
		va = model_mr(w, key, addr, n, kind == RMA_WRITE ? FI_REMOTE_WRITE : FI_REMOTE_READ, &ro);
		if (!va || !sender_ok(w, m->epid))
			return 0;
		if (kind == RMA_WRITE) {
			if (ro)
				return 0;	/* its first store faults: Go answers */
			memcpy((void *) (uintptr_t) va, req + RMA_PREFIX, n);
		}
		a.len = kind == RMA_READ ? n : 0;
		a.hflags = HF_RMA | (uint32_t) (kind == RMA_WRITE ? RMA_ACK : RMA_READ_RESP) << RMA_KIND_SHIFT;
		if (!model_answer(w, &a, (const void *) (uintptr_t) va, inline_cells(a.len))) {
			st.full++;
			note("  answer ring full");
			return 0;
		}
		model_done(w, idx);
		if (kind == RMA_WRITE)
			st.write++;
		else
			st.read++;
		return 1;
	}
	/* Integer atomics, the ops Go's initiator pairs with each kind. */
	if ((m->hflags & 0xff) != HF_RMA || m->len > ATOMIC_MAX || dt > FI_UINT64)
		return 0;
	if (kind == RMA_ATOMIC_COMPARE ? op < FI_CSWAP || op > FI_MSWAP :
	    kind == RMA_ATOMIC_FETCH ? op > FI_ATOMIC_WRITE :
	    kind == RMA_ATOMIC ? op > FI_ATOMIC_WRITE || op == FI_ATOMIC_READ : 1)
		return 0;
	body = m->len - RMA_PREFIX;
	if (!n || n % dt_size[dt] || n > ATOMIC_MAX)
		return 0;
	want = op == FI_ATOMIC_READ ? 0 : kind == RMA_ATOMIC_COMPARE ? 2 * n : n;
	if (body != want)
		return 0;
	access = op == FI_ATOMIC_READ ? FI_REMOTE_READ :
		 kind == RMA_ATOMIC ? FI_REMOTE_WRITE : FI_REMOTE_READ | FI_REMOTE_WRITE;
	if (!(va = model_mr(w, key, addr, n, access, &ro)))
		return 0;
	/* Go applies a misaligned one; the old values go back over the
	 * request only if they fit in its buffer. */
	if (va % dt_size[dt]) {
		note("  misaligned: Go's");
		return 0;
	}
	if (idx >= 0 && kind != RMA_ATOMIC && n > w->sd[FP_PEER_BUF_SIZE]) {
		note("  old values longer than the buffer: Go's");
		return 0;
	}
	if (!sender_ok(w, m->epid))
		return 0;
	a.len = kind != RMA_ATOMIC ? n : 0;
	a.hflags = HF_RMA | (uint32_t) (kind == RMA_ATOMIC ? RMA_ACK : RMA_ATOMIC_RESP) << RMA_KIND_SHIFT;
	k = idx >= 0 ? 1 : inline_cells(a.len);
	if (model_reserve(w, k, &pos)) {
		st.full++;
		note("  answer ring full");
		return 0;
	}
	if (ro && op != FI_ATOMIC_READ) {
		/* The first store faults: the error, in the cells reserved. */
		a.data = FI_EFAULT;
		a.with_data = 1;
		a.len = psm2_pad_len(k);
		memset(old, 0, a.len);
		st.efault++;
	} else {
		model_apply(op, dt, (unsigned char *) (uintptr_t) va, req + RMA_PREFIX,
			    kind == RMA_ATOMIC_COMPARE ? req + RMA_PREFIX + n : NULL, old, n / dt_size[dt]);
		if (idx >= 0 && a.len) {
			/* The old values over the request, one cell naming
			 * the buffer, which stays the initiator's. */
			memcpy(req, old, n);
			psm2_eager_build(cells[0], &a, (uint16_t) idx);
			((unsigned char *) cells[0])[CELL_KIND] = CELL_ANSWER_BUF;
			model_commit(w, pos, (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, 1);
			model_bell(w);
			st.inbuf++;
			return 1;
		}
		if (kind == RMA_ATOMIC)
			st.atomic++;
		else
			st.fetch++;
	}
	if ((uint64_t) psm2_inline_build(cells, &a, old, PUSH_CELLS_MAX) != k)
		model_wrong = 1;
	model_commit(w, pos, (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, k);
	model_done(w, idx);
	return 1;
}

/* model_ep serves the requests at the head of endpoint page f's ring. */
static int model_ep(struct world *w, uint64_t *f, int e)
{
	char *r = (char *) (uintptr_t) (f[EPF_RING] & ~(uint64_t) PROBE_LOG2_MASK);
	uint64_t mask = ((uint64_t) 1 << (f[EPF_RING] & PROBE_LOG2_MASK)) - 1;
	int served = 0;

	for (;;) {
		uint64_t *consp = (uint64_t *) (r + RING_CONS), cons = *consp, ncells = 1, data;
		unsigned char *c = (unsigned char *) cell_at(r, mask, cons), *p = c + CELL_PAYLOAD_OFF, *req;
		unsigned char buf[ATOMIC_MAX];
		struct msg m;
		uint16_t sl;
		int idx = -1;

		if (*(uint64_t *) (c + CELL_SEQ) != cons + 1)
			break;
		memcpy(&m.hflags, p + CELL_HFLAGS, 4);
		memcpy(&m.epid, p + CELL_EPID, 8);
		memcpy(&m.tag, p + CELL_TAG, 8);
		memcpy(&sl, p + CELL_SHORT, 2);
		memcpy(&data, p + CELL_DATA, 8);
		note("ep %d cell %lu: kind %u flags %#x hflags %#x epid %#lx", e, (unsigned long) cons, p[CELL_KIND],
		     p[CELL_FLAGS], m.hflags, (unsigned long) m.epid);
		/* An RMA protocol message without message flags or data. */
		if (!(m.hflags & HF_RMA) || (m.hflags & (HF_TAGGED | HF_DATA)))
			break;
		if (p[CELL_KIND] == CELL_INLINE) {
			uint64_t got;

			if (p[CELL_FLAGS])
				break;
			m.len = sl;
			ncells = inline_cells(m.len);
			if (ncells > PUSH_CELLS_MAX)
				break;
			/* The head's bytes end its payload; each continuation's
			 * follow its kind byte. */
			got = m.len < INLINE_HEAD ? m.len : INLINE_HEAD;
			memcpy(buf, p + CELL_PAYLOAD - INLINE_HEAD, got);
			for (uint64_t k = 1; k < ncells; k++) {
				unsigned char *ck = (unsigned char *) cell_at(r, mask, cons + k);
				uint64_t part = m.len - got < CONT_PAYLOAD ? m.len - got : CONT_PAYLOAD;

				if (*(uint64_t *) (ck + CELL_SEQ) != cons + k + 1 ||
				    ck[CELL_PAYLOAD_OFF + CONT_KIND] != CELL_CONT)
					goto out;
				memcpy(buf + got, ck + CELL_PAYLOAD_OFF + CONT_PAYLOAD_OFF, part);
				got += part;
			}
			req = buf;
		} else if (p[CELL_KIND] == CELL_EAGER) {
			const uint64_t *sd = w->sd;

			if ((p[CELL_FLAGS] & ~CELL_HAS_DATA) || ((p[CELL_FLAGS] & CELL_HAS_DATA) && data))
				break;
			memcpy(&m.len, p + CELL_LEN, 8);
			idx = sl;
			if (!sender_ok(w, m.epid) || (uint64_t) idx >= sd[FP_PEER_NBUFS] ||
			    m.len > sd[FP_PEER_BUF_SIZE] || !sd[FP_PEER_BUFS] || !sd[FP_PEER_BUSY])
				break;
			req = (unsigned char *) (uintptr_t) sd[FP_PEER_BUFS] + (uint64_t) idx * sd[FP_PEER_BUF_SIZE];
		} else {
			break;
		}
		if (!model_serve(w, &m, req, idx))
			break;
		note("  served (%lu cells)", (unsigned long) ncells);
		if (idx >= 0)
			st.eager++;
		*consp = cons + ncells;
		served++;
	}
out:
	if (served)
		f[EPF_SERVED] += (uint64_t) served;
	return served;
}

/* model_fast_serve is psm2_fast_serve's contract: nothing while Go has
 * work (the domain busy, receives queued) or no atomic lock; then the
 * endpoints of the CQ's lock slot that allow it, in the domain page's
 * order. */
static int model_fast_serve(struct world *w)
{
	const char *dom = (const char *) w->dom;
	uint64_t *slot = (uint64_t *) (uintptr_t) w->cq[CQF_LOCK], neps = *(const uint64_t *) (dom + DOMF_NEPS);
	int served = 0;

	if (*(const uint64_t *) (dom + DOMF_BUSY) || slot[LSLOT_QUEUED / 8] || !*(const uint64_t *) (dom + DOMF_ALOCK)) {
		note("gate closed");
		return 0;
	}
	for (uint64_t i = 0; i < neps && i < DOMF_MAX_EPS; i++) {
		uint64_t *f = (uint64_t *) (uintptr_t) ((const uint64_t *) (dom + DOMF_EPS))[i];

		if (f && f[EPF_SERVE] && f[EPF_LOCK] == (uint64_t) (uintptr_t) slot)
			served += model_ep(w, f, f == w->ep[0] ? 0 : 1);
	}
	return served;
}

/* --- the hostile round ---------------------------------------------------- */

static uint64_t sender_word(uint64_t epid)
{
	return EPF_SENDERS + ((epid * SENDER_HASH) >> EPF_SENDERS_SHIFT);
}

/* register_mrs writes the MR table: 1-3 regions of the test's mappings
 * (slack around some, the mapping's end, a page boundary inside the
 * large one), read-only, write-only or both, at RMA addresses from 0, the
 * region's own or near the top of the address space (ranges that wrap);
 * the other entries hostile. */
static void register_mrs(struct world *w)
{
	static const uint64_t accs[] = { FI_REMOTE_READ, FI_REMOTE_WRITE, FI_REMOTE_READ | FI_REMOTE_WRITE,
					 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE, FI_REMOTE_WRITE | FI_READ };
	char *tab = (char *) w->dom + DOMF_MRS;
	int used[DOMF_MR_CAP] = { 0 };

	memset(tab, 0, DOMF_MR_CAP * MRF_SIZE);
	w->nmr = 1 + (int) (rnd() % MAXMR);
	for (int i = 0; i < w->nmr; i++) {
		struct mr *m = &w->mr[i];
		uint64_t size, lo, hi;
		char *e;

		do
			m->key = rnd() % 2 ? rnd() % 64 : rnd();
		while (used[m->key % DOMF_MR_CAP]);
		used[m->key % DOMF_MR_CAP] = 1;
		m->mem = (int) (rnd() % NMEM);
		size = mem_bytes[m->mem];
		lo = rnd() % 2 ? 0 : rnd() % 64;
		hi = rnd() % 2 ? size : size - rnd() % 64;
		if (m->mem == 1 && rnd() % 2) {
			/* (the large one: across a page boundary) */
			lo = 4096 - 1 - rnd() % 300;
			hi = 8192 + rnd() % 100;
		}
		m->base = (uint64_t) (uintptr_t) w->mem[m->mem] + lo;
		m->len = hi - lo;
		switch (rnd() % 4) {
		case 0: m->rs = 0; break;
		case 1: m->rs = m->base; break;
		case 2: m->rs = -(m->len / 2) - rnd() % 16; break;	/* wraps */
		default: m->rs = rnd(); break;
		}
		m->access = pick(accs, 5);
		e = tab + (m->key % DOMF_MR_CAP) * MRF_SIZE;
		*(uint64_t *) (e + MRF_KEY) = m->key;
		*(uint64_t *) (e + MRF_BASE) = m->base;
		*(uint64_t *) (e + MRF_LEN) = m->len;
		*(uint64_t *) (e + MRF_OFFSET) = m->base - m->rs;
		*(uint64_t *) (e + MRF_ACCESS) = m->access;
	}
	/* Hostile entries, which grant nothing: no access bits over a real
	 * region, a key of another slot, a length that wraps the address
	 * space; or garbage with no access. */
	w->nhostile = 0;
	for (uint64_t s = 0; s < DOMF_MR_CAP; s++) {
		const struct mr *m = &w->mr[rnd() % (uint64_t) w->nmr];
		char *e = tab + s * MRF_SIZE;
		uint64_t key = s + DOMF_MR_CAP * (rnd() % 8);

		if (used[s] || rnd() % 3 == 0)
			continue;
		*(uint64_t *) (e + MRF_BASE) = m->base;
		*(uint64_t *) (e + MRF_LEN) = m->len;
		*(uint64_t *) (e + MRF_OFFSET) = m->base - m->rs;
		*(uint64_t *) (e + MRF_ACCESS) = FI_REMOTE_READ | FI_REMOTE_WRITE;
		switch (rnd() % 4) {
		case 0:
			*(uint64_t *) (e + MRF_ACCESS) = 0;
			break;
		case 1:
			key += 1 + rnd() % (DOMF_MR_CAP - 1);	/* another slot's */
			break;
		case 2:
			*(uint64_t *) (e + MRF_LEN) = -m->base + rnd() % 64;
			break;
		default:
			*(uint64_t *) (e + MRF_BASE) = rnd();
			*(uint64_t *) (e + MRF_LEN) = rnd();
			*(uint64_t *) (e + MRF_OFFSET) = rnd();
			*(uint64_t *) (e + MRF_ACCESS) = 0;
			break;
		}
		*(uint64_t *) (e + MRF_KEY) = key;
		w->hostile[w->nhostile++] = key;
	}
}

/* gen_req writes into req a request as an initiator builds it (Go's
 * rmaRequest; atomic.c's psm2_fast_atomic, psm2_fast_rma): the RMA prefix
 * (key, address, length) and the operands, aimed at a registered region.
 * A sound one asks for what the region grants, inside it, often at its
 * ends; any other for anything near that (one past the end, before the
 * start, too long, misaligned, anywhere), and half of those with one
 * thing more wrong: the key (another slot's, a hostile entry's), the
 * address, the length, the header flags (kind, op, datatype), the
 * request's own length. Returns its length, its header flags in
 * *hflags. */
static uint64_t gen_req(struct world *w, unsigned char *req, uint32_t *hflags, int sound)
{
	static const uint64_t kinds[] = { RMA_WRITE, RMA_READ, RMA_ATOMIC, RMA_ATOMIC_FETCH, RMA_ATOMIC_COMPARE };
	static const uint64_t ns[] = { 1, 2, 7, 8, 9, 55, 64, 100, 197, 500, 1000, 4096,
				       ATOMIC_MAX - RMA_PREFIX, ATOMIC_MAX, ATOMIC_MAX + 1, 8000 };
	const struct mr *mr = &w->mr[rnd() % (uint64_t) w->nmr];
	uint32_t kind = (uint32_t) pick(kinds, 5);
	uint64_t key = mr->key, n, off, len, sz = 1, body, max;
	int op = 0, dt = 0, rd = (mr->access & FI_REMOTE_READ) != 0, wr = (mr->access & FI_REMOTE_WRITE) != 0;

	if (sound) {
		/* (a kind the region grants) */
		if (!rd)
			kind = rnd() % 2 ? RMA_WRITE : RMA_ATOMIC;
		else if (!wr)
			kind = rnd() % 2 ? RMA_READ : RMA_ATOMIC_FETCH;
	}
	if (kind == RMA_WRITE || kind == RMA_READ) {
		max = kind == RMA_READ ? ATOMIC_MAX : ATOMIC_MAX - RMA_PREFIX;
		if (sound) {
			n = rnd() % 2 ? 64 : max < mr->len ? max : mr->len;
			n = 1 + rnd() % n;
		} else {
			n = rnd() % 2 ? pick(ns, 16) : 1 + rnd() % mr->len;
		}
		body = kind == RMA_WRITE ? n : 0;
	} else {
		dt = (int) (rnd() % 8);
		sz = dt_size[dt];
		op = kind == RMA_ATOMIC_COMPARE ? FI_CSWAP + (int) (rnd() % 7) : FI_MIN + (int) (rnd() % 12);
		if ((kind == RMA_ATOMIC && op == FI_ATOMIC_READ) || (kind == RMA_ATOMIC_FETCH && sound && !wr))
			op = kind == RMA_ATOMIC ? FI_ATOMIC_WRITE : FI_ATOMIC_READ;
		max = (op == FI_ATOMIC_READ ? ATOMIC_MAX : kind == RMA_ATOMIC_COMPARE ? (ATOMIC_MAX - RMA_PREFIX) / 2 :
		       ATOMIC_MAX - RMA_PREFIX) / sz;
		if (sound && max > mr->len / sz)
			max = mr->len / sz;
		switch (rnd() % 8) {
		case 0: n = max; break;
		case 1: n = sound ? max : max + 1; break;
		case 2: n = 1 + rnd() % max; break;
		case 3: n = sound ? 1 : mr->len / sz; break;
		default: n = 1 + rnd() % 4; break;
		}
		n *= sz;
		body = op == FI_ATOMIC_READ ? 0 : kind == RMA_ATOMIC_COMPARE ? 2 * n : n;
	}
	/* Where: inside, at the end; one past it, before the start. */
	switch (rnd() % (sound ? 3 : 8)) {
	case 0: off = mr->len - n; break;
	case 1: off = n <= mr->len ? rnd() % (mr->len - n + 1) : 0; break;
	case 2: off = rnd() % (mr->len + 1); break;
	case 3: off = mr->len - n + 1 + rnd() % 8; break;
	case 4: off = -(uint64_t) (1 + rnd() % 16); break;
	case 5: off = mr->len; break;
	default: off = rnd() % 2 ? rnd() : rnd() % (2 * mr->len); break;
	}
	if (sound && n > mr->len)
		off = 0;
	if (sz > 1 && (sound || rnd() % 8)) {
		/* (atomics aligned in memory) */
		uint64_t va = (mr->base + off) & ~(sz - 1);

		off = va - mr->base + (va < mr->base ? sz : 0);
	}
	if (RMA_PREFIX + body > REQ_MAX)
		body = REQ_MAX - RMA_PREFIX;
	len = RMA_PREFIX + body;
	/* Operands from a few values, so that compares and limits hit. */
	for (uint64_t i = 0; i < body; i += 8) {
		uint64_t v = rnd() % 4 ? rnd() % 4 - 1 : rnd();

		memcpy(req + RMA_PREFIX + i, &v, body - i < 8 ? body - i : 8);
	}
	if (kind == RMA_ATOMIC_COMPARE && off <= mr->len && n <= mr->len - off && RMA_PREFIX + 2 * n <= REQ_MAX &&
	    rnd() % 2)
		memcpy(req + RMA_PREFIX + n, (const void *) (uintptr_t) (mr->base + off), n);	/* compares that hit */
	*hflags = HF_RMA | kind << RMA_KIND_SHIFT | (uint32_t) op << ATOMIC_OP_SHIFT | (uint32_t) dt << ATOMIC_DT_SHIFT;
	if (!sound && rnd() % 2) {
		switch (rnd() % 9) {
		case 0: key = rnd() % 2 ? rnd() : key ^ DOMF_MR_CAP; break;
		case 1: key = w->nhostile ? w->hostile[rnd() % (uint64_t) w->nhostile] : key; break;
		case 2: off = rnd() % 2 ? rnd() : off + (rnd() % 2 ? 1 : -1); break;
		case 3: n = rnd() % 2 ? rnd() : rnd() % 2 ? n + 1 : n - 1; break;
		case 4: *hflags ^= (uint32_t) 1 << (rnd() % 32); break;
		case 5:
			*hflags = (*hflags & 0xffff) | (uint32_t) (rnd() % 32) << ATOMIC_OP_SHIFT;
			*hflags |= (uint32_t) (rnd() % 12) << ATOMIC_DT_SHIFT;
			break;
		case 6: *hflags = (*hflags & ~0xff00u) | (uint32_t) (rnd() % 12) << RMA_KIND_SHIFT; break;
		case 7: *hflags = (uint32_t) rnd(); break;
		default: {
			uint64_t more = 1 + rnd() % 16;

			if (rnd() % 2 && len - more >= RMA_PREFIX)
				len -= more;
			else if (len + more <= REQ_MAX)
				len += more;
			break;
		}
		}
	}
	memcpy(req, &key, 8);
	off += mr->rs;
	memcpy(req + 8, &off, 8);
	memcpy(req + 16, &n, 8);
	return len;
}

/* gen_unit builds the cells of one request (or, now and then, a random
 * cell) into cells and returns how many: inline, or in a bounce buffer of
 * the peer's, named by one eager cell. Three in four are sound; in the
 * others, besides what gen_req does, the sender, the buffer index, the
 * length and the cells' kinds and flags may be wrong. */
static uint64_t gen_unit(struct world *w, uint64_t cells[][CELL_PAYLOAD / 8])
{
	static unsigned char req[REQ_MAX];
	const uint64_t *sd = w->sd;
	const uint64_t epids[] = { w->alias, w->stranger, rnd() };
	int sound = rnd() % 4 != 0;
	struct psm2_inline m = { .epid = sound || rnd() % 2 ? w->peer : pick(epids, 3) };
	unsigned char *h = (unsigned char *) cells[0];
	uint64_t len, k = 1, nb = sd[FP_PEER_NBUFS], bs = sd[FP_PEER_BUF_SIZE];
	char *bufs = (char *) (uintptr_t) sd[FP_PEER_BUFS];

	m.tag = rnd();
	if (rnd() % 16 == 0) {
		/* A random cell, as often plausible as not. */
		for (int i = 0; i < CELL_PAYLOAD / 8; i++)
			cells[0][i] = rnd();
		h[CELL_KIND] = (unsigned char) (rnd() % 2 ? rnd() % 12 : CELL_INLINE);
		if (rnd() % 2)
			h[CELL_FLAGS] = 0;
		if (rnd() % 2)
			cells[0][CELL_HFLAGS / 8] = (cells[0][CELL_HFLAGS / 8] & 0xffffffffu) | (uint64_t) HF_RMA << 32;
		return 1;
	}
	len = gen_req(w, req, &m.hflags, sound);
	m.len = len;
	/* (in a buffer: the sound ones that fit, others whatever their
	 * length) */
	if (nb && bufs && (((len <= bs || !sound) && rnd() % 2) || len > ATOMIC_MAX)) {
		uint64_t idx = rnd() % nb, span = POOL_TAIL / bs;

		if (!sound) {
			switch (rnd() % 8) {
			case 0: idx = nb + rnd() % 2; break;
			case 1: idx = nb + rnd() % (span < 65536 - nb ? span : 65536 - nb); break;
			case 2: m.len = rnd() % 2 ? bs + 1 + rnd() % 64 : rnd() % 2 ? rnd() % RMA_PREFIX : rnd(); break;
			case 3: m.data = rnd(); break;
			default: break;
			}
		}
		if (idx < nb)
			memcpy(bufs + idx * bs, req, len < bs ? len : bs);
		psm2_eager_build(cells[0], &m, (uint16_t) idx);
	} else {
		int n;

		if (m.len > ATOMIC_MAX)
			m.len = ATOMIC_MAX;
		n = psm2_inline_build(cells, &m, req, PUSH_CELLS_MAX);
		if (n <= 0) {
			fprintf(stderr, "psm2_inline_build of %lu bytes: %d\n", (unsigned long) m.len, n);
			exit(2);
		}
		k = (uint64_t) n;
		if (!sound && k > 1 && rnd() % 8 == 0) {
			unsigned char *ck = (unsigned char *) cells[1 + rnd() % (k - 1)];

			ck[CONT_KIND] = (unsigned char) (rnd() % 12);
		}
		if (!sound && rnd() % 8 == 0) {
			uint16_t sl = (uint16_t) rnd();

			memcpy(h + CELL_SHORT, &sl, 2);
		}
	}
	if (!sound && rnd() % 8 == 0)
		h[CELL_FLAGS] = (unsigned char) rnd();
	if (!sound && rnd() % 16 == 0)
		h[CELL_KIND] = (unsigned char) (rnd() % 12);
	return k;
}

/* unit is gen_unit for fuzz_fill_ring. */
static uint64_t unit(void *w, uint64_t cells[][CELL_PAYLOAD / 8])
{
	return gen_unit(w, cells);
}

/* fill_requests writes a request ring: up to MAXREQ requests, as
 * fuzz_fill_ring leaves a ring. */
static void fill_requests(struct world *w, char *r)
{
	fuzz_fill_ring(r, RCELLS, fuzz_counter(), rnd() % (MAXREQ + 1), unit, w);
}

/* fill_answers writes the answer ring's counters: the initiator consumes
 * it, and writes what it likes there. Mostly consistent, with any amount
 * of room; sometimes a stale or wrong copy of the consumer counter, or
 * nonsense. */
static void fill_answers(struct world *w)
{
	uint64_t *h = (uint64_t *) w->ans[w->ans_i], size = (uint64_t) 1 << ans_log[w->ans_i];
	uint64_t cons = fuzz_counter();

	h[RING_CONS / 8] = cons;
	h[RING_PROD / 8] = cons + (rnd() % 8 == 0 ? size - rnd() % 8 : rnd() % (size / 2 + 1));
	switch (rnd() % 8) {
	case 0: h[RING_SEEN / 8] = cons - rnd() % (2 * size); break;
	case 1: h[RING_SEEN / 8] = rnd(); break;
	case 2: h[RING_PROD / 8] = rnd(); break;
	default: h[RING_SEEN / 8] = cons; break;
	}
}

/* round_setup makes one round's world: the gate words (now and then
 * closed), the MR table, the peer's buffers and descriptor, the second
 * endpoint's part, and all the rings. */
static void round_setup(struct world *w)
{
	static const uint64_t sizes[] = { 64, 128, 256, 4096, 8192 };
	char *dom = (char *) w->dom;
	uint64_t *sd = w->sd, bs = pick(sizes, 5), nb = 1 + rnd() % (POOL_BYTES / bs < 4 ? POOL_BYTES / bs : 4);

	*(uint64_t *) (dom + DOMF_BUSY) = rnd() % 64 == 0;
	*(uint64_t *) (dom + DOMF_SLOTS + LSLOT_QUEUED) = rnd() % 64 == 0;
	*(uint64_t *) (dom + DOMF_ALOCK) = rnd() % 64 ? (uint64_t) (uintptr_t) w->alock : 0;
	*(uint64_t *) (dom + DOMF_EPS + 8) = rnd() % 8 ? (uint64_t) (uintptr_t) w->ep[1] : 0;
	w->ep[0][EPF_SERVE] = rnd() % 32 != 0;
	w->ep[1][EPF_SERVE] = rnd() % 2;
	w->ep[1][EPF_LOCK] = (uint64_t) (uintptr_t) (dom + DOMF_SLOTS + (rnd() % 2 ? 0 : LSLOT_SIZE));
	register_mrs(w);

	sd[FP_OK] = rnd() % 32 != 0;
	sd[FP_FENCE] = rnd() % 2;
	w->ans_i = (int) (rnd() % NANS);
	sd[FP_RING] = (uint64_t) (uintptr_t) w->ans[w->ans_i];
	sd[FP_MASK] = ((uint64_t) 1 << ans_log[w->ans_i]) - 1;
	sd[FP_PEER_BUF_SIZE] = bs;
	sd[FP_PEER_NBUFS] = rnd() % 16 ? nb : 0;
	sd[FP_PEER_BUFS] = rnd() % 16 ? (uint64_t) (uintptr_t) (w->pool + POOL_BYTES - nb * bs) : 0;
	sd[FP_PEER_BUSY] = rnd() % 16 ? (uint64_t) (uintptr_t) w->busy : 0;
	*w->busy = rnd();
	*w->bwait = rnd() % 4 == 0;
	fill_answers(w);
	fill_requests(w, w->ring[0]);
	fill_requests(w, w->ring[1]);
}

/* check_round runs psm2_fast_serve on the round's world, then the model on
 * the same world, and compares. Returns 0 if they agree. */
static int check_round(struct world *w, long round, unsigned char *before, unsigned char *after, int *nprint)
{
	uint64_t *ah = (uint64_t *) w->ans[w->ans_i], size = (uint64_t) 1 << ans_log[w->ans_i], cpu;
	uint64_t served0 = w->ep[0][EPF_SERVED] + w->ep[1][EPF_SERVED];
	uint64_t cons0 = *(uint64_t *) (w->ring[0] + RING_CONS), cons1 = *(uint64_t *) (w->ring[1] + RING_CONS);
	uint64_t prod0 = ah[RING_PROD / 8];
	const unsigned char *a = after, *b = before;
	int got, want, bad = 0;

	save(before);
	got = psm2_fast_serve(w->cq);
	save(after);
	/* What the call says, against itself. */
	if (w->ep[0][EPF_SERVED] + w->ep[1][EPF_SERVED] - served0 != (uint64_t) got ||
	    (*(uint64_t *) (w->ring[0] + RING_CONS) - cons0) + (*(uint64_t *) (w->ring[1] + RING_CONS) - cons1) <
		    (uint64_t) got) {
		bad = 1;
		if (*nprint > 0)
			printf("round %ld: %d served, the pages count %lu, the rings moved %lu and %lu\n", round, got,
			       (unsigned long) (w->ep[0][EPF_SERVED] + w->ep[1][EPF_SERVED] - served0),
			       (unsigned long) (*(uint64_t *) (w->ring[0] + RING_CONS) - cons0),
			       (unsigned long) (*(uint64_t *) (w->ring[1] + RING_CONS) - cons1));
	}
	/* The answer ring, if it grew, within its capacity as its producers
	 * count it. */
	if (ah[RING_PROD / 8] != prod0 && ah[RING_PROD / 8] - ah[RING_SEEN / 8] > size) {
		bad = 1;
		if (*nprint > 0)
			printf("round %ld: the answer ring's producers are %lu cells past their copy of the consumer's\n",
			       round, (unsigned long) (ah[RING_PROD / 8] - ah[RING_SEEN / 8]));
	}
	/* What the model says. */
	put_back(before);
	ntrace = 0;
	want = model_fast_serve(w);
	cpu = ah[RING_PROD_CPU / 8];
	for (int i = 0; i < nareas; a += areas[i].n, b += areas[i].n, i++) {
		unsigned char *p = areas[i].p;

		if (p == (unsigned char *) w->ans[w->ans_i]) {
			/* (the producer's CPU, a hint: any CPU + 1 if it
			 * reserved, else as it was) */
			uint64_t c;

			memcpy(&c, a + RING_PROD_CPU, 8);
			if (cpu == CPU_MARK && c >= 1 && c <= 4096)
				memcpy(p + RING_PROD_CPU, &c, 8);
		}
		if (area_differs(i, round, a, b, nprint))
			bad = 1;
	}
	/* (a lock left held, reported above, would hang the next round) */
	*(uint32_t *) ((char *) w->dom + DOMF_SLOTS + LSLOT_LOCK) = 0;
	*w->alock = 0;
	if (model_wrong) {
		bad = 1;
		model_wrong = 0;
		if (*nprint > 0)
			printf("round %ld: psm2_inline_build's answer cells are not shm's count\n", round);
	}
	if (got != want) {
		bad = 1;
		if (*nprint > 0)
			printf("round %ld: psm2_fast_serve served %d, the model %d\n", round, got, want);
	}
	if (bad && (*nprint)-- > 0)
		for (int i = 0; i < ntrace; i++)
			printf("    %s\n", trace[i]);
	return bad;
}

int main(void)
{
	struct world w;
	long iters = ct_under_valgrind() ? 5000 : 50000, bad = 0, served = 0;
	unsigned char *before, *after, *first;
	int nprint = 10;
	char *dom;

	if (getenv("FASTFUZZ_ITERS"))
		iters = atol(getenv("FASTFUZZ_ITERS"));
	/* (a lock the call never lets go of hangs the next take of it) */
	alarm((unsigned) (60 + iters / (ct_under_valgrind() ? 20 : 1000)));
	setvbuf(stdout, NULL, _IOLBF, 0);	/* (what it found, before a fault kills it) */
	if (fuzz_catch_faults("servefuzz"))
		return 2;
	memset(&w, 0, sizeof(w));
	w.dom = guarded(4096);
	w.cq = guarded(4096);
	w.ep[0] = guarded(4096);
	w.ep[1] = guarded(4096);
	w.sd = guarded(FP_SIZE);
	w.decoy = guarded(FP_SIZE);
	w.slotw = guarded(2 * 8);
	w.busy = guarded(8);
	w.alock = guarded(4);
	w.bwait = guarded(4);
	w.bseq = guarded(4);
	for (int i = 0; i < 2; i++)
		w.ring[i] = guarded(RBYTES(RLOG));
	for (int i = 0; i < NANS; i++)
		w.ans[i] = guarded(RBYTES(ans_log[i]));
	w.pool = fenced(POOL_BYTES, POOL_TAIL);
	for (int i = 0; i < NMEM; i++) {
		w.mem[i] = fenced(mem_bytes[i], 1);
		for (size_t k = 0; k < mem_bytes[i]; k++)
			w.mem[i][k] = (unsigned char) (rnd() % 4 ? rnd() % 3 : rnd());
	}
	if (mprotect(w.mem[MEM_RO], mem_bytes[MEM_RO], PROT_READ)) {
		perror("mprotect");
		return 2;
	}
	memset(w.dom, 0, 4096);
	memset(w.cq, 0, 4096);
	memset(w.sd, 0, FP_SIZE);
	memset(w.decoy, 0, FP_SIZE);
	*w.alock = 0;
	*w.bseq = 0;

	/* The senders: our peer; another epid in its slot of the senders'
	 * table; one in another slot, whose descriptor is not usable. */
	w.self = 0x5e1f00000001ull;
	w.peer = rnd() | 1;
	do
		w.alias = rnd();
	while (w.alias == w.peer || sender_word(w.alias) != sender_word(w.peer));
	do
		w.stranger = rnd();
	while (sender_word(w.stranger) == sender_word(w.peer));
	w.sd[FP_PEER] = w.peer;
	w.sd[FP_EPID] = w.self;
	w.sd[FP_WAIT] = (uint64_t) (uintptr_t) w.bwait;
	w.sd[FP_SEQ] = (uint64_t) (uintptr_t) w.bseq;
	w.sd[FP_SLOT] = (uint64_t) (uintptr_t) w.slotw;
	w.decoy[FP_PEER] = w.stranger;
	w.decoy[FP_EPID] = w.self;

	dom = (char *) w.dom;
	*(uint32_t *) (dom + DOMF_LOCKING) = 1;
	*(uint64_t *) (dom + DOMF_NEPS) = 2;
	*(uint64_t *) (dom + DOMF_EPS) = (uint64_t) (uintptr_t) w.ep[0];
	w.cq[CQF_DOMAIN] = (uint64_t) (uintptr_t) w.dom;
	w.cq[CQF_STRIDE] = 32;
	w.cq[CQF_LOCK] = (uint64_t) (uintptr_t) (dom + DOMF_SLOTS);
	for (int i = 0; i < 2; i++) {
		uint64_t *f = w.ep[i];

		memset(f, 0, 4096);
		f[EPF_DOMAIN] = (uint64_t) (uintptr_t) w.dom;
		f[EPF_LOCK] = w.cq[CQF_LOCK];
		f[EPF_RING] = (uint64_t) (uintptr_t) w.ring[i] | RLOG;
		f[sender_word(w.peer)] = (uint64_t) (uintptr_t) w.sd;
		f[sender_word(w.stranger)] = (uint64_t) (uintptr_t) w.decoy;
	}

	area("domain page", w.dom, 4096, 0);
	area("CQ page", w.cq, 4096, 0);
	area("endpoint page 0", w.ep[0], 4096, 0);
	area("endpoint page 1", w.ep[1], 4096, 0);
	area("sender's descriptor", w.sd, FP_SIZE, 0);
	area("other descriptor", w.decoy, FP_SIZE, 0);
	area("producer slot", w.slotw, 16, 0);
	area("busy word", w.busy, 8, 0);
	area("atomic lock", w.alock, 4, 0);
	area("bell wait word", w.bwait, 4, 0);
	area("bell sequence", w.bseq, 4, 0);
	area("request ring 0", w.ring[0], RBYTES(RLOG), 0);
	area("request ring 1", w.ring[1], RBYTES(RLOG), 0);
	area("answer ring 16", w.ans[0], RBYTES(ans_log[0]), 0);
	area("answer ring 128", w.ans[1], RBYTES(ans_log[1]), 0);
	area("bounce buffers", w.pool, POOL_BYTES, 0);
	/* (the first, 320 bytes, from its page's start: the bytes before it
	 * are there to be written by mistake) */
	first = (unsigned char *) ((uintptr_t) w.mem[0] & ~(uintptr_t) (sysconf(_SC_PAGESIZE) - 1));
	area("region mapping 0 (320 bytes)", first, (size_t) (w.mem[0] + mem_bytes[0] - first), 0);
	area("region mapping 1 (3 pages)", w.mem[1], mem_bytes[1], 0);
	area("region mapping 2 (read-only page)", w.mem[2], mem_bytes[2], 1);
	before = malloc(area_bytes);
	after = malloc(area_bytes);
	if (!before || !after)
		return 2;

	for (long round = 0; round < iters; round++) {
		long was = st.write + st.read + st.atomic + st.fetch + st.inbuf + st.efault;

		fuzz_round = round;
		round_setup(&w);
		if (check_round(&w, round, before, after, &nprint))
			bad++;
		served += st.write + st.read + st.atomic + st.fetch + st.inbuf + st.efault - was;
	}
	CHECK(bad == 0, "%ld rounds of hostile requests: %ld differ from the model", iters, bad);
	CHECK(iters < 1000 || (st.write && st.read && st.atomic && st.fetch && st.inbuf && st.efault && st.eager &&
			       st.full),
	      "every kind of answer served (writes %ld, reads %ld, atomics %ld, fetches %ld, in buffer %ld, errors %ld, "
	      "from buffers %ld, ring full %ld)",
	      st.write, st.read, st.atomic, st.fetch, st.inbuf, st.efault, st.eager, st.full);
	printf("%ld rounds, %ld requests served: %ld writes, %ld reads, %ld atomics, %ld fetches and compares "
	       "(%ld answered in the buffer), %ld faults answered; %ld from bounce buffers, %ld left for a full ring\n",
	       iters, served, st.write, st.read, st.atomic, st.fetch, st.inbuf, st.efault, st.eager, st.full);
	free(before);
	free(after);
	return finish("servefuzz");
}
