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
 *     when Go took every arrival. */
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

/* go_received closes a's endpoint with its statistics going to a file, and
 * returns the shm group's "received" count (-1 if none was printed). */
static long go_received(void)
{
	char path[] = "/tmp/psm2-early-XXXXXX", line[2048];
	int fd = mkstemp(path), saved = dup(2);
	long n = -1;
	FILE *f;

	fflush(stderr);
	dup2(fd, 2);
	fi_close(&a.ep->fid);
	a.ep = NULL;
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	f = fdopen(fd, "r");
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, " received=");

		if (strstr(line, "psm2-stats") && strstr(line, "group=shm") && p)
			n = atol(p + strlen(" received="));
	}
	fclose(f);
	unlink(path);
	return n;
}

int main(void)
{
	fi_addr_t b2a = FI_ADDR_NOTAVAIL;
	uint64_t v = 0, w = 0, tag;
	int ret, ok = 1, N = ct_under_valgrind() ? 800 : 4000;

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
		/* Arrived, no receive: nothing to read, and no entry. */
		ret = (int) fi_cq_read(a.cq, &(struct fi_cq_tagged_entry){ 0 }, 1);
		CHECK(ret == -FI_EAGAIN, "read before the receive %d: %d", i, ret);
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
	w = (uint64_t) go_received();
	CHECK(w * 100 < v, "Go delivered %llu of %llu messages that came before their receive",
	      (unsigned long long) w, (unsigned long long) v);
	ct_close_node(&a);
	ct_close_node(&b);
	return finish("early");
}
