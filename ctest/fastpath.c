/* fastpath.c: the calls the library answers in C without entering Go
 * (fi_inject*, plain fi_recv/fi_trecv: cmd/libfabric-psm2/fast), mixed
 * with the calls that go through Go, must keep every libfabric rule:
 *   - data, tag, CQ data and length arrive intact, for 0..inject_size bytes
 *     and at eager sizes (198 bytes to 32 KiB, bounce buffers);
 *   - one sender's messages match in order, whichever path each took;
 *   - receives match in the order they were posted, also past the C queue;
 *   - a receive posted after its message arrived still finds it;
 *   - a directed receive takes only its source's messages;
 *   - a full ring gives -FI_EAGAIN and loses nothing;
 *   - argument errors still get their codes;
 *   - threads injecting concurrently with a receiving thread lose nothing.
 * Two domains, so both the same-domain and the cross-domain lock are used. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *dom1, *dom2, *dom3;

/* insert: n's fi_addr for m. */
static fi_addr_t insert(struct ct_ep *n, struct ct_ep *m)
{
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	int ret = fi_av_insert(n->av, m->name, 1, &a, 0, NULL);

	CHECK(ret == 1, "fi_av_insert = %d", ret);
	return a;
}

/* Fewer under valgrind, which runs one thread at a time, slowly. */
static int MT_N = 20000;

/* reap: read one entry from n's CQ (5 s at most); 1 if one came. */
static int reap(struct ct_ep *n, struct fi_cq_tagged_entry *e)
{
	double end = ct_now() + (ct_under_valgrind() ? 60 : 5);
	ssize_t r;

	do {
		r = fi_cq_read(n->cq, e, 1);
		if (r == 1)
			return 1;
		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(n->cq, &err, 0);
			printf("FAIL: error completion %d (%s)\n", err.err, fi_strerror(err.err));
			ct_failed++;
			return 0;
		}
	} while (r == -FI_EAGAIN && ct_now() < end);
	printf("FAIL: no completion (%zd)\n", r);
	ct_failed++;
	return 0;
}

static void fill(unsigned char *b, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		b[i] = (unsigned char) (seed * 31 + i * 7 + 1);
}

/* same_from: bytes from..len-1 of b are fill's pattern for seed. */
static int same_from(const unsigned char *b, size_t len, unsigned seed, size_t from)
{
	for (size_t i = from; i < len; i++)
		if (b[i] != (unsigned char) (seed * 31 + i * 7 + 1))
			return 0;
	return 1;
}

static int same(const unsigned char *b, size_t len, unsigned seed)
{
	return same_from(b, len, seed, 0);
}

/* Every size 0..inject_size, each way: inject/tinject/(t)injectdata to a
 * peer in another domain, receives posted before and after the message. */
static void test_sizes(struct ct_ep *a, struct ct_ep *b, fi_addr_t ab)
{
	size_t max = info->tx_attr->inject_size;
	unsigned char out[256], in[256];
	struct fi_context ctx;
	struct fi_cq_tagged_entry e;
	int bad = 0;

	for (size_t len = 0; len <= max; len++) {
		for (int kind = 0; kind < 4; kind++) {
			uint64_t tag = 0x1234000 + len, data = kind >= 2 ? 0xd00d0000 + len : 0;
			int before = (len + kind) & 1;
			ssize_t r;

			fill(out, len, len + kind);
			memset(in, 0xee, sizeof(in));
			if (before)
				fi_trecv(b->ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, tag, 0, &ctx);
			switch (kind) {
			case 0: r = fi_tinject(a->ep, out, len, ab, tag); break;
			case 1: r = fi_tinjectdata(a->ep, out, len, 0, ab, tag); break;
			case 2: r = fi_tinjectdata(a->ep, out, len, data, ab, tag); break;
			default: r = fi_tinjectdata(a->ep, len ? out : NULL, len, data, ab, tag); break;
			}
			if (r) {
				printf("FAIL: inject kind %d len %zu = %zd\n", kind, len, r);
				bad++;
				continue;
			}
			if (!before)
				fi_trecv(b->ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, tag, 0, &ctx);
			if (!reap(b, &e)) {
				bad++;
				continue;
			}
			if (e.op_context != &ctx || e.len != len || e.tag != tag ||
			    !same(in, len, len + kind) || in[len] != 0xee ||
			    ((e.flags & FI_REMOTE_CQ_DATA) ? e.data : 0) != data) {
				printf("FAIL: kind %d len %zu: ctx %d len %zu tag %#lx data %#lx flags %#lx\n",
				       kind, len, e.op_context == &ctx, e.len, (unsigned long) e.tag,
				       (unsigned long) e.data, (unsigned long) e.flags);
				bad++;
			}
		}
	}
	CHECK(bad == 0, "%d of %zu size/kind cases wrong", bad, 4 * (max + 1));
}

/* One sender alternating C injects with Go sends (completions, eager
 * sizes): the receiver must match them in send order. */
enum { ORD_N = 300, ORD_MAX = 12288 };
static unsigned char ord_buf[ORD_N][ORD_MAX];
static struct fi_context ord_sctx[ORD_N], ord_rctx[ORD_N];
static int ord_got, ord_bad;

/* Every third message is a longer fi_tsend (198 bytes to 12 KiB: C's
 * eager sends through a bounce buffer, or Go's when C declines), every
 * other one of the rest a small fi_tsend (C, with a completion), the
 * others injects. */
static size_t ord_len(int i)
{
	return (i % 3 == 2) ? 198 + (size_t) (i * 997) % (ORD_MAX - 198) : (size_t) (i % 60);
}

static int ord_completes(int i)
{
	return i % 3 == 2 || i % 2 == 1;
}

static void ord_check(const struct fi_cq_tagged_entry *e)
{
	int i = (struct fi_context *) e->op_context - ord_rctx;
	size_t want = ord_len(i);

	int intact = !want || (ord_buf[i][0] == (unsigned char) i && same_from(ord_buf[i], want, i, 1));

	if (i != ord_got || e->len != want || !intact) {
		if (ord_bad++ < 5)
			printf("FAIL: receive %d took message %d (len %zu, want %zu, intact %d)\n",
			       ord_got, i, e->len, want, intact);
	}
	ord_got++;
}

static void test_order(struct ct_ep *a, struct ct_ep *b, fi_addr_t ab)
{
	struct fi_cq_tagged_entry e;
	int sends = 0;

	ord_got = ord_bad = 0;
	for (int i = 0; i < ORD_N; i++)
		fi_trecv(b->ep, ord_buf[i], sizeof(ord_buf[i]), NULL, FI_ADDR_UNSPEC, 0x77, 0, &ord_rctx[i]);
	for (int i = 0; i < ORD_N; i++) {
		static unsigned char msg[ORD_MAX];
		size_t len = ord_len(i);
		ssize_t r;

		fill(msg, len, i);
		msg[0] = (unsigned char) i;
		for (;;) {
			if (ord_completes(i))
				r = fi_tsend(a->ep, msg, len, NULL, ab, 0x77, &ord_sctx[i]);
			else
				r = fi_tinject(a->ep, msg, len, ab, 0x77);
			if (r != -FI_EAGAIN)
				break;
			/* Let the receiver free ring cells and bounce buffers. */
			if (fi_cq_read(b->cq, &e, 1) == 1)
				ord_check(&e);
		}
		if (r)
			ord_bad++;
		if (ord_completes(i))
			sends++;
	}
	while (ord_got < ORD_N) {
		if (!reap(b, &e)) {
			ord_bad++;
			break;
		}
		ord_check(&e);
	}
	/* The send completions, in send order. */
	for (int k = 0, next = 0; k < sends; k++) {
		int i;

		if (!reap(a, &e)) {
			ord_bad++;
			break;
		}
		while (next < ORD_N && !ord_completes(next))
			next++;
		i = (struct fi_context *) e.op_context - ord_sctx;
		if (i != next || !(e.flags & FI_SEND)) {
			if (ord_bad++ < 5)
				printf("FAIL: send completion %d is send %d (flags %#lx)\n", next, i,
				       (unsigned long) e.flags);
		}
		next++;
	}
	CHECK(ord_bad == 0, "%d out-of-order or lost messages", ord_bad);
}

/* More receives than the C queue holds, posted before any message: the
 * first posted matches first. */
/* Eager sizes (198 bytes to 32 KiB) one at a time, each receive queued
 * before its message comes: C sends them through a bounce buffer and C
 * delivers them (fast/deliver.c), once the receiver knows the sender (it sent to
 * it first). Every byte, the CQ data and the flags are checked. */
static void test_eager(struct ct_ep *a, struct ct_ep *b, fi_addr_t ab, fi_addr_t ba)
{
	static unsigned char msg[32768], rbuf[32768];
	struct fi_cq_tagged_entry e;
	struct fi_context sctx, rctx;
	int x = 1, bad = 0, n = ct_under_valgrind() ? 20 : 400;

	CHECK(fi_tinject(b->ep, &x, sizeof(x), ba, 0x56) == 0, "b -> a");
	CHECK(fi_trecv(a->ep, &x, sizeof(x), NULL, FI_ADDR_UNSPEC, 0x56, 0, &rctx) == 0, "a recv");
	CHECK(reap(a, &e), "a got b's message");
	for (int i = 0; i < n && !bad; i++) {
		size_t len = 198 + (size_t) (i * 1237) % (sizeof(msg) - 198);
		uint64_t data = i & 1 ? 0x1234000000000000ull + (uint64_t) i : 0;
		int got_send = 0, got_recv = 0;
		double end = ct_now() + 5;
		ssize_t r;

		fill(msg, len, i);
		memset(rbuf, 0, len);
		CHECK(fi_trecv(b->ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, 0x55, 0, &rctx) == 0, "trecv");
		do {
			r = data ? fi_tsenddata(a->ep, msg, len, NULL, data, ab, 0x55, &sctx)
				 : fi_tsend(a->ep, msg, len, NULL, ab, 0x55, &sctx);
			if (r == -FI_EAGAIN)
				fi_cq_read(b->cq, NULL, 0);
		} while (r == -FI_EAGAIN && ct_now() < end);
		CHECK(r == 0, "send %d (%zu bytes) = %zd", i, len, r);
		while ((!got_send || !got_recv) && ct_now() < end) {
			if (!got_send && fi_cq_read(a->cq, &e, 1) == 1)
				got_send = e.op_context == &sctx;
			if (!got_recv && fi_cq_read(b->cq, &e, 1) == 1) {
				got_recv = 1;
				if (e.op_context != &rctx || e.len != len || e.tag != 0x55 || e.buf != rbuf ||
				    (data && (e.data != data || !(e.flags & FI_REMOTE_CQ_DATA))) ||
				    !same(rbuf, len, i))
					bad++;
			}
		}
		if (!got_send || !got_recv)
			bad++;
		CHECK(!bad, "eager message %d (%zu bytes, data %d): sent %d, received %d, intact %d", i, len,
		      data != 0, got_send, got_recv, got_recv && same(rbuf, len, i));
	}
}

/* Eager messages from and into buffers at every awkward page offset: the
 * bounce buffers are page-aligned, and a copy whose destination is a few
 * bytes past its source modulo 4 KiB takes ucopy.c's other loop. The
 * bytes around the receive buffer stay untouched. */
static void test_aligned(struct ct_ep *a, struct ct_ep *b, fi_addr_t ab)
{
	static const size_t offs[] = { 0, 8, 24, 40, 56, 4040, 4088 };
	static const size_t lens[] = { 1024, 12345, 32768 };
	unsigned char *sbuf = aligned_alloc(4096, 40960), *rbuf = aligned_alloc(4096, 40960);
	struct fi_cq_tagged_entry e;
	struct fi_context sctx, rctx;
	int bad = 0, k = 0;

	for (size_t so = 0; so < sizeof(offs) / sizeof(offs[0]); so++)
		for (size_t ro = 0; ro < sizeof(offs) / sizeof(offs[0]); ro++)
			for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++, k++) {
				size_t len = lens[li];
				unsigned char *src = sbuf + offs[so], *dst = rbuf + offs[ro];
				int got_send = 0, got_recv = 0;
				double end = ct_now() + 5;
				ssize_t r;

				fill(src, len, k);
				memset(rbuf, 0xee, 40960);
				if (fi_trecv(b->ep, dst, len, NULL, FI_ADDR_UNSPEC, 0x77, 0, &rctx)) {
					bad++;
					continue;
				}
				do {
					r = fi_tsend(a->ep, src, len, NULL, ab, 0x77, &sctx);
					if (r == -FI_EAGAIN)
						fi_cq_read(b->cq, NULL, 0);
				} while (r == -FI_EAGAIN && ct_now() < end);
				while (r == 0 && (!got_send || !got_recv) && ct_now() < end) {
					if (!got_send && fi_cq_read(a->cq, &e, 1) == 1)
						got_send = e.op_context == &sctx;
					if (!got_recv && fi_cq_read(b->cq, &e, 1) == 1)
						got_recv = e.op_context == &rctx && e.len == len;
				}
				if (!got_send || !got_recv || !same(dst, len, k) ||
				    (offs[ro] && rbuf[offs[ro] - 1] != 0xee) || dst[len] != 0xee) {
					printf("FAIL: %zu bytes from page offset %zu to %zu: sent %d received %d intact %d\n",
					       len, offs[so], offs[ro], got_send, got_recv, same(dst, len, k));
					bad++;
				}
			}
	CHECK(bad == 0, "%d of %d offset/size cases wrong", bad, k);
	free(sbuf);
	free(rbuf);
}

static void test_queue(struct ct_ep *a, struct ct_ep *b, fi_addr_t ab)
{
	enum { N = 200 };
	static uint64_t buf[N];
	static struct fi_context ctx[N];
	struct fi_cq_tagged_entry e;
	int bad = 0;

	for (int i = 0; i < N; i++)
		CHECK(fi_trecv(b->ep, &buf[i], sizeof(buf[i]), NULL, FI_ADDR_UNSPEC, 5, 0, &ctx[i]) == 0,
		      "trecv %d", i);
	for (uint64_t i = 0; i < N; i++) {
		ssize_t r;

		r = fi_tinject(a->ep, &i, sizeof(i), ab, 5);
		if (r)
			bad++;
	}
	for (int i = 0; i < N; i++) {
		if (!reap(b, &e)) {
			bad++;
			break;
		}
		int k = (struct fi_context *) e.op_context - ctx;

		if (k != i || buf[k] != (uint64_t) i)
			bad++;
	}
	CHECK(bad == 0, "%d receives matched out of posting order", bad);
}

/* A directed receive takes only its source's message. */
static void test_directed(struct ct_ep *a, struct ct_ep *b, struct ct_ep *c,
			  fi_addr_t ba, fi_addr_t ab, fi_addr_t cb)
{
	uint64_t from_a = 0xa, from_c = 0xc, got1 = 0, got2 = 0, x = 1;
	struct fi_context ctx1, ctx2;
	struct fi_cq_tagged_entry e;

	/* b sends to a once, so a's address is connected on b's side. */
	CHECK(fi_tinject(b->ep, &x, sizeof(x), ba, 9) == 0, "b -> a");
	fi_trecv(a->ep, &x, sizeof(x), NULL, FI_ADDR_UNSPEC, 9, 0, &ctx1);
	CHECK(reap(a, &e), "a got b's message");

	CHECK(fi_trecv(b->ep, &got1, sizeof(got1), NULL, ba, 3, 0, &ctx1) == 0, "directed trecv");
	CHECK(fi_tinject(c->ep, &from_c, sizeof(from_c), cb, 3) == 0, "c -> b");
	CHECK(fi_tinject(a->ep, &from_a, sizeof(from_a), ab, 3) == 0, "a -> b");
	CHECK(reap(b, &e) && e.op_context == &ctx1 && got1 == from_a,
	      "directed receive took %#lx", (unsigned long) got1);
	CHECK(fi_trecv(b->ep, &got2, sizeof(got2), NULL, FI_ADDR_UNSPEC, 3, 0, &ctx2) == 0, "trecv");
	CHECK(reap(b, &e) && e.op_context == &ctx2 && got2 == from_c,
	      "the other message waited: %#lx", (unsigned long) got2);
}

/* Injects to a receiver that does not poll: -FI_EAGAIN once its ring is
 * full, then every accepted message arrives, in order. */
static void test_full(struct ct_ep *a, struct ct_ep *b, fi_addr_t ab)
{
	uint64_t i, sent = 0, v;
	struct fi_context ctx;
	struct fi_cq_tagged_entry e;
	ssize_t r = 0;
	int bad = 0;

	for (i = 0; i < 100000; i++) {
		r = fi_tinject(a->ep, &i, sizeof(i), ab, 11);
		if (r)
			break;
		sent++;
	}
	CHECK(r == -FI_EAGAIN, "inject into a full ring = %zd after %lu", r, (unsigned long) sent);
	CHECK(sent >= 512, "only %lu injects before the ring filled", (unsigned long) sent);
	for (i = 0; i < sent; i++) {
		v = ~0ull;
		fi_trecv(b->ep, &v, sizeof(v), NULL, FI_ADDR_UNSPEC, 11, 0, &ctx);
		if (!reap(b, &e) || v != i) {
			if (bad++ < 3)
				printf("FAIL: message %lu is %lu\n", (unsigned long) i, (unsigned long) v);
			if (bad > 3)
				break;
		}
	}
	CHECK(bad == 0, "%d of %lu messages lost or reordered after a full ring", bad, (unsigned long) sent);
	v = 0;
	CHECK(fi_tinject(a->ep, &v, sizeof(v), ab, 11) == 0, "inject after the ring drained");
	fi_trecv(b->ep, &v, sizeof(v), NULL, FI_ADDR_UNSPEC, 11, 0, &ctx);
	CHECK(reap(b, &e), "and it arrives");
}

/* Several receives with different tags: each message takes the first
 * posted receive that matches, wherever it sits in the queue. */
static void test_match(struct ct_ep *a, struct ct_ep *b, fi_addr_t ab)
{
	static const uint64_t rtag[5] = { 1, 7, 2, 7, 3 };
	static const uint64_t stag[5] = { 2, 7, 3, 7, 1 };
	static const int want[5] = { 2, 1, 4, 3, 0 };	/* receive taking each send */
	uint64_t buf[5] = { 0 };
	struct fi_context ctx[5];
	struct fi_cq_tagged_entry e;
	int bad = 0;

	for (int i = 0; i < 5; i++)
		CHECK(fi_trecv(b->ep, &buf[i], 8, NULL, FI_ADDR_UNSPEC, rtag[i], 0, &ctx[i]) == 0, "trecv");
	for (uint64_t i = 0; i < 5; i++) {
		uint64_t v = 100 + i;

		CHECK(fi_tinject(a->ep, &v, 8, ab, stag[i]) == 0, "tinject");
		if (!reap(b, &e)) {
			bad++;
			continue;
		}
		if (e.op_context != &ctx[want[i]] || buf[want[i]] != v || e.tag != stag[i]) {
			if (bad++ < 3)
				printf("FAIL: send %lu (tag %lu) went to receive %ld\n", (unsigned long) i,
				       (unsigned long) stag[i], (long) ((struct fi_context *) e.op_context - ctx));
		}
	}
	CHECK(bad == 0, "%d messages took the wrong receive", bad);
}

/* A message longer than its receive: FI_ETRUNC with olen, and the next
 * message is fine. */
static void test_trunc(struct ct_ep *a, struct ct_ep *b, fi_addr_t ab)
{
	unsigned char out[48], in[8];
	struct fi_cq_err_entry err = { 0 };
	struct fi_cq_tagged_entry e;
	struct fi_context ctx;
	double end = ct_now() + 5;
	ssize_t r;

	fill(out, sizeof(out), 3);
	memset(in, 0, sizeof(in));
	CHECK(fi_trecv(b->ep, in, 4, NULL, FI_ADDR_UNSPEC, 0x55, 0, &ctx) == 0, "trecv");
	CHECK(fi_tinject(a->ep, out, 40, ab, 0x55) == 0, "tinject");
	do
		r = fi_cq_read(b->cq, &e, 1);
	while (r == -FI_EAGAIN && ct_now() < end);
	CHECK(r == -FI_EAVAIL, "truncated receive read = %zd", r);
	CHECK(fi_cq_readerr(b->cq, &err, 0) == 1 && err.err == FI_ETRUNC && err.olen == 36 &&
	      err.len == 4 && err.op_context == &ctx, "readerr: err %d olen %zu len %zu",
	      err.err, err.olen, err.len);
	CHECK(same(in, 4, 3) && in[4] == 0, "the 4 bytes that fit");
	CHECK(fi_trecv(b->ep, in, 8, NULL, FI_ADDR_UNSPEC, 0x55, 0, &ctx) == 0, "trecv");
	CHECK(fi_tinject(a->ep, out, 8, ab, 0x55) == 0, "tinject");
	CHECK(reap(b, &e) && e.len == 8 && same(in, 8, 3), "then a message that fits");
}

static void test_errors(struct ct_ep *a, struct ct_ep *b, fi_addr_t ab)
{
	char big[4096] = { 0 };
	struct fi_context ctx;

	CHECK(fi_tinject(a->ep, big, info->tx_attr->inject_size + 1, ab, 1) == -FI_EMSGSIZE,
	      "inject over inject_size");
	CHECK(fi_inject(a->ep, NULL, 8, ab) == -FI_EINVAL, "inject of NULL");
	CHECK(fi_tinject(a->ep, big, 8, 999999, 1) == -FI_EINVAL, "inject to an unknown address");
	CHECK(fi_trecv(b->ep, NULL, 8, NULL, FI_ADDR_UNSPEC, 1, 0, &ctx) == -FI_EINVAL,
	      "trecv into NULL");
}

/* Two threads inject into one receiver while a third receives. */
struct inj {
	struct ct_ep *from;
	fi_addr_t to;
	uint64_t tag;
	int n, bad;
};


static void *injector(void *arg)
{
	struct inj *j = arg;

	for (uint64_t i = 0; i < (uint64_t) j->n; i++) {
		ssize_t r;

		while ((r = fi_tinject(j->from->ep, &i, sizeof(i), j->to, j->tag)) == -FI_EAGAIN)
			;
		if (r)
			j->bad++;
	}
	return NULL;
}

static void test_threads(struct ct_ep *a, struct ct_ep *c, struct ct_ep *b,
			 fi_addr_t ab, fi_addr_t cb)
{
	struct inj ja = { a, ab, 0x100, MT_N, 0 }, jc = { c, cb, 0x200, MT_N, 0 };
	static uint64_t slot[2][64];
	static struct fi_context ctx[2][64];
	uint64_t next[2] = { 0, 0 }, n = MT_N;
	struct fi_cq_tagged_entry e;
	pthread_t ta, tc;
	int bad = 0;

	for (int s = 0; s < 2; s++)
		for (int k = 0; k < 64; k++)
			fi_trecv(b->ep, &slot[s][k], 8, NULL, FI_ADDR_UNSPEC, s ? 0x200 : 0x100, 0, &ctx[s][k]);
	pthread_create(&ta, NULL, injector, &ja);
	pthread_create(&tc, NULL, injector, &jc);
	while (next[0] < n || next[1] < n) {
		if (!reap(b, &e)) {
			bad++;
			break;
		}
		int s = e.tag == 0x200;
		int k = (struct fi_context *) e.op_context - ctx[s];

		if (k < 0 || k >= 64 || slot[s][k] != next[s]) {
			if (bad++ < 3)
				printf("FAIL: stream %d: got %lu, want %lu\n", s, (unsigned long) slot[s][k],
				       (unsigned long) next[s]);
		}
		next[s]++;
		fi_trecv(b->ep, &slot[s][k], 8, NULL, FI_ADDR_UNSPEC, s ? 0x200 : 0x100, 0, &ctx[s][k]);
	}
	pthread_join(ta, NULL);
	pthread_join(tc, NULL);
	CHECK(bad == 0 && ja.bad == 0 && jc.bad == 0,
	      "%d receive errors, %d + %d inject errors", bad, ja.bad, jc.bad);
	/* The 64 receives per stream still posted are cancelled by the close. */
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct ct_ep a, b, c, d;
	fi_addr_t ab, ba, cb, ad, da, cd;
	int ret;

	hints->caps = FI_TAGGED | FI_MSG | FI_DIRECTED_RECV;
	hints->mode = FI_CONTEXT;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->fabric_attr->prov_name = strdup("psm2");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	CHECK(ret == 0, "fi_getinfo = %d", ret);
	if (ret)
		return finish("fastpath");
	ret = fi_fabric(info->fabric_attr, &fabric, NULL) ||
	      fi_domain(fabric, info, &dom1, NULL) || fi_domain(fabric, info, &dom2, NULL) ||
	      fi_domain(fabric, info, &dom3, NULL) ||
	      ct_open_ep(&a, dom1, info, FI_WAIT_NONE) || ct_open_ep(&b, dom2, info, FI_WAIT_NONE) ||
	      ct_open_ep(&c, dom2, info, FI_WAIT_NONE) || ct_open_ep(&d, dom3, info, FI_WAIT_NONE);
	CHECK(ret == 0, "open");
	if (ret)
		return finish("fastpath");
	ab = insert(&a, &b);
	ba = insert(&b, &a);
	cb = insert(&c, &b);
	ad = insert(&a, &d);
	da = insert(&d, &a);
	cd = insert(&c, &d);
	if (ct_under_valgrind())
		MT_N = 100;

	/* b shares its domain with c: C delivers for each of them through
	 * its own CQ (fast/deliver.c, psm2_fast_deliver lists the domain's endpoints). */
	test_sizes(&a, &b, ab);
	test_order(&a, &b, ab);
	test_eager(&a, &b, ab, ba);
	test_queue(&a, &b, ab);
	test_match(&a, &b, ab);
	test_directed(&a, &b, &c, ba, ab, cb);
	test_full(&a, &b, ab);
	test_errors(&a, &b, ab);
	test_threads(&a, &c, &b, ab, cb);

	/* d is alone in its domain: C delivers inline messages to the
	 * receives it queued (fast/deliver.c, psm2_fast_deliver). */
	test_sizes(&a, &d, ad);
	test_order(&a, &d, ad);
	test_eager(&a, &d, ad, da);
	test_aligned(&a, &d, ad);
	test_queue(&a, &d, ad);
	test_directed(&a, &d, &c, da, ad, cd);
	test_match(&a, &d, ad);
	test_trunc(&a, &d, ad);
	test_full(&a, &d, ad);
	test_threads(&a, &c, &d, ad, cd);

	ct_close_ep(&d);
	ct_close_ep(&c);
	ct_close_ep(&b);
	ct_close_ep(&a);
	fi_close(&dom3->fid);
	fi_close(&dom2->fid);
	fi_close(&dom1->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return finish("fastpath");
}
