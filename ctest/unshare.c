/* unshare.c: a thread that waits for a peer spinning on its own CPU moves
 * to another (cmd/libfabric-psm2/cq.c, cq_unshare). Unpinned ranks can be
 * put on one CPU (a thread woken by one of its process's own threads goes
 * to the waker's CPU) and the scheduler's load balancer then leaves the
 * two spinners there for 5-30 ms, taking turns of 23-106 us: short jobs
 * ran 10-40 times slower than on two CPUs.
 *
 * The scheduler may part the two by itself at any time, so a test of the
 * real move could pass without it. This one makes the sharing last and
 * checks the library's decisions: each case forks two processes that open
 * a node each, pin their main threads (with the raw system call) and
 * ping-pong 300 round trips of 8 bytes. The program defines
 * sched_getaffinity, sched_setaffinity and sched_getcpu itself, so the
 * library's calls land here: its mask reads as the one the process had
 * before it was pinned (two CPUs or more), its moves are logged and not
 * made, and a thread that asked to move reads as being on another CPU
 * from then on, which the CPU hint it leaves in its peer's ring (the C
 * producer's sched_getcpu) shows the peer, as after a real move:
 *   - both on one CPU: exactly one of the two moves, within the first 200
 *     round trips (at the first gap of the sharing), by a call that leaves
 *     out exactly its CPU, followed by one that puts its mask back; the
 *     other does not follow it;
 *   - the same with FI_PSM2_YIELD_SPIN=0: no move;
 *   - on two CPUs: no move, busy machine or not (gaps there have the
 *     peer elsewhere);
 *   - every message arrives intact.
 * It defines sysconf too, so that the library counts more CPUs than any
 * machine runs threads: on a machine crowded by other jobs a waiting
 * reader naps instead of spinning (ctest/yield checks that rule), and a
 * nap is no sign of a shared CPU, so a busy machine would leave nothing
 * here to judge.
 * ctest: no-valgrind (valgrind runs one thread at a time: no two threads
 * ever share a CPU there, nor spin side by side). */
#define _GNU_SOURCE
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

#define RTS 300
#define WARM 10
#define SOON 200

/* What one side reports to the parent. */
struct report {
	int ok;		/* every message arrived intact */
	int calls;	/* the library's sched_setaffinity calls */
	int moves;	/* of them, those that left its CPU out */
	int bad;	/* calls that were neither a move nor the mask back */
	int unpaired;	/* moves the mask did not come back after */
	int first;	/* the round trip of the first move; -1: none */
};

static cpu_set_t mask0;	/* the process's mask before it was pinned */
static int cpu_now = -1;	/* the CPU sched_getcpu answers; -1: the real one */
static int rt;		/* the round trip going on */
static int pending;	/* a move the mask has not come back after */
static struct report rep;

long __sysconf(int name);

long sysconf(int name)
{
	if (name == _SC_NPROCESSORS_ONLN)
		return 1 << 20;
	return __sysconf(name);
}

int sched_getcpu(void)
{
	unsigned cpu;

	if (cpu_now >= 0)
		return cpu_now;
	return syscall(SYS_getcpu, &cpu, NULL, NULL) ? -1 : (int) cpu;
}

int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
	if (pid != 0 || size < sizeof(mask0))
		return (int) syscall(SYS_sched_getaffinity, pid, size, set);
	memcpy(set, &mask0, sizeof(mask0));
	return 0;
}

int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
	cpu_set_t want = mask0;

	rep.calls++;
	if (pid != 0 || size != sizeof(cpu_set_t) || cpu_now < 0) {
		rep.bad++;
		return 0;
	}
	if (CPU_EQUAL(set, &mask0)) {	/* the mask back */
		if (!pending)
			rep.bad++;
		pending = 0;
		return 0;
	}
	CPU_CLR(cpu_now, &want);
	if (!CPU_EQUAL(set, &want) || pending) {
		rep.bad++;
		return 0;
	}
	if (!rep.moves++)
		rep.first = rt;
	pending = 1;
	/* Where the kernel would put it: another CPU of the mask. */
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &want)) {
			cpu_now = i;
			break;
		}
	return 0;
}

/* wait1 waits (10 s at most) for one completion on n's CQ: 0 or -1. */
static int wait1(struct ct_node *n)
{
	struct fi_cq_tagged_entry e;
	double end = ct_now() + 10;
	ssize_t r;

	while ((r = fi_cq_read(n->cq, &e, 1)) == -FI_EAGAIN)
		if (ct_now() > end)
			return -1;
	return r == 1 ? 0 : -1;
}

static int inject(struct ct_node *n, fi_addr_t a, uint64_t v)
{
	int ret;

	while ((ret = (int) fi_tinject(n->ep, &v, sizeof(v), a, 7)) == -FI_EAGAIN)
		fi_cq_read(n->cq, NULL, 0);
	return ret;
}

/* side runs one side of a case (0 starts each round trip), pinned to
 * cpu, into rep. Its endpoint's name goes out on out, the peer's comes in
 * on in. */
static void side(int me, int cpu, int in, int out)
{
	struct ct_node n = { 0 };
	cpu_set_t one;
	char peer[256];
	fi_addr_t a;
	uint64_t got = 0;

	rep = (struct report) { .ok = 1, .first = -1 };
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (ct_open_node(&n) || syscall(SYS_sched_setaffinity, 0, sizeof(one), &one)) {
		rep.ok = 0;
		goto out;
	}
	cpu_now = cpu;
	if (write(out, n.name, n.namelen) != (ssize_t) n.namelen ||
	    read(in, peer, n.namelen) != (ssize_t) n.namelen || fi_av_insert(n.av, peer, 1, &a, 0, NULL) != 1) {
		rep.ok = 0;
		goto out;
	}
	for (rt = -WARM; rt < RTS && rep.ok; rt++) {
		uint64_t v = (uint64_t) (rt + WARM) * 2 + (uint64_t) me;

		if (fi_trecv(n.ep, &got, sizeof(got), NULL, a, 7, 0, NULL)) {
			rep.ok = 0;
			break;
		}
		if (me == 0) {
			if (inject(&n, a, v) || wait1(&n) || got != v + 1)
				rep.ok = 0;
		} else if (wait1(&n) || got != v - 1 || inject(&n, a, v)) {
			rep.ok = 0;
		}
	}
	rep.unpaired = pending;
out:
	ct_close_node(&n);
}

/* run runs a case, side 0 pinned to cpu0 and side 1 to cpu1, each in a
 * child; their reports into r[2]. 0, or -1 if a side did not report. */
static int run(int cpu0, int cpu1, struct report r[2])
{
	int ab[2], ba[2], rp[2][2];
	pid_t pid[2];

	if (pipe(ab) || pipe(ba) || pipe(rp[0]) || pipe(rp[1]))
		return -1;
	for (int s = 0; s < 2; s++) {
		if ((pid[s] = fork()) == 0) {
			/* Side 0 writes its name to ab and reads side 1's from ba. */
			side(s, s ? cpu1 : cpu0, s ? ab[0] : ba[0], s ? ba[1] : ab[1]);
			_exit(write(rp[s][1], &rep, sizeof(rep)) != sizeof(rep));
		}
	}
	close(ab[0]), close(ab[1]), close(ba[0]), close(ba[1]);
	close(rp[0][1]), close(rp[1][1]);
	for (int s = 0; s < 2; s++) {
		ssize_t got = read(rp[s][0], &r[s], sizeof(r[s]));

		close(rp[s][0]);
		waitpid(pid[s], NULL, 0);
		if (got != sizeof(r[s]))
			return -1;
	}
	return 0;
}

int main(void)
{
	struct report r[2];
	int c0 = -1, c1 = -1;

	if (syscall(SYS_sched_getaffinity, 0, sizeof(mask0), &mask0) < 0 || CPU_COUNT(&mask0) < 2) {
		printf("# unshare: fewer than 2 CPUs to run on: skipped\n");
		return finish("unshare");
	}
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &mask0)) {
			if (c0 < 0)
				c0 = i;
			else if (c1 < 0)
				c1 = i;
		}
	setenv("FI_PSM2_NAME_SERVER", "0", 1);

	/* One CPU for both. */
	CHECK(run(c0, c0, r) == 0, "a side did not report");
	for (int s = 0; s < 2; s++) {
		CHECK(r[s].ok, "side %d: a message was lost or changed", s);
		CHECK(r[s].bad == 0, "side %d: %d calls that were neither a move off its CPU nor the mask back", s,
		      r[s].bad);
		CHECK(r[s].unpaired == 0, "side %d: the mask did not come back after a move", s);
	}
	CHECK(r[0].moves + r[1].moves == 1, "one CPU: %d and %d moves, want one of the two", r[0].moves, r[1].moves);
	CHECK((r[0].moves && r[0].first < SOON) || (r[1].moves && r[1].first < SOON),
	      "no move in the first %d round trips on a shared CPU (first at %d and %d)", SOON, r[0].first,
	      r[1].first);
	printf("unshare: one CPU: moves %d and %d, first at round trips %d and %d\n", r[0].moves, r[1].moves,
	       r[0].first, r[1].first);

	/* The same, with the yields (and so the moves) turned off. */
	setenv("FI_PSM2_YIELD_SPIN", "0", 1);
	CHECK(run(c0, c0, r) == 0, "a side did not report");
	CHECK(r[0].ok && r[1].ok, "FI_PSM2_YIELD_SPIN=0: a message was lost or changed");
	CHECK(r[0].calls + r[1].calls == 0, "FI_PSM2_YIELD_SPIN=0: %d and %d sched_setaffinity calls", r[0].calls,
	      r[1].calls);
	unsetenv("FI_PSM2_YIELD_SPIN");

	/* Two CPUs: nothing to part. */
	CHECK(run(c0, c1, r) == 0, "a side did not report");
	CHECK(r[0].ok && r[1].ok, "two CPUs: a message was lost or changed");
	CHECK(r[0].calls + r[1].calls == 0, "two CPUs: %d and %d sched_setaffinity calls", r[0].calls, r[1].calls);
	return finish("unshare");
}
