/* ctxthreads.c: threads on the contexts of scalable endpoints, with the
 * domain's lock slots changing under them. One process, one
 * FI_THREAD_SAFE domain, two scalable endpoints of NTHR contexts (each
 * context with its own CQ, so each thread's contexts get a lock slot of
 * their own and its C fast paths take no lock another thread takes).
 * Thread i sends from context i of the first to context i of the second
 * and reaps both CQs, in rounds of a window that alternates between one
 * C queues whole and one past its receive queue (Go posts those, and Go
 * takes every slot), at sizes from inline to rendezvous. A churn thread
 * meanwhile opens, uses and closes an endpoint with a CQ of its own, and
 * one that shares thread 0's CQ, so the slots are reassigned while the
 * others run. Every message must arrive once, in order, intact.
 *
 * CTXTHREADS_SECONDS overrides the duration (default 3).
 *
 * ctest: no-valgrind (threads racing each other prove little under
 * valgrind's one thread at a time).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

#define NTHR 2
#define BITS 4
#define MAXW 64
#define MAXSZ 20000
#define TAG_DATA 0x1
#define TAG_CHURN 0x2

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *dom;
static struct fid_av *av;
static struct fid_ep *sep[2], *tx[2][NTHR], *rx[2][NTHR];
static struct fid_cq *cq[2][NTHR];
static fi_addr_t peer[NTHR];
static atomic_int stop, bad;
static long sent[NTHR];

struct fail {
	char what[160];
};
static struct fail fails[NTHR + 1];

static void failf(int t, const char *fmt, long a, long b)
{
	if (atomic_fetch_add(&bad, 1) == 0 || !fails[t].what[0])
		snprintf(fails[t].what, sizeof(fails[t].what), fmt, a, b);
}

/* fill writes message seq of thread t: the sequence, then a pattern of
 * both. */
static void fill(unsigned char *b, size_t n, int t, long seq)
{
	memcpy(b, &seq, sizeof(seq));
	for (size_t k = sizeof(seq); k < n; k++)
		b[k] = (unsigned char) (seq * 31 + (long) k * 7 + t);
}

static int intact(const unsigned char *b, size_t n, int t, long seq)
{
	long got;

	memcpy(&got, b, sizeof(got));
	if (got != seq)
		return 0;
	for (size_t k = sizeof(seq); k < n; k++)
		if (b[k] != (unsigned char) (seq * 31 + (long) k * 7 + t))
			return 0;
	return 1;
}

/* reap reads want completions off c, failing on an error entry. */
static int reap(struct fid_cq *c, int want, int t)
{
	struct fi_cq_tagged_entry e[MAXW];
	double give_up = ct_now() + 20;

	while (want > 0) {
		ssize_t n = fi_cq_read(c, e, want < MAXW ? want : MAXW);

		if (n == -FI_EAGAIN) {
			if (ct_now() > give_up) {
				failf(t, "thread %ld: %ld completions never came", t, want);
				return -1;
			}
			continue;
		}
		if (n < 0) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(c, &err, 0);
			failf(t, "thread %ld: completion error %ld", t, err.err);
			return -1;
		}
		want -= (int) n;
	}
	return 0;
}

static void *worker(void *arg)
{
	int t = (int) (intptr_t) arg;
	static const size_t sizes[] = { 8, 200, 2000, MAXSZ };
	unsigned char *sbuf = malloc((size_t) MAXW * MAXSZ), *rbuf = malloc((size_t) MAXW * MAXSZ);
	struct fi_context2 sc[MAXW], rc[MAXW];
	long seq = 0;

	for (long round = 0; !atomic_load(&stop); round++) {
		/* 16 receives C queues; 64 are past its queue, so Go posts. */
		int w = round % 2 ? 16 : MAXW;
		size_t sz = sizes[(round / 2) % 4];

		for (int i = 0; i < w; i++)
			if (fi_trecv(rx[1][t], rbuf + (size_t) i * sz, sz, NULL, FI_ADDR_UNSPEC, TAG_DATA, 0, &rc[i])) {
				failf(t, "thread %ld: fi_trecv failed in round %ld", t, round);
				goto out;
			}
		for (int i = 0; i < w; i++) {
			ssize_t rc2;

			fill(sbuf + (size_t) i * sz, sz, t, seq + i);
			while ((rc2 = fi_tsend(tx[0][t], sbuf + (size_t) i * sz, sz, NULL, peer[t], TAG_DATA, &sc[i])) ==
			       -FI_EAGAIN)
				(void) fi_cq_read(cq[0][t], NULL, 0);
			if (rc2) {
				failf(t, "thread %ld: fi_tsend %ld", t, rc2);
				goto out;
			}
		}
		if (reap(cq[0][t], w, t) || reap(cq[1][t], w, t))
			goto out;
		/* Receives of one tag from one sender complete in order. */
		for (int i = 0; i < w; i++)
			if (!intact(rbuf + (size_t) i * sz, sz, t, seq + i)) {
				failf(t, "thread %ld: message %ld not intact or out of order", t, seq + i);
				goto out;
			}
		seq += w;
	}
out:
	sent[t] = seq;
	free(sbuf);
	free(rbuf);
	return NULL;
}

/* churn opens an endpoint with a CQ of its own (a new slot) and one
 * bound to thread 0's receiving CQ (slot 0's group), sends itself a
 * message on the first, and closes both, over and over. */
static void *churn(void *arg)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 64 };
	long n = 0;

	(void) arg;
	while (!atomic_load(&stop)) {
		struct fid_ep *ep, *ep2;
		struct fid_cq *c;
		char name[64], msg[8] = "churn", got[8] = { 0 };
		size_t len = sizeof(name);
		fi_addr_t self;
		struct fi_context2 ctx[2];
		int rc;

		if ((rc = fi_cq_open(dom, &cq_attr, &c, NULL)) || (rc = fi_endpoint(dom, info, &ep, NULL)) ||
		    (rc = fi_ep_bind(ep, &av->fid, 0)) || (rc = fi_ep_bind(ep, &c->fid, FI_TRANSMIT | FI_RECV)) ||
		    (rc = fi_enable(ep)) || (rc = fi_endpoint(dom, info, &ep2, NULL)) ||
		    (rc = fi_ep_bind(ep2, &av->fid, 0)) || (rc = fi_ep_bind(ep2, &cq[1][0]->fid, FI_RECV)) ||
		    (rc = fi_enable(ep2)) || (rc = fi_getname(&ep->fid, name, &len)) ||
		    fi_av_insert(av, name, 1, &self, 0, NULL) != 1) {
			failf(NTHR, "churn: open %ld (round %ld)", rc, n);
			return NULL;
		}
		if (fi_trecv(ep, got, sizeof(got), NULL, FI_ADDR_UNSPEC, TAG_CHURN, 0, &ctx[0]) ||
		    fi_tsend(ep, msg, sizeof(msg), NULL, self, TAG_CHURN, &ctx[1]) || reap(c, 2, NTHR) ||
		    strcmp(got, "churn")) {
			failf(NTHR, "churn: message of round %ld lost or wrong (%ld)", n, 0);
			return NULL;
		}
		if (fi_av_remove(av, &self, 1, 0) || fi_close(&ep2->fid) || fi_close(&ep->fid) || fi_close(&c->fid)) {
			failf(NTHR, "churn: close in round %ld (%ld)", n, 0);
			return NULL;
		}
		n++;
	}
	return NULL;
}

static int open_all(void)
{
	struct fi_info *h = fi_allocinfo();
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .rx_ctx_bits = BITS };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 4 * MAXW };
	char name[64];
	size_t len = sizeof(name);
	fi_addr_t a;
	int rc;

	h->caps = FI_TAGGED | FI_NAMED_RX_CTX;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->ep_attr->tx_ctx_cnt = h->ep_attr->rx_ctx_cnt = NTHR;
	h->domain_attr->threading = FI_THREAD_SAFE;
	h->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	h->fabric_attr->prov_name = strdup("psm2");
	rc = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	fi_freeinfo(h);
	if (rc || (rc = fi_fabric(info->fabric_attr, &fabric, NULL)) || (rc = fi_domain(fabric, info, &dom, NULL)) ||
	    (rc = fi_av_open(dom, &av_attr, &av, NULL)))
		return rc;
	for (int s = 0; s < 2; s++) {
		if ((rc = fi_scalable_ep(dom, info, &sep[s], NULL)) || (rc = fi_scalable_ep_bind(sep[s], &av->fid, 0)))
			return rc;
		for (int i = 0; i < NTHR; i++)
			if ((rc = fi_cq_open(dom, &cq_attr, &cq[s][i], NULL)) ||
			    (rc = fi_tx_context(sep[s], i, NULL, &tx[s][i], NULL)) ||
			    (rc = fi_rx_context(sep[s], i, NULL, &rx[s][i], NULL)) ||
			    (rc = fi_ep_bind(tx[s][i], &cq[s][i]->fid, FI_TRANSMIT)) ||
			    (rc = fi_ep_bind(rx[s][i], &cq[s][i]->fid, FI_RECV)) || (rc = fi_enable(tx[s][i])) ||
			    (rc = fi_enable(rx[s][i])))
				return rc;
		if ((rc = fi_enable(sep[s])))
			return rc;
	}
	if ((rc = fi_getname(&sep[1]->fid, name, &len)) || fi_av_insert(av, name, 1, &a, 0, NULL) != 1)
		return rc ? rc : -FI_EINVAL;
	for (int i = 0; i < NTHR; i++)
		peer[i] = fi_rx_addr(a, i, BITS);
	/* The endpoints used by the C tests are the info's, for the churn. */
	info->ep_attr->tx_ctx_cnt = info->ep_attr->rx_ctx_cnt = 1;
	info->caps &= ~(uint64_t) FI_NAMED_RX_CTX;
	return 0;
}

int main(void)
{
	double secs = getenv("CTXTHREADS_SECONDS") ? atof(getenv("CTXTHREADS_SECONDS")) : 3;
	pthread_t th[NTHR + 1];
	int rc = open_all();

	CHECK(rc == 0, "open: %s", fi_strerror(-rc));
	if (rc)
		return finish("ctxthreads");
	for (int i = 0; i < NTHR; i++)
		pthread_create(&th[i], NULL, worker, (void *) (intptr_t) i);
	pthread_create(&th[NTHR], NULL, churn, NULL);
	for (double end = ct_now() + secs; ct_now() < end && !atomic_load(&bad);)
		usleep(10000);
	atomic_store(&stop, 1);
	for (int i = 0; i <= NTHR; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i <= NTHR; i++)
		CHECK(!fails[i].what[0], "%s", fails[i].what);
	for (int i = 0; i < NTHR; i++)
		CHECK(sent[i] > 1000, "thread %d: %ld messages, all arrived intact and in order", i, sent[i]);
	for (int s = 1; s >= 0; s--) {
		for (int i = 0; i < NTHR; i++) {
			CHECK(fi_close(&tx[s][i]->fid) == 0 && fi_close(&rx[s][i]->fid) == 0, "close context");
			CHECK(fi_close(&cq[s][i]->fid) == 0, "close CQ");
		}
		CHECK(fi_close(&sep[s]->fid) == 0, "close scalable endpoint");
	}
	CHECK(fi_close(&av->fid) == 0 && fi_close(&dom->fid) == 0 && fi_close(&fabric->fid) == 0, "close");
	fi_freeinfo(info);
	return finish("ctxthreads");
}
