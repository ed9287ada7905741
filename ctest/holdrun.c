/* holdrun.c: messages that arrive before their receives are posted stay
 * in the receiver's ring, up to HOLD_UNITS of them together (shm's
 * holdUnits), and the receives posted after them take them in C, without
 * Go's unexpected queue (cmd/libfabric-psm2/fast/deliver.c,
 * psm2_held_run; shm/poll.go, holdHead). It is what a rank that runs ahead
 * does to its neighbour in an exchange (two MPI_Isend before the peer's
 * MPI_Irecv): through Go's queue every receive of the step went through
 * Go, 0.62-0.90 us an IMB Exchange of 1 B at np 2 against 0.25-0.34 with
 * the run held (docs/provider.md). ctest/early.c has the single message.
 *
 * Two endpoints of this process over shared memory. Each round, a sends
 * N tagged messages (N = 1..4); b reads its CQ (nothing: the read answers
 * in C), then, after the idle clock's 10 ms, reads again (a read that
 * goes to Go, whose pass must leave them too), posts the N receives and
 * reads N completions, checked. The endpoints' statistics
 * (FI_PSM2_PRINT_STATS, printed at close) must count no unexpected
 * message; and the messages of the round after, 5 of them, more than a
 * run holds, must arrive intact all the same, the first at least through
 * Go's queue. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

#define ROUNDS 40
#define RUN 4 /* shm's holdUnits */

/* reads: n reads of c that must find nothing. */
static int reads(struct fid_cq *c, int n)
{
	struct fi_cq_tagged_entry e;
	int empty = 1;

	for (int i = 0; i < n; i++)
		empty &= fi_cq_read(c, &e, 1) == -FI_EAGAIN;
	return empty;
}

/* round: a sends n messages of 8 bytes to b, tags base.., b receives them
 * after they arrived; 1 if all came intact and in order. */
static int round_trip(struct ct_node *a, struct ct_node *b, fi_addr_t b_at_a, int n, uint64_t base, int late)
{
	uint64_t out[8], in[8] = {0};
	struct fi_context ctx[8];
	struct fi_cq_tagged_entry e;
	int ok = 1, got = 0;

	for (int i = 0; i < n; i++) {
		out[i] = base * 1000 + (uint64_t) i;
		while (fi_tinject(a->ep, &out[i], 8, b_at_a, base + (uint64_t) i) == -FI_EAGAIN)
			fi_cq_read(a->cq, &e, 1);
	}
	ok &= reads(b->cq, 600);
	if (late) {
		usleep(15000);
		ok &= reads(b->cq, 600);
	}
	for (int i = 0; i < n; i++)
		ok &= fi_trecv(b->ep, &in[i], 8, NULL, FI_ADDR_UNSPEC, base + (uint64_t) i, 0, &ctx[i]) == 0;
	for (double end = ct_now() + 10; got < n && ct_now() < end;) {
		ssize_t r = fi_cq_read(b->cq, &e, 1);

		if (r == 1) {
			ok &= e.op_context == &ctx[got] && e.tag == base + (uint64_t) got && e.len == 8;
			got++;
		} else if (r != -FI_EAGAIN) {
			ok = 0;
			break;
		}
	}
	ok &= got == n;
	for (int i = 0; i < n; i++)
		ok &= in[i] == out[i];
	return ok;
}

/* wait_one: one completion on n's CQ within 10 s, its context in *ctx. */
static int wait_one(struct ct_node *n, void **ctx)
{
	struct fi_cq_tagged_entry e;

	for (double end = ct_now() + 10; ct_now() < end;) {
		ssize_t r = fi_cq_read(n->cq, &e, 1);

		if (r == 1) {
			*ctx = e.op_context;
			return 1;
		}
		if (r != -FI_EAGAIN)
			return 0;
	}
	return 0;
}

/* out_of_order: senders a1 and a2 each send one message to b per round
 * (a1 first); b receives a2's first, then a1's. */
static void out_of_order(void)
{
	struct ct_node a1, a2, b;
	fi_addr_t b1, b2;
	static char s1[2048], s2[2048], r1[2048], r2[2048];
	struct fi_context c1, c2, cany;
	int ret, ok = 1, peeks = 0;
	long u;
	void *ctx;

	ret = ct_open_node(&a1);
	ret = ret ? ret : ct_open_node(&a2);
	ret = ret ? ret : ct_open_node(&b);
	CHECK(ret == 0, "open: %d", ret);
	if (ret)
		return;
	CHECK(fi_av_insert(a1.av, b.name, 1, &b1, 0, NULL) == 1, "insert");
	CHECK(fi_av_insert(a2.av, b.name, 1, &b2, 0, NULL) == 1, "insert");
	{
		/* b sends to both first, as MPI ranks do: C takes an eager
		 * message only from a sender it is connected to. */
		fi_addr_t x;
		uint64_t v = 0;

		CHECK(fi_av_insert(b.av, a1.name, 1, &x, 0, NULL) == 1 && fi_tinject(b.ep, &v, 8, x, 1ULL << 60) == 0,
		      "b to a1");
		CHECK(fi_av_insert(b.av, a2.name, 1, &x, 0, NULL) == 1 && fi_tinject(b.ep, &v, 8, x, 1ULL << 60) == 0,
		      "b to a2");
	}
	for (int r = 0; r < 400 && ok; r++) {
		size_t n1 = r % 2 ? 8 : 1024, n2 = r % 3 ? 16 : 2000;
		uint64_t t1 = (uint64_t) r << 8 | 1, t2 = (uint64_t) r << 8 | 2;

		memset(s1, 'a' + r % 26, n1);
		memset(s2, 'A' + r % 26, n2);
		memset(r1, 0, n1);
		memset(r2, 0, n2);
		ok &= fi_tsend(a1.ep, s1, n1, NULL, b1, t1, NULL) == 0;
		ok &= wait_one(&a1, &ctx) == 1;	/* in b's ring */
		ok &= fi_tsend(a2.ep, s2, n2, NULL, b2, t2, NULL) == 0;
		ok &= wait_one(&a2, &ctx) == 1;
		ok &= fi_trecv(b.ep, r2, sizeof(r2), NULL, FI_ADDR_UNSPEC, t2, 0, &c2) == 0;
		ok &= wait_one(&b, &ctx) == 1 && ctx == &c2 && !memcmp(r2, s2, n2);
		if (r % 4 == 1) {
			/* A peek makes Go take the ring: a1's message goes to
			 * its queue, the taken cells are passed. */
			struct fi_msg_tagged m = { .addr = FI_ADDR_UNSPEC, .tag = 0xffffff };

			ret = (int) fi_trecvmsg(b.ep, &m, FI_PEEK);
			ok &= ret == 0 && fi_cq_read(b.cq, &(struct fi_cq_tagged_entry){ 0 }, 1) == -FI_EAVAIL;
			{
				struct fi_cq_err_entry err = { 0 };

				ok &= fi_cq_readerr(b.cq, &err, 0) == 1 && err.err == FI_ENOMSG;
			}
			peeks++;
		}
		ok &= fi_trecv(b.ep, r1, sizeof(r1), NULL, FI_ADDR_UNSPEC, t1, 0, &c1) == 0;
		ok &= wait_one(&b, &ctx) == 1 && ctx == &c1 && !memcmp(r1, s1, n1);
		CHECK(ok, "round %d (%zu and %zu bytes): a message lost, late, out of place or wrong", r, n1, n2);
	}
	/* Nothing twice: a receive for any tag gets nothing. */
	ok = fi_trecv(b.ep, r1, sizeof(r1), NULL, FI_ADDR_UNSPEC, 0, ~0ULL, &cany) == 0;
	for (double end = ct_now() + 0.2; ok && ct_now() < end;)
		ok = fi_cq_read(b.cq, &(struct fi_cq_tagged_entry){ 0 }, 1) == -FI_EAGAIN;
	CHECK(ok, "a message arrived twice");
	CHECK(fi_cancel(&b.ep->fid, &cany) == 0, "cancel");
	ct_close_node(&a1);
	ct_close_node(&a2);
	/* Go queued a1's message only in the rounds with a peek. */
	u = ct_close_ep_stat(&b, "msg", "unexpected");
	ct_close_node(&b);
	printf("out of ring order: 400 rounds, %d with a peek, %ld messages through Go's queue\n", peeks, u);
	CHECK(u >= 0 && u <= peeks + 4, "%ld messages through Go's unexpected queue, want %d at most", u, peeks + 4);
}

/* early_third: c's message waits while a and b ping-pong: in a's
 * unexpected queue (peek: a peek moved it there first), or at the head of
 * a's ring, where the ping-pong's messages are taken from behind it and
 * must not fill the ring (psm2_later_match's span: a deadlock when they
 * did). */
static void early_third(int peek)
{
	struct ct_node a, b, c;
	fi_addr_t ab, ba, ca;
	uint64_t v = 7, w = 0, x = 0xabc, y = 0;
	struct fi_context ctx;
	void *got;
	int ret, ok = 1, rounds = ct_under_valgrind() ? 1500 : 3000; /* more than a ring holds */
	long g;

	ret = ct_open_node(&a);
	ret = ret ? ret : ct_open_node(&b);
	ret = ret ? ret : ct_open_node(&c);
	CHECK(ret == 0, "open: %d", ret);
	if (ret)
		return;
	CHECK(fi_av_insert(a.av, b.name, 1, &ab, 0, NULL) == 1, "insert");
	CHECK(fi_av_insert(b.av, a.name, 1, &ba, 0, NULL) == 1, "insert");
	CHECK(fi_av_insert(c.av, a.name, 1, &ca, 0, NULL) == 1, "insert");
	CHECK(fi_tinject(c.ep, &x, 8, ca, 1ULL << 50) == 0, "early inject");
	if (peek) {
		struct fi_msg_tagged m = { .addr = FI_ADDR_UNSPEC, .tag = 1ULL << 50 };

		ok = fi_trecvmsg(a.ep, &m, FI_PEEK) == 0 && wait_one(&a, &got) == 1;
		CHECK(ok, "peek of the early message");
	}
	for (int r = 0; r < rounds && ok; r++) {
		ok &= fi_trecv(b.ep, &w, 8, NULL, FI_ADDR_UNSPEC, (uint64_t) r, 0, &ctx) == 0;
		ok &= fi_tinject(a.ep, &v, 8, ab, (uint64_t) r) == 0;
		ok &= wait_one(&b, &got) == 1 && got == &ctx && w == v;
		ok &= fi_trecv(a.ep, &w, 8, NULL, FI_ADDR_UNSPEC, (uint64_t) r, 0, &ctx) == 0;
		ok &= fi_tinject(b.ep, &v, 8, ba, (uint64_t) r) == 0;
		ok &= wait_one(&a, &got) == 1 && got == &ctx && w == v;
		v++;
	}
	CHECK(ok, "ping-pong beside an early message");
	ok = fi_trecv(a.ep, &y, 8, NULL, FI_ADDR_UNSPEC, 1ULL << 50, 0, &ctx) == 0 && wait_one(&a, &got) == 1 &&
	     got == &ctx && y == x;
	CHECK(ok, "the early message, last");
	g = ct_close_ep_stat(&a, "shm", "received");
	printf("ping-pong beside an early message (%s): Go delivered %ld of %d messages\n",
	       peek ? "in Go's queue" : "in the ring", g, rounds + 1);
	CHECK(g >= 0 && g * 100 < rounds, "Go delivered %ld of the %d messages", g, rounds);
	ct_close_node(&a);
	ct_close_node(&b);
	ct_close_node(&c);
}

int main(void)
{
	struct ct_node a, b;
	fi_addr_t b_at_a, a_at_b;
	long n;
	int ret, ok = 1;

	setenv("FI_PSM2_PRINT_STATS", "1", 1);
	ret = ct_open_node(&a);
	CHECK(ret == 0, "open a: %d", ret);
	ret = ret ? ret : ct_open_node(&b);
	CHECK(ret == 0, "open b: %d", ret);
	if (ret)
		return finish("holdrun");
	CHECK(fi_av_insert(a.av, b.name, 1, &b_at_a, 0, NULL) == 1, "insert b");
	CHECK(fi_av_insert(b.av, a.name, 1, &a_at_b, 0, NULL) == 1, "insert a");

	for (int r = 0; r < ROUNDS; r++)
		ok &= round_trip(&a, &b, b_at_a, 1 + r % RUN, 100 + (uint64_t) r * 10, r % 10 == 3);
	CHECK(ok, "runs of 1-%d messages: a message lost, late or wrong", RUN);

	n = ct_close_ep_stat(&a, "msg", "unexpected");
	n += ct_close_ep_stat(&b, "msg", "unexpected");
	ct_close_node(&a);
	ct_close_node(&b);
	CHECK(n == 0, "%ld messages went through Go's unexpected queue (negative: no statistics), want 0", n);

	/* One more than a run: Go queues them, and all arrive. */
	ret = ct_open_node(&a);
	ret = ret ? ret : ct_open_node(&b);
	CHECK(ret == 0, "reopen: %d", ret);
	if (ret)
		return finish("holdrun");
	CHECK(fi_av_insert(a.av, b.name, 1, &b_at_a, 0, NULL) == 1, "insert b");
	CHECK(fi_av_insert(b.av, a.name, 1, &a_at_b, 0, NULL) == 1, "insert a");
	CHECK(round_trip(&a, &b, b_at_a, RUN + 1, 7, 0), "%d messages: one lost, late or wrong", RUN + 1);
	n = ct_close_ep_stat(&b, "msg", "unexpected");
	ct_close_node(&a);
	ct_close_node(&b);
	/* Go takes the first; the rest are a run it leaves in the ring. */
	CHECK(n >= 1 && n <= RUN + 1, "%ld messages through Go's unexpected queue, want 1 to %d", n, RUN + 1);
	out_of_order();
	early_third(1);
	early_third(0);
	return finish("holdrun");
}
