/* sread.c: CQs with a wait object (FI_WAIT_UNSPEC) and fi_cq_sread, now
 * that the C fast path serves them too (cmd/libfabric-psm2/fast sends
 * queue their completions in C; cq.c's sread hands out what is there
 * before it lets Go wait):
 *   - a ping-pong in which both sides wait in fi_cq_sread only: every
 *     message intact, every send and receive completed once;
 *   - a thread blocked in fi_cq_sread on the sender's CQ wakes for each
 *     send another thread makes (the sender sees the sleeper and lets Go
 *     queue and signal the completion), not after sread's internal
 *     timeout: the average wake is checked (not under valgrind);
 *   - fi_cq_sread on a CQ whose wait_cond is FI_CQ_COND_THRESHOLD: cond
 *     is the threshold itself, a value cast to a pointer (fi_cq(3)), so
 *     the read waits for that many and never dereferences it; on a CQ
 *     without a wait condition cond is ignored;
 *   - fi_cq_sread on a CQ without a wait object (-FI_ENOSYS even with a
 *     completion waiting). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

/* An endpoint (node.h's ct_ep) in a domain of its own, and its peer's
 * address. */
struct wnode {
	struct ct_ep e;
	fi_addr_t peer;
};

static struct fi_info *info;
static struct fid_fabric *fabric;

static int open_wnode_cond(struct wnode *n, enum fi_wait_obj wait, enum fi_cq_wait_cond cond)
{
	struct fid_domain *d;
	int ret = fi_domain(fabric, info, &d, NULL);

	return ret ? ret : ct_open_ep_cond(&n->e, d, info, wait, cond);
}

static int open_wnode(struct wnode *n, enum fi_wait_obj wait)
{
	return open_wnode_cond(n, wait, FI_CQ_COND_NONE);
}

static void close_wnode(struct wnode *n)
{
	ct_close_ep(&n->e);
	fi_close(&n->e.domain->fid);
}

static int connect_pair(struct wnode *a, struct wnode *b)
{
	return fi_av_insert(a->e.av, b->e.name, 1, &a->peer, 0, NULL) != 1 ||
	       fi_av_insert(b->e.av, a->e.name, 1, &b->peer, 0, NULL) != 1;
}

/* sread_one waits (sread, 5 s) for one completion: its flags, or 0. */
static uint64_t sread_one(struct wnode *n, struct fi_cq_tagged_entry *e)
{
	ssize_t got = fi_cq_sread(n->e.cq, e, 1, NULL, 5000);

	return got == 1 ? e->flags : 0;
}

/* Both sides wait in fi_cq_sread only. */
static void test_pingpong(struct wnode *a, struct wnode *b, int rounds)
{
	char sbuf[256], rbuf[256];
	struct fi_context sctx, rctx;
	struct fi_cq_tagged_entry e;
	int bad = 0, lost = 0;

	for (int i = 0; i < rounds && !lost; i++) {
		struct wnode *s = (i & 1) ? b : a, *r = (i & 1) ? a : b;
		size_t len = 1 + (size_t) (i * 37) % sizeof(sbuf);
		int sent = 0, recvd = 0;

		memset(sbuf, i & 0xff, len);
		memset(rbuf, 0, sizeof(rbuf));
		if (fi_trecv(r->e.ep, rbuf, sizeof(rbuf), NULL, r->peer, 7, 0, &rctx) ||
		    fi_tsend(s->e.ep, sbuf, len, NULL, s->peer, 7, &sctx)) {
			lost++;
			break;
		}
		while (!sent && !lost) {
			uint64_t f = sread_one(s, &e);

			if (f & FI_SEND)
				sent = e.op_context == &sctx;
			else
				lost++;
		}
		while (!recvd && !lost) {
			uint64_t f = sread_one(r, &e);

			if ((f & FI_RECV) && e.op_context == &rctx) {
				recvd = 1;
				if (e.len != len || memcmp(rbuf, sbuf, len))
					bad++;
			} else {
				lost++;
			}
		}
	}
	CHECK(!lost && !bad, "sread ping-pong: %d lost, %d bad of %d rounds", lost, bad, rounds);
}

/* A thread sleeping in fi_cq_sread on the sender's CQ, woken by each send
 * of the main thread. */
struct waker {
	struct wnode *n;
	int want, got;
	volatile double sent_at;
	double wait_sum;
};

static void *sleeper(void *arg)
{
	struct waker *w = arg;
	struct fi_cq_tagged_entry e;

	while (w->got < w->want) {
		ssize_t got = fi_cq_sread(w->n->e.cq, &e, 1, NULL, 5000);

		if (got != 1)
			break;
		w->wait_sum += ct_now() - w->sent_at;
		w->got++;
	}
	return NULL;
}

static void test_wake(struct wnode *a, struct wnode *b, int n)
{
	static char rbuf[64][8];
	static struct fi_context rctx[64], sctx[64];
	struct waker w = { .n = a, .want = n };
	struct fi_cq_tagged_entry e;
	pthread_t t;
	char sbuf[8] = "wake";
	int ok = 1;

	for (int i = 0; i < n; i++)
		ok &= fi_trecv(b->e.ep, rbuf[i], sizeof(rbuf[i]), NULL, b->peer, 9, 0, &rctx[i]) == 0;
	CHECK(ok, "posting the receives");
	pthread_create(&t, NULL, sleeper, &w);
	for (int i = 0; i < n && ok; i++) {
		usleep(2000);	/* the sleeper is asleep by now */
		w.sent_at = ct_now();
		ok = fi_tsend(a->e.ep, sbuf, sizeof(sbuf), NULL, a->peer, 9, &sctx[i]) == 0;
		/* the sleeper takes the completion; wait for it before the next */
		for (double t0 = ct_now(); w.got <= i && ct_now() - t0 < 10;)
			usleep(100);
	}
	pthread_join(t, NULL);
	CHECK(ok && w.got == n, "a thread in fi_cq_sread took %d of %d send completions", w.got, n);
	if (!ct_under_valgrind() && w.got == n)
		CHECK(w.wait_sum / n < 0.005, "the sleeper woke %.2f ms after a send on average (sread waits 50 ms)",
		      w.wait_sum / n * 1e3);
	for (int i = 0; i < n; i++)
		if (sread_one(b, &e) != (FI_RECV | FI_TAGGED))
			ok = 0;
	CHECK(ok, "the receiver's completions");
}

/* A threshold, and a CQ without a wait object. */
static void test_edges(struct wnode *a, struct wnode *b, struct wnode *nw)
{
	struct fi_cq_tagged_entry e[4];
	struct fi_context ctx[4];
	char buf[4][8], sbuf[8] = "x";
	ssize_t got;
	int ok = 1;

	for (int i = 0; i < 2; i++)
		ok &= fi_trecv(b->e.ep, buf[i], 8, NULL, b->peer, 11, 0, &ctx[i]) == 0;
	for (int i = 0; i < 2; i++)
		ok &= fi_tsend(a->e.ep, sbuf, 1, NULL, a->peer, 11, &ctx[2 + i]) == 0;
	CHECK(ok, "posting");
	got = 0;
	for (int k = 0; k < 4 && got < 2; k++) {
		/* No wait condition on this CQ: cond is ignored, whatever it is. */
		ssize_t r = fi_cq_sread(b->e.cq, e + got, 4 - got, (void *) 0x10, 2000);

		if (r > 0)
			got += r;
	}
	CHECK(got == 2, "sread with a cond the CQ ignores: %zd", got);
	got = 0;
	for (int k = 0; k < 4 && got < 2; k++) {
		ssize_t r = fi_cq_sread(a->e.cq, e, 4, NULL, 2000);

		if (r > 0)
			got += r;
	}
	CHECK(got == 2, "the two send completions: %zd", got);

	/* No wait object: sread is -FI_ENOSYS, a completion waiting or not. */
	ok = fi_tinject(nw->e.ep, sbuf, 1, nw->peer, 12) == 0 &&
	     fi_tsend(nw->e.ep, sbuf, 1, NULL, nw->peer, 12, &ctx[0]) == 0;
	CHECK(ok, "sends without a wait object");
	got = fi_cq_sread(nw->e.cq, e, 1, NULL, 10);
	CHECK(got == -FI_ENOSYS, "sread without a wait object: %zd", got);
	got = 0;
	for (double t0 = ct_now(); got < 1 && ct_now() - t0 < 5;)
		if (fi_cq_read(nw->e.cq, e, 1) == 1)
			got++;
	CHECK(got == 1, "the completion is still there for fi_cq_read");
}

/* A CQ with FI_CQ_COND_THRESHOLD: fi_cq_sread(cq, buf, 4, (void *) 3, t)
 * returns the three completions together once the third is queued. */
static void test_threshold(struct wnode *a, struct wnode *t)
{
	struct fi_cq_tagged_entry e[4];
	struct fi_context ctx[3], sctx[3];
	char buf[3][8], sbuf[8] = "t";
	ssize_t got;
	int ok = 1;

	for (int i = 0; i < 3; i++)
		ok &= fi_trecv(t->e.ep, buf[i], 8, NULL, t->peer, 13, 0, &ctx[i]) == 0;
	CHECK(ok, "posting at the threshold CQ");
	/* One completion queued: a threshold of 3 waits it out. */
	ok = fi_tsend(a->e.ep, sbuf, 1, NULL, a->peer, 13, &sctx[0]) == 0;
	got = fi_cq_sread(t->e.cq, e, 4, (void *) 3, 300);
	CHECK(ok && got == -FI_EAGAIN, "sread(threshold 3) with one completion: %zd, want -FI_EAGAIN", got);
	for (int i = 1; i < 3; i++)
		ok &= fi_tsend(a->e.ep, sbuf, 1, NULL, a->peer, 13, &sctx[i]) == 0;
	got = 0;
	for (int k = 0; k < 4 && got < 3; k++) {
		ssize_t r = fi_cq_sread(t->e.cq, e + got, 4 - got, (void *) 3, 2000);

		if (r > 0)
			got += r;
		else if (r != -FI_EAGAIN)
			break;
	}
	CHECK(got == 3, "sread(threshold 3) with three completions: %zd", got);
	got = 0;
	for (int k = 0; k < 8 && got < 3; k++) {
		ssize_t r = fi_cq_sread(a->e.cq, e, 4, NULL, 2000);

		if (r > 0)
			got += r;
	}
	CHECK(got == 3, "the three send completions: %zd", got);
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct wnode a = { 0 }, b = { 0 }, nw = { 0 }, nwpeer = { 0 }, th = { 0 }, thpeer = { 0 };
	int ret;

	hints->caps = FI_TAGGED;
	hints->mode = FI_CONTEXT;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("psm2");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	CHECK(ret == 0, "fi_getinfo: %d", ret);
	if (ret)
		return finish("sread");
	ret = fi_fabric(info->fabric_attr, &fabric, NULL) ||
	      open_wnode(&a, FI_WAIT_UNSPEC) || open_wnode(&b, FI_WAIT_UNSPEC) ||
	      open_wnode(&nw, FI_WAIT_NONE) || open_wnode(&nwpeer, FI_WAIT_NONE) ||
	      open_wnode_cond(&th, FI_WAIT_UNSPEC, FI_CQ_COND_THRESHOLD) || open_wnode(&thpeer, FI_WAIT_UNSPEC) ||
	      connect_pair(&a, &b) || connect_pair(&nw, &nwpeer) || connect_pair(&thpeer, &th);
	CHECK(ret == 0, "open");
	if (ret)
		return finish("sread");

	test_pingpong(&a, &b, ct_under_valgrind() ? 200 : 4000);
	test_wake(&a, &b, ct_under_valgrind() ? 10 : 60);
	test_edges(&a, &b, &nw);
	test_threshold(&thpeer, &th);

	close_wnode(&thpeer);
	close_wnode(&th);
	close_wnode(&nwpeer);
	close_wnode(&nw);
	close_wnode(&b);
	close_wnode(&a);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return finish("sread");
}
