/* send.c: fi_inject/fi_send/fi_tsend of an inline or eager message to a connected shm peer, and the send completions C queues. */
#include "cell.h"
#include "page.h"
#include "ring.h"
#include "stream.h"

/* psm2_copy_out copies n bytes of the caller's buffer src to a bounce
 * buffer, asking first for the destination's lines for writing (the peer
 * read them last, and each store would wait for its own line): 0, or -1
 * if src faulted. */
static inline int psm2_copy_out(void *dst, const void *src, size_t n)
{
	for (size_t o = 0; o < n && o < 64 * 64; o += 64)
		psm2_prefetchw((char *) dst + o);
	return psm2_ucopy(dst, src, n);
}

/* psm2_fast_send is a send of len bytes to dest, with the message's tag
 * and (with FI_REMOTE_CQ_DATA, has_data) data, done in C when it can be:
 * an inline or eager message to a connected shm peer. flags are the
 * call's; with FI_INJECT its buffer is free on return (at most inject_size bytes); with
 * PSM2_NO_COMPLETION (the fi_inject* calls) it has no completion;
 * otherwise its completion, if one is due, is queued in the transmit CQ's
 * page (provider/fastpath.go) for fi_cq_read. f is the endpoint page
 * (NULL: none). */
int psm2_fast_send(const uint64_t *f, const void *buf, size_t len,
		  fi_addr_t dest, int tagged, uint64_t tag,
		  int has_data, uint64_t data, void *context, uint64_t flags)
{
	uint64_t cells[FAST_INLINE_CELLS][CELL_PAYLOAD / 8];
	struct psm2_inline m;
	uint64_t *d, *cq = NULL, cc = 0, slot, *sl;
	int locking, ret = PSM2_FAST_GO, n, inject = (flags & FI_INJECT) != 0, comp = 0;
	int nocomp = (flags & PSM2_NO_COMPLETION) != 0;

	if (!f || !__atomic_load_n(&f[EPF_SEND_OK], __ATOMIC_RELAXED) || (flags & FI_TRIGGER))
		return PSM2_FAST_GO;
	slot = psm2_peer_slot(f, dest);
	if ((inject && len > f[EPF_INJECT]) || (len && !buf) || slot >= f[EPF_NPEERS])
		return PSM2_FAST_GO;
	if (!nocomp) {
		uint64_t ok = __atomic_load_n(&f[EPF_TX_CQ_OK], __ATOMIC_RELAXED);

		if (ok == 0)
			return PSM2_FAST_GO;
		comp = ok == 1 && (!f[EPF_TX_SEL] || (flags & FI_COMPLETION));
		if (comp)
			cq = (uint64_t *) (uintptr_t) f[EPF_TX_CQ];
	}

	/* The cells, built before taking the lock (the sender id once the
	 * descriptor is read under it). */
	m.len = len;
	m.epid = 0;
	m.tag = tagged ? tag & f[EPF_TAG_MASK] : 0;
	m.data = data;
	m.with_data = has_data && data != 0;
	m.hflags = (tagged ? HF_TAGGED : 0) | (has_data ? HF_DATA : 0);
	/* 0 cells: too long for inline cells; an eager message, if the
	 * peer's descriptor allows one. The caller's bytes are read with
	 * guarded copies (ucopy.c): a buffer the kernel refuses sends the
	 * call to Go, which fails it with FI_EFAULT. */
	if (len && !psm2_ucopy_ready())
		return PSM2_FAST_GO;
	/* The bytes go straight from the caller's buffer into the cells. */
	if ((n = psm2_inline_build(cells, &m, buf, FAST_INLINE_CELLS)) < 0)
		return PSM2_FAST_GO;

	sl = psm2_slot_lock(&f[EPF_LOCK], (const void *) (uintptr_t) f[EPF_DOMAIN], &locking);
	if (!sl || !__atomic_load_n(&f[EPF_SEND_OK], __ATOMIC_RELAXED))
		goto out;
	if (comp) {
		if (cq[CQF_LOCK] != f[EPF_LOCK])
			goto out;	/* not the slot held: Go completes it */
		cc = __atomic_load_n(&cq[CQF_CQUEUED], __ATOMIC_RELAXED);
		if (cc >= CQF_CCAP)
			goto out;	/* Go takes the queue over and sends this one */
		if (__atomic_load_n(&cq[CQF_SLEEPERS], __ATOMIC_RELAXED))
			goto out;	/* a thread blocks in fi_cq_sread: Go wakes it */
	}
	d = (uint64_t *) (uintptr_t) __atomic_load_n(
		&((uint64_t *) (uintptr_t) f[EPF_PEERS])[slot], __ATOMIC_RELAXED);
	if (!d || !__atomic_load_n(&d[FP_OK], __ATOMIC_RELAXED))
		goto out;
	if (__atomic_load_n((uint64_t *) (uintptr_t) d[FP_STATE], __ATOMIC_ACQUIRE) != 0)
		goto out;	/* the peer closed: Go fails the send */
	if (!d[FP_SLOT])
		goto out;
	if (n) {
		memcpy((unsigned char *) cells[0] + CELL_EPID, &d[FP_EPID], 8);
		if (psm2_push((char *) (uintptr_t) d[FP_RING], d[FP_MASK], (uint64_t *) (uintptr_t) d[FP_SLOT],
			      (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, n))
			goto out;	/* full: Go queues or refuses it */
		d[FP_SENT]++;
		d[FP_SENT_BYTES] += len;
	} else {
		/* Eager: into a free bounce buffer of ours (shm's allocBuf
		 * and sendEager), then one cell naming it. */
		uint64_t *busy = (uint64_t *) (uintptr_t) d[FP_BUSY];
		uint64_t *sw = len >= STREAM_MIN ? (uint64_t *) (uintptr_t) d[FP_STREAM] : NULL;
		uint64_t free, bit, sseq = 0, first = len;
		char *dst;
		int i;

		if (len > d[FP_EAGER_MAX] || !d[FP_BUFS] || !busy)
			goto out;
		free = ~__atomic_load_n(busy, __ATOMIC_ACQUIRE) & d[FP_ALL_BUFS];
		if (!free)
			goto out;	/* Go reclaims, waits or refuses */
		if (sw) {
			/* A broken stream whose buffer its receiver still
			 * holds: that receiver must find it broken, and a new
			 * stream would move the stream word on, so none until
			 * the buffer is back (shm/segment.go). */
			uint64_t bw = __atomic_load_n(&sw[1], __ATOMIC_ACQUIRE);

			if (bw && (~free & ((uint64_t) 1 << (((bw & 0xffffffffu) - 1) & 63))))
				sw = NULL;
			else if (bw)
				__atomic_store_n(&sw[1], 0, __ATOMIC_RELAXED);
		}
		i = __builtin_ctzll(free);
		bit = (uint64_t) 1 << i;
		dst = (char *) (uintptr_t) d[FP_BUFS] + (uint64_t) i * d[FP_BUF_SIZE];
		/* Receivers only clear bits, so the bit is still clear. */
		__atomic_fetch_or(busy, bit, __ATOMIC_SEQ_CST);
		if (sw) {
			/* A new stream, nothing filled yet, then its first part
			 * (a stream word naming a stream no cell names is
			 * harmless). */
			sseq = ((__atomic_load_n(sw, __ATOMIC_RELAXED) >> 32) + 1) & 0xffffffffu;
			first = STREAM_FIRST;
			__atomic_store_n(sw, sseq << 32, __ATOMIC_RELEASE);
		}
		if (len >= STREAM_NT_MIN ? psm2_ucopy_nt(dst, buf, first) : psm2_copy_out(dst, buf, first)) {
			__atomic_fetch_and(busy, ~bit, __ATOMIC_SEQ_CST);
			goto out;
		}
		if (sw)
			__atomic_store_n(sw, sseq << 32 | first, __ATOMIC_RELEASE);
		m.epid = d[FP_EPID];
		m.data = has_data ? data : 0;
		psm2_eager_build(cells[0], &m, (uint16_t) i);
		if (sw) {
			((unsigned char *) cells[0])[CELL_FLAGS] |= CELL_STREAM;
			memcpy((unsigned char *) cells[0] + CELL_W5, &sseq, 8);
		}
		if (psm2_push((char *) (uintptr_t) d[FP_RING], d[FP_MASK], (uint64_t *) (uintptr_t) d[FP_SLOT],
			      (const uint64_t (*)[CELL_PAYLOAD / 8]) cells, 1)) {
			__atomic_fetch_and(busy, ~bit, __ATOMIC_SEQ_CST);
			goto out;
		}
		((int32_t *) (uintptr_t) d[FP_HOLDER])[i] = (int32_t) d[FP_IDX];
		d[FP_EAGER_SENT]++;
		d[FP_EAGER_BYTES] += len;
		if (sw) {
			/* The receiver may start now; then the rest. */
			psm2_doorbell(d);
			for (uint64_t off = first; off < len;) {
				uint64_t k = len - off < STREAM_CHUNK ? len - off : STREAM_CHUNK;

				if (len >= STREAM_NT_MIN ? psm2_ucopy_nt(dst + off, (const char *) buf + off, k) :
			 psm2_copy_out(dst + off, (const char *) buf + off, k)) {
					/* The receiver drops the message (its buffer
					 * back); Go sends it again, or fails the call
					 * with FI_EFAULT as it finds the same fault. */
					__atomic_store_n(&sw[1], sseq << 32 | (uint64_t) (i + 1), __ATOMIC_RELEASE);
					__atomic_store_n(sw, sseq << 32 | STREAM_BROKEN, __ATOMIC_RELEASE);
					goto out;
				}
				off += k;
				__atomic_store_n(sw, sseq << 32 | off, __ATOMIC_RELEASE);
			}
		}
	}
	if (comp) {
		/* The send is complete: the message is in the peer's ring (the
		 * provider's choice for every completion level). */
		uint64_t *e = cq + CQF_CENTRIES + cc * CQF_CWORDS;
		uint64_t *pending = (uint64_t *) ((char *) sl + LSLOT_CQUEUED);

		/* Context and flags: a send's other fields are 0. */
		e[0] = (uint64_t) (uintptr_t) context;
		e[1] = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
		__atomic_store_n(&cq[CQF_CQUEUED], cc + 1, __ATOMIC_RELEASE);
		if (!__atomic_load_n(pending, __ATOMIC_RELAXED))
			__atomic_store_n(pending, 1, __ATOMIC_RELEASE);
	}
	psm2_doorbell(d);
	ret = PSM2_FAST_DONE;
out:
	psm2_slot_unlock(sl, locking);
	return ret;
}

/* psm2_fast_completions hands out the send completions C queued in the
 * CQ's page, when no older entry waits in Go's ring. */
ssize_t psm2_fast_completions(const uint64_t *cqf, void *buf, size_t count)
{
	uint64_t *cq = (uint64_t *) cqf, cc, stride, k, *sl;
	const uint64_t *dom;
	int locking;
	ssize_t got = 0;

	if (!cq || !__atomic_load_n(&cq[CQF_CQUEUED], __ATOMIC_ACQUIRE))
		return 0;
	dom = (const uint64_t *) (uintptr_t) __atomic_load_n(&cq[CQF_DOMAIN], __ATOMIC_ACQUIRE);
	if (!dom)
		return 0;
	sl = psm2_slot_lock(&cq[CQF_LOCK], dom, &locking);
	if (!sl)
		return 0;
	cc = __atomic_load_n(&cq[CQF_CQUEUED], __ATOMIC_RELAXED);
	if (cc > CQF_CCAP || __atomic_load_n(&cq[CQF_COUNT], __ATOMIC_RELAXED) != 0)
		goto out;
	stride = cq[CQF_STRIDE] / 8;
	for (k = 0; k < cc && k < count; k++) {
		const uint64_t *e = cq + CQF_CENTRIES + k * CQF_CWORDS;
		uint64_t *o = (uint64_t *) buf + k * stride;

		/* The entry in the CQ's format: context, then flags, len,
		 * buf, data, tag as it has them (all 0 past the flags). */
		o[0] = e[0];
		if (stride > 1) {
			o[1] = e[1];
			memset(o + 2, 0, (stride - 2) * 8);
		}
	}
	got = (ssize_t) k;
	memmove(cq + CQF_CENTRIES, cq + CQF_CENTRIES + k * CQF_CWORDS, (cc - k) * CQF_CWORDS * 8);
	__atomic_store_n(&cq[CQF_CQUEUED], cc - k, __ATOMIC_RELEASE);
out:
	psm2_slot_unlock(sl, locking);
	return got;
}
