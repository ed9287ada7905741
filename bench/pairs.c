/* pairs: MPI ping-pong of every rank pair (0-1, 2-3, ...) at once, for
 * bench/oversub.sh: with more ranks than cores every pair needs its peer
 * to get a CPU in turn, the pattern of an oversubscribed laptop or CI
 * runner.
 *
 *   mpirun -np N pairs [MAXSIZE] [sendrecv|pingpong] [ITERS]
 *
 * For each power of two from 1 B to MAXSIZE (default 8 MiB), after a
 * warm-up round, rank 0 prints "SIZE USEC": the one-way time of its pair,
 * averaged over a number of round trips that shrinks with the size. With
 * "sendrecv", both ranks of a pair send and receive at once
 * (MPI_Sendrecv, as IMB's Sendrecv), and USEC is the time of one. With
 * ITERS, only MAXSIZE (any size) is run, ITERS round trips three times
 * over, and each time printed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	int rank, size;
	long max = argc > 1 ? atol(argv[1]) : 8L << 20;
	int sendrecv = argc > 2 && !strcmp(argv[2], "sendrecv");
	int fixed = argc > 3 ? atoi(argv[3]) : 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	char *buf = malloc(max), *rbuf = malloc(max);
	int peer = rank ^ 1;
	if (size % 2 || !buf || !rbuf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (long n = fixed > 0 ? max : 1; n <= max; n *= 2) {
		int iters = fixed > 0 ? fixed : n <= 65536 ? 200 : (int) (20 * 1048576 / n) + 5;
		double t = 0;

		for (int w = 0; w < (fixed > 0 ? 4 : 2); w++) {
			MPI_Barrier(MPI_COMM_WORLD);
			double t0 = MPI_Wtime();
			for (int i = 0; i < iters; i++) {
				if (sendrecv) {
					MPI_Sendrecv(buf, (int) n, MPI_BYTE, peer, 0, rbuf, (int) n, MPI_BYTE, peer, 0,
						     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
					MPI_Sendrecv(buf, (int) n, MPI_BYTE, peer, 0, rbuf, (int) n, MPI_BYTE, peer, 0,
						     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				} else if (rank & 1) {
					MPI_Recv(buf, (int) n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
					MPI_Send(buf, (int) n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
				} else {
					MPI_Send(buf, (int) n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
					MPI_Recv(buf, (int) n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				}
			}
			t = (MPI_Wtime() - t0) / iters / 2 * 1e6;
			if (fixed > 0 && w > 0 && rank == 0)
				printf("%ld %.2f\n", n, t);
		}
		if (fixed > 0)
			break;
		if (rank == 0)
			printf("%ld %.2f\n", n, t);
	}
	free(buf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
