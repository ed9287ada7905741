/* fastfuzz.c: the C fast path's ring code against hostile shared memory.
 *
 * A peer process can write anything into the rings C reads and pushes
 * into. This drives the library's own fast-path code (cmd/libfabric-psm2/
 * fast/, its .c files built into this program) with random ring contents: counters, sequence
 * words, cell kinds, lengths and flags, receive queues of random shapes.
 * Every ring, receive buffer and output buffer ends at a guard page, so a
 * read or write past any of them kills the test. After each call it checks
 * what the code claims: no more entries than asked for, no copy longer
 * than the receive it went to, and only the queue's own contexts.
 *
 * FASTFUZZ_ITERS sets the number of rounds (default 200000). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "check.h"
#include "fuzz.h"
#include "../cmd/libfabric-psm2/fast/fast.h"
#include "../cmd/libfabric-psm2/fast/ring.h"
#include "../cmd/libfabric-psm2/fast/match.h"

#define CELLS 8
#define LOG2_CELLS 3
#define RING_BYTES (RING_HDR + CELLS * CELL_SIZE)
#define NRECV 8
#define RBUF 128
#define NOUT 4
#define STRIDE 48

/* fill_ring writes hostile contents: counters near or far from each other,
 * sequence words that say "published" for some cells and garbage for
 * others, and cells whose kind, length and flags are random but often
 * plausible. */
static void fill_ring(char *r)
{
	uint64_t cons = rnd(), *w = (uint64_t *) r;

	if (rnd() % 2)
		cons = ~(uint64_t) 0 - rnd() % 16;
	memset(r, 0, RING_HDR);
	w[8 / 8] = rnd() % 4 ? rnd() : CELLS; /* the header's count: never to be believed */
	w[RING_PROD / 8] = rnd() % 2 ? cons + rnd() % (2 * CELLS) : rnd();
	w[RING_SEEN / 8] = rnd() % 2 ? cons : rnd();
	w[RING_CONS / 8] = cons;
	for (int i = 0; i < CELLS; i++) {
		unsigned char *c = (unsigned char *) r + RING_HDR + i * CELL_SIZE;
		uint64_t pos = cons + (uint64_t) ((i - (int) (cons & (CELLS - 1)) + CELLS) % CELLS);
		const uint64_t seqs[] = { pos + 1, pos + 1, pos, rnd(), 0 };

		unsigned char *p = c + CELL_PAYLOAD_OFF;

		*(uint64_t *) (c + CELL_SEQ) = pick(seqs, 5);
		for (int k = CELL_PAYLOAD_OFF; k < CELL_SIZE; k++)
			c[k] = (unsigned char) rnd();
		if (rnd() % 4) {
			const uint64_t kinds[] = { CELL_INLINE, CELL_INLINE, CELL_CONT, 0, 3, 255 };
			const uint64_t lens[] = { 0, 1, 24, 31, 32, 33, 56, 79, 87, 88, 200, 65535 };
			uint64_t len = pick(lens, 12);
			/* Mostly the flags C knows; now and then one it must
			 * leave to Go. */
			uint32_t hflags = rnd() % 8 ? (uint32_t) (rnd() % 4) : (uint32_t) rnd();

			p[CELL_KIND] = (unsigned char) pick(kinds, 6);
			p[CELL_FLAGS] = (unsigned char) (rnd() % 3);
			p[CELL_SHORT] = (unsigned char) len;
			p[CELL_SHORT + 1] = (unsigned char) (len >> 8);
			memcpy(p + CELL_HFLAGS, &hflags, 4);
		}
	}
}

struct world {
	uint64_t *ep, *cq, *peers, *desc, *rq;
	char *dom, *ring, *rbuf[NRECV];
	uint64_t rlen[NRECV];
	void *out;
};

static void fill_queue(struct world *w)
{
	uint64_t n = rnd() % (NRECV + 1);

	w->ep[EPF_RQ_COUNT] = n;
	/* Anywhere in the queue's mapping, up to its end (a guard page). */
	w->ep[EPF_RQ_HEAD] = rnd() % 2 ? 0 : rnd() % (EPF_RQ_CAP - n + 1);
	*(uint64_t *) (w->dom + DOMF_SLOTS + LSLOT_QUEUED) = n;
	w->ep[EPF_TAG_MASK] = rnd() % 2 ? ~(uint64_t) 0 : ~(uint64_t) 0 >> 4;
	w->ep[EPF_CAPS] = rnd() % 2 ? FI_DIRECTED_RECV : 0;
	w->ep[EPF_RX_SEL] = rnd() % 4 == 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t *q = psm2_rq(w->ep) + i * EPF_RQ_WORDS;
		const uint64_t srcs[] = { FI_ADDR_UNSPEC, 0, 1, 2, rnd() };

		w->rlen[i] = rnd() % (RBUF + 1);
		q[RQ_BUF] = (uint64_t) (uintptr_t) (w->rbuf[i] + RBUF - w->rlen[i]);
		q[RQ_LEN] = w->rlen[i];
		q[RQ_SRC] = pick(srcs, 5);
		q[RQ_TAG] = rnd() % 2 ? rnd() : 0;
		q[RQ_IGNORE] = rnd() % 2 ? 0 : rnd();
		q[RQ_CONTEXT] = 0x1000 + i;	/* the context names the entry */
		q[RQ_FLAGS] = (rnd() % 2 ? FI_TAGGED : FI_MSG) | (rnd() % 2 ? FI_COMPLETION : 0);
	}
	w->desc[FP_PEER] = rnd() % 2 ? rnd() : 0;
}

static int check_deliver(struct world *w, int round, long *entries)
{
	uint64_t before[NRECV][EPF_RQ_WORDS], n = w->ep[EPF_RQ_COUNT];
	size_t count = 1 + rnd() % NOUT;
	char *out = (char *) w->out + (NOUT - count) * STRIDE;	/* ends at the guard */
	ssize_t got;
	struct psm2_held held;

	memcpy(before, psm2_rq(w->ep), n * EPF_RQ_WORDS * 8);
	got = psm2_fast_deliver(w->cq, out, count, &held);
	if (held.n < 0 || held.n > DOMF_MAX_EPS || (held.n && (held.end[0] - held.at[0] < 1 || held.end[0] - held.at[0] > PUSH_CELLS_MAX))) {
		fprintf(stderr, "round %d: %d held messages, first %llu..%llu\n", round, held.n,
			(unsigned long long) held.at[0], (unsigned long long) held.end[0]);
		return 1;
	}
	(void) psm2_fast_idle_held(w->cq, &held);	/* reads hostile ring words too */
	if (got < 0 || (size_t) got > count) {
		fprintf(stderr, "round %d: %zd entries for %zu asked\n", round, got, count);
		return 1;
	}
	for (ssize_t k = 0; k < got; k++) {
		const uint64_t *e = (const uint64_t *) (out + k * STRIDE);
		uint64_t i = e[0] - 0x1000;

		if (i >= n) {
			fprintf(stderr, "round %d: entry %zd has context %#lx\n", round, k, (unsigned long) e[0]);
			return 1;
		}
		if (e[2] > before[i][RQ_LEN] || e[3] != before[i][RQ_BUF]) {
			fprintf(stderr, "round %d: entry of %lu bytes for a receive of %lu\n", round,
				(unsigned long) e[2], (unsigned long) before[i][RQ_LEN]);
			return 1;
		}
	}
	*entries += got;
	if (w->ep[EPF_RQ_COUNT] > n) {
		fprintf(stderr, "round %d: the queue grew\n", round);
		return 1;
	}
	return 0;
}

int main(void)
{
	struct world w;
	long iters = getenv("FASTFUZZ_ITERS") ? atol(getenv("FASTFUZZ_ITERS")) : 200000;
	long delivered = 0, pushed = 0, bad = 0;
	uint64_t cells[2][CELL_PAYLOAD / 8], slot[2];

	w.ep = guarded(4096);
	w.cq = guarded(4096);
	w.dom = guarded(4096);
	w.peers = guarded(4 * 8);
	w.desc = guarded(16 * 8);
	w.rq = guarded(EPF_RQ_CAP * EPF_RQ_WORDS * 8);
	w.ring = guarded(RING_BYTES);
	w.out = guarded(NOUT * STRIDE);
	for (int i = 0; i < NRECV; i++)
		w.rbuf[i] = guarded(RBUF);
	memset(w.ep, 0, 4096);
	memset(w.cq, 0, 4096);
	memset(w.dom, 0, 4096);
	w.cq[CQF_DOMAIN] = (uint64_t) (uintptr_t) w.dom;
	w.cq[CQF_STRIDE] = STRIDE;
	*(uint64_t *) (w.dom + DOMF_NEPS) = 1;
	*(uint64_t *) (w.dom + DOMF_EPS) = (uint64_t) (uintptr_t) w.ep;
	w.ep[EPF_DELIVER] = 1;
	w.ep[EPF_RX_CQ] = (uint64_t) (uintptr_t) w.cq;
	w.ep[EPF_DOMAIN] = (uint64_t) (uintptr_t) w.dom;
	w.ep[EPF_RQ] = (uint64_t) (uintptr_t) w.rq;
	w.ep[EPF_LOCK] = w.cq[CQF_LOCK] = (uint64_t) (uintptr_t) (w.dom + DOMF_SLOTS);
	w.ep[EPF_RING] = (uint64_t) (uintptr_t) w.ring | LOG2_CELLS;
	*(uint64_t *) (w.dom + DOMF_SLOTS + LSLOT_NRINGS) = 1;
	*(uint64_t *) (w.dom + DOMF_SLOTS + LSLOT_RINGS) = w.ep[EPF_RING];
	w.ep[EPF_NPEERS] = 3;
	w.ep[EPF_PEERS] = (uint64_t) (uintptr_t) w.peers;
	w.peers[0] = (uint64_t) (uintptr_t) w.desc;
	w.peers[1] = 0;
	w.peers[2] = (uint64_t) (uintptr_t) w.desc;
	w.peers[3] = 0;

	for (long round = 0; round < iters; round++) {
		/* Delivery: C consumes a ring a peer wrote. */
		fill_ring(w.ring);
		fill_queue(&w);
		if (check_deliver(&w, (int) round, &delivered))
			bad++;

		/* Push: C produces into a ring whose counters a peer wrote. */
		fill_ring(w.ring);
		memset(cells, 0xab, sizeof(cells));
		if (psm2_push(w.ring, CELLS - 1, slot, (const uint64_t (*)[CELL_PAYLOAD / 8]) cells,
			      1 + rnd() % 2) == 0) {
			pushed++;
			if (slot[SLOT_N] < 1 || slot[SLOT_N] > 2) {
				fprintf(stderr, "round %ld: slot announces %lu cells\n", round,
					(unsigned long) slot[SLOT_N]);
				bad++;
			}
		}
	}
	CHECK(bad == 0, "%ld rounds of hostile rings: %ld inconsistent results", iters, bad);
	CHECK(delivered > 0, "some hostile rings deliver (%ld entries)", delivered);
	CHECK(pushed > 0 && pushed < iters, "pushes both accepted and refused (%ld of %ld)", pushed, iters);
	printf("%ld rounds, %ld pushes accepted, %ld deliveries\n", iters, pushed, delivered);
	return finish("fastfuzz");
}
