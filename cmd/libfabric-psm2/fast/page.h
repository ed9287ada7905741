/* page.h: the domain page and the CQ page seen from C (provider/fastpath.go): the domain lock word, the endpoints C may deliver for. */
#ifndef PSM2_FAST_PAGE_H
#define PSM2_FAST_PAGE_H

#include "lock.h"

/* psm2_domlock returns the lock word of domain page dom, and whether the
 * domain locks at all. */
/* psm2_peer_slot is fi_addr a's slot in endpoint page f's peer table:
 * a rotated left by the AV's rx_ctx_bits (provider/fastep.go fastSlot),
 * so that fi_rx_addr's context index lands next to its base address. */
static inline uint64_t psm2_peer_slot(const uint64_t *f, uint64_t a)
{
	uint64_t b = f[EPF_RX_BITS];

	return b ? (a << b) | (a >> (64 - b)) : a;
}

static inline uint32_t *psm2_domlock(const void *domp, int *locking)
{
	char *dom = (char *) domp;

	*locking = __atomic_load_n((uint32_t *) (dom + DOMF_LOCKING), __ATOMIC_ACQUIRE) != 0;
	return (uint32_t *) (dom + DOMF_LOCK);
}

/* psm2_cq_lock_empty takes the lock of domain page dom (if it locks:
 * *lk, *locking, for the caller to let go) and says whether CQ page cqf
 * then holds no older entry (Go's ring and C's queue empty), as C must
 * find before it writes completions straight into the caller's buffer. */
static inline int psm2_cq_lock_empty(const uint64_t *cqf, const void *dom, uint32_t **lk, int *locking)
{
	*lk = psm2_domlock(dom, locking);
	if (*locking)
		psm2_dlock(*lk);
	return __atomic_load_n(&cqf[CQF_COUNT], __ATOMIC_RELAXED) == 0 &&
	       __atomic_load_n(&cqf[CQF_CQUEUED], __ATOMIC_RELAXED) == 0;
}

/* psm2_fast_ep returns the i-th endpoint page domain page dom lists if C
 * may deliver for it through CQ page cqf now (it has receives queued, or,
 * with held, messages may wait in its ring for receives to come), or
 * NULL. */
static inline uint64_t *psm2_fast_ep(const uint64_t *dom, uint64_t i, const uint64_t *cqf, int held)
{
	uint64_t *f = (uint64_t *) (uintptr_t) __atomic_load_n((const uint64_t *) ((const char *) dom + DOMF_EPS) + i,
							      __ATOMIC_ACQUIRE);

	if (!f || !__atomic_load_n(&f[EPF_DELIVER], __ATOMIC_RELAXED) ||
	    f[EPF_RX_CQ] != (uint64_t) (uintptr_t) cqf || (!held && !__atomic_load_n(&f[EPF_RQ_COUNT], __ATOMIC_RELAXED)))
		return NULL;
	return f;
}

#endif /* PSM2_FAST_PAGE_H */
