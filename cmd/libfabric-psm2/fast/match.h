/* match.h: matching a message against the receives C queued, and finding its sender (provider/msg.go has the rules, provider/fastep.go the queue). */
#ifndef PSM2_FAST_MATCH_H
#define PSM2_FAST_MATCH_H

#include "lock.h"

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

		if (((q[RQ_FLAGS] & FI_TAGGED) != 0) != tagged)
			continue;
		if (tagged && ((tag ^ (q[RQ_TAG] & mask)) & ~(q[RQ_IGNORE] | ~mask)))
			continue;
		if (directed && q[RQ_SRC] != FI_ADDR_UNSPEC) {
			const uint64_t *d;

			if (q[RQ_SRC] >= f[EPF_NPEERS])
				continue;
			d = (const uint64_t *) (uintptr_t) ((const uint64_t *) (uintptr_t) f[EPF_PEERS])[q[RQ_SRC]];
			if (!d || d[FP_PEER] != epid)
				continue;
		}
		return (int) i;
	}
	return -1;
}

/* psm2_sender returns the descriptor of sender epid from endpoint page
 * f's senders' table, if it names that sender and is usable (FP_OK), or
 * NULL. */
static inline const uint64_t *psm2_sender(const uint64_t *f, uint64_t epid)
{
	const uint64_t *sd = (const uint64_t *) (uintptr_t)
		f[EPF_SENDERS + ((epid * SENDER_HASH) >> EPF_SENDERS_SHIFT)];

	if (!sd || sd[FP_PEER] != epid || !__atomic_load_n(&sd[FP_OK], __ATOMIC_RELAXED))
		return NULL;
	return sd;
}

#endif /* PSM2_FAST_MATCH_H */
