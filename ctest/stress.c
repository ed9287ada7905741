/* stress.c: five threads on one FI_THREAD_SAFE domain for 60 s (issue 8,
 * finding 3: closing an endpoint while another thread polled its CQ
 * crashed within 20 s): two threads poll the shared CQ, one posts
 * receives, one sends, and one opens, uses and closes endpoints bound to
 * the same CQ and AV, over and over. Nothing may crash or hang, every
 * message sent must arrive exactly once and intact, and the churned
 * endpoints' own traffic must complete too.
 *
 * STRESS_SECONDS overrides the duration.
 *
 * ctest: no-valgrind (60 s of five busy threads under valgrind's one
 * thread at a time proves little and takes very long; the Go side's
 * equivalent runs under -race: provider/stress_test.go).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

#define TAG_MAIN 0x10
#define TAG_CHURN 0x20
#define NRECV 64		/* receives kept posted for the main stream */
#define MSG 48			/* bytes per main message: a sequence and a pattern */

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_cq *cq;
static struct fid_av *av;
static struct fid_ep *rx_ep, *tx_ep;
static fi_addr_t rx_addr;
static double stop_at;

/* A receive slot: free (0), posted (1), or completed and waiting to be
 * checked and reposted by the poster (2). */
struct slot {
	struct fi_context ctx;
	unsigned char buf[MSG];
	atomic_int state;
};
static struct slot slots[NRECV];
static atomic_ulong sent, received, bad, errors, churned, churn_msgs, churn_done, post_fail;
static atomic_int done;
static atomic_uchar seen[1 << 22];	/* which sequence numbers arrived */

static void on_alarm(int sig)
{
	(void) sig;
	printf("FAIL: stress hung (alarm)\n");
	fflush(stdout);
	_exit(3);
}

static int open_ep(struct fid_ep **ep)
{
	int r;

	if ((r = fi_endpoint(domain, info, ep, NULL)))
		return r;
	if ((r = fi_ep_bind(*ep, &cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (r = fi_ep_bind(*ep, &av->fid, 0)) || (r = fi_enable(*ep))) {
		fi_close(&(*ep)->fid);
		*ep = NULL;
	}
	return r;
}

static fi_addr_t insert(struct fid_ep *ep)
{
	unsigned char name[64];
	size_t len = sizeof(name);
	fi_addr_t a = FI_ADDR_NOTAVAIL;

	if (fi_getname(&ep->fid, name, &len) == 0)
		fi_av_insert(av, name, 1, &a, 0, NULL);
	return a;
}

static void fill(unsigned char *b, uint64_t seq)
{
	memcpy(b, &seq, 8);
	for (int i = 8; i < MSG; i++)
		b[i] = (unsigned char) (seq * 7 + i);
}

static int intact(const unsigned char *b, uint64_t *seq)
{
	memcpy(seq, b, 8);
	for (int i = 8; i < MSG; i++)
		if (b[i] != (unsigned char) (*seq * 7 + i))
			return 0;
	return 1;
}

/* The churn thread's per-endpoint context: its completions are counted,
 * whichever thread reads them. */
static struct fi_context churn_ctx[2];

static void *poller(void *arg)
{
	(void) arg;
	while (!atomic_load(&done)) {
		struct fi_cq_tagged_entry e[8];
		ssize_t n = fi_cq_read(cq, e, 8);

		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			if (fi_cq_readerr(cq, &err, 0) == 1) {
				struct fi_context *c = err.op_context;

				/* A churned endpoint closed with a receive or
				 * send outstanding may report it cancelled. */
				if (c == &churn_ctx[0] || c == &churn_ctx[1])
					atomic_fetch_add(&churn_done, 1);
				else if (atomic_fetch_add(&errors, 1) < 3)
					printf("FAIL: error completion %d (%s)\n", err.err,
					       fi_strerror(err.err));
			}
			continue;
		}
		for (ssize_t i = 0; i < n; i++) {
			struct fi_context *c = e[i].op_context;

			if (c == &churn_ctx[0] || c == &churn_ctx[1]) {
				atomic_fetch_add(&churn_done, 1);
			} else if (c >= &slots[0].ctx && (char *) c < (char *) &slots[NRECV]) {
				struct slot *s = (struct slot *) c;

				atomic_store(&s->state, 2);
			}
			/* Sends of the main stream are injects: no completion. */
		}
	}
	return NULL;
}

static void *poster(void *arg)
{
	(void) arg;
	while (!atomic_load(&done)) {
		int idle = 1;

		for (int k = 0; k < NRECV; k++) {
			struct slot *s = &slots[k];
			int st = atomic_load(&s->state);
			uint64_t seq;
			ssize_t r;

			if (st == 1)
				continue;
			idle = 0;
			if (st == 2) {
				if (!intact(s->buf, &seq) || seq >= sizeof(seen) ||
				    atomic_exchange(&seen[seq], 1)) {
					if (atomic_fetch_add(&bad, 1) < 3)
						printf("FAIL: message %lu damaged or duplicated\n",
						       (unsigned long) seq);
				}
				atomic_fetch_add(&received, 1);
			}
			atomic_store(&s->state, 1);
			while ((r = fi_trecv(rx_ep, s->buf, MSG, NULL, FI_ADDR_UNSPEC, TAG_MAIN, 0,
					     &s->ctx)) == -FI_EAGAIN)
				;
			if (r) {
				atomic_store(&s->state, 0);
				atomic_fetch_add(&post_fail, 1);
			}
		}
		if (idle)
			sched_yield();
	}
	return NULL;
}

static void *sender(void *arg)
{
	unsigned char b[MSG];

	(void) arg;
	for (uint64_t seq = 0; ct_now() < stop_at && seq < sizeof(seen); seq++) {
		ssize_t r;

		/* Keep the unexpected queue short: at most 2 * NRECV in flight. */
		while (atomic_load(&sent) - atomic_load(&received) > 2 * NRECV && ct_now() < stop_at + 5)
			sched_yield();
		fill(b, seq);
		while ((r = fi_tinject(tx_ep, b, MSG, rx_addr, TAG_MAIN)) == -FI_EAGAIN)
			sched_yield();
		if (r) {
			if (atomic_fetch_add(&errors, 1) < 3)
				printf("FAIL: fi_tinject: %zd\n", r);
			break;
		}
		atomic_fetch_add(&sent, 1);
	}
	return NULL;
}

/* churner opens an endpoint, sends one message from it to itself and
 * receives it (through the shared CQ, read by the pollers), then closes
 * it; sometimes it closes with the receive still posted. */
static void *churner(void *arg)
{
	(void) arg;
	for (unsigned i = 0; ct_now() < stop_at; i++) {
		struct fid_ep *ep = NULL;
		fi_addr_t self;
		uint64_t v = i, got = 0;
		unsigned long before;
		double end;
		int r = open_ep(&ep);

		if (r) {
			if (atomic_fetch_add(&errors, 1) < 3)
				printf("FAIL: opening a churn endpoint: %d\n", r);
			usleep(1000);
			continue;
		}
		self = insert(ep);
		before = atomic_load(&churn_done);
		if (fi_trecv(ep, &got, 8, NULL, FI_ADDR_UNSPEC, TAG_CHURN, 0, &churn_ctx[0]) == 0) {
			if (i % 4 != 3) {
				atomic_fetch_add(&churn_msgs, 1);
				while (fi_tinject(ep, &v, 8, self, TAG_CHURN) == -FI_EAGAIN)
					;
				end = ct_now() + 10;
				while (atomic_load(&churn_done) == before && ct_now() < end)
					sched_yield();
				if (atomic_load(&churn_done) == before &&
				    atomic_fetch_add(&errors, 1) < 3)
					printf("FAIL: a churn endpoint's message never completed\n");
			}
		}
		/* Close: a receive still posted (every fourth round) is
		 * cancelled by the close. */
		r = fi_close(&ep->fid);
		if (r && atomic_fetch_add(&errors, 1) < 3)
			printf("FAIL: closing a churn endpoint: %d\n", r);
		if (self != FI_ADDR_NOTAVAIL)
			fi_av_remove(av, &self, 1, 0);
		atomic_fetch_add(&churned, 1);
	}
	return NULL;
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 4096 };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	const char *s = getenv("STRESS_SECONDS");
	double secs = s && *s ? atof(s) : 60;
	pthread_t t[5];
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGALRM, on_alarm);
	alarm((unsigned) secs + 60);
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->fabric_attr->prov_name = strdup("psm2");
	r = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	CHECK(r == 0, "fi_getinfo: %d", r);
	if (r)
		return finish("stress");
	if ((r = fi_fabric(info->fabric_attr, &fabric, NULL)) ||
	    (r = fi_domain(fabric, info, &domain, NULL)) ||
	    (r = fi_cq_open(domain, &cq_attr, &cq, NULL)) ||
	    (r = fi_av_open(domain, &av_attr, &av, NULL)) || (r = open_ep(&rx_ep)) ||
	    (r = open_ep(&tx_ep))) {
		CHECK(0, "setup: %d (%s)", r, fi_strerror(-r));
		return finish("stress");
	}
	rx_addr = insert(rx_ep);
	CHECK(rx_addr != FI_ADDR_NOTAVAIL, "inserting the receiver");

	stop_at = ct_now() + secs;
	pthread_create(&t[0], NULL, poller, NULL);
	pthread_create(&t[1], NULL, poller, NULL);
	pthread_create(&t[2], NULL, poster, NULL);
	pthread_create(&t[3], NULL, sender, NULL);
	pthread_create(&t[4], NULL, churner, NULL);
	pthread_join(t[3], NULL);
	pthread_join(t[4], NULL);
	/* Let the last messages arrive. */
	{
		double end = ct_now() + 10;

		while (atomic_load(&received) < atomic_load(&sent) && ct_now() < end)
			usleep(1000);
	}
	atomic_store(&done, 1);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	pthread_join(t[2], NULL);

	CHECK(atomic_load(&received) == atomic_load(&sent), "%lu sent, %lu received",
	      atomic_load(&sent), atomic_load(&received));
	CHECK(atomic_load(&bad) == 0, "%lu damaged or duplicated", atomic_load(&bad));
	CHECK(atomic_load(&errors) == 0, "%lu errors", atomic_load(&errors));
	CHECK(atomic_load(&post_fail) == 0, "%lu receives could not be posted", atomic_load(&post_fail));
	CHECK(atomic_load(&churned) > 10, "only %lu endpoints opened and closed", atomic_load(&churned));
	printf("# %.0f s: %lu messages, %lu endpoints opened, used and closed (%lu of their messages)\n",
	       secs, atomic_load(&sent), atomic_load(&churned), atomic_load(&churn_msgs));

	CHECK(fi_close(&rx_ep->fid) == 0, "closing the receiver");
	CHECK(fi_close(&tx_ep->fid) == 0, "closing the sender");
	CHECK(fi_close(&av->fid) == 0, "closing the AV");
	CHECK(fi_close(&cq->fid) == 0, "closing the CQ");
	CHECK(fi_close(&domain->fid) == 0, "closing the domain");
	CHECK(fi_close(&fabric->fid) == 0, "closing the fabric");
	fi_freeinfo(info);
	alarm(0);
	return finish("stress");
}
