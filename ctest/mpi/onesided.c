/* onesided.c: MPI one-sided communication checked end to end.
 *
 * Over Open MPI's osc/rdma with btl/ofi (scripts/multihost.sh) every
 * operation below is an fi_read, fi_write or atomic of our provider; over
 * osc/pt2pt (scripts/mpi.sh, one host) they travel as tagged messages.
 * Each test verifies what lands, on every rank; rank 0 prints "ok NAME"
 * or "FAIL NAME" per test and "onesided: N passed, M failed"; the exit
 * status is non-zero on any failure. A watchdog (SIGALRM, 60 s) turns a
 * hang into a failure.
 *
 *   fence        Put, Get, Accumulate(SUM), Get_accumulate(SUM) in fence
 *                epochs, around the ring, 1 to 100000 elements
 *   pscw         Post/Start/Complete/Wait with Put from the left neighbour
 *   lock         passive target: Fetch_and_op(SUM) from every rank on rank
 *                0, then Compare_and_swap races, Put + Win_flush + Get
 *
 * Build: mpicc -std=gnu11 -O2 -Wall -o onesided ctest/mpi/onesided.c
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NWIN 100000

static int rank, nprocs, passed, failed, bad;
static int64_t *base;
static MPI_Win win;

static void on_alarm(int sig)
{
	static const char msg[] = "FAIL onesided: timed out (hang)\n";

	(void) sig;
	if (write(1, msg, sizeof(msg) - 1) < 0) {
	}
	_exit(3);
}

static void report(const char *name)
{
	int all = 0;

	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s %s%s\n", all ? "FAIL" : "ok", name, all ? " (see above)" : "");
	if (all)
		failed++;
	else
		passed++;
	bad = 0;
}

#define EXPECT(cond, ...)                                       \
	do {                                                    \
		if (!(cond)) {                                  \
			if (bad++ < 3) {                        \
				printf("# rank %d: ", rank);    \
				printf(__VA_ARGS__);            \
				printf("\n");                   \
			}                                       \
		}                                               \
	} while (0)

static void t_fence(void)
{
	static const int counts[] = { 1, 7, 1000, NWIN / 2 };
	int left = (rank + nprocs - 1) % nprocs, right = (rank + 1) % nprocs;
	int64_t *src = malloc(NWIN * sizeof(*src)), *got = malloc(NWIN * sizeof(*got));

	for (unsigned k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		int n = counts[k];

		for (int i = 0; i < n; i++)
			src[i] = (int64_t) rank * 1000000 + i + k;
		memset(base, 0, NWIN * sizeof(*base));
		MPI_Win_fence(0, win);
		MPI_Put(src, n, MPI_INT64_T, right, 0, n, MPI_INT64_T, win);
		MPI_Win_fence(0, win);
		for (int i = 0; i < n; i++)
			EXPECT(base[i] == (int64_t) left * 1000000 + i + k, "put %d: [%d] = %ld", n, i, (long) base[i]);
		MPI_Get(got, n, MPI_INT64_T, right, 0, n, MPI_INT64_T, win);
		MPI_Win_fence(0, win);
		for (int i = 0; i < n; i++)
			EXPECT(got[i] == (int64_t) rank * 1000000 + i + k, "get %d: [%d] = %ld", n, i, (long) got[i]);
		/* Every rank adds its src to rank 0's window. */
		memset(base, 0, NWIN * sizeof(*base));
		MPI_Win_fence(0, win);
		MPI_Accumulate(src, n, MPI_INT64_T, 0, 0, n, MPI_INT64_T, MPI_SUM, win);
		MPI_Win_fence(0, win);
		if (rank == 0)
			for (int i = 0; i < n; i++) {
				int64_t want = (int64_t) 1000000 * nprocs * (nprocs - 1) / 2 + (int64_t) nprocs * (i + k);

				EXPECT(base[i] == want, "accumulate %d: [%d] = %ld, want %ld", n, i, (long) base[i], (long) want);
			}
		/* Get_accumulate onto the right neighbour's last element: the
		 * old value (0) comes back and the sum lands. */
		base[NWIN - 1] = 5;
		got[0] = -1;
		MPI_Win_fence(0, win);
		MPI_Get_accumulate(src, 1, MPI_INT64_T, got, 1, MPI_INT64_T, right, NWIN - 1, 1, MPI_INT64_T,
				   MPI_SUM, win);
		MPI_Win_fence(0, win);
		EXPECT(got[0] == 5, "get_accumulate: old %ld", (long) got[0]);
		EXPECT(base[NWIN - 1] == 5 + (int64_t) left * 1000000 + k, "get_accumulate: %ld",
		       (long) base[NWIN - 1]);
	}
	free(src);
	free(got);
}

static void t_pscw(void)
{
	MPI_Group world, from, to;
	int left = (rank + nprocs - 1) % nprocs, right = (rank + 1) % nprocs;
	int64_t v[4] = { rank, rank * 2, rank * 3, 77 };

	MPI_Comm_group(MPI_COMM_WORLD, &world);
	MPI_Group_incl(world, 1, &left, &from);
	MPI_Group_incl(world, 1, &right, &to);
	memset(base, 0, 4 * sizeof(*base));
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_post(from, 0, win);
	MPI_Win_start(to, 0, win);
	MPI_Put(v, 4, MPI_INT64_T, right, 0, 4, MPI_INT64_T, win);
	MPI_Win_complete(win);
	MPI_Win_wait(win);
	EXPECT(base[0] == left && base[1] == left * 2 && base[2] == left * 3 && base[3] == 77,
	       "pscw: %ld %ld %ld %ld", (long) base[0], (long) base[1], (long) base[2], (long) base[3]);
	MPI_Group_free(&from);
	MPI_Group_free(&to);
	MPI_Group_free(&world);
}

static void t_lock(void)
{
	int64_t one = 1, old = -1, got = -1, winners = 0, cmp = 0, mine = rank + 1, res = -1;

	if (rank == 0)
		base[0] = base[1] = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	for (int i = 0; i < 10; i++) {
		MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
		MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 0, MPI_SUM, win);
		MPI_Win_unlock(0, win);
		EXPECT(old >= 0 && old < 10 * nprocs, "fetch_and_op old %ld", (long) old);
	}
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	MPI_Get(&got, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win);
	MPI_Win_flush(0, win);
	MPI_Win_unlock(0, win);
	EXPECT(got == 10 * nprocs, "fetch_and_op total %ld, want %d", (long) got, 10 * nprocs);
	MPI_Barrier(MPI_COMM_WORLD);
	/* Everyone tries to swap 0 for its id: exactly one wins. */
	MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
	MPI_Compare_and_swap(&mine, &cmp, &res, MPI_INT64_T, 0, 1, win);
	MPI_Win_unlock(0, win);
	int64_t won = res == 0;
	MPI_Allreduce(&won, &winners, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	EXPECT(winners == 1, "compare_and_swap: %ld winners", (long) winners);
	/* Put, flush, then Get in the same epoch sees it. */
	int64_t v = 4242 + rank, back = 0;
	int target = (rank + 1) % nprocs;
	MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
	MPI_Put(&v, 1, MPI_INT64_T, target, 10 + rank, 1, MPI_INT64_T, win);
	MPI_Win_flush(target, win);
	MPI_Get(&back, 1, MPI_INT64_T, target, 10 + rank, 1, MPI_INT64_T, win);
	MPI_Win_unlock(target, win);
	EXPECT(back == v, "put, flush, get: %ld", (long) back);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm(60);
	MPI_Win_allocate(NWIN * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
	memset(base, 0, NWIN * sizeof(int64_t));
	MPI_Barrier(MPI_COMM_WORLD);
	t_fence();
	report("fence");
	t_pscw();
	report("pscw");
	t_lock();
	report("lock");
	MPI_Win_free(&win);
	if (rank == 0)
		printf("onesided: %d passed, %d failed\n", passed, failed);
	MPI_Finalize();
	return failed ? 1 : 0;
}
