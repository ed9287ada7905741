/* floor: the cost of handing one cache line between CPU 0 and CPU 1 (the
 * cores the benchmarks pin their two sides to), in ns one-way: two
 * processes bounce a counter through shared memory.
 *
 *   floor [ITERATIONS]        (default 20000: a few milliseconds)
 *
 * Every intra-node latency here sits on top of this hand-off. On the
 * virtual machines this project is measured on, it is ~55 ns most of the
 * time and 4-5 times that for seconds at a stretch (the hypervisor places
 * the two virtual CPUs far apart), so bench/steady.sh checks it before
 * and after each measurement. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pin(int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);	/* a one-CPU machine: unpinned */
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	volatile uint64_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	volatile uint64_t *ping, *pong;
	struct timespec t0, t1;
	pid_t pid;

	if (m == MAP_FAILED || n <= 0)
		return 1;
	ping = m;
	pong = m + 16;	/* another line */
	if ((pid = fork()) < 0)
		return 1;
	if (pid == 0) {
		pin(1);
		for (long i = 1; i <= n; i++) {
			while (*ping != (uint64_t) i)
				;
			*pong = i;
		}
		_exit(0);
	}
	pin(0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (long i = 1; i <= n; i++) {
		*ping = i;
		while (*pong != (uint64_t) i)
			;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	waitpid(pid, NULL, 0);
	printf("%.1f\n", ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n / 2);
	return 0;
}
