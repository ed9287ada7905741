/* seprma.c: one-sided operations between the scalable endpoints of two
 * processes, addressed to a receive context other than 0 through an AV
 * with rx_ctx_bits 8 (fi_rx_addr sets bit 56 and up), the shape MPICH's
 * multi-VCI RMA uses:
 *   - the target (the parent) registers a region and reads the CQs of
 *     both its contexts;
 *   - the initiator (the child), from each of its transmit contexts i,
 *     posts to fi_rx_addr(target, i, 8): fetch-adds (C posts them,
 *     fast/atomic.c: psm2_fast_post), fi_atomic sums, writes and reads
 *     of 8 and 1000 bytes; every completion must come on context i's CQ
 *     with its context and FI_ATOMIC or FI_RMA with FI_READ or FI_WRITE,
 *     each fetch-add must see the previous one's result, each read the
 *     bytes written;
 *   - the target then checks the region holds what the initiator says.
 * C's table of armed ops once kept the target's fi_addr beside its own
 * flags, where a receive context's bits landed on the flag that marks an
 * op as RMA: every fetch-add to context 1 completed as FI_RMA. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include "check.h"
#include "node.h"

enum { NCTX = 2, BITS = 8, ROUNDS = 200, KEY = 7 };

/* Each context i has its own counter word at 8 * i and its own area at
 * 1024 + 2048 * i. */
#define REGION 8192

static uint64_t region[REGION / 8];

struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *sep, *tx[NCTX], *rx[NCTX];
	struct fid_cq *cq[NCTX];
	struct fid_mr *mr;
	char name[64];
	size_t namelen;
};

/* open_side opens a SEP of NCTX contexts, each with one CQ for both of
 * its roles, and registers region: 0 or the failing step. */
static int open_side(struct side *s)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .rx_ctx_bits = BITS };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_info *h = fi_allocinfo();

	h->caps = FI_TAGGED | FI_RMA | FI_ATOMIC | FI_NAMED_RX_CTX;
	h->mode = FI_CONTEXT;
	h->ep_attr->type = FI_EP_RDM;
	h->ep_attr->tx_ctx_cnt = NCTX;
	h->ep_attr->rx_ctx_cnt = NCTX;
	h->fabric_attr->prov_name = strdup("psm2");
	int err = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &s->info);
	fi_freeinfo(h);
	if (err)
		return 1;
	if (fi_fabric(s->info->fabric_attr, &s->fabric, NULL) || fi_domain(s->fabric, s->info, &s->domain, NULL) ||
	    fi_av_open(s->domain, &av_attr, &s->av, NULL) || fi_scalable_ep(s->domain, s->info, &s->sep, NULL))
		return 2;
	for (int i = 0; i < NCTX; i++)
		if (fi_tx_context(s->sep, i, NULL, &s->tx[i], NULL) || fi_rx_context(s->sep, i, NULL, &s->rx[i], NULL) ||
		    fi_cq_open(s->domain, &cq_attr, &s->cq[i], NULL))
			return 3;
	if (fi_scalable_ep_bind(s->sep, &s->av->fid, 0))
		return 4;
	for (int i = 0; i < NCTX; i++)
		if (fi_ep_bind(s->tx[i], &s->cq[i]->fid, FI_SEND) || fi_enable(s->tx[i]) ||
		    fi_ep_bind(s->rx[i], &s->cq[i]->fid, FI_RECV) || fi_enable(s->rx[i]))
			return 5;
	if (fi_enable(s->sep))
		return 6;
	if (fi_mr_reg(s->domain, region, sizeof(region), FI_REMOTE_READ | FI_REMOTE_WRITE | FI_READ | FI_WRITE, 0,
		      KEY, 0, &s->mr, NULL))
		return 7;
	s->namelen = sizeof(s->name);
	return fi_getname(&s->sep->fid, s->name, &s->namelen) ? 8 : 0;
}

static int close_side(struct side *s)
{
	int bad = fi_close(&s->mr->fid) != 0;

	for (int i = 0; i < NCTX; i++)
		bad += (fi_close(&s->rx[i]->fid) != 0) + (fi_close(&s->tx[i]->fid) != 0);
	for (int i = 0; i < NCTX; i++)
		bad += fi_close(&s->cq[i]->fid) != 0;
	bad += fi_close(&s->sep->fid) != 0;
	bad += fi_close(&s->av->fid) != 0;
	bad += fi_close(&s->domain->fid) != 0;
	bad += fi_close(&s->fabric->fid) != 0;
	fi_freeinfo(s->info);
	return bad;
}

/* wait_op reads context i's CQ until one completion: 0 with it checked
 * (context ctx, flags want, no other context's), or the step. */
static int wait_op(struct side *s, int i, void *ctx, uint64_t want, int step)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	for (double t0 = ct_now(); ct_now() - t0 < 10;) {
		ssize_t n = fi_cq_read(s->cq[i], &e, 1);

		if (n == -FI_EAGAIN)
			continue;
		if (n == -FI_EAVAIL && fi_cq_readerr(s->cq[i], &err, 0) == 1) {
			fprintf(stderr, "context %d, step %d: error completion %d\n", i, step, err.err);
			return step;
		}
		if (n != 1)
			return step;
		if (e.op_context != ctx || (e.flags & (FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE)) != want) {
			fprintf(stderr, "context %d, step %d: completion %p flags %#llx, want %p %#llx\n", i, step,
				e.op_context, (unsigned long long) e.flags, ctx, (unsigned long long) want);
			return step;
		}
		return 0;
	}
	fprintf(stderr, "context %d, step %d: no completion in 10 s\n", i, step);
	return step;
}

/* initiator runs context i's operations on the target at dest: 0 or
 * the failing step (in the 30s). */
static int initiator(struct side *s, int i, fi_addr_t dest, uint64_t rkey)
{
	static uint8_t buf[1000], back[1000];
	struct fi_context c;
	uint64_t one = 1, old, five[5] = { 1, 1, 1, 1, 1 };
	uint64_t area = 1024 + 2048 * (uint64_t) i;
	int ret;

	for (uint64_t k = 0; k < ROUNDS; k++) {
		if (fi_fetch_atomic(s->tx[i], &one, 1, NULL, &old, NULL, dest, 8 * i, rkey, FI_UINT64, FI_SUM, &c))
			return 30;
		if ((ret = wait_op(s, i, &c, FI_ATOMIC | FI_READ, 31)))
			return ret;
		if (old != k) {
			fprintf(stderr, "context %d: fetch-add %llu saw %llu\n", i, (unsigned long long) k,
				(unsigned long long) old);
			return 32;
		}
	}
	/* Five words after the area's 1000 bytes, each summed ROUNDS times. */
	for (int k = 0; k < ROUNDS; k++) {
		if (fi_atomic(s->tx[i], five, 5, NULL, dest, area + 1000, rkey, FI_UINT64, FI_SUM, &c))
			return 33;
		if ((ret = wait_op(s, i, &c, FI_ATOMIC | FI_WRITE, 34)))
			return ret;
	}
	for (int k = 0; k < ROUNDS; k++) {
		size_t n = k % 2 ? 1000 : 8;

		for (size_t j = 0; j < n; j++)
			buf[j] = (uint8_t) (j * 7 + k + i);
		memset(back, 0, n);
		if (fi_write(s->tx[i], buf, n, NULL, dest, area, rkey, &c))
			return 35;
		if ((ret = wait_op(s, i, &c, FI_RMA | FI_WRITE, 36)))
			return ret;
		if (fi_read(s->tx[i], back, n, NULL, dest, area, rkey, &c))
			return 37;
		if ((ret = wait_op(s, i, &c, FI_RMA | FI_READ, 38)))
			return ret;
		if (memcmp(buf, back, n)) {
			fprintf(stderr, "context %d: round %d read back other bytes than written\n", i, k);
			return 39;
		}
	}
	return 0;
}

static int child(int in, int out)
{
	struct side s = { 0 };
	char peer[64], c;
	uint64_t rkey;
	fi_addr_t paddr;
	int ret;

	if ((ret = open_side(&s)))
		return 10 + ret;
	if (write(out, s.name, s.namelen) != (ssize_t) s.namelen || read(in, peer, 16) != 16 ||
	    read(in, &rkey, sizeof(rkey)) != sizeof(rkey))
		return 20;
	if (fi_av_insert(s.av, peer, 1, &paddr, 0, NULL) != 1)
		return 21;
	for (int i = NCTX - 1; i >= 0; i--)
		if ((ret = initiator(&s, i, fi_rx_addr(paddr, i, BITS), rkey)))
			return ret;
	if (write(out, "d", 1) != 1 || read(in, &c, 1) != 1)
		return 22;
	return close_side(&s) ? 23 : 0;
}

int main(void)
{
	int up[2], down[2], status;

	/* Forks first, before any libfabric call, as fabtests does. */
	if (pipe(up) || pipe(down))
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		close(up[0]);
		close(down[1]);
		_exit(child(down[0], up[1]));
	}
	close(up[1]);
	close(down[0]);
	signal(SIGPIPE, SIG_IGN); /* an initiator that failed reports here */

	struct side s = { 0 };
	int ret = open_side(&s);
	CHECK(ret == 0, "opening the target's SEP: step %d", ret);
	if (ret) {
		kill(pid, SIGKILL);
		return finish("seprma");
	}
	char peer[64], c;
	uint64_t rkey = fi_mr_key(s.mr);

	CHECK(write(down[1], s.name, s.namelen) == (ssize_t) s.namelen &&
		      write(down[1], &rkey, sizeof(rkey)) == sizeof(rkey) && read(up[0], peer, 16) == 16,
	      "names");
	/* Serve until the initiator is done: the CQs' reads run the serve
	 * path of each context. */
	for (;;) {
		struct fi_cq_tagged_entry e;
		fd_set fds;
		struct timeval tv = { 0, 0 };

		for (int i = 0; i < NCTX; i++)
			fi_cq_read(s.cq[i], &e, 1);
		FD_ZERO(&fds);
		FD_SET(up[0], &fds);
		if (select(up[0] + 1, &fds, NULL, NULL, &tv) > 0)
			break;
	}
	ret = read(up[0], &c, 1) == 1 && c == 'd';
	CHECK(ret, "the initiator's report");
	for (int i = 0; ret && i < NCTX; i++) {
		uint64_t *area = &region[(1024 + 2048 * i) / 8];

		CHECK(region[i] == ROUNDS, "context %d: counter %llu, want %d", i, (unsigned long long) region[i],
		      ROUNDS);
		for (int w = 0; w < 5; w++)
			CHECK(area[1000 / 8 + w] == ROUNDS, "context %d: summed word %d is %llu, want %d", i, w,
			      (unsigned long long) area[1000 / 8 + w], ROUNDS);
		for (int j = 0; j < 1000; j++)
			if (((uint8_t *) area)[j] != (uint8_t) (j * 7 + (ROUNDS - 1) + i)) {
				CHECK(0, "context %d: byte %d of the area", i, j);
				break;
			}
	}
	CHECK(write(down[1], "x", 1) == 1, "go");
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the initiator failed at step %d",
	      WEXITSTATUS(status));
	CHECK(close_side(&s) == 0, "closing the MR, contexts, CQs, SEP, AV, domain and fabric");
	return finish("seprma");
}
