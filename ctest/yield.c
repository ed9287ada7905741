/* yield.c: fi_cq_read gives the CPU away when it has found nothing for a
 * while and the machine has more runnable threads than CPUs
 * (cmd/libfabric-psm2/cq.c, FI_PSM2_YIELD_SPIN). Where the job's own ranks
 * crowd the CPUs (the AV names more endpoints on this host than there are
 * CPUs), it yields, so that ranks that busy-poll without ever yielding
 * (MPICH) do not starve the peer they wait for. This program defines
 * sched_yield itself, so the library's calls land here, each one timed,
 * and the rule is checked on every yield, with a thread spinning on every
 * CPU (so that the machine is crowded) and such an AV:
 *   - after a yield that came straight back (under 1.5 us: the scheduler
 *     let nobody else run), the next comes after at least twice the idle
 *     time the last one waited for, up to 64 times the least spin (2 us
 *     where the job's ranks crowd the CPUs);
 *   - after one that took long (over 3 us: another thread ran), the next
 *     comes after at least the least spin and, mostly, not much later
 *     (yields in between are not judged: the library's own clock draws
 *     the line at 2 us);
 * and run again with FI_PSM2_YIELD_SPIN=0, it never yields. Reads that
 * wait for the end of a rendezvous yield too: with a 1 MiB send pending to
 * a peer that has not posted its receive, the wire is not idle and every
 * read goes through Go, and such a thread still waits for a peer that may
 * need its CPU (a 256 KiB ping-pong at 4 ranks on 2 cores took 450-870 us
 * a message while they did not, 63 us since). And such reads, each a call
 * into Go, read the clock every time, not every 64th as C's idle answers
 * do: run with FI_PSM2_YIELD_SPIN=1, the median count of reads from a
 * yield another thread took to the next yield is under 40 (it was 64 or
 * more, and in MPI 64 of Go's answers took 20-30 us: Open MPI's
 * ofi MTL waits for a blocking send in a loop of fi_cq_read alone, and two
 * pairs ping-ponging 64 KiB + 1 B on 2 cores took 40 us a trip, against
 * vader's 8.5, 11 with this rule and a 2 us spin). The median gap after a
 * taken yield is under 10 us there (FI_PSM2_YIELD_SPIN's 20 us is not the
 * spin). And where the CPUs are crowded by other threads only (no such
 * AV), a read does not yield but sleeps until an arrival (a nap), with a
 * 1 MiB send pending to a peer on this host or over UDP: a yield handed
 * the CPU to the other threads for a time slice, and the message was seen
 * at the reader's next turn only. But it naps only if it lost its CPU
 * too: with the crowd on the other CPUs only, it does not sleep.
 * ctest: no-valgrind (valgrind runs one thread at a time, so the threads
 * competing for the CPU and the timing of a yield mean nothing there). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

/* The least spin before a yield where the job's own ranks crowd the CPUs
 * (cq.c's OWN_CROWD_SPIN_NS, or FI_PSM2_YIELD_SPIN if shorter), and the
 * most after back-offs. */
static double least = 2e-6;
#define MOST (64 * least)
#define MAXY 20000
#define MAXCPU 256

/* Each yield: when it began and ended. Only this thread reads the CQ, so
 * no other thread comes here. */
static struct {
	double t0, t1;
	long reads;	/* the reads polls had made when it began */
} ylog[MAXY];
static int ny;
static long nreads;

/* busy: more threads were runnable than there are CPUs when the test
 * began, before its spinners (so this thread may lose its CPU for any
 * time, beyond the spinners' share). */
static int busy;

/* sched_yield: the library's calls resolve to this definition (the
 * executable's comes first), which notes them and yields for real. */
int sched_yield(void)
{
	/* Nothing slower than the clock here: the library times this call
	 * and decides by how long it took. */
	double t0 = ct_now();
	int ret = (int) syscall(SYS_sched_yield);

	if (ny < MAXY) {
		ylog[ny].t0 = t0;
		ylog[ny].t1 = ct_now();
		ylog[ny].reads = nreads;
		ny++;
	}
	return ret;
}

/* polls reads n's empty CQ for secs seconds: 0, or -1 if a read did not
 * answer -FI_EAGAIN. */
static int polls(struct ct_node *n, double secs)
{
	struct fi_cq_tagged_entry e;
	double end = ct_now() + secs;

	for (long i = 1;; i++) {
		nreads++;
		if (fi_cq_read(n->cq, &e, 1) != -FI_EAGAIN)
			return -1;
		if (i % 1024 == 0 && ct_now() > end)
			return 0;
	}
}

/* kinds counts the yields of ylog[from..ny) that came straight back and
 * those that were taken: the rule can be judged only when the machine
 * showed both. */
static void kinds(int from, int *fast, int *slow)
{
	*fast = *slow = 0;
	for (int i = from; i < ny; i++) {
		double took = ylog[i].t1 - ylog[i].t0;

		*fast += took < 1.5e-6;
		*slow += took > 3e-6;
	}
}

/* judge checks yields ylog[from..ny) against the rule. The idle time the
 * library waits for before yield i+1 (want) follows from how long yield i
 * took and what it waited for before; the gap seen here is never shorter,
 * and is late only when this thread lost the CPU meanwhile, which on a
 * machine busy with other processes happens at any time: there lateness
 * is shown, not judged. */
static void judge(int from)
{
	double want = 0;	/* 0: not known */
	int judged = 0, late = 0, early = 0, fast = 0, slow = 0;

	for (int i = from; i + 1 < ny; i++) {
		double took = ylog[i].t1 - ylog[i].t0, gap = ylog[i + 1].t0 - ylog[i].t1;

		if (took > 3e-6) {
			want = least;
			slow++;
		} else if (took < 1.5e-6 && want > 0) {
			want = want * 2 < MOST ? want * 2 : MOST;
			fast++;
		} else {
			want = 0;
			continue;
		}
		judged++;
		/* On a busy machine this thread may lose its CPU between the
		 * library's clock read and the call that lands here, and the
		 * library then saw a yield that took long where this log saw a
		 * quick one: there even the lower bound is shown, not judged. */
		if (gap < want * 0.999 && busy)
			early++;
		else
			CHECK(gap >= want * 0.999, "yield %d took %.1f us; the next came %.1f us later "
			      "(want >= %.0f us)", i, took * 1e6, gap * 1e6, want * 1e6);
		if (gap > want * 1.5 + 20e-6)
			late++;
	}
	printf("yield: %d yields, %d judged (%d straight back, %d taken), %d late\n",
	       ny - from, judged, fast, slow, late);
	if (fast < 1 || slow < 1) {
		/* A machine this busy (every yield taken) or this idle cannot
		 * show the rule; the gaps that were judged are checked. */
		printf("# yield: %d straight back, %d taken in 3 s: the back-off rule is not judged here\n",
		       fast, slow);
		return;
	}
	if (busy) {
		printf("# yield: other processes were runnable: %d of %d early and %d late are not judged\n",
		       early, judged, late);
		return;
	}
	CHECK(late * 2 <= judged, "%d of %d yields came late: the wait is not brought back", late, judged);
}

/* runnable is the number of runnable threads on the machine, this one
 * included (/proc/loadavg's fourth field), or a large number if unknown. */
static int runnable(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	int run = 1 << 20;

	if (f) {
		if (fscanf(f, "%*f %*f %*f %d/", &run) != 1)
			run = 1 << 20;
		fclose(f);
	}
	return run;
}

static int stop;

/* spinner keeps the CPU it is pinned to busy until stop is set. */
static void *spinner(void *arg)
{
	cpu_set_t cpu;

	CPU_ZERO(&cpu);
	CPU_SET((int) (intptr_t) arg, &cpu);
	pthread_setaffinity_np(pthread_self(), sizeof(cpu), &cpu);
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
		;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *) a, y = *(const long *) b;

	return (x > y) - (x < y);
}

/* taken_medians stops the spinners and finds, over the yields another
 * thread took, the median time and the median count of reads from one to
 * the next yield; it prints them and returns 1, or 0 if fewer than 5 such
 * yields came (then nothing is judged). */
static int taken_medians(const char *what, int ncpu, pthread_t *t, double *gap, long *reads)
{
	static double gaps[MAXY];
	static long counts[MAXY];
	int ng = 0;

	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < ncpu; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i + 1 < ny; i++)
		if (ylog[i].t1 - ylog[i].t0 > 3e-6) {
			counts[ng] = ylog[i + 1].reads - ylog[i].reads;
			gaps[ng++] = ylog[i + 1].t0 - ylog[i].t1;
		}
	if (ng < 5) {
		printf("# yield %s: %d yields, %d taken: the gaps are not judged\n", what, ny, ng);
		return 0;
	}
	qsort(gaps, (size_t) ng, sizeof(gaps[0]), cmp_double);
	qsort(counts, (size_t) ng, sizeof(counts[0]), cmp_long);
	*gap = gaps[ng / 2];
	*reads = counts[ng / 2];
	printf("yield %s: %d yields, %d taken; from one to the next, median %.1f us, %ld reads\n",
	       what, ny, ng, *gap * 1e6, *reads);
	return 1;
}

/* own_names makes n's AV name more endpoints on this host than it has
 * CPUs (made-up ports of our address): the job oversubscribes the host,
 * and a crowded machine is crowded by its own ranks, where reads yield. */
static void own_names(struct ct_node *n)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	int ok = 0;

	for (long i = 1; i <= cpus + 1; i++) {
		uint8_t name[16];
		uint64_t epid;
		fi_addr_t a;

		memcpy(name, n->name, sizeof(name));
		memcpy(&epid, name, sizeof(epid));	/* little-endian hosts */
		epid += (uint64_t) (1000 + i) << 16;	/* bits 31..16: the port */
		memcpy(name, &epid, sizeof(epid));
		ok += fi_av_insert(n->av, name, 1, &a, 0, NULL) == 1;
	}
	CHECK(ok == cpus + 1, "%d of %ld names inserted", ok, cpus + 1);
}

/* own_gaps (the default FI_PSM2_YIELD_SPIN, 20 us; n has own_names):
 * after a yield another thread took, the next comes after a 2 us spin,
 * not 20. Stops the spinners, closes n. */
static int own_gaps(struct ct_node *n, int ncpu, pthread_t *t)
{
	long reads;
	double gap;

	CHECK(polls(n, 0.3) == 0, "a read did not answer -FI_EAGAIN");
	if (taken_medians("own", ncpu, t, &gap, &reads))
		CHECK(gap < 10e-6, "more local ranks than CPUs: the median gap after a taken "
		      "yield is %.1f us (want < 10: a 2 us spin)", gap * 1e6);
	ct_close_node(n);
	return finish("yield own");
}

/* pending_send opens peer, sends it 1 MiB from n that it never receives
 * (a rendezvous that stays pending) and reads n's CQ for 0.3 s: 0, or -1
 * if the peer did not open (then nothing else was done). */
static int pending_send(struct ct_node *n, struct ct_node *peer)
{
	static char big[1 << 20];
	static struct fi_context ctx;
	fi_addr_t to;
	int r = ct_open_node(peer);

	CHECK(r == 0, "open the peer: %d", r);
	if (r)
		return -1;
	CHECK(fi_av_insert(n->av, peer->name, 1, &to, 0, NULL) == 1, "insert the peer");
	r = (int) fi_tsend(n->ep, big, sizeof(big), NULL, to, 0x77, &ctx);
	CHECK(r == 0, "1 MiB send: %d", r);
	CHECK(polls(n, 0.3) == 0, "a read did not answer -FI_EAGAIN");
	return 0;
}

/* pending_end stops the spinners, closes peer (if any) and n, and
 * reports what's checks. */
static int pending_end(struct ct_node *n, struct ct_node *peer, int ncpu, pthread_t *t, const char *what)
{
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < ncpu; i++)
		pthread_join(t[i], NULL);
	if (peer)
		ct_close_node(peer);
	ct_close_node(n);
	return finish(what);
}

/* rndv_gaps (FI_PSM2_YIELD_SPIN=1): with a 1 MiB send pending to a peer
 * that has not posted its receive, every read goes to Go; after a yield
 * another thread took, the next comes after the 1 us spin (a read costs
 * 60 ns at the least: a dozen or two reads), not after 64 of Go's answers.
 * Stops the spinners, closes n. */
static int rndv_gaps(struct ct_node *n, int ncpu, pthread_t *t)
{
	struct ct_node peer;
	int r = pending_send(n, &peer);
	double gap;
	long reads;

	if (taken_medians("rndv", ncpu, t, &gap, &reads))
		CHECK(reads < 40, "reads through Go: the median count of reads from a taken "
		      "yield to the next is %ld (want < 40 with a 1 us spin)", reads);
	if (r == 0)
		ct_close_node(&peer);
	ct_close_node(n);
	return finish("yield rndv");
}

/* naps: the same 1 MiB send pending, to a peer on this host ("nap") or
 * across the network wire ("net"), with a spinner on this thread's CPU
 * (other threads crowd it, not the job's own ranks): reads that wait do
 * not yield, which handed the other threads a time slice at each, but
 * sleep until an arrival wakes them (a nap, which the scheduler ends at
 * once when a packet comes, where a spinning reader waits for its turn):
 * no yield comes, and the thread blocks in the kernel at least 10 times
 * in 0.3 s of reads. Stops the spinners, closes n. */
static int naps(struct ct_node *n, int ncpu, pthread_t *t, const char *what)
{
	struct ct_node peer;
	int r = pending_send(n, &peer);

	if (r == 0) {
		struct rusage a, b;

		CHECK(ny == 0, "%s: a send pending, %d yields in 0.3 s", what, ny);
		getrusage(RUSAGE_THREAD, &a);
		CHECK(polls(n, 0.3) == 0, "a read did not answer -FI_EAGAIN");
		getrusage(RUSAGE_THREAD, &b);
		printf("%s: %ld sleeps in 0.3 s of reads\n", what, b.ru_nvcsw - a.ru_nvcsw);
		CHECK(b.ru_nvcsw - a.ru_nvcsw >= 10, "%s: a send pending, the reader slept %ld times "
		      "in 0.3 s (want >= 10: it naps until an arrival)", what, b.ru_nvcsw - a.ru_nvcsw);
		CHECK(ny == 0, "%s: a send pending, %d yields in 0.6 s", what, ny);
	}
	return pending_end(n, r == 0 ? &peer : NULL, ncpu, t, what);
}

/* run_delay is how long this thread has waited, runnable, for a CPU (ns;
 * /proc/thread-self/schedstat), -1 if unknown. */
static long long run_delay(void)
{
	long long run, wait = -1;
	FILE *f = fopen("/proc/thread-self/schedstat", "r");

	if (f) {
		if (fscanf(f, "%lld %lld", &run, &wait) != 2)
			wait = -1;
		fclose(f);
	}
	return wait;
}

/* alone: the same 1 MiB send pending, with two threads spinning on every
 * CPU but this thread's, so that more threads are runnable than there are
 * CPUs while this one keeps its CPU to itself. A nap needs the reader to
 * have lost its CPU too (cq.c, PREEMPT_GAP_NS): the runnable count alone
 * cannot tell other jobs from the job's own helper threads, and a
 * ping-pong across hosts on an idle machine napped through reads that
 * waited for 256 KiB, at 1.5 times the time a one-way trip. So the
 * reader does not sleep (under 5 times in 0.3 s, where it slept about 200
 * times). Where the machine was busy before the spinners, this thread may
 * lose its CPU to anyone, and naps are right: not judged. Stops the
 * spinners, closes n. */
static int alone(struct ct_node *n, int ncpu, pthread_t *t)
{
	struct ct_node peer;
	int r = pending_send(n, &peer);

	/* The fewest runnable threads of a few readings: this process's
	 * own Go threads, busy after the endpoints opened, are no other
	 * load. */
	int least_run = runnable();

	for (int i = 0; i < 20 && least_run > 1 + ncpu; i++) {
		int run;

		usleep(2000);
		if ((run = runnable()) < least_run)
			least_run = run;
	}
	/* this thread and the spinners are runnable now */
	busy = least_run > 1 + ncpu && ncpu > 0;
	if (r == 0 && busy) {
		printf("yield alone: the machine was busy, not judged\n");
	} else if (r == 0) {
		struct rusage a, b;
		long slept = -1;
		int lost = 0;

		/* The library naps only after its thread lost the CPU for over
		 * 1 ms (cq.c, PREEMPT_GAP_NS). A round where this thread waited
		 * for a CPU that long in all (to a kernel thread, to the Go
		 * runtime's own threads: this process's threads are not pinned)
		 * may nap rightly: only the rounds where it kept its CPU are
		 * judged, the best of a few. (Without schedstat, a round with
		 * no involuntary switch.) */
		for (int round = 0; round < 8 && slept != 0; round++) {
			long long w0 = run_delay();

			getrusage(RUSAGE_THREAD, &a);
			CHECK(polls(n, 0.3) == 0, "a read did not answer -FI_EAGAIN");
			getrusage(RUSAGE_THREAD, &b);
			long long waited = w0 < 0 ? -1 : run_delay() - w0;

			if (waited >= 1000000 || (waited < 0 && b.ru_nivcsw != a.ru_nivcsw)) {
				lost++;
				continue;
			}
			if (slept < 0 || b.ru_nvcsw - a.ru_nvcsw < slept)
				slept = b.ru_nvcsw - a.ru_nvcsw;
		}
		if (slept < 0) {
			printf("yield alone: the reader waited over 1 ms for its CPU in each of %d rounds, "
			       "not judged\n", lost);
		} else {
			printf("yield alone: %ld sleeps in 0.3 s of reads (the fewest of the rounds where "
			       "it kept its CPU; %d where it did not)\n", slept, lost);
			CHECK(slept < 5, "a reader that keeps its CPU slept %ld times in 0.3 s "
			      "(want < 5: the runnable count alone does not make it nap)", slept);
		}
		CHECK(ny == 0, "alone: a send pending, %d yields", ny);
	}
	return pending_end(n, r == 0 ? &peer : NULL, ncpu, t, "yield alone");
}

/* child runs this program again with argument mode (and
 * FI_PSM2_YIELD_SPIN=spin unless NULL): 1 if it passed. */
static int child(const char *self, const char *mode, const char *spin)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (spin)
			setenv("FI_PSM2_YIELD_SPIN", spin, 1);
		execl("/proc/self/exe", self, mode, (char *) NULL);
		_exit(127);
	}
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int main(int argc, char **argv)
{
	struct ct_node n;
	cpu_set_t cpu;
	pthread_t t[MAXCPU];
	int ret, ncpu = 0, me;

	if (argc > 1 && strcmp(argv[1], "net") == 0)
		setenv("PSM2_DEVICES", "self,hfi", 1);	/* UDP on loopback */
	ret = ct_open_node(&n);
	CHECK(ret == 0, "open: %d", ret);
	if (ret)
		return finish("yield");

	busy = runnable() > sysconf(_SC_NPROCESSORS_ONLN);

	/* A spinning thread on every CPU, this one pinned to one of them. */
	me = sched_getcpu();
	CPU_ZERO(&cpu);
	CPU_SET(me, &cpu);
	ret = pthread_setaffinity_np(pthread_self(), sizeof(cpu), &cpu);
	CHECK(ret == 0, "pin: %d", ret);
	sched_getaffinity(0, sizeof(cpu), &cpu);
	if (argc > 1 && strcmp(argv[1], "alone") == 0) {
		/* Two spinning threads on every other CPU. */
		for (long c = 0; ncpu + 1 < MAXCPU && c < sysconf(_SC_NPROCESSORS_ONLN); c++)
			for (int k = 0; k < 2 && c != me; k++)
				if (pthread_create(&t[ncpu], NULL, spinner, (void *) (intptr_t) c) == 0)
					ncpu++;
		usleep(20000);
		if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
			printf("yield alone: one CPU, nothing to judge\n");
			busy = 1;
		}
		return alone(&n, ncpu, t);
	}
	for (long c = 0; c < MAXCPU && c < sysconf(_SC_NPROCESSORS_ONLN); c++)
		if (pthread_create(&t[ncpu], NULL, spinner, (void *) (intptr_t) c) == 0)
			ncpu++;
	usleep(20000);
	if (argc > 1 && strcmp(argv[1], "rndv") == 0) {
		least = 1e-6;	/* FI_PSM2_YIELD_SPIN=1 */
		own_names(&n);
		return rndv_gaps(&n, ncpu, t);
	}
	if (argc > 1 && strcmp(argv[1], "net") == 0)
		return naps(&n, ncpu, t, "yield net");
	if (argc > 1 && strcmp(argv[1], "nap") == 0)
		return naps(&n, ncpu, t, "yield nap");
	/* Every other run crowds the machine with the job's own ranks, as the
	 * library sees it, where reads yield. */
	own_names(&n);
	if (argc > 1 && strcmp(argv[1], "own") == 0)
		return own_gaps(&n, ncpu, t);
	if (argc == 1) {
		/* A rendezvous in flight: node n sends 1 MiB to a peer node
		 * that has not posted its receive. */
		struct ct_node peer;
		static char big[1 << 20];
		struct fi_context ctx;
		fi_addr_t to;
		int r = ct_open_node(&peer);

		CHECK(r == 0, "open the peer: %d", r);
		if (r == 0) {
			CHECK(fi_av_insert(n.av, peer.name, 1, &to, 0, NULL) == 1, "insert the peer");
			r = (int) fi_tsend(n.ep, big, sizeof(big), NULL, to, 0x77, &ctx);
			CHECK(r == 0, "1 MiB send: %d", r);
			int before = ny;
			ret = polls(&n, 0.3);
			CHECK(ret == 0 && ny > before, "reads waiting for a rendezvous: %d yields in 0.3 s", ny - before);
			ct_close_node(&peer);
			/* The send fails with the peer gone; its error entry is
			 * no part of the rule. */
			struct fi_cq_err_entry err;
			for (double t0 = ct_now(); ct_now() - t0 < 10;) {
				struct fi_cq_tagged_entry e;
				if (fi_cq_read(n.cq, &e, 1) != -FI_EAGAIN) {
					fi_cq_readerr(n.cq, &err, 0);
					break;
				}
			}
			ny = 0;
		}
	}
	ret = polls(&n, argc > 1 ? 0.1 : 0.3);
	/* On a busy machine one kind of yield may be rare: poll on for up to
	 * 3 s until both have been seen. */
	for (int round = 0; argc == 1 && ret == 0 && round < 9 && ny < MAXY / 2; round++) {
		int fast, slow;

		kinds(0, &fast, &slow);
		if (fast >= 1 && slow >= 1)
			break;
		ret = polls(&n, 0.3);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < ncpu; i++)
		pthread_join(t[i], NULL);
	CHECK(ret == 0, "a read did not answer -FI_EAGAIN");
	ct_close_node(&n);

	if (argc > 1 && strcmp(argv[1], "off") == 0) {
		CHECK(ny == 0, "FI_PSM2_YIELD_SPIN=0: %d yields", ny);
		return finish("yield off");
	}
	judge(0);
	CHECK(ny < MAXY, "log full");

	/* The same with yielding turned off; reads that go to Go, with a
	 * 1 us spin; more local ranks than CPUs. */
	CHECK(child(argv[0], "off", "0"), "the FI_PSM2_YIELD_SPIN=0 run failed");
	CHECK(child(argv[0], "rndv", "1"), "the FI_PSM2_YIELD_SPIN=1 rendezvous run failed");
	CHECK(child(argv[0], "own", NULL), "the oversubscribed run failed");
	CHECK(child(argv[0], "net", NULL), "the run over the network wire failed");
	CHECK(child(argv[0], "nap", NULL), "the run crowded by other threads failed");
	CHECK(child(argv[0], "alone", NULL), "the run crowded beside this thread's CPU failed");
	return finish("yield");
}
