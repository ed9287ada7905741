/* yield.c: fi_cq_read gives the CPU away when it has found nothing for a
 * while (cmd/libfabric-psm2/cq.c, FI_PSM2_YIELD_POLLS), so that ranks
 * that busy-poll without ever yielding (MPICH) do not starve the peer they
 * wait for when there are more of them than cores. This program defines
 * sched_yield itself, so the library's calls land here and are counted:
 *   - alone on its CPU, an idle CQ yields, but seldom: each yield that
 *     comes straight back doubles the wait before the next;
 *   - with another thread busy on the same CPU, the yields stay frequent
 *     (every FI_PSM2_YIELD_POLLS empty reads, 256 by default);
 *   - run again with FI_PSM2_YIELD_POLLS=0, it never yields.
 * ctest: no-valgrind (valgrind runs one thread at a time, so the thread
 * competing for the CPU and the timing of a yield mean nothing there). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

static uint64_t yields;

/* sched_yield: the library's calls resolve to this definition (the
 * executable's comes first), which counts them and yields for real. */
int sched_yield(void)
{
	__atomic_add_fetch(&yields, 1, __ATOMIC_RELAXED);
	return (int) syscall(SYS_sched_yield);
}

/* polls reads n's empty CQ count times: how many yields they made, or
 * UINT64_MAX if a read did not answer -FI_EAGAIN. */
static uint64_t polls(struct ct_node *n, long count)
{
	struct fi_cq_tagged_entry e;
	uint64_t before = __atomic_load_n(&yields, __ATOMIC_RELAXED);

	for (long i = 0; i < count; i++)
		if (fi_cq_read(n->cq, &e, 1) != -FI_EAGAIN)
			return UINT64_MAX;
	return __atomic_load_n(&yields, __ATOMIC_RELAXED) - before;
}

static int stop;

/* spinner keeps the CPU it is pinned to busy until stop is set. */
static void *spinner(void *arg)
{
	cpu_set_t *cpu = arg;

	pthread_setaffinity_np(pthread_self(), sizeof(*cpu), cpu);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

int main(int argc, char **argv)
{
	struct ct_node n;
	cpu_set_t cpu;
	pthread_t t;
	uint64_t y;
	int ret, status;
	pid_t pid;

	ret = ct_open_node(&n);
	CHECK(ret == 0, "open: %d", ret);
	if (ret)
		return finish("yield");

	if (argc > 1 && strcmp(argv[1], "off") == 0) {
		y = polls(&n, 200000);
		CHECK(y == 0, "FI_PSM2_YIELD_POLLS=0: %llu yields in 200000 empty reads",
		      (unsigned long long) y);
		ct_close_node(&n);
		return finish("yield off");
	}

	/* Alone on one CPU (the other threads of the process are Go's, which
	 * sleep when idle): without the back-off, 200000 reads would yield
	 * 781 times; with it, about 20 (a few hundred when other processes
	 * keep stealing the CPU, which makes yields look taken). */
	CPU_ZERO(&cpu);
	CPU_SET(sched_getcpu(), &cpu);
	ret = pthread_setaffinity_np(pthread_self(), sizeof(cpu), &cpu);
	CHECK(ret == 0, "pin: %d", ret);
	y = polls(&n, 200000);
	CHECK(y >= 1 && y <= 400, "alone: %llu yields in 200000 empty reads (want 1 to 400)",
	      (unsigned long long) y);

	/* Another thread busy on this CPU: a yield that lets it run brings
	 * the wait back to 256 reads. The scheduler passes on some yields (when
	 * the other thread has had more than its share), so 40 to 150 of the
	 * at most 195 in 50000 reads, against 4 or fewer if no yield counted
	 * as taken (the wait starts from the longest, left by the part above). */
	ret = pthread_create(&t, NULL, spinner, &cpu);
	CHECK(ret == 0, "pthread_create: %d", ret);
	if (ret == 0) {
		usleep(20000);
		y = polls(&n, 50000);
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
		pthread_join(t, NULL);
		CHECK(y >= 25 && y != UINT64_MAX,
		      "with a busy thread on the CPU: %llu yields in 50000 empty reads (want >= 25)",
		      (unsigned long long) y);
	}
	ct_close_node(&n);

	/* The same program with yielding turned off. */
	pid = fork();
	if (pid == 0) {
		setenv("FI_PSM2_YIELD_POLLS", "0", 1);
		execl("/proc/self/exe", argv[0], "off", (char *) NULL);
		_exit(127);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0, "FI_PSM2_YIELD_POLLS=0 run failed (status %#x)", status);
	return finish("yield");
}
