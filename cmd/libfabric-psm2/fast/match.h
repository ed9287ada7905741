/* match.h: matching a message against the receives C queued, finding its sender, and the run of unexpected messages a ring holds (provider/match has the rules, provider/fastep.go the queue). */
#ifndef PSM2_FAST_MATCH_H
#define PSM2_FAST_MATCH_H

#include "cell.h"
#include "page.h"

/* psm2_takes says whether a receive of flags qflags, tag qtag, ignore
 * bits qign and source fi_addr qsrc, queued on endpoint page f, takes a
 * message of space tagged (0/1), tag and sender epid. The rules are the
 * engine's (provider/match): the space must agree; tagged receives
 * compare the tag under the tag mask and ignore bits; a directed receive
 * names its source by fi_addr, whose connection knows its id. */
static inline int psm2_takes(const uint64_t *f, uint64_t qflags, uint64_t qtag, uint64_t qign, uint64_t qsrc,
			     int tagged, uint64_t tag, uint64_t epid)
{
	uint64_t mask = f[EPF_TAG_MASK];

	if (((qflags & FI_TAGGED) != 0) != tagged)
		return 0;
	if (tagged && ((tag ^ (qtag & mask)) & ~(qign | ~mask)))
		return 0;
	if ((f[EPF_CAPS] & FI_DIRECTED_RECV) && qsrc != FI_ADDR_UNSPEC) {
		const uint64_t *d, slot = psm2_peer_slot(f, qsrc);

		if (slot >= f[EPF_NPEERS])
			return 0;
		d = (const uint64_t *) (uintptr_t) ((const uint64_t *) (uintptr_t) f[EPF_PEERS])[slot];
		if (!d || d[FP_PEER] != epid)
			return 0;
	}
	return 1;
}

/* psm2_rq returns the first receive endpoint page f's queue holds (the
 * queue's head entry; EPF_RQ_COUNT of them follow). */
static inline uint64_t *psm2_rq(const uint64_t *f)
{
	return (uint64_t *) (uintptr_t) f[EPF_RQ] + f[EPF_RQ_HEAD] * EPF_RQ_WORDS;
}

/* psm2_rq_match returns the index of the first queued receive that takes
 * a message of space tagged (0/1), tag and sender epid, or -1. */
static inline int psm2_rq_match(const uint64_t *f, uint64_t n, int tagged, uint64_t tag,
				uint64_t epid)
{
	const uint64_t *first = psm2_rq(f);

	for (uint64_t i = 0; i < n; i++) {
		const uint64_t *q = first + i * EPF_RQ_WORDS;

		if (psm2_takes(f, q[RQ_FLAGS], q[RQ_TAG], q[RQ_IGNORE], q[RQ_SRC], tagged, tag, epid))
			return (int) i;
	}
	return -1;
}

/* psm2_ux_takes says whether a receive (as psm2_takes) would take one of
 * the unexpected messages Go holds for endpoint page f (provider/fastep.go,
 * publishUXLocked), or Go holds more than the page names: then Go must
 * post it. */
static inline int psm2_ux_takes(const uint64_t *f, uint64_t qflags, uint64_t qtag, uint64_t qign, uint64_t qsrc)
{
	uint64_t n = f[EPF_UX_COUNT];

	if (n > UX_KEYS)
		return 1;
	for (uint64_t k = 0; k < n; k++) {
		const uint64_t *u = f + EPF_UX + k * UX_KEY_WORDS;

		if (psm2_takes(f, qflags, qtag, qign, qsrc, u[0] != 0, u[1], u[2]))
			return 1;
	}
	return 0;
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

/* psm2_held_run: the message at the head of ring r (mask+1 cells) no
 * receive takes ends at position at, and n receives are queued in page f.
 * Returns the position after the messages that follow it if they are
 * inline or eager messages, HOLD_UNITS at most with it (the cells of any
 * delivered already, CELL_TAKEN, passed over), none of them taken by a
 * queued receive, and the last of them the last cell published (a run
 * of unexpected messages the receives to come may take in order: the run
 * shm's holdHead leaves in the ring for Go too); else 0. */
static inline uint64_t psm2_held_run(const uint64_t *f, char *r, uint64_t mask, uint64_t at, uint64_t n)
{
	for (int u = 1;;) {
		const unsigned char *c = (const unsigned char *) psm2_cell(r, mask, at);
		struct psm2_inline m;
		uint16_t idx;
		int cells;

		if (__atomic_load_n((const uint64_t *) (c + CELL_SEQ), __ATOMIC_ACQUIRE) != at + 1)
			return at;
		if (c[CELL_PAYLOAD_OFF + CELL_KIND] == CELL_TAKEN) {
			at++;	/* delivered already (psm2_later_match) */
			continue;
		}
		if (u == HOLD_UNITS)
			return 0;
		if (!(cells = psm2_inline_head(c + CELL_PAYLOAD_OFF, &m))) {
			if (!psm2_eager_head(c + CELL_PAYLOAD_OFF, &m, &idx))
				return 0;
			cells = 1;
		}
		if (n && psm2_rq_match(f, n, (m.hflags & HF_TAGGED) != 0, m.tag, m.epid) >= 0)
			return 0;
		at += (uint64_t) cells;
		u++;
	}
}

/* psm2_later_match: the message at the head of ring r (mask+1 cells), at
 * position cons, no receive takes and ends at position at, and n
 * receives are queued in page f. Returns the position of the first inline
 * or eager message behind it that one of them takes, among the next
 * HOLD_UNITS messages, all of which C parses (no rendezvous or control
 * cell before it: those are Go's), and ending within TAKE_SPAN cells of
 * the head (a quarter of the ring at most), or 0. C delivers that one out
 * of ring order (psm2_deliver_ep) and marks its cells CELL_TAKEN: the
 * message at the head waits for its receive, as an unexpected message in
 * Go's queue would, and a receive does not wait behind it for a message
 * from another sender (an exchange with two neighbours, whose messages
 * interleave in one ring). The span bound keeps the ring from filling
 * with taken cells behind a head whose receive comes late (a collective's
 * early message beside a ping-pong): past it, Go takes the head into its
 * queue and the ring drains. */
static inline uint64_t psm2_later_match(const uint64_t *f, char *r, uint64_t mask, uint64_t cons, uint64_t at,
					uint64_t n)
{
	uint64_t span = TAKE_SPAN < (mask + 1) / 4 ? TAKE_SPAN : (mask + 1) / 4;

	if (!n)
		return 0;
	for (int u = 1; u <= HOLD_UNITS;) {
		const unsigned char *c = (const unsigned char *) psm2_cell(r, mask, at);
		struct psm2_inline m;
		uint16_t idx;
		int cells;

		/* Within the span, taken cells too: the scan costs a few
		 * cells whatever a sender writes into the ring. */
		if (at - cons >= span ||
		    __atomic_load_n((const uint64_t *) (c + CELL_SEQ), __ATOMIC_ACQUIRE) != at + 1)
			return 0;
		if (c[CELL_PAYLOAD_OFF + CELL_KIND] == CELL_TAKEN) {
			at++;
			continue;
		}
		if (!(cells = psm2_inline_head(c + CELL_PAYLOAD_OFF, &m))) {
			if (!psm2_eager_head(c + CELL_PAYLOAD_OFF, &m, &idx))
				return 0;
			cells = 1;
		}
		if (at + (uint64_t) cells - cons > span)
			return 0;
		if (psm2_rq_match(f, n, (m.hflags & HF_TAGGED) != 0, m.tag, m.epid) >= 0)
			return at;
		at += (uint64_t) cells;
		u++;
	}
	return 0;
}

#endif /* PSM2_FAST_MATCH_H */
