/* page.h: the domain page and the CQ page seen from C (provider/fastpath.go): the lock slots, the endpoints C may deliver for. */
#ifndef PSM2_FAST_PAGE_H
#define PSM2_FAST_PAGE_H

#include "lock.h"

/* psm2_peer_slot is fi_addr a's slot in endpoint page f's peer table:
 * a rotated left by the AV's rx_ctx_bits (provider/fastep.go fastSlot),
 * so that fi_rx_addr's context index lands next to its base address. */
static inline uint64_t psm2_peer_slot(const uint64_t *f, uint64_t a)
{
	uint64_t b = f[EPF_RX_BITS];

	return b ? (a << b) | (a >> (64 - b)) : a;
}

/* psm2_slot_lock takes the lock slot that the page word at wp names (an
 * endpoint page's EPF_LOCK, a CQ page's CQF_LOCK), if domain page dom
 * locks at all (*locking), and returns it: NULL if the word is 0 (a page
 * given back), and the caller calls Go, holding nothing. Go moves a page
 * to another slot only while it holds every slot, so the word is read
 * again once the slot is held (provider/lockgroup.go). */
static inline uint64_t *psm2_slot_lock(const uint64_t *wp, const void *dom, int *locking)
{
	*locking = __atomic_load_n((const uint32_t *) ((const char *) dom + DOMF_LOCKING), __ATOMIC_ACQUIRE) != 0;
	for (;;) {
		uint64_t s = __atomic_load_n(wp, __ATOMIC_ACQUIRE);

		if (!s || !*locking)
			return (uint64_t *) (uintptr_t) s;
		psm2_dlock((uint32_t *) (uintptr_t) (s + LSLOT_LOCK));
		if (__atomic_load_n(wp, __ATOMIC_RELAXED) == s)
			return (uint64_t *) (uintptr_t) s;
		psm2_dunlock((uint32_t *) (uintptr_t) (s + LSLOT_LOCK));
	}
}

/* psm2_slot_unlock lets go of what psm2_slot_lock took. */
static inline void psm2_slot_unlock(uint64_t *slot, int locking)
{
	if (slot && locking)
		psm2_dunlock((uint32_t *) ((char *) slot + LSLOT_LOCK));
}

/* psm2_slot_add adds v to the counter at byte offset off of a slot the
 * caller holds: a plain update, no locked instruction. */
static inline void psm2_slot_add(uint64_t *slot, int off, uint64_t v)
{
	uint64_t *w = (uint64_t *) ((char *) slot + off);

	__atomic_store_n(w, __atomic_load_n(w, __ATOMIC_RELAXED) + v, __ATOMIC_RELEASE);
}

/* psm2_cq_lock_empty takes the lock slot of CQ page cqf (*slot, *locking,
 * for the caller to let go with psm2_slot_unlock) and says whether the CQ
 * then holds no older entry (Go's ring and C's queue empty), as C must
 * find before it writes completions straight into the caller's buffer. */
static inline int psm2_cq_lock_empty(const uint64_t *cqf, const void *dom, uint64_t **slot, int *locking)
{
	*slot = psm2_slot_lock(&cqf[CQF_LOCK], dom, locking);
	return *slot && __atomic_load_n(&cqf[CQF_COUNT], __ATOMIC_RELAXED) == 0 &&
	       __atomic_load_n(&cqf[CQF_CQUEUED], __ATOMIC_RELAXED) == 0;
}

/* psm2_fast_ep returns the i-th endpoint page domain page dom lists if C
 * may deliver for it through CQ page cqf now (it has receives queued, or,
 * with held, messages may wait in its ring for receives to come), or
 * NULL. An endpoint whose receive CQ that is shares its lock slot. */
static inline uint64_t *psm2_fast_ep(const uint64_t *dom, uint64_t i, const uint64_t *cqf, int held)
{
	uint64_t *f = (uint64_t *) (uintptr_t) __atomic_load_n((const uint64_t *) ((const char *) dom + DOMF_EPS) + i,
							      __ATOMIC_ACQUIRE);

	if (!f || !__atomic_load_n(&f[EPF_DELIVER], __ATOMIC_RELAXED) ||
	    f[EPF_RX_CQ] != (uint64_t) (uintptr_t) cqf || f[EPF_LOCK] != cqf[CQF_LOCK] ||
	    (!held && !__atomic_load_n(&f[EPF_RQ_COUNT], __ATOMIC_RELAXED)))
		return NULL;
	return f;
}

#endif /* PSM2_FAST_PAGE_H */
