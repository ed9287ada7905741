/* check.h: a tiny test harness for the C tests: CHECK prints one line per
 * failed assertion, and finish() prints the closing "N passed, N failed"
 * line and gives the exit status. */
#ifndef CTEST_CHECK_H
#define CTEST_CHECK_H

#include <stdio.h>

static int ct_passed, ct_failed;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (cond) {                                                \
			ct_passed++;                                       \
		} else {                                                   \
			ct_failed++;                                       \
			printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
			printf(__VA_ARGS__);                               \
			printf("\n");                                      \
		}                                                          \
	} while (0)

static inline int finish(const char *name)
{
	printf("%s: %d passed, %d failed\n", name, ct_passed, ct_failed);
	return ct_failed ? 1 : 0;
}

#endif
