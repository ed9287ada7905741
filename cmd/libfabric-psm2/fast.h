/* fast.h: the data-path calls C answers without calling into Go.
 *
 * A call into Go costs about as much as libfabric's whole shm send, so the
 * hottest calls are done here when they are simple:
 *   - fi_inject (and tinject, injectdata, tinjectdata) of an inline-sized
 *     message to a connected shared-memory peer: the cells are built and
 *     pushed into the peer's ring here;
 *   - fi_recv/fi_trecv with plain flags: the receive is queued in the
 *     endpoint's page, and Go posts it before anything else it does under
 *     the domain lock (provider/fastep.go).
 * Both run under the domain lock, a futex word Go takes too
 * (provider/lock.go), so Go's state is consistent while C looks at it.
 * Whatever is not simple, or any doubt, returns PSM2_FAST_GO and the
 * caller makes the usual call into Go, which does everything (and finds
 * every error).
 *
 * The memory layouts are Go's and are documented there:
 *   endpoint page, receive queue  provider/fastep.go
 *   domain page                   provider/fastpath.go
 *   fast-peer descriptor          shm/fastpeer.go
 *   ring                          shm/ring.go (version 3), shm/slots.go
 *
 * Sizes are never read from shared memory: a ring's cell count comes from
 * the descriptor or probe word Go wrote after validating it, so a peer
 * that rewrites its ring header cannot make C index past the mapping.
 *   cells                         shm/cell.go
 */
#ifndef PSM2_FAST_H
#define PSM2_FAST_H

#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <rdma/fabric.h>

#define PSM2_FAST_DONE 0
#define PSM2_FAST_GO 1

/* PSM2_NO_COMPLETION marks the sends of the fi_inject* calls, which never
 * generate a completion (unlike a send with the FI_INJECT flag). An
 * operation flag bit libfabric leaves undefined; provider.NoCompletion is
 * the same bit. */
#define PSM2_NO_COMPLETION (1ULL << 60)

/* Endpoint page words (uint64 index). */
enum {
	EPF_SEND_OK = 0, EPF_RECV_OK = 1, EPF_TAG_MASK = 2, EPF_INJECT = 3,
	EPF_CAPS = 4, EPF_NPEERS = 5, EPF_PEERS = 6, EPF_DOMAIN = 7,
	EPF_RQ_COUNT = 8, EPF_DELIVER = 9, EPF_RX_CQ = 10, EPF_RX_SEL = 11,
	EPF_RING = 12, EPF_TX_CQ = 13, EPF_TX_SEL = 14, EPF_TX_CQ_OK = 15,
	EPF_RQ = 16,	/* byte 128 */
	EPF_RQ_CAP = 48, EPF_RQ_WORDS = 8,
};

/* Domain page: byte offsets. */
#define DOMF_LOCK 128
#define DOMF_LOCKING 132
#define DOMF_QUEUED 192
#define DOMF_SOLE_EP 208

/* CQ page words. */
enum { CQF_COUNT = 0, CQF_DOMAIN = 1, CQF_STRIDE = 2, CQF_CQUEUED = 3,
       CQF_CENTRIES = 128 /* byte 1024 */, CQF_CCAP = 56, CQF_CWORDS = 6 };
#define DOMF_CQUEUED 216

/* Fast-peer descriptor words. */
enum { FP_OK = 0, FP_RING = 1, FP_WAIT = 2, FP_SEQ = 3, FP_STATE = 4,
       FP_EPID = 5, FP_SENT = 6, FP_FENCE = 7, FP_PEER = 8, FP_MASK = 9,
       FP_SLOT = 10 };

/* Ring (byte offsets) and cells. */
#define RING_PROD 128
#define RING_SEEN 136
#define RING_CONS 256
#define RING_HDR 384
#define CELL_SIZE 64
#define CELL_PAYLOAD 56
#define CELL_INLINE 1
#define CELL_CONT 2
#define CELL_HAS_DATA 1
#define INLINE_HEAD 32		/* payload bytes in a head cell without data */
#define INLINE_HEAD_DATA 24	/* ... with the data word */
#define CONT_PAYLOAD 55

/* Message header flags (provider/msg.go). */
#define HF_TAGGED 1u
#define HF_DATA 2u

static inline long psm2_futex(uint32_t *w, int op, uint32_t val)
{
	return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

/* The domain lock: 0 free, 1 held, 2 held and someone may sleep. An
 * uncontended unlock is a plain release store (no full barrier, so the
 * thread does not wait for its ring cells to reach the receiver's core);
 * waiters therefore sleep at most 200 us at a time (provider/lock.go). */
static inline void psm2_dlock(uint32_t *w)
{
	uint32_t z = 0;

	if (__atomic_compare_exchange_n(w, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	for (int i = 0; i < 64; i++) {
		z = 0;
		if (__atomic_load_n(w, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(w, &z, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		__builtin_ia32_pause();
	}
	while (__atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE) != 0) {
		struct timespec nap = { 0, 200000 };

		syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 2, &nap, NULL, 0);
	}
}

static inline void psm2_dunlock(uint32_t *w)
{
	if (__atomic_load_n(w, __ATOMIC_RELAXED) == 1) {
		__atomic_store_n(w, 0, __ATOMIC_RELEASE);
		return;
	}
	if (__atomic_exchange_n(w, 0, __ATOMIC_RELEASE) == 2)
		psm2_futex(w, FUTEX_WAKE_PRIVATE, 1);
}

/* psm2_domlock returns the lock word of domain page dom, and whether the
 * domain locks at all. */
static inline uint32_t *psm2_domlock(const void *domp, int *locking)
{
	char *dom = (char *) domp;

	*locking = __atomic_load_n((uint32_t *) (dom + DOMF_LOCKING), __ATOMIC_ACQUIRE) != 0;
	return (uint32_t *) (dom + DOMF_LOCK);
}

/* A ring probe word (transport.RingProbe): the base address with log2 of
 * the cell count in the low 6 bits. */
static inline char *psm2_probe_ring(uint64_t w) { return (char *) (uintptr_t) (w & ~(uint64_t) 63); }
static inline uint64_t psm2_probe_mask(uint64_t w) { return ((uint64_t) 1 << (w & 63)) - 1; }

/* psm2_push pushes n (1 or 2) cells into ring r of mask+1 cells, as the
 * producer owning slot (its pos word; n is the next): the same protocol
 * as shm's TryPushCells through a claimed view. 0 on success, -1 if the
 * ring has no room (or looks corrupt: Go sorts that out). */
static inline int psm2_push(char *r, uint64_t mask, uint64_t *slot,
			    const uint64_t cells[][CELL_PAYLOAD / 8], uint64_t n)
{
	uint64_t size = mask + 1;
	uint64_t *prod = (uint64_t *) (r + RING_PROD);
	uint64_t *seen = (uint64_t *) (r + RING_SEEN);
	uint64_t pos = __atomic_load_n(prod, __ATOMIC_RELAXED);

	for (;;) {
		if (pos + n - __atomic_load_n(seen, __ATOMIC_RELAXED) > size) {
			uint64_t cons = __atomic_load_n((uint64_t *) (r + RING_CONS), __ATOMIC_ACQUIRE);

			if (pos + n - cons > size)
				return -1;
			__atomic_store_n(seen, cons, __ATOMIC_RELAXED);
		}
		/* Announce before reserving (shm/slots.go); the locked CAS
		 * orders these stores before the reservation. */
		__atomic_store_n(&slot[1], n, __ATOMIC_RELAXED);
		__atomic_store_n(&slot[0], pos, __ATOMIC_RELAXED);
		if (__atomic_compare_exchange_n(prod, &pos, pos + n, 0, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED))
			break;
	}
	for (uint64_t k = n; k-- > 0;) {
		char *c = r + RING_HDR + ((pos + k) & mask) * CELL_SIZE;

		memcpy(c + 8, cells[k], CELL_PAYLOAD);
		__atomic_store_n((uint64_t *) c, pos + k + 1, __ATOMIC_RELEASE);
	}
	return 0;
}

/* psm2_fast_send is a send of len bytes to dest, with the message's tag
 * and (with FI_REMOTE_CQ_DATA, has_data) data, done in C when it can be:
 * an inline message to a connected shm peer. flags are the call's; with
 * FI_INJECT its buffer is free on return (at most inject_size bytes); with
 * PSM2_NO_COMPLETION (the fi_inject* calls) it has no completion;
 * otherwise its completion, if one is due, is queued in the transmit CQ's
 * page (provider/fastpath.go) for fi_cq_read. f is the endpoint page
 * (NULL: none). */
static inline int psm2_fast_send(const uint64_t *f, const void *buf, size_t len,
				 fi_addr_t dest, int tagged, uint64_t tag,
				 int has_data, uint64_t data, void *context, uint64_t flags)
{
	uint64_t cells[2][CELL_PAYLOAD / 8];
	unsigned char *h = (unsigned char *) cells[0];
	uint64_t *d, *cq = NULL, n, head, cc = 0;
	uint32_t *lk, hflags;
	int locking, ret = PSM2_FAST_GO, with_data, inject = (flags & FI_INJECT) != 0, comp = 0;
	int nocomp = (flags & PSM2_NO_COMPLETION) != 0;

	if (!f || !__atomic_load_n(&f[EPF_SEND_OK], __ATOMIC_RELAXED))
		return PSM2_FAST_GO;
	if ((inject && len > f[EPF_INJECT]) || (len && !buf) || dest >= f[EPF_NPEERS])
		return PSM2_FAST_GO;
	if (!nocomp) {
		uint64_t ok = __atomic_load_n(&f[EPF_TX_CQ_OK], __ATOMIC_RELAXED);

		if (ok == 0)
			return PSM2_FAST_GO;
		comp = ok == 1 && (!f[EPF_TX_SEL] || (flags & FI_COMPLETION));
		if (comp)
			cq = (uint64_t *) (uintptr_t) f[EPF_TX_CQ];
	}
	with_data = has_data && data != 0;
	head = with_data ? INLINE_HEAD_DATA : INLINE_HEAD;
	if (len > head + CONT_PAYLOAD)
		return PSM2_FAST_GO;
	n = len <= head ? 1 : 2;

	/* The cells, built before taking the lock. */
	memset(cells, 0, n * CELL_PAYLOAD);
	hflags = (tagged ? HF_TAGGED : 0) | (has_data ? HF_DATA : 0);
	h[0] = CELL_INLINE;
	h[1] = with_data ? CELL_HAS_DATA : 0;
	h[2] = (unsigned char) len;
	h[3] = (unsigned char) (len >> 8);
	memcpy(h + 4, &hflags, 4);
	cells[0][2] = tagged ? tag & f[EPF_TAG_MASK] : 0;
	if (with_data)
		cells[0][3] = data;
	if (n == 1) {
		memcpy(h + CELL_PAYLOAD - head, buf, len);
	} else {
		memcpy(h + CELL_PAYLOAD - head, buf, head);
		((unsigned char *) cells[1])[0] = CELL_CONT;
		memcpy((unsigned char *) cells[1] + 1, (const char *) buf + head, len - head);
	}

	lk = psm2_domlock((const void *) (uintptr_t) f[EPF_DOMAIN], &locking);
	if (locking)
		psm2_dlock(lk);
	if (!__atomic_load_n(&f[EPF_SEND_OK], __ATOMIC_RELAXED))
		goto out;
	if (comp) {
		cc = __atomic_load_n(&cq[CQF_CQUEUED], __ATOMIC_RELAXED);
		if (cc >= CQF_CCAP)
			goto out;	/* Go takes the queue over and sends this one */
	}
	d = (uint64_t *) (uintptr_t) __atomic_load_n(
		&((uint64_t *) (uintptr_t) f[EPF_PEERS])[dest], __ATOMIC_RELAXED);
	if (!d || !__atomic_load_n(&d[FP_OK], __ATOMIC_RELAXED))
		goto out;
	if (__atomic_load_n((uint64_t *) (uintptr_t) d[FP_STATE], __ATOMIC_ACQUIRE) != 0)
		goto out;	/* the peer closed: Go fails the send */
	cells[0][1] = d[FP_EPID];
	if (!d[FP_SLOT] ||
	    psm2_push((char *) (uintptr_t) d[FP_RING], d[FP_MASK], (uint64_t *) (uintptr_t) d[FP_SLOT],
		      (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, n))
		goto out;	/* full: Go queues or refuses it */
	d[FP_SENT]++;
	if (comp) {
		/* The send is complete: the message is in the peer's ring (the
		 * provider's choice for every completion level). */
		uint64_t *e = cq + CQF_CENTRIES + cc * CQF_CWORDS;
		uint64_t *pending = (uint64_t *) ((char *) (uintptr_t) f[EPF_DOMAIN] + DOMF_CQUEUED);

		e[0] = (uint64_t) (uintptr_t) context;
		e[1] = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
		e[2] = e[3] = e[4] = e[5] = 0;
		__atomic_store_n(&cq[CQF_CQUEUED], cc + 1, __ATOMIC_RELEASE);
		__atomic_store_n(pending, 1, __ATOMIC_RELEASE);
	}
	/* The doorbell (shm ring2; the fence only where membarrier is not
	 * doing it for us: shm/fence.go). */
	if (d[FP_FENCE])
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n((uint32_t *) (uintptr_t) d[FP_WAIT], __ATOMIC_RELAXED)) {
		uint32_t *seq = (uint32_t *) (uintptr_t) d[FP_SEQ];

		__atomic_add_fetch(seq, 1, __ATOMIC_SEQ_CST);
		psm2_futex(seq, FUTEX_WAKE, INT_MAX);
	}
	ret = PSM2_FAST_DONE;
out:
	if (locking)
		psm2_dunlock(lk);
	return ret;
}

/* psm2_fast_completions hands out the send completions C queued in the
 * CQ's page, when no older entry waits in Go's ring. */
static inline ssize_t psm2_fast_completions(const uint64_t *cqf, void *buf, size_t count)
{
	uint64_t *cq = (uint64_t *) cqf, cc, stride, k;
	const uint64_t *dom;
	uint32_t *lk;
	int locking;
	ssize_t got = 0;

	if (!cq || !__atomic_load_n(&cq[CQF_CQUEUED], __ATOMIC_ACQUIRE))
		return 0;
	dom = (const uint64_t *) (uintptr_t) __atomic_load_n(&cq[CQF_DOMAIN], __ATOMIC_ACQUIRE);
	if (!dom)
		return 0;
	lk = psm2_domlock(dom, &locking);
	if (locking)
		psm2_dlock(lk);
	cc = __atomic_load_n(&cq[CQF_CQUEUED], __ATOMIC_RELAXED);
	if (cc > CQF_CCAP || __atomic_load_n(&cq[CQF_COUNT], __ATOMIC_RELAXED) != 0)
		goto out;
	stride = cq[CQF_STRIDE] / 8;
	for (k = 0; k < cc && k < count; k++) {
		const uint64_t *e = cq + CQF_CENTRIES + k * CQF_CWORDS;

		memcpy((uint64_t *) buf + k * stride, e, stride * 8);
	}
	got = (ssize_t) k;
	memmove(cq + CQF_CENTRIES, cq + CQF_CENTRIES + k * CQF_CWORDS, (cc - k) * CQF_CWORDS * 8);
	__atomic_store_n(&cq[CQF_CQUEUED], cc - k, __ATOMIC_RELEASE);
out:
	if (locking)
		psm2_dunlock(lk);
	return got;
}

/* psm2_fast_recv queues a receive of one buffer, done in C when it can be.
 * flags are the call's (op flags | FI_MSG or FI_TAGGED). */
static inline int psm2_fast_recv(uint64_t *f, void *buf, size_t len, fi_addr_t src,
				 uint64_t tag, uint64_t ignore, void *context,
				 uint64_t flags)
{
	uint64_t *q, n, *d, *peers;
	uint32_t *lk;
	int locking, ret = PSM2_FAST_GO;

	if (!f || !__atomic_load_n(&f[EPF_RECV_OK], __ATOMIC_RELAXED))
		return PSM2_FAST_GO;
	if ((flags & (FI_MULTI_RECV | FI_PEEK | FI_CLAIM | FI_DISCARD)) || (len && !buf))
		return PSM2_FAST_GO;
	lk = psm2_domlock((const void *) (uintptr_t) f[EPF_DOMAIN], &locking);
	if (locking)
		psm2_dlock(lk);
	if (!__atomic_load_n(&f[EPF_RECV_OK], __ATOMIC_RELAXED))
		goto out;
	if (src != FI_ADDR_UNSPEC && (f[EPF_CAPS] & FI_DIRECTED_RECV)) {
		/* Only a source Go has connected (so the AV knows it). */
		if (src >= f[EPF_NPEERS])
			goto out;
		peers = (uint64_t *) (uintptr_t) f[EPF_PEERS];
		d = (uint64_t *) (uintptr_t) __atomic_load_n(&peers[src], __ATOMIC_RELAXED);
		if (!d)
			goto out;
	}
	n = __atomic_load_n(&f[EPF_RQ_COUNT], __ATOMIC_RELAXED);
	if (n >= EPF_RQ_CAP)
		goto out;	/* Go posts the queue and this one */
	q = f + EPF_RQ + n * EPF_RQ_WORDS;
	q[0] = (uint64_t) (uintptr_t) buf;
	q[1] = len;
	q[2] = src;
	q[3] = tag;
	q[4] = ignore;
	q[5] = (uint64_t) (uintptr_t) context;
	q[6] = flags;
	__atomic_store_n(&f[EPF_RQ_COUNT], n + 1, __ATOMIC_RELAXED);
	{
		uint64_t *queued = (uint64_t *) ((char *) (uintptr_t) f[EPF_DOMAIN] + DOMF_QUEUED);

		/* Under the lock: a plain increment, no locked instruction. */
		__atomic_store_n(queued, __atomic_load_n(queued, __ATOMIC_RELAXED) + 1,
				 __ATOMIC_RELEASE);
	}
	ret = PSM2_FAST_DONE;
out:
	if (locking)
		psm2_dunlock(lk);
	return ret;
}

/* psm2_rq_match returns the index of the first queued receive that takes
 * a message of space tagged (0/1), tag and sender epid, or -1. The rules
 * are the engine's (provider/msg.go): the space must agree; tagged
 * receives compare the tag under the tag mask and ignore bits; a directed
 * receive names its source by fi_addr, whose connection knows its id. */
static inline int psm2_rq_match(const uint64_t *f, uint64_t n, int tagged, uint64_t tag,
				uint64_t epid)
{
	uint64_t mask = f[EPF_TAG_MASK];
	int directed = (f[EPF_CAPS] & FI_DIRECTED_RECV) != 0;

	for (uint64_t i = 0; i < n; i++) {
		const uint64_t *q = f + EPF_RQ + i * EPF_RQ_WORDS;

		if (((q[6] & FI_TAGGED) != 0) != tagged)
			continue;
		if (tagged && ((tag ^ (q[3] & mask)) & ~(q[4] | ~mask)))
			continue;
		if (directed && q[2] != FI_ADDR_UNSPEC) {
			const uint64_t *d;

			if (q[2] >= f[EPF_NPEERS])
				continue;
			d = (const uint64_t *) (uintptr_t) ((const uint64_t *) (uintptr_t) f[EPF_PEERS])[q[2]];
			if (!d || d[FP_PEER] != epid)
				continue;
		}
		return (int) i;
	}
	return -1;
}

/* psm2_fast_deliver is the receive half of the fast path: called by
 * fi_cq_read with the CQ's page, it takes inline messages that arrived
 * for the domain's only endpoint, matches them against the receives C
 * queued, copies them into the receive buffers and writes their
 * completions straight into the caller's buffer. It stops at anything
 * else (another cell kind, an unexpected message, a short buffer) and
 * leaves it to Go; it runs only while Go holds nothing these messages or
 * receives could be ordered against (provider/fastep.go: deliverOK) and
 * the CQ holds no older entry. Returns the entries written. */
static inline ssize_t psm2_fast_deliver(const uint64_t *cqf, void *buf, size_t count)
{
	const uint64_t *dom;
	uint64_t *f, stride, mask;
	char *r, *out = buf;
	uint32_t *lk;
	int locking;
	ssize_t got = 0;

	if (!cqf)
		return 0;
	dom = (const uint64_t *) (uintptr_t) __atomic_load_n(&cqf[CQF_DOMAIN], __ATOMIC_ACQUIRE);
	if (!dom)
		return 0;
	f = (uint64_t *) (uintptr_t) __atomic_load_n((uint64_t *) ((char *) dom + DOMF_SOLE_EP),
						    __ATOMIC_ACQUIRE);
	if (!f || !__atomic_load_n(&f[EPF_DELIVER], __ATOMIC_RELAXED) ||
	    f[EPF_RX_CQ] != (uint64_t) (uintptr_t) cqf ||
	    !__atomic_load_n(&f[EPF_RQ_COUNT], __ATOMIC_RELAXED))
		return 0;
	lk = psm2_domlock((const void *) (uintptr_t) f[EPF_DOMAIN], &locking);
	if (locking)
		psm2_dlock(lk);
	if (!__atomic_load_n(&f[EPF_DELIVER], __ATOMIC_RELAXED) ||
	    (uint64_t *) (uintptr_t) __atomic_load_n((uint64_t *) ((char *) dom + DOMF_SOLE_EP),
						     __ATOMIC_RELAXED) != f ||
	    __atomic_load_n(&cqf[CQF_COUNT], __ATOMIC_RELAXED) != 0 ||
	    __atomic_load_n(&cqf[CQF_CQUEUED], __ATOMIC_RELAXED) != 0)
		goto out;
	r = psm2_probe_ring(f[EPF_RING]);
	mask = psm2_probe_mask(f[EPF_RING]);
	if (!r)
		goto out;
	stride = cqf[CQF_STRIDE];
	while ((size_t) got < count) {
		uint64_t *consp = (uint64_t *) (r + RING_CONS);
		uint64_t cons = __atomic_load_n(consp, __ATOMIC_RELAXED);
		const unsigned char *c = (const unsigned char *) r + RING_HDR + (cons & mask) * CELL_SIZE;
		const unsigned char *p = c + 8, *c2 = NULL;
		uint64_t n = __atomic_load_n(&f[EPF_RQ_COUNT], __ATOMIC_RELAXED), len, head, epid, tag, data = 0;
		uint64_t *q, *e;
		uint32_t hflags;
		int i, with_data;

		if (!n || __atomic_load_n((const uint64_t *) c, __ATOMIC_ACQUIRE) != cons + 1)
			break;
		if (p[0] != CELL_INLINE)
			break;
		len = p[2] | (uint64_t) p[3] << 8;
		with_data = p[1] & CELL_HAS_DATA;
		head = with_data ? INLINE_HEAD_DATA : INLINE_HEAD;
		if (len > head) {
			/* One continuation at most here; the unit was published
			 * before its head cell. */
			if (len > head + CONT_PAYLOAD)
				break;
			c2 = (const unsigned char *) r + RING_HDR + ((cons + 1) & mask) * CELL_SIZE;
			if (__atomic_load_n((const uint64_t *) c2, __ATOMIC_ACQUIRE) != cons + 2 ||
			    c2[8] != CELL_CONT)
				break;
		}
		memcpy(&hflags, p + 4, 4);
		memcpy(&epid, p + 8, 8);
		memcpy(&tag, p + 16, 8);
		if (with_data)
			memcpy(&data, p + 24, 8);
		i = psm2_rq_match(f, n, (hflags & HF_TAGGED) != 0, tag, epid);
		if (i < 0)
			break;	/* unexpected: Go keeps it */
		q = f + EPF_RQ + i * EPF_RQ_WORDS;
		if (q[1] < len)
			break;	/* truncated: Go reports it */
		if (len <= head) {
			memcpy((void *) (uintptr_t) q[0], p + CELL_PAYLOAD - head, len);
		} else {
			memcpy((void *) (uintptr_t) q[0], p + CELL_PAYLOAD - head, head);
			memcpy((char *) (uintptr_t) q[0] + head, c2 + 9, len - head);
		}
		if (!f[EPF_RX_SEL] || (q[6] & FI_COMPLETION)) {
			e = (uint64_t *) (out + got * stride);
			e[0] = q[5];
			if (stride > 8) {
				e[1] = FI_RECV | ((hflags & HF_TAGGED) ? FI_TAGGED : FI_MSG) |
				       ((hflags & HF_DATA) ? FI_REMOTE_CQ_DATA : 0);
				e[2] = len;
			}
			if (stride > 24) {
				e[3] = q[0];
				e[4] = data;
			}
			if (stride > 40)
				e[5] = tag;
			got++;
		}
		/* Take the receive out of the queue, keeping the others' order. */
		memmove(q, q + EPF_RQ_WORDS, (n - 1 - i) * EPF_RQ_WORDS * 8);
		__atomic_store_n(&f[EPF_RQ_COUNT], n - 1, __ATOMIC_RELAXED);
		{
			uint64_t *queued = (uint64_t *) ((char *) dom + DOMF_QUEUED);

			__atomic_store_n(queued, __atomic_load_n(queued, __ATOMIC_RELAXED) - 1,
					 __ATOMIC_RELEASE);
		}
		__atomic_store_n(consp, cons + (c2 ? 2 : 1), __ATOMIC_RELEASE);
	}
out:
	if (locking)
		psm2_dunlock(lk);
	return got;
}

#endif
