/* atomic.c: the atomic fast path at the initiator: fi_atomic, fi_fetch_atomic and fi_compare_atomic pushed in C, and their answers completed inside fi_cq_read. */
#include "atomic.h"
#include "match.h"
#include "page.h"

/* psm2_is_answer says whether header flags hflags are those of an answer
 * C completes: an ack, an atomic's old values or a read's bytes, without
 * an error (that comes as data, which Go reports). */
static inline int psm2_is_answer(uint32_t hflags)
{
	return hflags == (HF_RMA | RMA_ATOMIC_RESP << RMA_KIND_SHIFT) ||
	       hflags == (HF_RMA | RMA_ACK << RMA_KIND_SHIFT) || hflags == (HF_RMA | RMA_READ_RESP << RMA_KIND_SHIFT);
}

/* psm2_answer_waits says whether the head of f's ring looks like the
 * answer of an armed op. */
static inline int psm2_answer_waits(const uint64_t *f)
{
	uint32_t hflags;

	return psm2_head_hflags(f, &hflags) && psm2_is_answer(hflags);
}

/* psm2_answers_ep completes, for endpoint page f, the armed ops whose
 * answers are at the head of its ring (provider/fastrma.go): copies the
 * old values, writes up to count completions of stride bytes at out and
 * marks the entries done for Go to reap. The caller holds f's lock slot
 * sl and has checked that the CQ holds no older entry. Stops at anything
 * else. Returns the entries written. */
static inline ssize_t psm2_answers_ep(uint64_t *f, uint64_t *sl, uint64_t stride, char *out, size_t count)
{
	char *r = psm2_probe_ring(f[EPF_RING]);
	uint64_t mask = psm2_probe_mask(f[EPF_RING]);
	ssize_t got = 0;

	if (!r || !psm2_ucopy_ready())
		return 0;
	while ((size_t) got < count && __atomic_load_n(&f[EPF_ARMED], __ATOMIC_RELAXED)) {
		uint64_t *consp = (uint64_t *) (r + RING_CONS);
		uint64_t cons = __atomic_load_n(consp, __ATOMIC_RELAXED), *a, st;
		const unsigned char *c = (const unsigned char *) psm2_cell(r, mask, cons);
		const unsigned char *cont[PUSH_CELLS_MAX];
		struct fi_cq_tagged_entry e;
		struct psm2_inline m;
		uint16_t idx = 0;
		int cells, inbuf = 0;

		if (__atomic_load_n((const uint64_t *) (c + CELL_SEQ), __ATOMIC_ACQUIRE) != cons + 1)
			break;
		if (!(cells = psm2_rma_head(c + CELL_PAYLOAD_OFF, &m))) {
			if (!psm2_rma_cell_head(c + CELL_PAYLOAD_OFF, CELL_ANSWER_BUF, &m, &idx))
				break;
			cells = inbuf = 1;
		}
		if (!psm2_is_answer(m.hflags))
			break;
		a = f + EPF_AOPS + ((m.tag & 0xffffffffu) % AO_CAP) * AO_WORDS;
		st = __atomic_load_n(&a[AO_STATE], __ATOMIC_RELAXED);
		if ((st != AO_ARMED && st != AO_CPOSTED && st != AO_ADOPTED) || a[AO_ID] != m.tag || a[AO_LEN] != m.len)
			break;
		if (inbuf) {
			/* The old values in our own bounce buffer idx, the one C
			 * put this op's request in (its entry says which; Go
			 * takes any other: shm's onAnswerBuf), still handed to
			 * that peer; then it is ours again. */
			/* (the op's peer's slot in the peer table) */
			uint64_t dw = a[AO_DEST], dest = dw & ((1ull << 48) - 1), *d;
			uint64_t *busy, bit = (uint64_t) 1 << (idx & 63);
			int32_t *holder;

			if ((st != AO_CPOSTED && st != AO_ADOPTED) || ((dw >> 48) & 0xff) != (uint64_t) idx + 1 || idx >= 64 ||
			    !m.len || dest >= f[EPF_NPEERS])
				break;
			d = (uint64_t *) (uintptr_t) __atomic_load_n(&((uint64_t *) (uintptr_t) f[EPF_PEERS])[dest],
								     __ATOMIC_RELAXED);
			if (!d || !d[FP_BUFS] || !d[FP_BUSY] || !d[FP_HOLDER] || m.len > d[FP_BUF_SIZE])
				break;
			busy = (uint64_t *) (uintptr_t) d[FP_BUSY];
			holder = (int32_t *) (uintptr_t) d[FP_HOLDER];
			if (!(__atomic_load_n(busy, __ATOMIC_ACQUIRE) & bit) || holder[idx] != (int32_t) d[FP_IDX])
				break;
			if (psm2_ucopy((void *) (uintptr_t) a[AO_BUF],
			    (const char *) (uintptr_t) d[FP_BUFS] + (uint64_t) idx * d[FP_BUF_SIZE], m.len))
				break;	/* Go reports the fault */
			holder[idx] = -1;
			__atomic_fetch_and(busy, ~bit, __ATOMIC_SEQ_CST);
		} else if (!psm2_conts(r, mask, cons, cells, cont)) {
			break;
		} else if (psm2_inline_copy((void *) (uintptr_t) a[AO_BUF], &m, c + CELL_PAYLOAD_OFF, cont)) {
			break;	/* Go reports the fault */
		}
		e.op_context = (void *) (uintptr_t) a[AO_CTX];
		/* An ack answers an fi_atomic or fi_write (AO_LEN 0), the old
		 * values a fetch or compare, the bytes a read: the flags Go's
		 * rmaMaybeDone gives them. */
		e.flags = (a[AO_DEST] & AO_RMA ? FI_RMA : FI_ATOMIC) | (m.len ? FI_READ : FI_WRITE);
		e.len = 0;
		e.buf = NULL;
		e.data = 0;
		e.tag = 0;
		memcpy(out + got * stride, &e, stride < sizeof(e) ? stride : sizeof(e));
		got++;
		__atomic_store_n(&f[EPF_ARMED], f[EPF_ARMED] - 1, __ATOMIC_RELAXED);
		if (st == AO_CPOSTED) {
			/* Go never knew of it. */
			__atomic_store_n(&a[AO_STATE], AO_FREE, __ATOMIC_RELAXED);
		} else {
			/* Go frees its op (reapLocked). */
			__atomic_store_n(&a[AO_STATE], AO_DONE, __ATOMIC_RELAXED);
			psm2_slot_add(sl, LSLOT_ADONE, 1);
		}
		__atomic_store_n(consp, cons + (uint64_t) cells, __ATOMIC_RELEASE);
	}
	return got;
}

/* psm2_fast_answers is the atomic fast path at the initiator: called by
 * fi_cq_read with the CQ's page, it completes the armed fetches and
 * compares of the domain's endpoints whose transmit CQ this is, when their
 * answers lead their rings and the CQ holds no older entry (Go's ring and
 * C's queue empty). Returns the entries written at buf. */
ssize_t psm2_fast_answers(const uint64_t *cqf, void *buf, size_t count)
{
	uint64_t *dom;
	uint64_t neps, i, stride, *sl;
	int locking;
	ssize_t got = 0;

	if (!cqf)
		return 0;
	dom = (uint64_t *) (uintptr_t) __atomic_load_n(&cqf[CQF_DOMAIN], __ATOMIC_ACQUIRE);
	if (!dom)
		return 0;
	neps = __atomic_load_n(&dom[DOMF_NEPS / 8], __ATOMIC_ACQUIRE);
	for (i = 0; i < neps && i < DOMF_MAX_EPS; i++) {
		uint64_t *f = (uint64_t *) (uintptr_t) __atomic_load_n(&dom[DOMF_EPS / 8 + i], __ATOMIC_ACQUIRE);

		if (f && __atomic_load_n(&f[EPF_ARMED], __ATOMIC_RELAXED) && f[EPF_TX_CQ] == (uint64_t) (uintptr_t) cqf &&
		    psm2_answer_waits(f))
			break;
	}
	if (i == neps || i == DOMF_MAX_EPS)
		return 0;
	if (!psm2_cq_lock_empty(cqf, dom, &sl, &locking))
		goto out;
	stride = cqf[CQF_STRIDE];
	neps = __atomic_load_n(&dom[DOMF_NEPS / 8], __ATOMIC_RELAXED);
	for (i = 0; i < neps && i < DOMF_MAX_EPS && (size_t) got < count; i++) {
		uint64_t *f = (uint64_t *) (uintptr_t) __atomic_load_n(&dom[DOMF_EPS / 8 + i], __ATOMIC_ACQUIRE);

		if (f && f[EPF_TX_CQ] == (uint64_t) (uintptr_t) cqf && f[EPF_LOCK] == cqf[CQF_LOCK])
			got += psm2_answers_ep(f, sl, stride, (char *) buf + got * stride, count - got);
	}
out:
	psm2_slot_unlock(sl, locking);
	return got;
}

/* psm2_fast_post posts, in C, the request of m.len bytes at req with
 * header flags m.hflags of an op whose answer C completes (an atomic,
 * psm2_fast_atomic, or an RMA read or write, psm2_fast_rma) to connected
 * shm peer dest (an fi_addr: its descriptor is at psm2_peer_slot) of endpoint page f, when the endpoint allows it and the
 * domain has no work of Go's queued (so it overtakes nothing): it pushes
 * the request (inline, or past a few cells in a bounce buffer of ours, as
 * an eager message) and arms an entry as C-posted with a tag of its own,
 * where the answer's len bytes go to res (ack: 0), with the peer's slot
 * (not dest, an fi_rx_addr's context index in whose top rx_ctx_bits bits
 * would run into the buffer's index and the class) and the entry's class
 * (AO_RMA or 0). With stat (an EPF_ index, else 0) it adds 1 to that
 * count and bytes to the word three after it, for Go's statistics. Returns
 * PSM2_FAST_DONE or PSM2_FAST_GO (nothing done). */
static int psm2_fast_post(uint64_t *f, const unsigned char *req, struct psm2_inline *m, void *res, uint64_t len,
			  uint64_t class, int stat, uint64_t bytes, fi_addr_t dest, void *context)
{
	uint64_t cells[PUSH_CELLS_MAX][CELL_PAYLOAD / 8];
	uint64_t *d, *a = NULL, *dom, seq, low, tag, *sl, slot = psm2_peer_slot(f, dest);
	int locking, ret = PSM2_FAST_GO, cells_n, i, bidx;

	if (slot >= f[EPF_NPEERS])
		return PSM2_FAST_GO;
	m->data = 0;
	m->with_data = 0;
	dom = (uint64_t *) (uintptr_t) f[EPF_DOMAIN];
	sl = psm2_slot_lock(&f[EPF_LOCK], dom, &locking);
	/* Nothing of Go's may be overtaken, and the flags may have changed. */
	if (!sl || !__atomic_load_n(&f[EPF_APOST], __ATOMIC_RELAXED) || __atomic_load_n(&dom[DOMF_BUSY / 8], __ATOMIC_ACQUIRE))
		goto out;
	d = (uint64_t *) (uintptr_t) __atomic_load_n(&((uint64_t *) (uintptr_t) f[EPF_PEERS])[slot], __ATOMIC_RELAXED);
	if (!d || !__atomic_load_n(&d[FP_OK], __ATOMIC_RELAXED) || !d[FP_SLOT] ||
	    __atomic_load_n((uint64_t *) (uintptr_t) d[FP_STATE], __ATOMIC_ACQUIRE) != 0)
		goto out;
	/* A free entry, and a tag that names it. */
	seq = f[EPF_CSEQ];
	for (i = 0; i < AO_CAP; i++) {
		uint64_t *e = f + EPF_AOPS + ((seq + i) % AO_CAP) * AO_WORDS;

		if (__atomic_load_n(&e[AO_STATE], __ATOMIC_RELAXED) == AO_FREE) {
			a = e;
			break;
		}
	}
	if (!a)
		goto out;
	/* The tag's low half: k * AO_CAP + the entry, below 2^32. */
	seq %= 0xffffffffu / AO_CAP;
	low = seq * AO_CAP + (uint64_t) ((a - (f + EPF_AOPS)) / AO_WORDS);
	tag = (uint64_t) C_TAG_GEN << 32 | low;
	m->epid = d[FP_EPID];
	m->tag = tag;
	bidx = -1;
	if (!psm2_inline_cells(m, FAST_INLINE_CELLS) && d[FP_BUFS] && d[FP_BUSY] && m->len <= d[FP_EAGER_MAX]) {
		/* Past a few cells, in a bounce buffer of ours, as an eager
		 * message: the target writes an atomic's old values back into
		 * it (psm2_serve_one), so the bytes cross between the cores
		 * once each way, not twice, and no cell per 55 bytes. */
		uint64_t *busy = (uint64_t *) (uintptr_t) d[FP_BUSY];
		uint64_t free = ~__atomic_load_n(busy, __ATOMIC_ACQUIRE) & d[FP_ALL_BUFS], bit;

		if (free) {
			bidx = __builtin_ctzll(free);
			bit = (uint64_t) 1 << bidx;
			__atomic_fetch_or(busy, bit, __ATOMIC_SEQ_CST);
			memcpy((char *) (uintptr_t) d[FP_BUFS] + (uint64_t) bidx * d[FP_BUF_SIZE], req, m->len);
			psm2_eager_build(cells[0], m, (uint16_t) bidx);
			if (psm2_push((char *) (uintptr_t) d[FP_RING], d[FP_MASK], (uint64_t *) (uintptr_t) d[FP_SLOT],
			   (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, 1)) {
				__atomic_fetch_and(busy, ~bit, __ATOMIC_SEQ_CST);
				goto out;	/* full: Go queues or refuses it */
			}
			((int32_t *) (uintptr_t) d[FP_HOLDER])[bidx] = (int32_t) d[FP_IDX];
			d[FP_EAGER_SENT]++;
			d[FP_EAGER_BYTES] += m->len;
		}
	}
	if (bidx < 0) {
		if ((cells_n = psm2_inline_build(cells, m, req, PUSH_CELLS_MAX)) <= 0)
			goto out;
		if (psm2_push((char *) (uintptr_t) d[FP_RING], d[FP_MASK], (uint64_t *) (uintptr_t) d[FP_SLOT],
			      (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, (uint64_t) cells_n))
			goto out;	/* full: Go queues or refuses it */
	}
	a[AO_ID] = tag;
	a[AO_BUF] = (uint64_t) (uintptr_t) res;
	a[AO_LEN] = len;
	a[AO_CTX] = (uint64_t) (uintptr_t) context;
	a[AO_DEST] = slot | (uint64_t) (bidx + 1) << 48 | class;
	__atomic_store_n(&a[AO_STATE], AO_CPOSTED, __ATOMIC_RELEASE);
	__atomic_store_n(&f[EPF_ARMED], f[EPF_ARMED] + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&f[EPF_CSEQ], seq + 1, __ATOMIC_RELAXED);
	psm2_slot_add(sl, LSLOT_CPOSTED, 1);
	if (stat) {
		__atomic_store_n(&f[stat], f[stat] + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&f[stat + 3], f[stat + 3] + bytes, __ATOMIC_RELAXED);
	}
	psm2_doorbell(d);
	ret = PSM2_FAST_DONE;
out:
	psm2_slot_unlock(sl, locking);
	return ret;
}

/* psm2_fast_atomic is fi_atomic (kind RMA_ATOMIC), fi_fetch_atomic
 * (RMA_ATOMIC_FETCH) or fi_compare_atomic (RMA_ATOMIC_COMPARE) done in C
 * when it can be (provider/fastrma.go): count elements of integer
 * datatype dt (psm2_atomic_fits) of op from buf (NULL for
 * FI_ATOMIC_READ), compared with cmp, at addr/key of connected shm peer
 * dest, the old values to res (a fetch or compare). It pushes the request
 * and arms an entry as C-posted (psm2_fast_post); the answer completes it
 * (psm2_fast_answers), or Go once it adopts it. Returns PSM2_FAST_DONE or
 * PSM2_FAST_GO (nothing done). */
int psm2_fast_atomic(uint64_t *f, uint32_t kind, const void *buf, const void *cmp, size_t count,
			void *res, fi_addr_t dest, uint64_t addr, uint64_t key, int dt, int op,
			void *context, uint64_t flags)
{
	static const uint64_t size[] = ATOMIC_DT_SIZES;
	unsigned char req[ATOMIC_MAX];
	struct psm2_inline m;
	uint64_t n;
	int opok;

	/* The pairs Go's AtomicValid takes for integers. */
	opok = kind == RMA_ATOMIC_COMPARE ? op >= FI_CSWAP && op <= FI_MSWAP && cmp && res :
	       kind == RMA_ATOMIC_FETCH ? op >= FI_MIN && op <= FI_ATOMIC_WRITE && res :
	       kind == RMA_ATOMIC && op >= FI_MIN && op <= FI_ATOMIC_WRITE && op != FI_ATOMIC_READ;
	if (!f || !__atomic_load_n(&f[EPF_APOST], __ATOMIC_RELAXED) || (flags & (FI_TRIGGER | FI_INJECT)) ||
	    dt < FI_INT8 || dt > FI_UINT64 || !opok || !count || (!buf && op != FI_ATOMIC_READ) ||
	    !psm2_ucopy_ready())
		return PSM2_FAST_GO;
	if (count > ATOMIC_MAX || !psm2_atomic_fits(kind, op, n = count * size[dt]))
		return PSM2_FAST_GO;
	memcpy(req, &key, 8);
	memcpy(req + 8, &addr, 8);
	memcpy(req + 16, &n, 8);
	m.len = RMA_PREFIX;
	if (op != FI_ATOMIC_READ) {
		if (psm2_ucopy(req + RMA_PREFIX, buf, n))
			return PSM2_FAST_GO;	/* Go reports the fault */
		m.len += n;
	}
	if (kind == RMA_ATOMIC_COMPARE) {
		if (psm2_ucopy(req + m.len, cmp, n))
			return PSM2_FAST_GO;
		m.len += n;
	}
	m.hflags = HF_RMA | kind << RMA_KIND_SHIFT | (uint32_t) op << ATOMIC_OP_SHIFT |
		   (uint32_t) dt << ATOMIC_DT_SHIFT;
	/* (an ack answers an fi_atomic; the operand bytes are counted, as
	 * Go's AtomicBytes does) */
	return psm2_fast_post(f, req, &m, res, kind == RMA_ATOMIC ? 0 : n, 0, EPF_CATOMICS, m.len - RMA_PREFIX, dest,
			      context);
}

_Static_assert(EPF_CWRITE_BYTES == EPF_CWRITES + 3 && EPF_CREAD_BYTES == EPF_CREADS + 3 &&
		       EPF_CATOMIC_BYTES == EPF_CATOMICS + 3,
	       "psm2_fast_post's stat: the bytes three words after the count");

/* psm2_fast_rma is fi_write (write) or fi_read of len bytes at buf done
 * in C when it can be (provider/fastrma.go): a write whose request (the
 * RMA prefix and its bytes) or a read whose answer is an inline message,
 * to connected shm peer dest, under the rules of psm2_fast_post, whose
 * entry says AO_RMA: its completion is FI_RMA's. Go's rmaLocked sends the
 * same request. Returns PSM2_FAST_DONE or PSM2_FAST_GO (nothing done). */
int psm2_fast_rma(uint64_t *f, int write, void *buf, size_t len, fi_addr_t dest, uint64_t addr, uint64_t key,
		  void *context, uint64_t flags)
{
	unsigned char req[ATOMIC_MAX];
	struct psm2_inline m;
	uint64_t n = len;

	if (!f || !__atomic_load_n(&f[EPF_APOST], __ATOMIC_RELAXED) ||
	    (flags & (FI_TRIGGER | FI_INJECT | FI_REMOTE_CQ_DATA)) || !len || !buf ||
	    len > ATOMIC_MAX - RMA_PREFIX || !psm2_ucopy_ready())
		return PSM2_FAST_GO;
	memcpy(req, &key, 8);
	memcpy(req + 8, &addr, 8);
	memcpy(req + 16, &n, 8);
	m.len = RMA_PREFIX;
	if (write) {
		if (psm2_ucopy(req + RMA_PREFIX, buf, n))
			return PSM2_FAST_GO;	/* Go reports the fault */
		m.len += n;
	}
	m.hflags = HF_RMA | (uint32_t) (write ? RMA_WRITE : RMA_READ) << RMA_KIND_SHIFT;
	return psm2_fast_post(f, req, &m, write ? NULL : buf, write ? 0 : n, AO_RMA, write ? EPF_CWRITES : EPF_CREADS,
			      n, dest, context);
}
