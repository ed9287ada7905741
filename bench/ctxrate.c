/* ctxrate: message rate of N threads, each on a context of its own, for
 * scalable endpoints (issue: N threads on N contexts of one SEP against
 * the same on N separate endpoints, and against one thread).
 *
 *   ctxrate -p PROVIDER [-m sep|eps|doms] [-n THREADS] [-w WINDOW] [-t SECONDS] [-1] [SIZE]
 *
 * One process forks (before any libfabric call) into a sender and a
 * receiver on this host; each opens one domain and either a scalable
 * endpoint of N contexts (-m sep: thread i sends from fi_tx_context i to
 * fi_rx_addr(peer, i) and receives on fi_rx_context i) or N endpoints
 * (-m eps, the default: thread i uses endpoint i and the peer's endpoint
 * i), each context or endpoint with its own CQ; -m doms is eps with each
 * endpoint in a domain of its own (nothing shared between the threads). Each thread runs windowed
 * rounds as msgrate does: WINDOW tagged sends of SIZE bytes (default 8),
 * then a 4-byte ack from the receiver, which reposts first; for about
 * SECONDS (default 1) after a warm-up. The sender prints
 *
 *   MODE THREADS SIZE MESSAGES_PER_SECOND
 *
 * the sum over its threads, each counted over its own time.
 *
 * With -1 there is one process and no acks: it opens both sides (two
 * SEPs, or two endpoints per thread, in one domain; with -m doms in the
 * thread's own), and thread i
 * posts WINDOW receives on side 1's context i, sends WINDOW messages to
 * it from side 0's context i and reaps both CQs. N threads are then N
 * running threads, not 2N, so on a machine of N CPUs the figure says how
 * the contexts scale when nothing but the provider is shared. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#define BENCH_NAME "ctxrate"
#include "benchutil.h"
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>

#define MAXT 16
#define MAXW 1024
#define TAG_DATA 0x1
#define TAG_LAST 0x3	/* the last round's data: TAG_DATA with bit 1 */
#define TAG_ACK 0x4
#define BITS 5

struct ctx {
	struct fid_ep *tx, *rx;
	struct fid_cq *cq;
	fi_addr_t peer;
	struct fi_context2 c[MAXW + 1];
	char *buf;
	double rate;
	pthread_t th;
} __attribute__((aligned(64)));

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domains[MAXT];
static struct fid_av *avs[MAXT];
static struct fid_ep *seps[2], *eps[2][MAXT];
static struct ctx ctxs[2][MAXT];
static int nthr = 1, win = 64, use_sep, own_doms, receiver, one;
static size_t size = 8;
static double secs = 1;

/* open_side opens side s: a SEP of nthr contexts or nthr endpoints, each
 * context or endpoint with a CQ of its own. */
static void open_side(int s)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 4 * MAXW };
	struct fid_ep **sep = &seps[s];
	int rc;

	if (use_sep) {
		if ((rc = fi_scalable_ep(domains[0], info, sep, NULL)) || (rc = fi_scalable_ep_bind(*sep, &avs[0]->fid, 0)))
			die("fi_scalable_ep", rc);
	}
	for (int i = 0; i < nthr; i++) {
		struct ctx *c = &ctxs[s][i];
		struct fid_domain *domain = domains[own_doms ? i : 0];
		struct fid_av *av = avs[own_doms ? i : 0];

		if ((rc = fi_cq_open(domain, &cq_attr, &c->cq, NULL)))
			die("fi_cq_open", rc);
		if (use_sep) {
			if ((rc = fi_tx_context(*sep, i, NULL, &c->tx, NULL)) ||
			    (rc = fi_rx_context(*sep, i, NULL, &c->rx, NULL)) ||
			    (rc = fi_ep_bind(c->tx, &c->cq->fid, FI_TRANSMIT)) ||
			    (rc = fi_ep_bind(c->rx, &c->cq->fid, FI_RECV)) || (rc = fi_enable(c->tx)) ||
			    (rc = fi_enable(c->rx)))
				die("context", rc);
		} else {
			struct fid_ep **ep = &eps[s][i];

			if ((rc = fi_endpoint(domain, info, ep, NULL)) || (rc = fi_ep_bind(*ep, &av->fid, 0)) ||
			    (rc = fi_ep_bind(*ep, &c->cq->fid, FI_TRANSMIT | FI_RECV)) || (rc = fi_enable(*ep)))
				die("endpoint", rc);
			c->tx = c->rx = *ep;
		}
		if (!(c->buf = aligned_alloc(64, size + 64)))
			die("buffer", -FI_ENOMEM);
		memset(c->buf, 'a' + i, size);
	}
	if (use_sep && (rc = fi_enable(*sep)))
		die("fi_enable(sep)", rc);
}

static void open_all(const char *prov)
{
	struct fi_info *h = fi_allocinfo();
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .rx_ctx_bits = use_sep ? BITS : 0 };
	int rc;

	h->caps = FI_TAGGED | (use_sep ? FI_NAMED_RX_CTX : 0);
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (use_sep)
		h->ep_attr->tx_ctx_cnt = h->ep_attr->rx_ctx_cnt = nthr;
	h->fabric_attr->prov_name = strdup(prov);
	if ((rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info)))
		die("fi_getinfo", rc);
	fi_freeinfo(h);
	if ((rc = fi_fabric(info->fabric_attr, &fabric, NULL)))
		die("fabric", rc);
	for (int i = 0; i < (own_doms ? nthr : 1); i++)
		if ((rc = fi_domain(fabric, info, &domains[i], NULL)) ||
		    (rc = fi_av_open(domains[i], &av_attr, &avs[i], NULL)))
			die("domain, AV", rc);
	for (int s = 0; s < 1 + one; s++)
		open_side(s);
}

/* names returns side s's names (the SEP's, or every endpoint's) and
 * their count. */
static int names(int s, char out[MAXT][64])
{
	int k = use_sep ? 1 : nthr, rc;

	for (int i = 0; i < k; i++) {
		size_t len = 64;

		if ((rc = fi_getname(use_sep ? &seps[s]->fid : &eps[s][i]->fid, out[i], &len)))
			die("fi_getname", rc);
	}
	return k;
}

/* insert inserts the names of the peer side and points side s's contexts
 * at them. */
static void insert(int s, char peer[MAXT][64], int k)
{
	fi_addr_t a[MAXT];
	int rc;

	for (int i = 0; i < k; i++)
		if ((rc = fi_av_insert(avs[own_doms ? i : 0], peer[i], 1, &a[i], 0, NULL)) != 1)
			die("fi_av_insert", rc < 0 ? rc : -FI_EINVAL);
	for (int i = 0; i < nthr; i++)
		ctxs[s][i].peer = use_sep ? fi_rx_addr(a[0], i, BITS) : a[i];
}

/* swap hands over side 0's names through the pipes and inserts the
 * other process's. */
static void swap(int r, int w)
{
	char mine[MAXT][64], peer[MAXT][64];
	int k = names(0, mine);

	if (write(w, mine, sizeof(mine)) != sizeof(mine) || read(r, peer, sizeof(peer)) != sizeof(peer))
		die("names", -FI_EIO);
	insert(0, peer, k);
}

/* take reads want completions off c's CQ; *last is set when a data
 * message of the last round came. */
static void take(struct ctx *c, int want, int *last)
{
	struct fi_cq_tagged_entry e[64];

	while (want > 0) {
		ssize_t got = fi_cq_read(c->cq, e, want < 64 ? want : 64);

		if (got == -FI_EAGAIN)
			continue;
		if (got < 0)
			die("fi_cq_read", (int) got);
		for (ssize_t k = 0; k < got; k++)
			if ((e[k].flags & FI_RECV) && e[k].tag == TAG_LAST)
				*last = 1;
		want -= (int) got;
	}
}

static void post(int rc)
{
	if (rc)
		die("post", rc);
}

static void *run(void *arg)
{
	struct ctx *c = arg;
	char ack[4];
	int last = 0;

	if (receiver) {
		for (;;) {
			take(c, win, &last);
			if (!last)
				for (int i = 0; i < win; i++)
					post(fi_trecv(c->rx, c->buf, size, NULL, FI_ADDR_UNSPEC, TAG_DATA, 0x2, &c->c[i]));
			post(fi_tsend(c->tx, ack, 4, NULL, c->peer, TAG_ACK, &c->c[MAXW]));
			take(c, 1, &last);
			if (last)
				return NULL;
		}
	}
	double t0 = 0, end = now() + 0.2 + secs;
	long msgs = 0, warm = 1;
	for (int stop = 0; !stop;) {
		double t = now();

		if (warm && t > end - secs) {
			warm = 0, t0 = t, msgs = 0;
		}
		stop = t > end;
		post(fi_trecv(c->rx, ack, 4, NULL, FI_ADDR_UNSPEC, TAG_ACK, 0, &c->c[MAXW]));
		for (int i = 0; i < win; i++)
			post(fi_tsend(c->tx, c->buf, size, NULL, c->peer, stop ? TAG_LAST : TAG_DATA, &c->c[i]));
		take(c, win + 1, &last);
		msgs += win;
	}
	c->rate = msgs / (now() - t0);
	return NULL;
}

/* loop is -1's thread: side 0's context sends to side 1's, which this
 * thread also serves. */
static void *loop(void *arg)
{
	struct ctx *a = arg, *b = &ctxs[1][a - ctxs[0]];
	double t0 = 0, end = now() + 0.2 + secs;
	long msgs = 0, warm = 1;
	int last = 0;

	for (double t = now(); t <= end; t = now()) {
		if (warm && t > end - secs) {
			warm = 0, t0 = t, msgs = 0;
		}
		for (int i = 0; i < win; i++)
			post(fi_trecv(b->rx, b->buf, size, NULL, FI_ADDR_UNSPEC, TAG_DATA, 0, &b->c[i]));
		for (int i = 0; i < win; i++)
			post(fi_tsend(a->tx, a->buf, size, NULL, a->peer, TAG_DATA, &a->c[i]));
		take(a, win, &last);
		take(b, win, &last);
		msgs += win;
	}
	a->rate = msgs / (now() - t0);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *prov = NULL;
	int opt, p2c[2], c2p[2], child = 0, rfd, wfd;
	char go = 0;

	while ((opt = getopt(argc, argv, "p:m:n:w:t:1")) != -1) {
		switch (opt) {
		case 'p': prov = optarg; break;
		case 'm': use_sep = !strcmp(optarg, "sep"); own_doms = !strcmp(optarg, "doms"); break;
		case 'n': nthr = atoi(optarg); break;
		case 'w': win = atoi(optarg); break;
		case 't': secs = atof(optarg); break;
		case '1': one = 1; break;
		default: goto usage;
		}
	}
	if (optind < argc)
		size = strtoull(argv[optind], NULL, 0);
	if (!prov || nthr < 1 || nthr > MAXT || win < 1 || win > MAXW)
		goto usage;
	if (one) {
		char peer[MAXT][64];

		open_all(prov);
		insert(0, peer, names(1, peer));
		for (int t = 0; t < nthr; t++)
			pthread_create(&ctxs[0][t].th, NULL, loop, &ctxs[0][t]);
		goto join;
	}
	if (pipe(p2c) || pipe(c2p))
		die("pipe", -FI_EIO);
	child = fork();
	if (child < 0)
		die("fork", -FI_EIO);
	receiver = child == 0;
	rfd = receiver ? p2c[0] : c2p[0];
	wfd = receiver ? c2p[1] : p2c[1];
	open_all(prov);
	swap(rfd, wfd);
	if (receiver) {
		for (int t = 0; t < nthr; t++)
			for (int i = 0; i < win; i++)
				post(fi_trecv(ctxs[0][t].rx, ctxs[0][t].buf, size, NULL, FI_ADDR_UNSPEC, TAG_DATA, 0x2,
					      &ctxs[0][t].c[i]));
		if (write(wfd, &go, 1) != 1)
			die("ready", -FI_EIO);
	} else if (read(rfd, &go, 1) != 1) {
		die("ready", -FI_EIO);
	}
	for (int t = 0; t < nthr; t++)
		pthread_create(&ctxs[0][t].th, NULL, run, &ctxs[0][t]);
join:;
	double sum = 0;
	for (int t = 0; t < nthr; t++) {
		pthread_join(ctxs[0][t].th, NULL);
		sum += ctxs[0][t].rate;
	}
	if (receiver)
		_exit(0);
	printf("%s%s %d %zu %.0f\n", use_sep ? "sep" : own_doms ? "doms" : "eps", one ? "-1" : "", nthr, size, sum);
	if (!one)
		waitpid(child, NULL, 0);
	return 0;
usage:
	fprintf(stderr, "usage: ctxrate -p PROVIDER [-m sep|eps|doms] [-n THREADS] [-w WINDOW] [-t SECONDS] [-1] [SIZE]\n");
	return 2;
}
