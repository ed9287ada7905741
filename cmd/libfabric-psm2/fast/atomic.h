/* atomic.h: what the atomic fast path's two halves share (serve.c, atomic.c). */
#ifndef PSM2_FAST_ATOMIC_H
#define PSM2_FAST_ATOMIC_H

#include "cell.h"
#include "ring.h"

/* The atomic fast path at the target (provider/fastrma.go): C serves a
 * small atomic request when it can do all of what Go's atomicServe would
 * on its success path, and leaves everything else in the ring. */

/* ATOMIC_MAX is the longest atomic request or answer C sends or serves:
 * any inline message (PUSH_CELLS_MAX cells, 4377 bytes), so up to 4353
 * operand bytes (2176 for a compare, which carries two arrays): the 4 KiB
 * and 2 KiB that Debian's shm provider serves, and then some. */
#define ATOMIC_MAX (INLINE_HEAD + (PUSH_CELLS_MAX - 1) * CONT_PAYLOAD)

/* psm2_atomic_fits says whether an atomic of n operand bytes of kind and
 * op fits: its request (the RMA prefix and its operands) and its answer
 * (the old values) are both inline messages. */
static inline int psm2_atomic_fits(uint32_t kind, int op, uint64_t n)
{
	uint64_t body = op == FI_ATOMIC_READ ? 0 : kind == RMA_ATOMIC_COMPARE ? 2 * n : n;

	return n <= ATOMIC_MAX && RMA_PREFIX + body <= ATOMIC_MAX;
}

/* psm2_head_hflags peeks, without the lock, at the head cell of endpoint
 * page f's ring: 1 with its header flags if it is a published inline,
 * eager or answer-in-buffer cell, else 0 (a hint; the caller re-reads
 * under the lock). */
static inline int psm2_head_hflags(const uint64_t *f, uint32_t *hflags)
{
	uint64_t w = __atomic_load_n(&f[EPF_RING], __ATOMIC_RELAXED), cons;
	char *r = psm2_probe_ring(w);
	const unsigned char *c;

	if (!r)
		return 0;
	cons = __atomic_load_n((const uint64_t *) (r + RING_CONS), __ATOMIC_ACQUIRE);
	c = (const unsigned char *) psm2_cell(r, psm2_probe_mask(w), cons);
	if (__atomic_load_n((const uint64_t *) (c + CELL_SEQ), __ATOMIC_ACQUIRE) != cons + 1 ||
	    (c[CELL_PAYLOAD_OFF + CELL_KIND] != CELL_INLINE && c[CELL_PAYLOAD_OFF + CELL_KIND] != CELL_EAGER &&
	     c[CELL_PAYLOAD_OFF + CELL_KIND] != CELL_ANSWER_BUF))
		return 0;
	memcpy(hflags, c + CELL_PAYLOAD_OFF + CELL_HFLAGS, 4);
	return 1;
}

#endif /* PSM2_FAST_ATOMIC_H */
