/* ring.h: the receive ring of an shm endpoint seen from C (internal/ring/ring.go, slots.go):
 * probe words, reserve and commit of cells, the doorbell. */
#ifndef PSM2_FAST_RING_H
#define PSM2_FAST_RING_H

#include "lock.h"

/* A GNU extension (glibc reads it from rseq): declared here so that no
 * includer needs _GNU_SOURCE. */
extern int sched_getcpu(void);

/* A ring probe word (transport.RingProbe): the base address with log2 of
 * the cell count in the low 6 bits. */
static inline char *psm2_probe_ring(uint64_t w) { return (char *) (uintptr_t) (w & ~(uint64_t) PROBE_LOG2_MASK); }
static inline uint64_t psm2_probe_mask(uint64_t w) { return ((uint64_t) 1 << (w & PROBE_LOG2_MASK)) - 1; }

/* psm2_prefetchw asks for the line at p in a writable state (x86's
 * PREFETCHW, a no-op where it is not implemented). */
static inline void psm2_prefetchw(const void *p)
{
#if defined(__x86_64__)
	__asm__ volatile("prefetchw %0" : : "m"(*(const char *) p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/* psm2_bell rings the doorbell of the peer descriptor d names, if one of
 * its threads waits in it (shm's ring2, after its fence: the caller's). */
static inline void psm2_bell(const uint64_t *d)
{
	if (__atomic_load_n((uint32_t *) (uintptr_t) d[FP_WAIT], __ATOMIC_RELAXED)) {
		uint32_t *seq = (uint32_t *) (uintptr_t) d[FP_SEQ];

		__atomic_add_fetch(seq, 1, __ATOMIC_SEQ_CST);
		psm2_futex(seq, FUTEX_WAKE, INT_MAX);
	}
}

/* psm2_doorbell is what a producer does after it published cells for the
 * peer descriptor d names: the StoreLoad fence (only where membarrier is
 * not doing it for us: shm/fence.go, FP_FENCE), then the bell. */
static inline void psm2_doorbell(const uint64_t *d)
{
	if (d[FP_FENCE])
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	psm2_bell(d);
}

/* psm2_cell is the cell at position pos of ring r of mask+1 cells. */
static inline char *psm2_cell(char *r, uint64_t mask, uint64_t pos)
{
	return r + RING_HDR + (pos & mask) * CELL_SIZE;
}

/* psm2_reserve reserves n (1 to PUSH_CELLS_MAX) cells of ring r of
 * mask+1 cells, as the producer owning slot (its pos word; n is the
 * next): the same protocol as shm's TryPushCells through a claimed view.
 * Returns 0 with the first position in *at (any value: positions wrap),
 * or -1 if the ring has no room (or looks corrupt: Go sorts that out).
 * psm2_commit must follow a reservation. */
static inline int psm2_reserve(char *r, uint64_t mask, uint64_t *slot, uint64_t n, uint64_t *at)
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
		/* Announce before reserving (internal/ring/slots.go); the locked CAS
		 * orders these stores before the reservation. */
		__atomic_store_n(&slot[SLOT_N], n, __ATOMIC_RELAXED);
		__atomic_store_n(&slot[SLOT_POS], pos, __ATOMIC_RELAXED);
		if (__atomic_compare_exchange_n(prod, &pos, pos + n, 0, __ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED)) {
			/* The CPU hint, on the line the CAS just took (2 ns). */
			__atomic_store_n((uint64_t *) (r + RING_PROD_CPU), (uint64_t) (sched_getcpu() + 1),
					 __ATOMIC_RELAXED);
			*at = pos;
			return 0;
		}
	}
}

/* psm2_commit writes the n cells reserved at pos and publishes them. */
static inline void psm2_commit(char *r, uint64_t mask, uint64_t pos,
			       const uint64_t cells[][CELL_PAYLOAD / 8], uint64_t n)
{
	/* Ask for every cell's line for writing at once: the consumer read
	 * them last, so each store would otherwise wait for its own line. */
	for (uint64_t k = n; k-- > 0;)
		psm2_prefetchw(psm2_cell(r, mask, pos + k));
	for (uint64_t k = n; k-- > 0;) {
		char *c = psm2_cell(r, mask, pos + k);

		memcpy(c + CELL_PAYLOAD_OFF, cells[k], CELL_PAYLOAD);
		__atomic_store_n((uint64_t *) (c + CELL_SEQ), pos + k + 1, __ATOMIC_RELEASE);
	}
}

/* psm2_push pushes n cells (psm2_reserve, psm2_commit): 0 on success, -1
 * if the ring has no room. */
static inline int psm2_push(char *r, uint64_t mask, uint64_t *slot,
			    const uint64_t cells[][CELL_PAYLOAD / 8], uint64_t n)
{
	uint64_t pos;

	if (psm2_reserve(r, mask, slot, n, &pos))
		return -1;
	psm2_commit(r, mask, pos, cells, n);
	return 0;
}

#endif /* PSM2_FAST_RING_H */
