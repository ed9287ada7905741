/* fuzz.h: what the fuzz tests of the C fast path share (fastfuzz.c,
 * servefuzz.c): a generator with a fixed seed, so that a failing round
 * comes back on the next run, and memory that ends at a guard page. */
#ifndef CTEST_FUZZ_H
#define CTEST_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

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

#endif
