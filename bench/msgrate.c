/* msgrate: a windowed message-rate benchmark over libfabric, for make bench.
 *
 *   msgrate -p PROVIDER [-w WINDOW] [-t SECONDS] [-e EXTRA] [-s|-c] [SIZE...]
 *   msgrate -p PROVIDER -S PORT [options] [SIZE...]          (receiver)
 *   msgrate -p PROVIDER -S PORT -C HOST [options] [SIZE...]  (sender)
 *
 * One process forks (before any libfabric call) into a sender and a
 * receiver on this host; they swap endpoint names through a pipe. With -S
 * the receiver waits for one sender on TCP port PORT instead, and -C HOST
 * is that sender, on another host: the same exchange over the connection
 * (both must be given the same sizes). For each
 * size (default 8 B to 64 KiB, powers of two) the receiver posts WINDOW
 * (default 64) tagged receives, the sender posts WINDOW tagged sends, and
 * when the receiver has them all it posts the next WINDOW and answers with
 * a 4-byte message the sender waits for: WINDOW messages in flight, as
 * osu_mbw_mr does, and every message finds its receive posted. Each size runs for about SECONDS (default 0.5) after a
 * warm-up. The sender prints one line per size:
 *
 *   SIZE MESSAGES_PER_SECOND MB_PER_SECOND
 *
 * Built against this repository's include/rdma and linked with -lfabric,
 * it runs unchanged on our library and on Debian's (LD_LIBRARY_PATH picks
 * which); completions are read by busy-polling fi_cq_read. With -e EXTRA,
 * each side also opens EXTRA more endpoints in its domain (each with a CQ
 * of its own, enabled, idle): a provider whose fast path serves only a
 * domain's sole endpoint shows it here. With -s, the CQs have a wait
 * object (FI_WAIT_UNSPEC) and completions are awaited in fi_cq_sread; with
 * -c, they are counted by a counter bound for FI_SEND|FI_RECV (the CQ,
 * bound with FI_SELECTIVE_COMPLETION, gets none) and awaited in
 * fi_cntr_wait. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#define BENCH_NAME "msgrate"
#include "benchutil.h"
#include "../ctest/node.h"
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_tagged.h>

#define MAXW 1024
#define TAG_DATA 0x1
#define TAG_ACK 0x2

struct node {
	struct ct_node c;
	fi_addr_t peer;
	struct fi_context2 ctx[MAXW + 1];
};

static int cntr_mode; /* -c: completions counted, awaited in fi_cntr_wait */

/* bind_cntr binds the completion counter (-c) to the endpoint. */
static int bind_cntr(struct ct_node *c, void *arg)
{
	struct fi_cntr_attr cattr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_UNSPEC };
	int rc;

	(void) arg;
	if ((rc = fi_cntr_open(c->domain, &cattr, &bench_cntr, NULL)))
		return rc;
	return fi_ep_bind(c->ep, &bench_cntr->fid, FI_SEND | FI_RECV);
}

static void open_node(struct node *n, const char *prov)
{
	uint64_t sel = cntr_mode ? FI_SELECTIVE_COMPLETION : 0;
	struct ct_opts o = {
		.prov = prov, .version = FI_VERSION(1, 6), .caps = FI_TAGGED, .mode = FI_CONTEXT | FI_CONTEXT2,
		.mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
		.av_type = FI_AV_MAP, .cq_size = 4 * MAXW, .cq_wait = bench_sread ? FI_WAIT_UNSPEC : FI_WAIT_NONE,
		.tx_bind = sel ? FI_TRANSMIT | sel : 0, .rx_bind = sel ? FI_RECV | sel : 0,
		.hook = cntr_mode ? bind_cntr : NULL,
	};
	int rc;

	if ((rc = ct_open(&n->c, &o)))
		die("set-up", rc);
	if (n->c.info->domain_attr->mr_mode & FI_MR_LOCAL)
		die("provider needs FI_MR_LOCAL (not supported here)", -FI_ENOSYS);
}

/* open_extra opens k more endpoints in n's domain, each with its own CQ,
 * bound to n's AV and enabled; they stay idle (and open) until exit. */
static void open_extra(struct node *n, int k)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 64 };

	for (int i = 0; i < k; i++) {
		struct fid_cq *cq;
		struct fid_ep *ep;
		int rc;

		if ((rc = fi_cq_open(n->c.domain, &cq_attr, &cq, NULL)) ||
		    (rc = fi_endpoint(n->c.domain, n->c.info, &ep, NULL)) ||
		    (rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV)) ||
		    (rc = fi_ep_bind(ep, &n->c.av->fid, 0)) || (rc = fi_enable(ep)))
			die("extra endpoint", rc);
	}
}

/* swap sends our name on fd w and reads the peer's from fd r. */
static void swap(struct node *n, int r, int w)
{
	char name[256], peer[256];
	size_t len = sizeof(name);
	int rc;

	if ((rc = fi_getname(&n->c.ep->fid, name, &len)))
		die("fi_getname", rc);
	if (write(w, &len, sizeof(len)) != sizeof(len) || write(w, name, len) != (ssize_t) len)
		die("write name", -FI_EIO);
	if (read(r, &len, sizeof(len)) != sizeof(len) || len > sizeof(peer) ||
	    read(r, peer, len) != (ssize_t) len)
		die("read name", -FI_EIO);
	if ((rc = fi_av_insert(n->c.av, peer, 1, &n->peer, 0, NULL)) != 1)
		die("fi_av_insert", rc < 0 ? rc : -FI_EINVAL);
}

static void post_recvs(struct node *n, char *buf, size_t size, int win, int *done)
{
	for (int i = 0; i < win; i++)
		POST(n->c.cq, fi_trecv(n->c.ep, buf, size, NULL, FI_ADDR_UNSPEC, TAG_DATA, 0, &n->ctx[i]), done);
}

/* One round: the sender sends win messages and waits for the ack; the
 * receiver takes them, reposts, and acks. */
static void round_send(struct node *n, char *buf, size_t size, int win, char *ack)
{
	int done = 0;

	POST(n->c.cq, fi_trecv(n->c.ep, ack, 4, NULL, FI_ADDR_UNSPEC, TAG_ACK, 0, &n->ctx[MAXW]), &done);
	for (int i = 0; i < win; i++)
		POST(n->c.cq, fi_tsend(n->c.ep, buf, size, NULL, n->peer, TAG_DATA, &n->ctx[i]), &done);
	wait_comps(n->c.cq, win + 1 - done);
}

/* round_recv: every receive of the round was posted before the sender
 * could send (the ready handshake, then each ack after the reposts), so
 * none completes while posting: done stays 0 until the ack is posted. */
static void round_recv(struct node *n, char *buf, size_t size, int win, char *ack, int last)
{
	int done = 0;

	wait_comps(n->c.cq, win);
	if (!last)
		post_recvs(n, buf, size, win, &done);
	POST(n->c.cq, fi_tsend(n->c.ep, ack, 4, NULL, n->peer, TAG_ACK, &n->ctx[MAXW]), &done);
	wait_comps(n->c.cq, 1 - done);
}

int main(int argc, char **argv)
{
	const char *prov = NULL;
	int win = 64, opt, p2c[2], c2p[2], nsizes = 0, child = -1, rfd, wfd, receiver;
	const char *port = NULL, *host = NULL;
	double secs = 0.5;
	int extra = 0;
	size_t sizes[64];
	struct node n;
	char ack[4] = { 0 };

	while ((opt = getopt(argc, argv, "p:w:t:e:scS:C:")) != -1) {
		switch (opt) {
		case 'S': port = optarg; break;
		case 'C': host = optarg; break;
		case 's': bench_sread = 1; break;
		case 'c': cntr_mode = 1; break;
		case 'p': prov = optarg; break;
		case 'e': extra = atoi(optarg); break;
		case 'w': win = atoi(optarg); break;
		case 't': secs = atof(optarg); break;
		default: goto usage;
		}
	}
	if (!prov || win < 1 || win > MAXW || extra < 0 || extra > 64 || (host && !port))
		goto usage;
	for (int i = optind; i < argc && nsizes < 64; i++)
		sizes[nsizes++] = strtoull(argv[i], NULL, 0);
	if (!nsizes)
		for (size_t s = 8; s <= 65536; s *= 2)
			sizes[nsizes++] = s;
	if (port) {
		rfd = wfd = tcp_fd(host, port);
		receiver = !host;
	} else {
		if (pipe(p2c) || pipe(c2p))
			die("pipe", -FI_EIO);
		child = fork();
		if (child < 0)
			die("fork", -FI_EIO);
		receiver = child == 0;
		rfd = receiver ? p2c[0] : c2p[0];
		wfd = receiver ? c2p[1] : p2c[1];
	}
	memset(&n, 0, sizeof(n));
	open_node(&n, prov);
	open_extra(&n, extra);
	swap(&n, rfd, wfd);

	for (int k = 0; k < nsizes; k++) {
		size_t size = sizes[k];
		char *buf = calloc(1, size ? size : 1);

		if (!buf)
			die("calloc", -FI_ENOMEM);
		/* Two phases a size: 20 rounds of warm-up that also time one
		 * round, then as many as fill about secs. The sender chooses
		 * each phase's count and passes it down the pipe. */
		double per = 0;	/* the sender's time for one round */

		for (int phase = 0; phase < 2; phase++) {
			long rounds;
			int done = 0;

			if (receiver) {
				if (read(rfd, &rounds, sizeof(rounds)) != sizeof(rounds))
					die("read rounds", -FI_EIO);
				post_recvs(&n, buf, size, win, &done);
				/* Ready: every message of the phase finds its
				 * receive posted (none is unexpected). */
				if (write(wfd, &rounds, sizeof(rounds)) != sizeof(rounds))
					die("write ready", -FI_EIO);
				for (long r = 0; r < rounds; r++)
					round_recv(&n, buf, size, win, ack, r == rounds - 1);
				continue;
			}
			double t0;

			rounds = phase == 0 ? 20 : (long) (secs / per);
			if (rounds < 10)
				rounds = 10;
			if (rounds > 1000000)
				rounds = 1000000;
			if (write(wfd, &rounds, sizeof(rounds)) != sizeof(rounds) ||
			    read(rfd, &rounds, sizeof(rounds)) != sizeof(rounds))
				die("rounds", -FI_EIO);
			t0 = now();
			for (long r = 0; r < rounds; r++)
				round_send(&n, buf, size, win, ack);
			per = (now() - t0) / rounds;
			if (phase == 1) {
				double rate = (double) win / per;

				printf("%zu %.0f %.2f\n", size, rate, rate * (double) size / 1e6);
				fflush(stdout);
			}
		}
		free(buf);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
	return 0;
usage:
	fprintf(stderr, "usage: msgrate -p PROVIDER [-w WINDOW] [-t SECONDS] [-e EXTRA] [-s|-c] [-S PORT [-C HOST]] [SIZE...]\n");
	return 2;
}
