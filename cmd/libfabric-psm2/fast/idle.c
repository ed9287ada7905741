/* idle.c: the idle answer of fi_cq_read, given without calling into Go. */
#include "ring.h"

/* psm2_is_held: the unit at position cons of ring r (probe word w) is one
 * held lists, unread (the consumer is still at it), and still the last in
 * the ring. */
static inline int psm2_is_held(const struct psm2_held *held, uint64_t w, const char *r, uint64_t cons)
{
	for (int j = 0; j < held->n; j++) {
		if (held->ring[j] != w || held->at[j] != cons)
			continue;
		return __atomic_load_n((const uint64_t *) (psm2_cell((char *) r, psm2_probe_mask(w), held->end[j]) +
							   CELL_SEQ),
				       __ATOMIC_ACQUIRE) != held->end[j] + 1;
	}
	return 0;
}

/* psm2_idle: psm2_fast_idle, with the messages in held (NULL: none)
 * counting as nothing arrived; any_busy: also when Go has work the rings
 * do not show (DOMF_BUSY). */
static inline int psm2_idle(const uint64_t *cqf, const struct psm2_held *held, int any_busy)
{
	const uint64_t *f = cqf, *d, *sl;
	uint64_t n;

	if (!f || __atomic_load_n(&f[CQF_COUNT], __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&f[CQF_CQUEUED], __ATOMIC_ACQUIRE))
		return 0;
	d = (const uint64_t *) (uintptr_t) __atomic_load_n(&f[CQF_DOMAIN], __ATOMIC_ACQUIRE);
	if (!d || (!any_busy && __atomic_load_n(&d[DOMF_BUSY / 8], __ATOMIC_ACQUIRE)))
		return 0;
	sl = (const uint64_t *) (uintptr_t) __atomic_load_n(&f[CQF_LOCK], __ATOMIC_ACQUIRE);
	if (!sl)
		return 0;
	if (__atomic_load_n(&sl[LSLOT_QUEUED / 8], __ATOMIC_ACQUIRE)) {
		/* Receives queued by psm2_fast_recv: Go posts them, unless C delivers
		 * to them itself (psm2_fast_deliver) through this CQ, which it
		 * does for whatever arrives in the rings checked below. So
		 * every endpoint of the CQ's lock slot holding some must be
		 * one C delivers for. */
		uint64_t neps = __atomic_load_n(&d[DOMF_NEPS / 8], __ATOMIC_ACQUIRE);

		if (!neps)
			return 0;
		for (uint64_t i = 0; i < neps && i < DOMF_MAX_EPS; i++) {
			const uint64_t *ep = (const uint64_t *) (uintptr_t)
				__atomic_load_n(&d[DOMF_EPS / 8 + i], __ATOMIC_ACQUIRE);

			if (!ep)
				return 0;
			if (!__atomic_load_n(&ep[EPF_RQ_COUNT], __ATOMIC_ACQUIRE) ||
			    __atomic_load_n(&ep[EPF_LOCK], __ATOMIC_RELAXED) != (uint64_t) (uintptr_t) sl)
				continue;
			if (!__atomic_load_n(&ep[EPF_DELIVER], __ATOMIC_ACQUIRE) ||
			    ep[EPF_RX_CQ] != (uint64_t) (uintptr_t) f)
				return 0;
		}
	}
	/* The rings of the slot's endpoints (and of endpoints no CQ
	 * serves): another slot's belong to CQs other threads read. */
	n = __atomic_load_n(&sl[LSLOT_NRINGS / 8], __ATOMIC_ACQUIRE);
	if (n == LSLOT_BLIND)
		return 0;
	for (uint64_t i = 0; i < n && i < LSLOT_MAX_RINGS; i++) {
		/* One word: the ring and its validated size together. A ring
		 * of an endpoint closing meanwhile stays mapped (retired, not
		 * unmapped: shm/vm.go), so a stale word reads harmless memory. */
		uint64_t w = __atomic_load_n(&sl[LSLOT_RINGS / 8 + i], __ATOMIC_ACQUIRE), cons, seq;
		const char *r = psm2_probe_ring(w);

		if (!r)
			return 0;
		cons = __atomic_load_n((const uint64_t *) (r + RING_CONS), __ATOMIC_ACQUIRE);
		seq = __atomic_load_n((const uint64_t *) (r + RING_HDR + (cons & psm2_probe_mask(w)) * CELL_SIZE +
							  CELL_SEQ), __ATOMIC_ACQUIRE);
		if (seq == cons + 1 && !(held && psm2_is_held(held, w, r, cons)))
			return 0;
	}
	return 1;
}

/* psm2_fast_idle answers, without calling into Go, that a read would find
 * nothing: no entry queued, no work Go knows of, and no cell arrived in
 * any receive ring of the CQ's lock slot (provider/fastpath.go has the layout;
 * shm.Endpoint.RingProbe the ring's). Any doubt means "not idle". */
int psm2_fast_idle(const uint64_t *cqf)
{
	return psm2_idle(cqf, NULL, 0);
}

int psm2_fast_idle_held(const uint64_t *cqf, const struct psm2_held *held)
{
	return held->n && psm2_idle(cqf, held, 0);
}

int psm2_fast_empty(const uint64_t *cqf)
{
	return psm2_idle(cqf, NULL, 1);
}

int psm2_fast_peer_cpu(const uint64_t *cqf, int cpu)
{
	const uint64_t *sl;
	uint64_t n;

	if (!cqf || cpu < 0)
		return 0;
	sl = (const uint64_t *) (uintptr_t) __atomic_load_n(&cqf[CQF_LOCK], __ATOMIC_ACQUIRE);
	if (!sl)
		return 0;
	n = __atomic_load_n(&sl[LSLOT_NRINGS / 8], __ATOMIC_ACQUIRE);
	for (uint64_t i = 0; i < n && i < LSLOT_MAX_RINGS; i++) {
		const char *r = psm2_probe_ring(__atomic_load_n(&sl[LSLOT_RINGS / 8 + i], __ATOMIC_ACQUIRE));

		if (r && __atomic_load_n((const uint64_t *) (r + RING_PROD_CPU), __ATOMIC_RELAXED) ==
				 (uint64_t) cpu + 1)
			return 1;
	}
	return 0;
}
