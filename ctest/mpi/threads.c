/* threads.c: MPI_THREAD_MULTIPLE checked end to end.
 *
 * Several threads per rank send and receive at once, so the provider's
 * endpoint, completion queue and tag matching are driven from many
 * threads of one process (Open MPI's ofi MTL and MPICH's ch4:ofi share one
 * libfabric endpoint between them). Every byte received is checked.
 *
 *   own_comm     each thread on its own duplicate of MPI_COMM_WORLD:
 *                Isend/Irecv to both ring neighbours, sizes from 0 B to
 *                1 MiB + 3 (inline, eager and rendezvous on every wire)
 *   shared_comm  every thread on MPI_COMM_WORLD, told apart by tag only:
 *                the same sweep, receives posted in reverse order
 *   any_source   per-thread tags, MPI_ANY_SOURCE receives, the sender
 *                found in the status
 *   probe        Iprobe until the message shows, then a matching Recv,
 *                per-thread tags
 *
 * Rank 0 prints "ok NAME" or "FAIL NAME: why" per test, then
 * "threads: N passed, M failed"; the exit status is non-zero on any
 * failure (and 4 when the library does not grant MPI_THREAD_MULTIPLE).
 * A watchdog (SIGALRM, THREADS_TIMEOUT seconds, default 60) turns a hang
 * into a failure.
 *
 * Build: mpicc -std=gnu11 -O2 -Wall -pthread -o threads ctest/mpi/threads.c
 * Run:   scripts/mpirun.sh -np 2 ./threads     (any n >= 2)
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NTHREADS 4
#define WHY_LEN 200

static int rank, nprocs, left, right;
static MPI_Comm comms[NTHREADS];
static const size_t sizes[] = { 0, 1, 63, 64, 65, 200, 1000, 4097, 16001, 65537, 300000, (1 << 20) + 3 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))
#define ROUNDS 3

struct thr {
	pthread_t id;
	int t;
	void (*fn)(struct thr *);
	char why[WHY_LEN];	/* the thread's first failure */
};

static void tfail(struct thr *th, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tfail(struct thr *th, const char *fmt, ...)
{
	va_list ap;

	if (th->why[0])
		return;
	va_start(ap, fmt);
	vsnprintf(th->why, WHY_LEN, fmt, ap);
	va_end(ap);
}

/* The byte i of a message from src, thread t, size len, round r. */
static inline uint8_t pat(size_t i, int src, int t, size_t len, int r)
{
	uint32_t x = (uint32_t) i * 2654435761u + (uint32_t) src * 0x85EBCA6Bu +
		     (uint32_t) t * 0x9E3779B1u + (uint32_t) len * 0xC2B2AE35u + (uint32_t) r * 0x27D4EB2Fu;

	return (uint8_t) (x ^ (x >> 9) ^ (x >> 19));
}

static void fill(uint8_t *b, size_t len, int src, int t, int r)
{
	for (size_t i = 0; i < len; i++)
		b[i] = pat(i, src, t, len, r);
}

/* check: 1 if the len bytes are the pattern, else records the first bad one. */
static int check(struct thr *th, const uint8_t *b, size_t len, int src, int t, int r, const char *what)
{
	for (size_t i = 0; i < len; i++)
		if (b[i] != pat(i, src, t, len, r)) {
			tfail(th, "%s: %zu-byte message from rank %d thread %d round %d: byte %zu wrong",
			      what, len, src, t, r, i);
			return 0;
		}
	return 1;
}

static int count_is(struct thr *th, MPI_Status *st, size_t len, const char *what)
{
	int n = -1;

	MPI_Get_count(st, MPI_BYTE, &n);
	if (n != (int) len) {
		tfail(th, "%s: count %d, expected %zu", what, n, len);
		return 0;
	}
	return 1;
}

#define MAXLEN ((1 << 20) + 3)

/* (A thread that finds a bad message goes on to the end, so that its
 * peers are not left waiting.) */

/* ring: for each size, Isend to both neighbours and Irecv from both, on
 * comm with tag; reverse posts the receives in the other order. */
static void ring(struct thr *th, MPI_Comm comm, int tag, int reverse, const char *what)
{
	uint8_t *s = malloc(MAXLEN), *rl = malloc(MAXLEN), *rr = malloc(MAXLEN);

	for (int r = 0; r < ROUNDS; r++)
		for (size_t k = 0; k < NSIZES; k++) {
			size_t len = sizes[k];
			MPI_Request q[4];
			MPI_Status st[4];
			int rc;

			fill(s, len, rank, th->t, r);
			if (reverse) {
				MPI_Irecv(rr, (int) len, MPI_BYTE, right, tag, comm, &q[1]);
				MPI_Irecv(rl, (int) len, MPI_BYTE, left, tag, comm, &q[0]);
			} else {
				MPI_Irecv(rl, (int) len, MPI_BYTE, left, tag, comm, &q[0]);
				MPI_Irecv(rr, (int) len, MPI_BYTE, right, tag, comm, &q[1]);
			}
			MPI_Isend(s, (int) len, MPI_BYTE, right, tag, comm, &q[2]);
			MPI_Isend(s, (int) len, MPI_BYTE, left, tag, comm, &q[3]);
			if ((rc = MPI_Waitall(4, q, st)) != MPI_SUCCESS) {
				tfail(th, "%s: MPI_Waitall returned %d", what, rc);
				break;
			}
			if (count_is(th, &st[0], len, what) && count_is(th, &st[1], len, what)) {
				check(th, rl, len, left, th->t, r, what);
				check(th, rr, len, right, th->t, r, what);
			}
		}
	free(s);
	free(rl);
	free(rr);
}

static void t_own_comm(struct thr *th) { ring(th, comms[th->t], 7, 0, "own_comm"); }
static void t_shared_comm(struct thr *th) { ring(th, MPI_COMM_WORLD, 100 + th->t, 1, "shared_comm"); }

/* any_source: every rank sends one message per size to its right
 * neighbour; the receive names no source, only the thread's tag. */
static void t_any_source(struct thr *th)
{
	uint8_t *s = malloc(MAXLEN), *b = malloc(MAXLEN);
	int tag = 200 + th->t;

	for (size_t k = 0; k < NSIZES; k++) {
		size_t len = sizes[k];
		MPI_Request q[2];
		MPI_Status st[2];

		fill(s, len, rank, th->t, 9);
		MPI_Irecv(b, (int) len, MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &q[0]);
		MPI_Isend(s, (int) len, MPI_BYTE, right, tag, MPI_COMM_WORLD, &q[1]);
		if (MPI_Waitall(2, q, st) != MPI_SUCCESS) {
			tfail(th, "any_source: MPI_Waitall failed");
			break;
		}
		if (st[0].MPI_SOURCE != left || st[0].MPI_TAG != tag)
			tfail(th, "any_source: status source %d tag %d, expected %d and %d",
			      st[0].MPI_SOURCE, st[0].MPI_TAG, left, tag);
		else if (count_is(th, &st[0], len, "any_source"))
			check(th, b, len, left, th->t, 9, "any_source");
	}
	free(s);
	free(b);
}

/* probe: Iprobe for the thread's tag until it shows, then Recv it. */
static void t_probe(struct thr *th)
{
	uint8_t *s = malloc(MAXLEN), *b = malloc(MAXLEN);
	int tag = 300 + th->t;

	for (size_t k = 0; k < NSIZES; k++) {
		size_t len = sizes[k];
		MPI_Request q;
		MPI_Status st;
		int flag = 0, n = -1;

		fill(s, len, rank, th->t, 11);
		MPI_Isend(s, (int) len, MPI_BYTE, right, tag, MPI_COMM_WORLD, &q);
		while (!flag)
			MPI_Iprobe(left, tag, MPI_COMM_WORLD, &flag, &st);
		MPI_Get_count(&st, MPI_BYTE, &n);
		if (n != (int) len || st.MPI_SOURCE != left) {
			tfail(th, "probe: %d bytes from %d, expected %zu from %d", n, st.MPI_SOURCE, len, left);
			MPI_Recv(b, MAXLEN, MPI_BYTE, left, tag, MPI_COMM_WORLD, &st);
		} else {
			MPI_Recv(b, (int) len, MPI_BYTE, left, tag, MPI_COMM_WORLD, &st);
			check(th, b, len, left, th->t, 11, "probe");
		}
		MPI_Wait(&q, MPI_STATUS_IGNORE);
	}
	free(s);
	free(b);
}

static void *thread_main(void *arg)
{
	struct thr *th = arg;

	th->fn(th);
	return NULL;
}

static int passed, failed;
static char alarm_msg[200];

static void on_alarm(int sig)
{
	(void) sig;
	if (write(STDOUT_FILENO, alarm_msg, strlen(alarm_msg)) < 0) {
		/* nothing more to do */
	}
	_exit(3);
}

/* run runs fn on NTHREADS threads of every rank and reports on rank 0. */
static void run(const char *name, void (*fn)(struct thr *), unsigned timeout)
{
	struct thr th[NTHREADS];
	char why[WHY_LEN] = "", first[WHY_LEN + 40];
	int bad = 0, anybad = 0;

	snprintf(alarm_msg, sizeof(alarm_msg), "FAIL %s: rank %d: no progress in %u s\n", name, rank, timeout);
	alarm(timeout);
	MPI_Barrier(MPI_COMM_WORLD);
	for (int t = 0; t < NTHREADS; t++) {
		memset(&th[t], 0, sizeof(th[t]));
		th[t].t = t;
		th[t].fn = fn;
		if (pthread_create(&th[t].id, NULL, thread_main, &th[t]) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			MPI_Abort(MPI_COMM_WORLD, 3);
		}
	}
	for (int t = 0; t < NTHREADS; t++) {
		pthread_join(th[t].id, NULL);
		if (th[t].why[0] && !bad) {
			bad = 1;
			snprintf(why, sizeof(why), "thread %d: %s", t, th[t].why);
			fprintf(stderr, "# rank %d: %s: %s\n", rank, name, why);
		}
	}
	MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	alarm(0);
	if (!anybad) {
		passed++;
		if (rank == 0)
			printf("ok %s\n", name);
		return;
	}
	failed++;
	/* The first rank with a failure tells rank 0 why. */
	{
		int who = bad ? rank : nprocs, lowest;

		MPI_Allreduce(&who, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
		if (lowest == rank && rank != 0)
			MPI_Send(why, WHY_LEN, MPI_CHAR, 0, 999, MPI_COMM_WORLD);
		if (rank == 0) {
			if (lowest != 0)
				MPI_Recv(why, WHY_LEN, MPI_CHAR, lowest, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			snprintf(first, sizeof(first), "rank %d: %s", lowest, why);
			printf("FAIL %s: %s\n", name, first);
		}
	}
}

int main(int argc, char **argv)
{
	const char *env = getenv("THREADS_TIMEOUT");
	unsigned timeout = env && atoi(env) > 0 ? (unsigned) atoi(env) : 60;
	int provided = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	if (provided < MPI_THREAD_MULTIPLE || nprocs < 2) {
		if (rank == 0)
			printf("threads: needs MPI_THREAD_MULTIPLE (got level %d) and 2 or more ranks (got %d)\n",
			       provided, nprocs);
		MPI_Finalize();
		return 4;
	}
	signal(SIGALRM, on_alarm);
	left = (rank + nprocs - 1) % nprocs;
	right = (rank + 1) % nprocs;
	for (int t = 0; t < NTHREADS; t++)
		MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);

	run("own_comm", t_own_comm, timeout);
	run("shared_comm", t_shared_comm, timeout);
	run("any_source", t_any_source, timeout);
	run("probe", t_probe, timeout);

	for (int t = 0; t < NTHREADS; t++)
		MPI_Comm_free(&comms[t]);
	if (rank == 0)
		printf("threads: %d ranks x %d threads: %d passed, %d failed\n", nprocs, NTHREADS, passed, failed);
	MPI_Finalize();
	return failed ? 1 : 0;
}
