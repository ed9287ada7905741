/* fuzz.h: what the fuzz tests of the C fast path share (fastfuzz.c,
 * servefuzz.c, answerfuzz.c): a generator with a fixed seed, so that a
 * failing round comes back on the next run; memory that ends at a guard
 * page; the areas a call may touch, saved before it and after it and put
 * back for the model; the model's trace of a round; a ring filled as a
 * hostile peer leaves it; the report of a fault no guarded copy took. */
#ifndef CTEST_FUZZ_H
#define CTEST_FUZZ_H

#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "../cmd/libfabric-psm2/fast/layout.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static inline uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static inline uint64_t pick(const uint64_t *choices, int n)
{
	return choices[rnd() % (uint64_t) n];
}

/* guarded returns n bytes that end exactly at an inaccessible page. */
static inline void *guarded(size_t n)
{
	size_t pg = (size_t) sysconf(_SC_PAGESIZE), span = (n + pg - 1) / pg * pg;
	char *m = mmap(NULL, span + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	if (mprotect(m + span, pg, PROT_NONE)) {
		perror("mprotect");
		exit(2);
	}
	return m + span - n;
}

/* fenced returns n bytes with an inaccessible page before them and
 * tail inaccessible bytes (a page at least) after them. */
static inline unsigned char *fenced(size_t n, size_t tail)
{
	size_t pg = (size_t) sysconf(_SC_PAGESIZE), span = (n + pg - 1) / pg * pg;
	char *m;

	tail = (tail + pg - 1) / pg * pg;
	m = mmap(NULL, pg + span + tail, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED || mprotect(m + pg, span, PROT_READ | PROT_WRITE)) {
		perror("mmap");
		exit(2);
	}
	return (unsigned char *) m + pg + span - n;
}

/* --- what the call may touch: saved, compared and put back --------------- */

struct area {
	const char *name;
	void *p;
	size_t n, off;		/* (off: where a saved copy holds it) */
	int ro;			/* mapped read-only: compared, never put back */
};

static struct area areas[64] __attribute__((unused));
static int nareas __attribute__((unused));
static size_t area_bytes __attribute__((unused));

static inline void area(const char *name, void *p, size_t n, int ro)
{
	if (nareas == (int) (sizeof(areas) / sizeof(areas[0]))) {
		fprintf(stderr, "fuzz.h: more than %d areas\n", nareas);
		exit(2);
	}
	areas[nareas++] = (struct area) { name, p, n, area_bytes, ro };
	area_bytes += n;
}

static inline void save(unsigned char *to)
{
	for (int i = 0; i < nareas; to += areas[i].n, i++)
		memcpy(to, areas[i].p, areas[i].n);
}

static inline void put_back(const unsigned char *from)
{
	for (int i = 0; i < nareas; from += areas[i].n, i++)
		if (!areas[i].ro)
			memcpy(areas[i].p, from, areas[i].n);
}

/* saved is where the copy save wrote into to holds the byte at p (which
 * must lie in an area). */
static inline unsigned char *saved(unsigned char *to, const void *p)
{
	for (int i = 0; i < nareas; i++)
		if ((const char *) p >= (const char *) areas[i].p &&
		    (const char *) p < (const char *) areas[i].p + areas[i].n)
			return to + areas[i].off + (size_t) ((const char *) p - (const char *) areas[i].p);
	fprintf(stderr, "fuzz.h: %p is in no area\n", p);
	exit(2);
}

/* --- the model's trace of a round, printed when the call differs ---------- */

static char trace[16][240] __attribute__((unused));
static int ntrace __attribute__((unused));

static inline void __attribute__((format(printf, 1, 2))) note(const char *fmt, ...)
{
	va_list ap;

	if (ntrace == 16)
		return;
	va_start(ap, fmt);
	vsnprintf(trace[ntrace++], sizeof(trace[0]), fmt, ap);
	va_end(ap);
}


/* area_differs compares area i as the model left it (at p) with call's
 * copy of it (before: the copy saved before the call): 0 if they agree;
 * else 1, with the first byte that differs printed while *nprint lasts,
 * and the call's bytes put back into the area (unless it is read-only)
 * so that the rounds go on from what the call did. */
static inline int area_differs(int i, long round, const unsigned char *call, const unsigned char *before, int *nprint)
{
	unsigned char *p = areas[i].p;
	size_t o = 0;

	if (!memcmp(p, call, areas[i].n))
		return 0;
	while (p[o] == call[o])
		o++;
	if (*nprint > 0)
		printf("round %ld: %s differs at byte %zu (%zu bytes): the call wrote %#x, the model %#x, before %#x\n",
		       round, areas[i].name, o, areas[i].n, call[o], p[o], before[o]);
	if (!areas[i].ro)
		memcpy(p, call, areas[i].n);
	return 1;
}

/* fuzz_counter is a ring counter: near 0, near the wrap, anywhere. */
static inline uint64_t fuzz_counter(void)
{
	switch (rnd() % 4) {
	case 0: return rnd() % 64;
	case 1: return ~(uint64_t) 0 - rnd() % 64;
	default: return rnd();
	}
}

/* fuzz_unit_fn writes one unit (a message, a request, an answer: up to
 * PUSH_CELLS_MAX cells' payloads) at cells, from arg: how many cells. */
typedef uint64_t (*fuzz_unit_fn)(void *arg, uint64_t cells[][CELL_PAYLOAD / 8]);

/* fuzz_fill_ring writes ring r of size cells (a power of two) as a peer
 * may leave it: random producer words, consumer counter cons, stale cells
 * of the lap before (now and then a random sequence word), then units
 * units of gen from cons on (one that does not fit is left out), a random
 * published cell after them now and then, and now and then a wrong
 * sequence word among them. */
static inline void fuzz_fill_ring(char *r, uint64_t size, uint64_t cons, uint64_t units, fuzz_unit_fn gen, void *arg)
{
	static uint64_t cells[PUSH_CELLS_MAX][CELL_PAYLOAD / 8];
	uint64_t *h = (uint64_t *) r, mask = size - 1, pos = cons;

	h[RING_PROD / 8] = rnd();
	h[RING_SEEN / 8] = rnd();
	h[RING_CONS / 8] = cons;
	for (uint64_t i = 0; i < size; i++) {
		uint64_t q = cons + ((i - cons) & mask);

		*(uint64_t *) (r + RING_HDR + (q & mask) * CELL_SIZE) = rnd() % 64 ? q - size + 1 : rnd();
	}
	for (uint64_t u = 0; u < units; u++) {
		uint64_t k = gen(arg, cells);

		if (pos + k - cons > size)
			continue;
		for (uint64_t i = 0; i < k; i++) {
			char *c = r + RING_HDR + ((pos + i) & mask) * CELL_SIZE;

			memcpy(c + CELL_PAYLOAD_OFF, cells[i], CELL_PAYLOAD);
			*(uint64_t *) (c + CELL_SEQ) = pos + i + 1;
		}
		pos += k;
	}
	if (pos - cons < size && rnd() % 4 == 0) {
		char *c = r + RING_HDR + (pos & mask) * CELL_SIZE;

		for (int i = CELL_PAYLOAD_OFF; i < CELL_SIZE; i++)
			c[i] = (char) rnd();
		*(uint64_t *) (c + CELL_SEQ) = pos + 1;
	}
	if (pos != cons && rnd() % 16 == 0) {
		uint64_t *seq = (uint64_t *) (r + RING_HDR + ((cons + rnd() % (pos - cons)) & mask) * CELL_SIZE);

		*seq = rnd() % 2 ? rnd() : 0;
	}
}

/* fuzz_round is the round under test, for fuzz_catch_faults' report. */
static volatile long fuzz_round = -1;

/* fuzz_on_fault reports a fault no guarded copy took (psm2_ucopy's
 * handler passes those on to the one before it): an access out of
 * bounds. The fault then comes again, and kills the test. */
static inline void fuzz_on_fault(int sig, siginfo_t *si, void *uc)
{
	char msg[160];
	int n = snprintf(msg, sizeof(msg), "round %ld: signal %d at %p, outside a guarded copy\n", fuzz_round, sig,
			 si->si_addr);

	(void) uc;
	if (write(2, msg, (size_t) n) < 0)
		_exit(3);
	signal(sig, SIG_DFL);
}

int psm2_ucopy_ready(void);

/* fuzz_catch_faults installs fuzz_on_fault for SIGSEGV and SIGBUS, on a
 * stack of its own (valgrind cannot grow the main stack to deliver the
 * faults psm2_ucopy takes), then psm2_ucopy's handler in front of it: 0,
 * or -1 with the reason printed. */
static inline int fuzz_catch_faults(const char *prog)
{
	static char altstack[1 << 16];
	struct sigaction sa;
	stack_t ss;

	ss.ss_sp = altstack;
	ss.ss_size = sizeof(altstack);
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL)) {
		perror("sigaltstack");
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fuzz_on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	if (!psm2_ucopy_ready()) {
		fprintf(stderr, "%s: no fault handler\n", prog);
		return -1;
	}
	return 0;
}

#endif
