/* mtlpp: a ping-pong that makes, on a libfabric provider alone, the calls
 * Open MPI 4.1's ofi MTL makes for a NetPIPE ping-pong of small messages
 * (MPI_Send then MPI_Recv): fi_tinjectdata up to the provider's inject
 * size, above it fi_tsenddata and fi_cq_read until its entry comes; then
 * fi_trecv, and fi_cq_read of up to 100 entries until the receive's entry
 * comes. The domain asks for FI_THREAD_DOMAIN and FI_AV_MAP, transmits
 * default to FI_COMPLETION and the CQ is bound with
 * FI_SELECTIVE_COMPLETION for them, as the MTL does. Set beside
 * NetPIPE over cm/ofi on the same library, it splits a one-way trip into
 * the provider's share and Open MPI's (bench/mtlpp.sh).
 *
 *   mtlpp [-p PROVIDER] [-n ITERATIONS] [-x] [SIZE...]
 *
 * With -x it makes instead, on both ranks at once, the calls of one MPI
 * Exchange (IMB-MPI1) at 2 ranks (exchange() below) and prints the time
 * of one, not a one-way trip.
 *
 * One process forks (before any libfabric call) into two ranks on this
 * host; they swap endpoint names through pipes. For each size (default
 * 1 B) rank 0 prints "SIZE ONE_WAY_USEC" after a warm-up of WARMUP round
 * trips. Built against include/rdma and linked with -lfabric; it shares
 * benchutil.h with msgrate.c and rmabench.c, but reads completions itself,
 * 100 at a time as the MTL does (in a ping-pong each read finds at most
 * the one entry awaited). */
#include <sys/wait.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#define BENCH_NAME "mtlpp"
#include "benchutil.h"
#include "../ctest/node.h"

/* Round trips before the clock starts, per size: tens of milliseconds.
 * Right after the endpoints open, the first few milliseconds of a
 * ping-pong on our library are often slow (0.6-1.7 us a one-way trip
 * over the first 20,000, then 0.09; not traced), and 1000 round trips did
 * not cover them. */
#define WARMUP 300000
#define MAXSIZE 4096

#define CHECK(call) do { int rc_ = (int) (call); if (rc_) die(#call, rc_); } while (0)

struct rank {
	struct ct_node c;
	fi_addr_t peer;
	size_t inject;
};

static void open_rank(struct rank *r, const char *prov, int to_peer, int from_peer)
{
	struct ct_opts o = {
		.prov = prov, .caps = FI_TAGGED, .threading = FI_THREAD_DOMAIN, .av_type = FI_AV_MAP,
		.tx_op_flags = FI_COMPLETION, .tx_bind = FI_TRANSMIT | FI_SELECTIVE_COMPLETION, .rx_bind = FI_RECV,
	};
	char peer[256];
	size_t len;

	CHECK(ct_open(&r->c, &o));
	r->inject = r->c.info->tx_attr->inject_size;
	len = r->c.namelen;
	if (write(to_peer, &len, sizeof(len)) != sizeof(len) || write(to_peer, r->c.name, len) != (ssize_t) len ||
	    read(from_peer, &len, sizeof(len)) != sizeof(len) || len > sizeof(peer) ||
	    read(from_peer, peer, len) != (ssize_t) len)
		die("name exchange", -FI_EIO);
	if (fi_av_insert(r->c.av, peer, 1, &r->peer, 0, NULL) != 1)
		die("fi_av_insert", -FI_EINVAL);
}

/* recv_wait posts a receive and reads the CQ until its entry comes. */
static void recv_wait(struct rank *r, void *buf, size_t size, struct fi_context *ctx)
{
	struct fi_cq_tagged_entry e[100];
	ssize_t n;

	CHECK(fi_trecv(r->c.ep, buf, size, NULL, r->peer, 1, 0, ctx));
	while ((n = fi_cq_read(r->c.cq, e, 100)) == -FI_EAGAIN)
		;
	if (n < 0)
		die("fi_cq_read", (int) n);
}

/* send_one injects a message up to the inject size; a longer one is
 * sent and its completion awaited, as a blocking MPI_Send does. */
static void send_one(struct rank *r, const void *buf, size_t size, struct fi_context *ctx)
{
	struct fi_cq_tagged_entry e[100];
	ssize_t rc;

	if (size <= r->inject) {
		while ((rc = fi_tinjectdata(r->c.ep, buf, size, 0, r->peer, 1)) == -FI_EAGAIN)
			(void) fi_cq_read(r->c.cq, e, 100);
		if (rc)
			die("fi_tinjectdata", (int) rc);
		return;
	}
	while ((rc = fi_tsenddata(r->c.ep, buf, size, NULL, 0, r->peer, 1, ctx)) == -FI_EAGAIN)
		(void) fi_cq_read(r->c.cq, e, 100);
	if (rc)
		die("fi_tsenddata", (int) rc);
	while ((rc = fi_cq_read(r->c.cq, e, 100)) == -FI_EAGAIN)
		;
	if (rc < 0)
		die("fi_cq_read", (int) rc);
}

/* exchange makes the calls of one MPI Exchange (IMB-MPI1) between two
 * ranks, whose left and right neighbour is the same peer: two receives,
 * two sends with completions (the MTL's MPI_Isend), then reads until the
 * four entries came. */
static void exchange(struct rank *r, void *sbuf, void *rbuf, void *rbuf2, size_t size, struct fi_context *ctx)
{
	struct fi_cq_tagged_entry e[100];
	ssize_t rc;
	int done = 0;

	CHECK(fi_trecv(r->c.ep, rbuf, size, NULL, r->peer, 1, 0, &ctx[0]));
	CHECK(fi_trecv(r->c.ep, rbuf2, size, NULL, r->peer, 1, 0, &ctx[1]));
	for (int i = 0; i < 2; i++) {
		while ((rc = fi_tsenddata(r->c.ep, sbuf, size, NULL, 0, r->peer, 1, &ctx[2 + i])) == -FI_EAGAIN)
			if ((rc = fi_cq_read(r->c.cq, e, 100)) > 0)
				done += (int) rc;
		if (rc)
			die("fi_tsenddata", (int) rc);
	}
	while (done < 4) {
		rc = fi_cq_read(r->c.cq, e, 100);
		if (rc > 0)
			done += (int) rc;
		else if (rc != -FI_EAGAIN)
			die("fi_cq_read", (int) rc);
	}
}

static int exchange_mode;

static void run(int me, const char *prov, long iters, int nsizes, size_t *sizes, int to_peer, int from_peer)
{
	static char rbuf2[MAXSIZE];
	struct fi_context xctx[4];
	static char sbuf[MAXSIZE], rbuf[MAXSIZE];
	struct fi_context ctx, sctx;
	struct rank r;

	open_rank(&r, prov, to_peer, from_peer);
	for (int s = 0; s < nsizes; s++) {
		double t0 = 0;

		for (long k = -WARMUP; k < iters; k++) {
			if (k == 0)
				t0 = now();
			if (exchange_mode) {
				exchange(&r, sbuf, rbuf, rbuf2, sizes[s], xctx);
			} else if (me == 0) {
				send_one(&r, sbuf, sizes[s], &sctx);
				recv_wait(&r, rbuf, sizes[s], &ctx);
			} else {
				recv_wait(&r, rbuf, sizes[s], &ctx);
				send_one(&r, sbuf, sizes[s], &sctx);
			}
		}
		if (me == 0)
			printf("%zu %.4f\n", sizes[s], (now() - t0) / iters / (exchange_mode ? 1 : 2) * 1e6);
	}
	fflush(stdout);
	fi_close(&r.c.ep->fid);
	fi_close(&r.c.av->fid);
	fi_close(&r.c.cq->fid);
	fi_close(&r.c.domain->fid);
	fi_close(&r.c.fabric->fid);
}

int main(int argc, char **argv)
{
	const char *prov = "psm2";
	long iters = 200000;
	size_t sizes[64];
	int nsizes = 0, a[2], b[2], opt, status;
	pid_t child;

	while ((opt = getopt(argc, argv, "p:n:x")) != -1) {
		switch (opt) {
		case 'p': prov = optarg; break;
		case 'n': iters = atol(optarg); break;
		case 'x': exchange_mode = 1; break;
		default:
			fprintf(stderr, "usage: mtlpp [-p PROVIDER] [-n ITERATIONS] [-x] [SIZE...]\n");
			return 2;
		}
	}
	for (; optind < argc && nsizes < 64; optind++) {
		sizes[nsizes] = strtoul(argv[optind], NULL, 0);
		if (sizes[nsizes] > MAXSIZE) {
			fprintf(stderr, "mtlpp: sizes up to %d bytes (inject sizes)\n", MAXSIZE);
			return 2;
		}
		nsizes++;
	}
	if (!nsizes)
		sizes[nsizes++] = 1;
	if (iters < 1 || pipe(a) || pipe(b))
		return 2;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		run(1, prov, iters, nsizes, sizes, b[1], a[0]);
		return 0;
	}
	run(0, prov, iters, nsizes, sizes, a[1], b[0]);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	return 0;
}
