/* patterns: the communication patterns of MPI codes beyond a ping-pong,
 * timed as Intel's MPI Benchmarks (IMB-MPI1) time them, for
 * bench/patterns.sh.
 *
 *   mpirun -np N patterns [-t SECONDS] [-l MINSIZE] [-m MAXSIZE] [PATTERN...]
 *
 * PATTERN is one of (default: all, in this order):
 *   PingPong   ranks 0 and 1 only, the others wait; one-way time (half a
 *              round trip)
 *   Sendrecv   every rank sends to its right neighbour and receives from
 *              its left at once (MPI_Sendrecv on a ring)
 *   Exchange   every rank sends to both neighbours and receives from both
 *              (two MPI_Isend, two MPI_Irecv, MPI_Waitall)
 *   Allreduce  a sum of SIZE/4 floats
 *   Alltoall   SIZE bytes from every rank to every rank
 *   Bcast      SIZE bytes from a root that moves on each call
 *
 * Sizes: 0 B, then 1 B to MAXSIZE (default 4 MiB) in steps of 4x, those
 * from MINSIZE (default 0) up. At each
 * size, after a warm-up call, a trial of a few calls sets the number of
 * calls that takes about SECONDS (default 0.05; at least 4, at most
 * 100000: the same count on every rank). Rank 0 prints one line
 * "PATTERN SIZE USEC": the time of one call averaged over the calls, the
 * largest of any rank (IMB's t_max; PingPong's is one way). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PINGPONG, SENDRECV, EXCHANGE, ALLREDUCE, ALLTOALL, BCAST, NPATTERNS };
static const char *names[NPATTERNS] = { "PingPong", "Sendrecv", "Exchange", "Allreduce", "Alltoall", "Bcast" };

static int rank, nranks;
static char *sbuf, *rbuf, *rbuf2;

/* run PATTERN with N bytes ITERS times; returns the seconds it took. */
static double run(int pattern, long n, long iters)
{
	int right = (rank + 1) % nranks, left = (rank + nranks - 1) % nranks;
	MPI_Request req[4];

	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (long i = 0; i < iters; i++) {
		switch (pattern) {
		case PINGPONG:
			if (rank == 0) {
				MPI_Send(sbuf, (int) n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
				MPI_Recv(rbuf, (int) n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else if (rank == 1) {
				MPI_Recv(rbuf, (int) n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(sbuf, (int) n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
			}
			break;
		case SENDRECV:
			MPI_Sendrecv(sbuf, (int) n, MPI_BYTE, right, 0, rbuf, (int) n, MPI_BYTE, left, 0,
				     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			break;
		case EXCHANGE:
			MPI_Irecv(rbuf, (int) n, MPI_BYTE, left, 0, MPI_COMM_WORLD, &req[0]);
			MPI_Irecv(rbuf2, (int) n, MPI_BYTE, right, 0, MPI_COMM_WORLD, &req[1]);
			MPI_Isend(sbuf, (int) n, MPI_BYTE, left, 0, MPI_COMM_WORLD, &req[2]);
			MPI_Isend(sbuf, (int) n, MPI_BYTE, right, 0, MPI_COMM_WORLD, &req[3]);
			MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
			break;
		case ALLREDUCE:
			MPI_Allreduce(sbuf, rbuf, (int) (n / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
			break;
		case ALLTOALL:
			MPI_Alltoall(sbuf, (int) n, MPI_BYTE, rbuf, (int) n, MPI_BYTE, MPI_COMM_WORLD);
			break;
		case BCAST:
			MPI_Bcast(rbuf, (int) n, MPI_BYTE, (int) (i % nranks), MPI_COMM_WORLD);
			break;
		}
	}
	double t = MPI_Wtime() - t0, tmax;
	MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return tmax;
}

int main(int argc, char **argv)
{
	double budget = 0.05;
	long min = 0, max = 4L << 20;
	int want[NPATTERNS], nwant = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	for (int a = 1; a < argc; a++) {
		if (!strcmp(argv[a], "-t") && a + 1 < argc) {
			budget = atof(argv[++a]);
		} else if (!strcmp(argv[a], "-l") && a + 1 < argc) {
			min = atol(argv[++a]);
		} else if (!strcmp(argv[a], "-m") && a + 1 < argc) {
			max = atol(argv[++a]);
		} else {
			int p;
			for (p = 0; p < NPATTERNS && strcmp(argv[a], names[p]); p++)
				;
			if (p == NPATTERNS) {
				if (rank == 0)
					fprintf(stderr, "patterns: unknown pattern %s\n", argv[a]);
				MPI_Abort(MPI_COMM_WORLD, 2);
			}
			want[nwant++] = p;
		}
	}
	if (nwant == 0)
		for (int p = 0; p < NPATTERNS; p++)
			want[nwant++] = p;
	if (nranks < 2 || max < 1 || budget <= 0) {
		if (rank == 0)
			fprintf(stderr, "patterns: needs 2 or more ranks, a positive size and time\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	/* Alltoall sends MAXSIZE to every rank from one buffer. */
	sbuf = calloc(1, max * nranks);
	rbuf = calloc(1, max * nranks);
	rbuf2 = calloc(1, max);
	if (!sbuf || !rbuf || !rbuf2)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int w = 0; w < nwant; w++) {
		int p = want[w];
		for (long n = 0; n <= max; n = n ? n * 4 : 1) {
			if (n < min)
				continue;
			run(p, n, 1); /* warm-up: connections, registrations */
			double trial = run(p, n, 3) / 3;
			long iters = trial > 0 ? (long) (budget / trial) : 100000;
			if (iters < 4)
				iters = 4;
			if (iters > 100000)
				iters = 100000;
			/* One count for all: rank 0's. */
			MPI_Bcast(&iters, 1, MPI_LONG, 0, MPI_COMM_WORLD);
			double t = run(p, n, iters) / iters * 1e6;
			if (p == PINGPONG)
				t /= 2;
			if (rank == 0) {
				printf("%s %ld %.3f\n", names[p], n, t);
				fflush(stdout);
			}
		}
	}
	free(sbuf);
	free(rbuf);
	free(rbuf2);
	MPI_Finalize();
	return 0;
}
