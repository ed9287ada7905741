/* serve.c: the atomic and RMA fast path at the target: small atomic, read and write requests served inside fi_cq_read. */
#include "atomic.h"
#include "match.h"
#include "page.h"

/* psm2_mr_find returns the address of len bytes at RMA address addr of
 * the MR with key in domain page dom's table, if the entry grants access,
 * or 0 (Go then looks the key up itself). */
static inline uint64_t psm2_mr_find(const uint64_t *dom, uint64_t key, uint64_t addr, uint64_t len, uint64_t access)
{
	const char *e = (const char *) dom + DOMF_MRS + (key % DOMF_MR_CAP) * MRF_SIZE;
	uint64_t acc = __atomic_load_n((const uint64_t *) (e + MRF_ACCESS), __ATOMIC_ACQUIRE);
	uint64_t va, base;

	if (!acc || *(const uint64_t *) (e + MRF_KEY) != key || (acc & access) != access)
		return 0;
	va = addr + *(const uint64_t *) (e + MRF_OFFSET);
	base = *(const uint64_t *) (e + MRF_BASE);
	if (!va || va + len < va || va < base || va + len > base + *(const uint64_t *) (e + MRF_LEN))
		return 0;
	return va;
}

/* psm2_serve_done is what follows the answer to a request served in C:
 * the initiator's bounce buffer idx back if the request came in it (the
 * locked AND fences the bell), else the fence; then the bell. */
static inline void psm2_serve_done(const uint64_t *sd, int idx)
{
	if (idx >= 0)
		__atomic_fetch_and((uint64_t *) (uintptr_t) sd[FP_PEER_BUSY], ~((uint64_t) 1 << idx),
				   __ATOMIC_SEQ_CST);
	else if (sd[FP_FENCE])
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	psm2_bell(sd);
}

/* psm2_serve_rma serves the RMA write or read request m (kind RMA_WRITE
 * or RMA_READ; bytes req, idx as for psm2_serve_one) as Go's rmaServe
 * does when it succeeds: a write's bytes into the region, then an ack; a
 * read's bytes in an inline answer. Returns 1, or 0 when Go must serve it:
 * nothing was sent (a write's bytes may have landed, and Go lands the
 * same bytes again before its answer, which is the first). */
static inline int psm2_serve_rma(uint64_t *f, const uint64_t *dom, const struct psm2_inline *m,
				 const unsigned char *req, int idx, uint32_t kind)
{
	unsigned char out[ATOMIC_MAX];
	uint64_t cells[PUSH_CELLS_MAX][CELL_PAYLOAD / 8];
	uint64_t key, addr, n, va;
	struct psm2_inline a;
	const uint64_t *sd;
	int k;

	if (m->hflags != (HF_RMA | kind << RMA_KIND_SHIFT) || m->len < RMA_PREFIX)
		return 0;
	/* (read once: a buffer the initiator could still write) */
	memcpy(&key, req, 8);
	memcpy(&addr, req + 8, 8);
	memcpy(&n, req + 16, 8);
	if (!n || (kind == RMA_READ && n > ATOMIC_MAX) || m->len - RMA_PREFIX != (kind == RMA_WRITE ? n : 0))
		return 0;
	if (!(va = psm2_mr_find(dom, key, addr, n, kind == RMA_WRITE ? FI_REMOTE_WRITE : FI_REMOTE_READ)) ||
	    !(sd = psm2_sender(f, m->epid)))
		return 0;
	if (kind == RMA_WRITE ? psm2_ucopy((void *) (uintptr_t) va, req + RMA_PREFIX, n) :
				psm2_ucopy(out, (const void *) (uintptr_t) va, n))
		return 0;	/* the region faulted: Go answers it */
	a.epid = sd[FP_EPID];
	a.tag = m->tag;
	a.data = 0;
	a.with_data = 0;
	a.len = kind == RMA_READ ? n : 0;
	a.hflags = HF_RMA | (uint32_t) (kind == RMA_WRITE ? RMA_ACK : RMA_READ_RESP) << RMA_KIND_SHIFT;
	/* (the commit's release store orders a write's bytes before the ack) */
	if ((k = psm2_inline_build(cells, &a, out, PUSH_CELLS_MAX)) <= 0 ||
	    psm2_push((char *) (uintptr_t) sd[FP_RING], sd[FP_MASK], (uint64_t *) (uintptr_t) sd[FP_SLOT],
		      (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, (uint64_t) k))
		return 0;
	psm2_serve_done(sd, idx);
	return 1;
}

/* psm2_serve_one serves the atomic request m, whose bytes are req, for
 * endpoint page f of domain page dom: applies it and pushes the answer
 * into the initiator's ring. idx is -1 for a request that came inline
 * (req is a copy of its cells); otherwise it came in the initiator's
 * bounce buffer idx, which req points into: the old values then go back
 * in that buffer, over the request, with a one-cell answer naming it
 * (CELL_ANSWER_BUF: the initiator frees the buffer), and after an ack or
 * an error the buffer is given back as any eager message's is. Returns 1,
 * or 0 when Go must serve it (nothing was applied or sent). */
static inline int psm2_serve_one(uint64_t *f, const uint64_t *dom, const struct psm2_inline *m,
				 const unsigned char *req, int idx)
{
	static const uint64_t size[] = ATOMIC_DT_SIZES;
	unsigned char old[ATOMIC_MAX];
	uint64_t cells[PUSH_CELLS_MAX][CELL_PAYLOAD / 8];
	uint32_t kind = (m->hflags >> RMA_KIND_SHIFT) & 0xff, *lock;
	int op = (int) ((m->hflags >> ATOMIC_OP_SHIFT) & 0xff), dt = (int) (m->hflags >> ATOMIC_DT_SHIFT), rc, k;
	uint64_t key, addr, n, body, va, access, pos;
	struct psm2_inline a;
	const uint64_t *sd;

	if (kind == RMA_WRITE || kind == RMA_READ)
		return psm2_serve_rma(f, dom, m, req, idx, kind);
	if ((m->hflags & ~(uint32_t) (HF_RMA | 0xffffff00u)) || m->len < RMA_PREFIX ||
	    m->len > ATOMIC_MAX || dt < FI_INT8 || dt > FI_UINT64)
		return 0;
	/* The kinds and ops Go's initiator pairs (AtomicValid). */
	if (kind == RMA_ATOMIC_COMPARE) {
		if (op < FI_CSWAP || op > FI_MSWAP)
			return 0;
	} else if (kind == RMA_ATOMIC_FETCH) {
		if (op < FI_MIN || op > FI_ATOMIC_WRITE)
			return 0;
	} else if (kind == RMA_ATOMIC) {
		if (op < FI_MIN || op > FI_ATOMIC_WRITE || op == FI_ATOMIC_READ)
			return 0;
	} else {
		return 0;
	}
	/* (read once: a buffer the initiator could still write) */
	memcpy(&key, req, 8);
	memcpy(&addr, req + 8, 8);
	memcpy(&n, req + 16, 8);
	body = m->len - RMA_PREFIX;
	if (!n || n % size[dt] || !psm2_atomic_fits(kind, op, n) ||
	    body != (op == FI_ATOMIC_READ ? 0 : kind == RMA_ATOMIC_COMPARE ? 2 * n : n))
		return 0;
	access = op == FI_ATOMIC_READ ? FI_REMOTE_READ :
		 kind == RMA_ATOMIC ? FI_REMOTE_WRITE : FI_REMOTE_READ | FI_REMOTE_WRITE;
	/* (Go applies a misaligned one; psm2_uapply refuses it) */
	if (!(va = psm2_mr_find(dom, key, addr, n, access)) || (va & (size[dt] - 1)))
		return 0;
	/* A region across pages is read whole first, as Go's atomicApply
	 * copies the old values before any store: an unmapped page then
	 * faults before anything is applied (Go answers it). Within one page
	 * the first load faults first anyway. */
	if ((va & (PAGE_BYTES - 1)) + n > PAGE_BYTES && psm2_ucopy(old, (const void *) (uintptr_t) va, n))
		return 0;
	lock = (uint32_t *) (uintptr_t) __atomic_load_n(&dom[DOMF_ALOCK / 8], __ATOMIC_ACQUIRE);
	if (!lock || !(sd = psm2_sender(f, m->epid)))
		return 0;
	/* The old values go back over a request in a bounce buffer only if
	 * they fit in it (an atomic read's request is 24 bytes, whatever its
	 * length). */
	if (idx >= 0 && kind != RMA_ATOMIC && n > sd[FP_PEER_BUF_SIZE])
		return 0;
	a.epid = sd[FP_EPID];
	a.tag = m->tag;
	a.data = 0;
	a.with_data = 0;
	a.len = kind != RMA_ATOMIC ? n : 0;
	a.hflags = HF_RMA | (uint32_t) (kind == RMA_ATOMIC ? RMA_ACK : RMA_ATOMIC_RESP) << RMA_KIND_SHIFT;
	/* The answer's cells first: once the op is applied it must go out. */
	k = idx >= 0 ? 1 : psm2_inline_cells(&a, PUSH_CELLS_MAX);
	if (!k || psm2_reserve((char *) (uintptr_t) sd[FP_RING], sd[FP_MASK], (uint64_t *) (uintptr_t) sd[FP_SLOT],
			       (uint64_t) k, &pos))
		return 0;
	psm2_alock(lock);
	rc = psm2_uapply(op, dt, (void *) (uintptr_t) va, body ? req + RMA_PREFIX : NULL,
			 kind == RMA_ATOMIC_COMPARE ? req + RMA_PREFIX + n : NULL, old, n / size[dt]);
	psm2_aunlock(lock);
	if (rc) {
		/* The region faulted (a page that is readable but not
		 * writable, or unmapped meanwhile): the error Go would send,
		 * padded to the k cells reserved; an errored answer's bytes
		 * are ignored. */
		a.data = FI_EFAULT;
		a.with_data = 1;
		a.len = psm2_pad_len((uint64_t) k);
		memset(old, 0, a.len);
	} else if (idx >= 0 && a.len) {
		/* The old values over the request, and a cell naming the
		 * buffer (the commit's release store orders them). */
		memcpy((unsigned char *) (uintptr_t) req, old, n);
		psm2_eager_build(cells[0], &a, (uint16_t) idx);
		((unsigned char *) cells[0])[CELL_KIND] = CELL_ANSWER_BUF;
		psm2_commit((char *) (uintptr_t) sd[FP_RING], sd[FP_MASK], pos,
			    (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, 1);
		psm2_doorbell(sd);
		return 1;
	}
	(void) psm2_inline_build(cells, &a, old, PUSH_CELLS_MAX);	/* ours: no fault */
	psm2_commit((char *) (uintptr_t) sd[FP_RING], sd[FP_MASK], pos, (const uint64_t (*)[CELL_PAYLOAD / 8]) cells,
		    (uint64_t) k);
	psm2_serve_done(sd, idx);
	return 1;
}

/* psm2_serve_ep serves the requests at the head of endpoint page
 * f's ring, in order, until anything else: returns how many. The caller
 * holds f's lock slot and has seen the domain idle otherwise. */
static inline int psm2_serve_ep(uint64_t *f, const uint64_t *dom)
{
	char *r = psm2_probe_ring(f[EPF_RING]);
	uint64_t mask = psm2_probe_mask(f[EPF_RING]);
	int served = 0;

	if (!r || !psm2_ucopy_ready())
		return 0;
	for (;;) {
		uint64_t *consp = (uint64_t *) (r + RING_CONS);
		uint64_t cons = __atomic_load_n(consp, __ATOMIC_RELAXED);
		const unsigned char *c = (const unsigned char *) psm2_cell(r, mask, cons);
		const unsigned char *cont[PUSH_CELLS_MAX];
		unsigned char req[ATOMIC_MAX];
		struct psm2_inline m;
		const uint64_t *sd;
		uint16_t idx;
		int cells;

		if (__atomic_load_n((const uint64_t *) (c + CELL_SEQ), __ATOMIC_ACQUIRE) != cons + 1)
			break;
		if ((cells = psm2_rma_head(c + CELL_PAYLOAD_OFF, &m))) {
			if (!psm2_conts(r, mask, cons, cells, cont))
				break;
			if (psm2_inline_copy(req, &m, c + CELL_PAYLOAD_OFF, cont) ||
			    !psm2_serve_one(f, dom, &m, req, -1))
				break;
		} else if (psm2_rma_cell_head(c + CELL_PAYLOAD_OFF, CELL_EAGER, &m, &idx)) {
			/* In the initiator's bounce buffer (the eager case of
			 * psm2_deliver_ep). */
			sd = psm2_sender(f, m.epid);
			if (!sd || idx >= sd[FP_PEER_NBUFS] || m.len > sd[FP_PEER_BUF_SIZE] ||
			    !sd[FP_PEER_BUFS] || !sd[FP_PEER_BUSY] ||
			    !psm2_serve_one(f, dom, &m,
					    (const unsigned char *) (uintptr_t) sd[FP_PEER_BUFS] +
						    (uint64_t) idx * sd[FP_PEER_BUF_SIZE], idx))
				break;
			cells = 1;
		} else {
			break;
		}
		__atomic_store_n(consp, cons + (uint64_t) cells, __ATOMIC_RELEASE);
		served++;
	}
	if (served)
		__atomic_store_n(&f[EPF_SERVED], f[EPF_SERVED] + (uint64_t) served, __ATOMIC_RELAXED);
	return served;
}

/* psm2_request_waits says whether the head of f's ring looks like an
 * atomic, write or read request. */
static inline int psm2_request_waits(const uint64_t *f)
{
	uint32_t hflags, kind;

	if (!psm2_head_hflags(f, &hflags))
		return 0;
	kind = (hflags >> RMA_KIND_SHIFT) & 0xff;
	return (hflags & HF_RMA) && ((kind >= RMA_ATOMIC && kind <= RMA_ATOMIC_COMPARE) || kind == RMA_WRITE ||
				     kind == RMA_READ);
}

/* psm2_fast_serve is the atomic and RMA fast path at the target: called
 * by fi_cq_read with the CQ's page when C delivered nothing, it serves the
 * small atomic, write and read requests at the heads of the rings of the endpoints of the CQ's
 * lock slot that allow it (EPF_SERVE), while Go has no work of its own (an older
 * request Go still handles must be applied first). Returns the requests
 * served. */
int psm2_fast_serve(const uint64_t *cqf)
{
	const uint64_t *dom, *slw;
	uint64_t neps, i, *sl;
	int locking, served = 0;

	if (!cqf)
		return 0;
	dom = (const uint64_t *) (uintptr_t) __atomic_load_n(&cqf[CQF_DOMAIN], __ATOMIC_ACQUIRE);
	slw = (const uint64_t *) (uintptr_t) __atomic_load_n(&cqf[CQF_LOCK], __ATOMIC_ACQUIRE);
	if (!dom || !slw || __atomic_load_n(&dom[DOMF_BUSY / 8], __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&slw[LSLOT_QUEUED / 8], __ATOMIC_ACQUIRE) ||
	    !__atomic_load_n(&dom[DOMF_ALOCK / 8], __ATOMIC_ACQUIRE))
		return 0;
	/* First a look without the lock: does a request wait at the head
	 * of some ring of the CQ's slot (so reads that Go must answer anyway
	 * pay no lock)? */
	neps = __atomic_load_n(&dom[DOMF_NEPS / 8], __ATOMIC_ACQUIRE);
	for (i = 0; i < neps && i < DOMF_MAX_EPS; i++) {
		uint64_t *f = (uint64_t *) (uintptr_t) __atomic_load_n(&dom[DOMF_EPS / 8 + i], __ATOMIC_ACQUIRE);

		if (f && __atomic_load_n(&f[EPF_SERVE], __ATOMIC_RELAXED) &&
		    f[EPF_LOCK] == (uint64_t) (uintptr_t) slw && psm2_request_waits(f))
			break;
	}
	if (i == neps || i == DOMF_MAX_EPS)
		return 0;
	sl = psm2_slot_lock(&cqf[CQF_LOCK], dom, &locking);
	/* Again under the lock. */
	if (!sl || __atomic_load_n(&dom[DOMF_BUSY / 8], __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&sl[LSLOT_QUEUED / 8], __ATOMIC_ACQUIRE))
		goto out;
	neps = __atomic_load_n(&dom[DOMF_NEPS / 8], __ATOMIC_RELAXED);
	for (i = 0; i < neps && i < DOMF_MAX_EPS; i++) {
		uint64_t *f = (uint64_t *) (uintptr_t) __atomic_load_n(&dom[DOMF_EPS / 8 + i], __ATOMIC_ACQUIRE);

		if (f && __atomic_load_n(&f[EPF_SERVE], __ATOMIC_RELAXED) && f[EPF_LOCK] == (uint64_t) (uintptr_t) sl)
			served += psm2_serve_ep(f, dom);
	}
out:
	psm2_slot_unlock(sl, locking);
	return served;
}
