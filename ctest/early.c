/* early.c: a message that arrives before its receive is posted, the last
 * one in the ring (one side of an exchange running ahead, as in
 * MPI_Sendrecv), stays in the ring until a receive takes it; the receive,
 * queued in C, gets it from C, without Go:
 *   - every message is received intact, in order, whatever came first;
 *   - fi_cq_read answers -FI_EAGAIN while it waits, and FI_PEEK sees it;
 *   - a second message behind it is taken too, and both arrive in order;
 *   - Go delivered (almost) none of them: its "received" count, from the
 *     statistics the endpoint prints at close (FI_PSM2_PRINT_STATS), stays
 *     under 1% of the messages. Each went through Go's unexpected queue
 *     when Go took every arrival;
 *   - the read while it waits is answered in C, with no receive queued at
 *     all: its median time is under half of fi_cq_readfrom's, which
 *     asks Go (about 40 ns against 180 here). It went to Go when C looked
 *     at the rings only with a receive queued (fast/page.h, psm2_fast_ep),
 *     and Go's pass each time held the message again. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"


static struct ct_node a, b;

static int cmp(const void *x, const void *y)
{
	double u = *(const double *) x, v = *(const double *) y;

	return (u > v) - (u < v);
}

/* got: one completion on a's CQ within 5 s, with its tag; 1 if it came. */
static int got(uint64_t *tag)
{
	struct fi_cq_tagged_entry e;
	double end = ct_now() + 5;
	ssize_t r;

	while ((r = fi_cq_read(a.cq, &e, 1)) == -FI_EAGAIN && ct_now() < end)
		fi_cq_read(b.cq, &e, 0);
	if (r != 1)
		return 0;
	*tag = e.tag;
	return 1;
}

int main(void)
{
	fi_addr_t b2a = FI_ADDR_NOTAVAIL;
	uint64_t v = 0, w = 0, tag;
	int ret, ok = 1, N = ct_under_valgrind() ? 800 : 4000, nt = 0;
	static double tc[4000], tgo[4000];

	setenv("FI_PSM2_PRINT_STATS", "1", 1);
	if ((ret = ct_open_node(&a)) || (ret = ct_open_node(&b))) {
		CHECK(0, "open: %d", ret);
		return finish("early");
	}
	CHECK(fi_av_insert(b.av, a.name, 1, &b2a, 0, NULL) == 1, "insert");

	for (int i = 0; i < N && ok; i++) {
		uint64_t in = 0, out = (uint64_t) i * 7 + 1;

		ret = fi_tinject(b.ep, &out, sizeof(out), b2a, (uint64_t) i);
		CHECK(ret == 0, "inject %d: %d", i, ret);
		/* Arrived, no receive: nothing to read, and no entry; the
		 * read answers in C, readfrom in Go. */
		{
			struct fi_cq_tagged_entry e = { 0 };
			fi_addr_t from;
			double t0 = ct_now(), t1, t2;
			int r2;

			ret = (int) fi_cq_read(a.cq, &e, 1);
			t1 = ct_now();
			r2 = (int) fi_cq_readfrom(a.cq, &e, 1, &from);
			t2 = ct_now();
			CHECK(ret == -FI_EAGAIN && r2 == -FI_EAGAIN, "read before the receive %d: %d, %d", i, ret, r2);
			if (i >= 100 && i % 100 != 1 && i % 500) {
				tc[nt] = t1 - t0;
				tgo[nt++] = t2 - t1;
			}
		}
		if (i % 500 == 0) {
			/* A peek sees it, and leaves it. */
			struct iovec iov = { &in, sizeof(in) };
			struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
						   .tag = (uint64_t) i };

			ret = (int) fi_trecvmsg(a.ep, &m, FI_PEEK | FI_COMPLETION);
			CHECK(ret == 0 && got(&tag) && tag == (uint64_t) i, "peek %d: %d", i, ret);
		}
		if (i % 100 == 1) {
			/* Another behind it: both taken, in order. */
			uint64_t out2 = out + 1, in2 = 0;

			ret = fi_tinject(b.ep, &out2, sizeof(out2), b2a, (uint64_t) i | 1ull << 40);
			CHECK(ret == 0, "second inject %d: %d", i, ret);
			ret = (int) fi_trecv(a.ep, &in, sizeof(in), NULL, FI_ADDR_UNSPEC, (uint64_t) i, 0, NULL);
			ret |= (int) fi_trecv(a.ep, &in2, sizeof(in2), NULL, FI_ADDR_UNSPEC, (uint64_t) i | 1ull << 40, 0,
					      NULL);
			ok = ret == 0 && got(&tag) && tag == (uint64_t) i && in == out && got(&tag) &&
			     tag == ((uint64_t) i | 1ull << 40) && in2 == out2;
			CHECK(ok, "two messages %d: %d, %llu %llu", i, ret, (unsigned long long) in,
			      (unsigned long long) in2);
			v += 2;
			continue;
		}
		ret = (int) fi_trecv(a.ep, &in, sizeof(in), NULL, FI_ADDR_UNSPEC, (uint64_t) i, 0, NULL);
		ok = ret == 0 && got(&tag) && tag == (uint64_t) i && in == out;
		CHECK(ok, "message %d: %d, tag %llu, %llu", i, ret, (unsigned long long) tag, (unsigned long long) in);
		v++;
	}
	if (!ct_under_valgrind() && nt > 0) {
		qsort(tc, nt, sizeof(tc[0]), cmp);
		qsort(tgo, nt, sizeof(tgo[0]), cmp);
		printf("read while a message waits: median %.0f ns in C, %.0f ns through Go\n", tc[nt / 2] * 1e9,
		       tgo[nt / 2] * 1e9);
		CHECK(tc[nt / 2] * 2 < tgo[nt / 2], "the read while a message waits for its receive is not answered in C");
	}
	w = (uint64_t) ct_close_ep_stat(&a, "shm", "received");
	CHECK(w * 100 < v, "Go delivered %llu of %llu messages that came before their receive",
	      (unsigned long long) w, (unsigned long long) v);
	ct_close_node(&a);
	ct_close_node(&b);
	return finish("early");
}
