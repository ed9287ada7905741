/* deliver.c: receives: fi_recv/fi_trecv queued in C, and the inline, eager and rendezvous messages C delivers to them inside fi_cq_read. */
#include "cell.h"
#include "match.h"
#include "page.h"
#include "ring.h"
#include "stream.h"

/* psm2_cma_read copies n bytes at address src of process pid to dst with
 * process_vm_readv, as shm's Fetch does (partial reads resumed): 0, or -1
 * on any failure, which leaves the message to Go to fetch again and to
 * report (EFAULT, ESRCH) or work around (EPERM: the copy protocol). */
static inline int psm2_cma_read(uint64_t pid, void *dst, uint64_t src, uint64_t n)
{
	uint64_t off = 0, rel = ((uint64_t) (uintptr_t) dst - src) & (ALIAS_SPAN - 1);
	int intr = 0;

	/* A destination 1 to 63 bytes past the source modulo 4 KiB: the
	 * kernel's copy stalls there, and Go's stages it (shm's cmaCopy). */
	if (n >= ALIAS_SPAN && rel != 0 && rel < ALIAS_NEAR)
		return -1;

	while (off < n) {
		struct iovec l = { (char *) dst + off, n - off };
		struct iovec r = { (void *) (uintptr_t) (src + off), n - off };
		long k = syscall(SYS_process_vm_readv, (long) pid, &l, 1L, &r, 1L, 0L);

		if (k < 0 && errno == EINTR && ++intr < 16)
			continue;
		if (k <= 0)
			return -1;
		off += (uint64_t) k;
	}
	return 0;
}

/* psm2_fin pushes the FIN of send sid into the ring of the peer that
 * descriptor d names and rings its doorbell: 0, or -1 if its ring is full
 * (Go fetches again and queues the FIN). */
static inline int psm2_fin(uint64_t *d, uint64_t sid)
{
	uint64_t cell[1][CELL_PAYLOAD / 8];

	psm2_fin_build(cell[0], d[FP_EPID], sid);
	if (psm2_push((char *) (uintptr_t) d[FP_RING], d[FP_MASK], (uint64_t *) (uintptr_t) d[FP_SLOT],
		      (const uint64_t (*)[CELL_PAYLOAD / 8]) cell, 1))
		return -1;
	psm2_doorbell(d);
	return 0;
}

/* psm2_fast_recv queues a receive of one buffer, done in C when it can be.
 * flags are the call's (op flags | FI_MSG or FI_TAGGED). */
int psm2_fast_recv(uint64_t *f, void *buf, size_t len, fi_addr_t src,
		  uint64_t tag, uint64_t ignore, void *context,
		  uint64_t flags)
{
	uint64_t *q, n, *d, *peers, *sl;
	int locking, ret = PSM2_FAST_GO;

	if (!f || !__atomic_load_n(&f[EPF_RECV_OK], __ATOMIC_RELAXED))
		return PSM2_FAST_GO;
	if ((flags & (FI_MULTI_RECV | FI_PEEK | FI_CLAIM | FI_DISCARD | FI_TRIGGER)) || (len && !buf))
		return PSM2_FAST_GO;
	sl = psm2_slot_lock(&f[EPF_LOCK], (const void *) (uintptr_t) f[EPF_DOMAIN], &locking);
	if (!sl || !__atomic_load_n(&f[EPF_RECV_OK], __ATOMIC_RELAXED))
		goto out;
	if (src != FI_ADDR_UNSPEC && (f[EPF_CAPS] & FI_DIRECTED_RECV)) {
		/* Only a source Go has connected (so the AV knows it). */
		uint64_t slot = psm2_peer_slot(f, src);

		if (slot >= f[EPF_NPEERS])
			goto out;
		peers = (uint64_t *) (uintptr_t) f[EPF_PEERS];
		d = (uint64_t *) (uintptr_t) __atomic_load_n(&peers[slot], __ATOMIC_RELAXED);
		if (!d)
			goto out;
	}
	n = __atomic_load_n(&f[EPF_RQ_COUNT], __ATOMIC_RELAXED);
	if (n >= EPF_RQ_CAP || !f[EPF_RQ])
		goto out;	/* Go posts the queue and this one */
	/* One of Go's unexpected messages is older than anything in the
	 * ring: Go posts a receive that takes one. */
	if (f[EPF_UX_COUNT] && psm2_ux_takes(f, flags, tag, ignore, src))
		goto out;
	if (f[EPF_RQ_HEAD] + n >= EPF_RQ_CAP) {
		/* At the end of the mapping: the queue moves to its start. */
		memmove((uint64_t *) (uintptr_t) f[EPF_RQ], psm2_rq(f), n * EPF_RQ_WORDS * 8);
		__atomic_store_n(&f[EPF_RQ_HEAD], 0, __ATOMIC_RELAXED);
	}
	q = psm2_rq(f) + n * EPF_RQ_WORDS;
	q[RQ_BUF] = (uint64_t) (uintptr_t) buf;
	q[RQ_LEN] = len;
	q[RQ_SRC] = src;
	q[RQ_TAG] = tag;
	q[RQ_IGNORE] = ignore;
	q[RQ_CONTEXT] = (uint64_t) (uintptr_t) context;
	q[RQ_FLAGS] = flags;
	__atomic_store_n(&f[EPF_RQ_COUNT], n + 1, __ATOMIC_RELAXED);
	psm2_slot_add(sl, LSLOT_QUEUED, 1);
	ret = PSM2_FAST_DONE;
out:
	psm2_slot_unlock(sl, locking);
	return ret;
}

/* psm2_recv_entry writes the completion of receive q taking message m
 * in the CQ's format: stride is the size of its entries, each a prefix of
 * struct fi_cq_tagged_entry (context; flags, len; buf, data; tag). */
static inline void psm2_recv_entry(char *out, uint64_t stride, const uint64_t *q,
				   const struct psm2_inline *m)
{
	/* Field by field, each an 8-byte store straight into the caller's
	 * entry: building a struct and copying it (the formats' prefixes)
	 * cost a call to memcpy, or with a constant size, wide loads of
	 * narrower stores just made, which the CPU cannot forward (256 B
	 * NetPIPE 0.156 -> 0.17 us). */
	uint64_t w[6];

	_Static_assert(sizeof(struct fi_cq_tagged_entry) == sizeof(w), "fi_cq_tagged_entry is six words");
	w[0] = q[RQ_CONTEXT];
	w[1] = FI_RECV | ((m->hflags & HF_TAGGED) ? FI_TAGGED : FI_MSG) |
	       ((m->hflags & HF_DATA) ? FI_REMOTE_CQ_DATA : 0);
	w[2] = m->len;
	w[3] = q[RQ_BUF];
	w[4] = m->data;
	w[5] = m->tag;
	memcpy(out, &w[0], 8);
	if (stride < 24)
		return;
	memcpy(out + 8, &w[1], 8);
	memcpy(out + 16, &w[2], 8);
	if (stride < 40)
		return;
	memcpy(out + 24, &w[3], 8);
	memcpy(out + 32, &w[4], 8);
	if (stride < 48)
		return;
	memcpy(out + 40, &w[5], 8);
}

/* psm2_deliver_ep delivers, for endpoint page f, the inline, eager and
 * rendezvous messages that arrived in its ring to the receives C queued
 * for it (a rendezvous fetched with process_vm_readv, as shm's Fetch does,
 * and its FIN pushed), writing up to count completions of stride bytes at
 * out;
 * psm2_fast_deliver holds f's lock slot sl and has checked that f
 * delivers through the CQ being read. It stops at anything else (another cell
 * kind, an unexpected message, a short buffer) and leaves it to Go; an
 * unexpected message that is the last in the ring is also listed in held
 * (when not NULL). Returns the entries written. */
static inline ssize_t psm2_deliver_ep(uint64_t *f, uint64_t *sl, uint64_t stride,
			   char *out, size_t count, struct psm2_held *held)
{
	char *r = psm2_probe_ring(f[EPF_RING]);
	uint64_t mask = psm2_probe_mask(f[EPF_RING]);
	ssize_t got = 0;

	if (!r || !psm2_ucopy_ready())
		return 0;
	while ((size_t) got < count) {
		uint64_t *consp = (uint64_t *) (r + RING_CONS);
		uint64_t cons = __atomic_load_n(consp, __ATOMIC_RELAXED), pos = cons;
		const unsigned char *c;
		const unsigned char *cont[PUSH_CELLS_MAX];
		uint64_t n = __atomic_load_n(&f[EPF_RQ_COUNT], __ATOMIC_RELAXED);
		uint64_t *q;
		const uint64_t *sd;
		const char *eager;
		struct psm2_inline m;
		uint16_t idx;
		uint64_t raddr, rsid;
		int i, cells, k, rndv, later = 0;

again:
		/* pos: the head of the ring, or (later) a message behind an
		 * unexpected head that a queued receive takes. */
		c = (const unsigned char *) psm2_cell(r, mask, pos);
		sd = NULL, eager = NULL, idx = 0, raddr = 0, rsid = 0, rndv = 0;
		if (__atomic_load_n((const uint64_t *) (c + CELL_SEQ), __ATOMIC_ACQUIRE) != pos + 1)
			break;
		if (!later && c[CELL_PAYLOAD_OFF + CELL_KIND] == CELL_TAKEN) {
			/* Delivered already, out of ring order: pass it. */
			__atomic_store_n(consp, cons + 1, __ATOMIC_RELEASE);
			continue;
		}
		if (!(cells = psm2_inline_head(c + CELL_PAYLOAD_OFF, &m))) {
			if (psm2_eager_head(c + CELL_PAYLOAD_OFF, &m, &idx)) {
				/* The sender's bounce buffer, through its descriptor. */
				sd = psm2_sender(f, m.epid);
				if (!sd || idx >= sd[FP_PEER_NBUFS] || m.len > sd[FP_PEER_BUF_SIZE] ||
			 !sd[FP_PEER_BUFS] || !sd[FP_PEER_BUSY])
					break;
				eager = (const char *) (uintptr_t) sd[FP_PEER_BUFS] + (uint64_t) idx * sd[FP_PEER_BUF_SIZE];
			} else if (!later && psm2_rts_head(c + CELL_PAYLOAD_OFF, &m, &raddr, &rsid)) {
				/* A rendezvous C fetches itself: from another process
				 * that single copy may read (its pid in the
				 * descriptor), below the split copy's size, and with
				 * the ring back to it usable for the FIN (FP_OK: no
				 * control cell of Go's queued before it). */
				sd = psm2_sender(f, m.epid);
				if (!sd || !sd[FP_PEER_PID] || m.len > sd[FP_RNDV_MAX] || !sd[FP_SLOT])
					break;
				/* A lone message from FP_RNDV_ALONE up (no cell
				 * after it): Go splits it (shm/split.go). */
				if (m.len >= sd[FP_RNDV_ALONE] &&
			 __atomic_load_n((const uint64_t *) (psm2_cell(r, mask, pos + 1) + CELL_SEQ),
						    __ATOMIC_ACQUIRE) != pos + 2)
					break;
				rndv = 1;
			} else {
				break;
			}
			cells = 1;
		}
		/* The unit's cells were published before its head cell: ask
		 * for all their lines before reading the first. */
		for (k = 1; k < cells; k++)
			__builtin_prefetch(psm2_cell(r, mask, pos + k), 0, 3);
		if (!psm2_conts(r, mask, pos, cells, cont))
			break;
		i = n ? psm2_rq_match(f, n, (m.hflags & HF_TAGGED) != 0, m.tag, m.epid) : -1;
		if (i < 0 && !later && (pos = psm2_later_match(f, r, mask, cons, cons + (uint64_t) cells, n)) != 0) {
			later = 1;
			goto again;
		}
		if (i < 0) {
			/* Unexpected. The messages at the head of the ring stay
			 * there while they are all it holds (HOLD_UNITS at
			 * most) and no receive C queued takes any, for receives
			 * posted soon (one side of an exchange often runs
			 * ahead: MPI_Sendrecv, the two sends of an exchange with
			 * neighbours), which take them here without Go; the
			 * read answers as if idle (psm2_fast_idle_held).
			 * Anything more behind them, or Go's next pass, moves
			 * them to Go's unexpected queue. */
			uint64_t end;

			if (!later && held && held->n < DOMF_MAX_EPS &&
			    (end = psm2_held_run(f, r, mask, cons + (uint64_t) cells, n)) != 0) {
				held->ring[held->n] = f[EPF_RING];
				held->at[held->n] = cons;
				held->end[held->n] = end;
				held->n++;
			}
			break;
		}
		q = psm2_rq(f) + i * EPF_RQ_WORDS;
		if (q[RQ_LEN] < m.len)
			break;	/* truncated: Go reports it */
		if (eager) {
			/* Two lines the other core wrote last, asked for now
			 * so they come during the copy: the sender's busy word,
			 * which the locked AND below frees the buffer in, and
			 * our own, which our next eager send (often the answer
			 * to this message) reads and sets. Each was a miss on
			 * the critical path: 256 B fi_pingpong 0.26 -> 0.24 us,
			 * 1 KiB 0.35 -> 0.27. Only once matched: a held message
			 * must not take the sender's line from it at every
			 * read. */
			psm2_prefetchw((const void *) (uintptr_t) sd[FP_PEER_BUSY]);
			if (sd[FP_BUSY])
				psm2_prefetchw((const void *) (uintptr_t) sd[FP_BUSY]);
			/* Copy (as the sender fills the buffer, if streamed),
			 * then give the buffer back and ring the sender in case
			 * it waits for one (shm's release; the locked AND is the
			 * fence ring2 needs). A receive buffer the kernel
			 * refuses, like a broken or stalled stream, leaves the
			 * message to Go, which fails the receive with FI_EFAULT
			 * (or drops the broken message). */
			uint64_t sseq;

			if (psm2_eager_stream(c + CELL_PAYLOAD_OFF, &sseq) ?
			    psm2_stream_copy((const uint64_t *) (uintptr_t) sd[FP_PEER_STREAM], sseq,
					     (char *) (uintptr_t) q[RQ_BUF], eager, m.len) :
			    psm2_ucopy((void *) (uintptr_t) q[RQ_BUF], eager, m.len))
				break;
			__atomic_fetch_and((uint64_t *) (uintptr_t) sd[FP_PEER_BUSY], ~((uint64_t) 1 << idx),
					   __ATOMIC_SEQ_CST);
			psm2_bell(sd);
		} else if (rndv) {
			/* Read, then tell the sender (its send completes on the
			 * FIN). Any failure, or no room for the FIN, leaves the
			 * cell to Go, which reads again: the sender's data stays
			 * until its FIN. */
			if (psm2_cma_read(sd[FP_PEER_PID], (void *) (uintptr_t) q[RQ_BUF], raddr, m.len) ||
			    psm2_fin((uint64_t *) sd, rsid))
				break;
			((uint64_t *) sd)[FP_RNDV_CMA]++;
			((uint64_t *) sd)[FP_FETCH_BYTES] += m.len;
		} else if (psm2_inline_copy((void *) (uintptr_t) q[RQ_BUF], &m, c + CELL_PAYLOAD_OFF, cont)) {
			/* Straight from the cells into the receive buffer. */
			break;
		}
		if (!f[EPF_RX_SEL] || (q[RQ_FLAGS] & FI_COMPLETION)) {
			psm2_recv_entry(out + got * stride, stride, q, &m);
			got++;
		}
		/* Take the receive out of the queue, keeping the others'
		 * order: the shorter side moves (none for the head). */
		if (n == 1) {
			__atomic_store_n(&f[EPF_RQ_HEAD], 0, __ATOMIC_RELAXED);
		} else if ((uint64_t) i < n - 1 - (uint64_t) i) {
			uint64_t *first = psm2_rq(f);

			if (i)
				memmove(first + EPF_RQ_WORDS, first, (uint64_t) i * EPF_RQ_WORDS * 8);
			__atomic_store_n(&f[EPF_RQ_HEAD], f[EPF_RQ_HEAD] + 1, __ATOMIC_RELAXED);
		} else {
			memmove(q, q + EPF_RQ_WORDS, (n - 1 - i) * EPF_RQ_WORDS * 8);
		}
		__atomic_store_n(&f[EPF_RQ_COUNT], n - 1, __ATOMIC_RELAXED);
		psm2_slot_add(sl, LSLOT_QUEUED, (uint64_t) -1);
		if (!later) {
			__atomic_store_n(consp, cons + (uint64_t) cells, __ATOMIC_RELEASE);
			continue;
		}
		/* Taken out of ring order: its cells stay until the head's
		 * message goes, and whoever consumes them then (here, or
		 * shm's Poll) passes over them. Go reads them only under the
		 * lock, whose slot this holds. */
		for (k = 0; k < cells; k++)
			((unsigned char *) psm2_cell(r, mask, pos + (uint64_t) k))[CELL_PAYLOAD_OFF + CELL_KIND] = CELL_TAKEN;
	}
	return got;
}

/* psm2_fast_deliver is the receive half of the fast path: called by
 * fi_cq_read with the CQ's page, it takes inline messages that arrived
 * for the endpoints of the domain whose receive CQ this is (those the
 * domain page lists), matches them against the receives C queued, copies
 * them into the receive buffers and writes their completions straight
 * into the caller's buffer (psm2_deliver_ep). Each endpoint's messages
 * come in its ring's order; endpoints have no order among them. It runs
 * for an endpoint only while Go holds nothing its messages or receives
 * could be ordered against (provider/fastep.go: deliverOK), and only when
 * the CQ holds no older entry. Returns the entries written. */
ssize_t psm2_fast_deliver(const uint64_t *cqf, void *buf, size_t count, struct psm2_held *held)
{
	const uint64_t *dom;
	uint64_t stride, neps, i, *sl;
	int locking, any = 0;
	ssize_t got = 0;

	if (held)
		held->n = 0;
	if (!cqf)
		return 0;
	dom = (const uint64_t *) (uintptr_t) __atomic_load_n(&cqf[CQF_DOMAIN], __ATOMIC_ACQUIRE);
	if (!dom)
		return 0;
	neps = __atomic_load_n((const uint64_t *) ((const char *) dom + DOMF_NEPS), __ATOMIC_ACQUIRE);
	for (i = 0; i < neps && i < DOMF_MAX_EPS && !any; i++)
		any = psm2_fast_ep(dom, i, cqf, held != NULL) != NULL;
	if (!any)
		return 0;
	if (!psm2_cq_lock_empty(cqf, dom, &sl, &locking))
		goto out;
	/* Again under the lock: the list and the flags may have changed. */
	stride = cqf[CQF_STRIDE];
	neps = __atomic_load_n((const uint64_t *) ((const char *) dom + DOMF_NEPS), __ATOMIC_RELAXED);
	for (i = 0; i < neps && i < DOMF_MAX_EPS && (size_t) got < count; i++) {
		uint64_t *f = psm2_fast_ep(dom, i, cqf, held != NULL);

		if (f)
			got += psm2_deliver_ep(f, sl, stride, (char *) buf + got * stride, count - got, held);
	}
out:
	psm2_slot_unlock(sl, locking);
	return got;
}
