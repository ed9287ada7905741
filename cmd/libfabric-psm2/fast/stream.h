/* stream.h: streamed eager messages: the receiver copies out behind the sender. */
#ifndef PSM2_FAST_STREAM_H
#define PSM2_FAST_STREAM_H

#include "lock.h"

/* Streamed eager messages (shm/cell.go: cellStream): a C sender pushes
 * the cell of an eager message of STREAM_MIN bytes or more once the first
 * STREAM_FIRST bytes are in the bounce buffer, then copies the rest in
 * STREAM_CHUNK pieces (non-temporal stores from STREAM_NT_MIN bytes),
 * publishing the bytes filled in its segment's stream word after each;
 * the receiver copies out behind it, and leaves the message to Go after
 * STREAM_WAIT_NS without progress. The numbers, and why, are shm's
 * (cell.go). */

/* psm2_stream_copy copies the n bytes of stream seq of the sender whose
 * stream word is w from its bounce buffer src to dst as the sender fills
 * it: 0, or -1 (the stream broke, the sender is slow, or dst faulted: Go
 * takes the message). */
static inline int psm2_stream_copy(const uint64_t *w, uint64_t seq, char *dst, const char *src, uint64_t n)
{
	uint64_t done = 0, spins = 0, since = 0;

	if (!w)
		return -1;
	while (done < n) {
		uint64_t v = __atomic_load_n(w, __ATOMIC_ACQUIRE), avail;

		if ((v >> 32) != (seq & 0xffffffffu)) {
			/* A later stream: ours is full, unless it broke (the
			 * word after names the last broken one). */
			uint64_t bw = __atomic_load_n(&w[1], __ATOMIC_ACQUIRE);

			if (bw && (bw >> 32) == (seq & 0xffffffffu))
				return -1;
			avail = n;
		}
		else if ((v & 0xffffffffu) == STREAM_BROKEN)
			return -1;
		else
			avail = (v & 0xffffffffu) < n ? (v & 0xffffffffu) : n;
		if (avail > done) {
			if (psm2_ucopy(dst + done, src + done, avail - done))
				return -1;
			done = avail;
			spins = since = 0;
		} else if (++spins % 256 == 0) {
			struct timespec ts;
			uint64_t t;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			t = (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
			if (!since)
				since = t;
			else if (t - since > STREAM_WAIT_NS)
				return -1;
		} else {
#if defined(__x86_64__)
			__builtin_ia32_pause();
#endif
		}
	}
	return 0;
}

#endif /* PSM2_FAST_STREAM_H */
