/* readagain.c: the fi_cq_read right after one that returned entries from
 * Go is answered in C when nothing is queued and no cell waits in a ring
 * (cmd/libfabric-psm2/cq.c, after_go_entries). Open MPI's ofi MTL reads
 * until -FI_EAGAIN; over the network wire that read went to Go and made a
 * receive system call before the rank could answer the message, about 1
 * us of a 5.6 us one-way trip (an MPI ping-pong over UDP on loopback; 4.6
 * since, as the provider alone: bench/mtlpp.c).
 *
 * Two endpoints of this process over the network wire (PSM2_DEVICES=
 * self,hfi, UDP on loopback) exchange 8-byte messages; after each arrives,
 * the receiver times the read that follows (the one answered in C) and the
 * one after it (which goes to Go and reads the network). Both answer
 * -FI_EAGAIN; the median of the first is under a third of the second's
 * (about 40 ns against 700 here; equal before).
 * ctest: no-valgrind (a timing ratio means nothing there). */
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

#define ROUNDS 2000

static int cmp(const void *a, const void *b)
{
	double x = *(const double *) a, y = *(const double *) b;

	return (x > y) - (x < y);
}

int main(void)
{
	static double second[ROUNDS], third[ROUNDS];
	struct ct_node a, b;
	struct fi_cq_tagged_entry e;
	struct fi_context ctx;
	fi_addr_t a_at_b, b_at_a;
	char buf[8] = {0};
	int ret, n = 0, eagain = 1, posted = 1;

	setenv("PSM2_DEVICES", "self,hfi", 1);
	ret = ct_open_node(&a);
	CHECK(ret == 0, "open a: %d", ret);
	ret = ret ? ret : ct_open_node(&b);
	CHECK(ret == 0, "open b: %d", ret);
	if (ret)
		return finish("readagain");
	CHECK(fi_av_insert(a.av, b.name, 1, &b_at_a, 0, NULL) == 1, "insert b");
	CHECK(fi_av_insert(b.av, a.name, 1, &a_at_b, 0, NULL) == 1, "insert a");

	for (int i = 0; i < ROUNDS + 100; i++) {
		double t0, t1, t2;
		ssize_t r2, r3;

		posted &= fi_trecv(a.ep, buf, sizeof(buf), NULL, b_at_a, 1, 0, &ctx) == 0;
		while ((ret = (int) fi_tinject(b.ep, buf, sizeof(buf), a_at_b, 1)) == -FI_EAGAIN)
			fi_cq_read(b.cq, &e, 1);	/* b takes a's ACKs */
		posted &= ret == 0;
		for (double end = ct_now() + 10;;) {
			ssize_t r = fi_cq_read(a.cq, &e, 1);

			if (r == 1)
				break;
			if (r != -FI_EAGAIN || ct_now() > end) {
				CHECK(0, "round %d: read %zd", i, r);
				return finish("readagain");
			}
		}
		t0 = ct_now();
		r2 = fi_cq_read(a.cq, &e, 1);
		t1 = ct_now();
		r3 = fi_cq_read(a.cq, &e, 1);
		t2 = ct_now();
		eagain &= r2 == -FI_EAGAIN && r3 == -FI_EAGAIN;
		fi_cq_read(b.cq, &e, 1);	/* b takes a's ACKs */
		if (i >= 100) {	/* past the warm-up */
			second[n] = t1 - t0;
			third[n++] = t2 - t1;
		}
	}
	CHECK(posted, "a receive or an inject failed");
	CHECK(eagain, "a read after the message found something");
	qsort(second, n, sizeof(second[0]), cmp);
	qsort(third, n, sizeof(third[0]), cmp);
	printf("readagain: the read after a message %.0f ns, the one after it %.0f ns (medians of %d)\n",
	       second[n / 2] * 1e9, third[n / 2] * 1e9, n);
	CHECK(second[n / 2] * 3 < third[n / 2],
	      "the read after a message took %.0f ns, the one after it %.0f: it went to Go too",
	      second[n / 2] * 1e9, third[n / 2] * 1e9);
	ct_close_node(&b);
	ct_close_node(&a);
	return finish("readagain");
}
