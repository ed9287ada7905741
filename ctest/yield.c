/* yield.c: fi_cq_read gives the CPU away when it has found nothing for a
 * while (cmd/libfabric-psm2/cq.c, FI_PSM2_YIELD_POLLS), so that ranks
 * that busy-poll without ever yielding (MPICH) do not starve the peer they
 * wait for when there are more of them than cores. This program defines
 * sched_yield itself, so the library's calls land here: each is timed
 * and its place among the reads noted, and the rule is checked exactly:
 *   - a yield that came straight back (under 1.5 us: no other thread
 *     wanted the CPU) doubles the number of empty reads before the next
 *     one, up to 64 times FI_PSM2_YIELD_POLLS (256);
 *   - one that took long (over 3 us: another thread ran) brings it back
 *     to 256 (yields in between are not judged: the library's own clock
 *     draws the line at 2 us);
 * first alone on a CPU, then with a busy thread pinned to the same CPU,
 * so that both kinds happen; run again with FI_PSM2_YIELD_POLLS=0, it
 * never yields.
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

#define LEAST 256
#define MOST (64 * LEAST)
#define MAXY 8192

/* reads counts fi_cq_read calls; a yield notes the read it came in and
 * how long it took. */
static uint64_t reads;
static struct {
	uint64_t read;
	double secs;
} ylog[MAXY];
static int ny;

/* sched_yield: the library's calls resolve to this definition (the
 * executable's comes first), which notes them and yields for real. Only
 * this thread reads the CQ, so no other thread comes here. */
int sched_yield(void)
{
	double t0 = ct_now();
	int ret = (int) syscall(SYS_sched_yield);

	if (ny < MAXY) {
		ylog[ny].read = reads;
		ylog[ny].secs = ct_now() - t0;
		ny++;
	}
	return ret;
}

/* polls reads n's empty CQ count times: 0, or -1 if a read did not
 * answer -FI_EAGAIN. */
static int polls(struct ct_node *n, long count)
{
	struct fi_cq_tagged_entry e;

	for (long i = 0; i < count; i++) {
		reads++;
		if (fi_cq_read(n->cq, &e, 1) != -FI_EAGAIN)
			return -1;
	}
	return 0;
}

static int fast_checked, slow_checked;

/* judge checks the yields ylog[from..ny) against the rule: the gap after
 * yield i follows from the gap before it and how long i took. */
static void judge(int from, const char *phase)
{
	for (int i = from + 1; i + 1 < ny; i++) {
		uint64_t before = ylog[i].read - ylog[i - 1].read;
		uint64_t after = ylog[i + 1].read - ylog[i].read;

		if (ylog[i].secs < 1.5e-6) {
			uint64_t want = before < MOST ? 2 * before : before;

			fast_checked++;
			CHECK(after == want, "%s: yield %d came straight back after %llu reads; "
			      "next after %llu (want %llu)", phase, i,
			      (unsigned long long) before, (unsigned long long) after,
			      (unsigned long long) want);
		} else if (ylog[i].secs > 3e-6) {
			slow_checked++;
			CHECK(after == LEAST, "%s: yield %d took %.1f us; next after %llu reads (want %d)",
			      phase, i, ylog[i].secs * 1e6, (unsigned long long) after, LEAST);
		}
	}
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
	int ret, status, from;
	pid_t pid;

	ret = ct_open_node(&n);
	CHECK(ret == 0, "open: %d", ret);
	if (ret)
		return finish("yield");

	if (argc > 1 && strcmp(argv[1], "off") == 0) {
		ret = polls(&n, 200000);
		CHECK(ret == 0 && ny == 0, "FI_PSM2_YIELD_POLLS=0: %d yields in 200000 empty reads", ny);
		ct_close_node(&n);
		return finish("yield off");
	}

	/* Alone on one CPU (the other threads of the process are Go's, which
	 * sleep when idle): about 20 yields in 200000 reads, most of them
	 * straight back (781 without the back-off). */
	CPU_ZERO(&cpu);
	CPU_SET(sched_getcpu(), &cpu);
	ret = pthread_setaffinity_np(pthread_self(), sizeof(cpu), &cpu);
	CHECK(ret == 0, "pin: %d", ret);
	ret = polls(&n, 200000);
	CHECK(ret == 0 && ny >= 1, "alone: %d yields in 200000 empty reads", ny);
	judge(0, "alone");

	/* Another thread busy on this CPU: a yield that lets it run brings
	 * the wait back to 256 reads (the scheduler passes on some yields,
	 * when the other thread has had more than its share). */
	from = ny;
	ret = pthread_create(&t, NULL, spinner, &cpu);
	CHECK(ret == 0, "pthread_create: %d", ret);
	if (ret == 0) {
		usleep(20000);
		ret = polls(&n, 50000);
		__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
		pthread_join(t, NULL);
		CHECK(ret == 0, "busy: a read did not answer -FI_EAGAIN");
		judge(from, "busy");
	}
	CHECK(fast_checked >= 1 && slow_checked >= 1,
	      "too few yields to judge: %d straight back, %d taken", fast_checked, slow_checked);
	CHECK(ny < MAXY, "log full");
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
	printf("yield: judged %d yields that came straight back, %d taken\n", fast_checked, slow_checked);
	return finish("yield");
}
