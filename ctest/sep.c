/* sep.c: scalable endpoints (fi_scalable_ep, fi_psm2(7)), between two
 * processes as MPICH's multi-VCI and fabtests' fi_scalable_ep use them:
 *   - fi_getinfo accepts tx/rx_ctx_cnt 2 with FI_NAMED_RX_CTX and reports
 *     max_ep_tx_ctx and max_ep_rx_ctx >= 2; 65 contexts do not fit, and
 *     with PSM2_MULTI_EP=0 neither do 2 (max_ep_tx_ctx 1);
 *   - each process opens a SEP of 2 contexts with a CQ per role, binds its
 *     AV to the SEP, enables the roles and the SEP, and hands its
 *     fi_getname over: context i's sends to fi_rx_addr(peer, i, bits)
 *     arrive at the peer's context i, a plain address at its context 0,
 *     and fi_cq_readfrom reports the sender's (base) address;
 *   - a receive directed at fi_rx_addr(peer, 0) takes what the peer's
 *     context 0 sent, not what its context 1 sent first;
 *   - the SEP itself carries no data (-FI_EINVAL), binds no CQ, has no
 *     context 2, and does not close while a context is open
 *     (-FI_EBUSY); closed contexts let their CQs close, then the SEP;
 *   - MPICH's order works too: a transmit role bound and enabled before
 *     the receive role of its context is opened and bound. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

enum { NCTX = 2, BITS = 2 };

static struct fi_info *getinfo(size_t ctx_cnt, int *err)
{
	struct fi_info *h = fi_allocinfo(), *info = NULL;

	h->caps = FI_TAGGED | FI_NAMED_RX_CTX | FI_SOURCE | FI_DIRECTED_RECV;
	h->mode = FI_CONTEXT;
	h->ep_attr->type = FI_EP_RDM;
	h->ep_attr->tx_ctx_cnt = ctx_cnt;
	h->ep_attr->rx_ctx_cnt = ctx_cnt;
	h->fabric_attr->prov_name = strdup("psm2");
	*err = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	fi_freeinfo(h);
	return *err ? NULL : info;
}

struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *sep, *tx[NCTX], *rx[NCTX];
	struct fid_cq *txcq[NCTX], *rxcq[NCTX];
	char name[64];
	size_t namelen;
};

/* open_side opens a SEP the way fabtests' fi_scalable_ep does: 0 or the
 * failing step's number. */
static int open_side(struct side *s)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .rx_ctx_bits = BITS };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	int err;

	if (!(s->info = getinfo(NCTX, &err)))
		return 1;
	if (fi_fabric(s->info->fabric_attr, &s->fabric, NULL) || fi_domain(s->fabric, s->info, &s->domain, NULL) ||
	    fi_av_open(s->domain, &av_attr, &s->av, NULL))
		return 2;
	if (fi_scalable_ep(s->domain, s->info, &s->sep, NULL))
		return 3;
	for (int i = 0; i < NCTX; i++)
		if (fi_tx_context(s->sep, i, NULL, &s->tx[i], NULL) || fi_rx_context(s->sep, i, NULL, &s->rx[i], NULL) ||
		    fi_cq_open(s->domain, &cq_attr, &s->txcq[i], NULL) || fi_cq_open(s->domain, &cq_attr, &s->rxcq[i], NULL))
			return 4;
	if (fi_scalable_ep_bind(s->sep, &s->av->fid, 0))
		return 5;
	for (int i = 0; i < NCTX; i++)
		if (fi_ep_bind(s->tx[i], &s->txcq[i]->fid, FI_SEND) || fi_enable(s->tx[i]))
			return 6;
	for (int i = 0; i < NCTX; i++)
		if (fi_ep_bind(s->rx[i], &s->rxcq[i]->fid, FI_RECV) || fi_enable(s->rx[i]))
			return 7;
	if (fi_enable(s->sep))
		return 8;
	s->namelen = sizeof(s->name);
	if (fi_getname(&s->sep->fid, s->name, &s->namelen) || s->namelen != 16)
		return 9;
	return 0;
}

/* close_side closes in fabtests' order: contexts, their CQs, the SEP.
 * The number of closes that failed. */
static int close_side(struct side *s)
{
	int bad = 0;

	for (int i = 0; i < NCTX; i++)
		bad += fi_close(&s->rx[i]->fid) != 0;
	for (int i = 0; i < NCTX; i++)
		bad += fi_close(&s->tx[i]->fid) != 0;
	for (int i = 0; i < NCTX; i++)
		bad += (fi_close(&s->rxcq[i]->fid) != 0) + (fi_close(&s->txcq[i]->fid) != 0);
	bad += fi_close(&s->sep->fid) != 0;
	bad += fi_close(&s->av->fid) != 0;
	bad += fi_close(&s->domain->fid) != 0;
	bad += fi_close(&s->fabric->fid) != 0;
	fi_freeinfo(s->info);
	return bad;
}

/* wait_comp reads one completion from cq (with its source into *src if
 * src is set): 1, or 0 after 10 s or an error. */
static int wait_comp(struct fid_cq *cq, struct fi_cq_tagged_entry *e, fi_addr_t *src)
{
	for (double t0 = ct_now(); ct_now() - t0 < 10;) {
		ssize_t n = src ? fi_cq_readfrom(cq, e, 1, src) : fi_cq_read(cq, e, 1);

		if (n == 1)
			return 1;
		if (n != -FI_EAGAIN)
			return 0;
	}
	return 0;
}

/* The sender: its SEP's context i sends "to i" to the parent's context
 * i, context 1 sends "plain" to the parent's base address, then context 1
 * and context 0 each send "from j" with tag 0x30 to the parent's context
 * 1. Exit status: 0, or the failing step. */
static int child(int in, int out)
{
	struct side s = { 0 };
	struct fi_context ctx[8];
	struct fi_cq_tagged_entry e;
	char peer[64], msg[NCTX][8], from[NCTX][8], c;
	fi_addr_t paddr;
	int ret;

	if ((ret = open_side(&s)))
		return 10 + ret;
	if (write(out, s.name, s.namelen) != (ssize_t) s.namelen || read(in, peer, 16) != 16)
		return 20;
	if (fi_av_insert(s.av, peer, 1, &paddr, 0, NULL) != 1)
		return 21;
	for (int i = 0; i < NCTX; i++) {
		snprintf(msg[i], sizeof(msg[i]), "to %d", i);
		if (fi_tsend(s.tx[i], msg[i], 5, NULL, fi_rx_addr(paddr, i, BITS), 0x10 + i, &ctx[i]))
			return 22;
	}
	if (fi_tsend(s.tx[1], "plain", 6, NULL, paddr, 0x20, &ctx[2]))
		return 23;
	for (int j = NCTX - 1; j >= 0; j--) {
		snprintf(from[j], sizeof(from[j]), "from %d", j);
		if (fi_tsend(s.tx[j], from[j], 7, NULL, fi_rx_addr(paddr, 1, BITS), 0x30, &ctx[3 + j]))
			return 24;
	}
	/* Context 0 sent 2, context 1 sent 3; each on its own CQ. */
	for (int i = 0; i < NCTX; i++)
		for (int k = 0; k < 2 + i; k++)
			if (!wait_comp(s.txcq[i], &e, NULL))
				return 25;
	if (fi_cq_read(s.txcq[0], &e, 1) != -FI_EAGAIN)
		return 26;
	if (read(in, &c, 1) != 1)	/* the parent has taken everything */
		return 27;
	return close_side(&s) ? 28 : 0;
}

/* mpich_order opens a SEP of s's domain as MPICH's ch4 does: context 0's
 * transmit role opened, bound (CQ, counter) and enabled before its
 * receive role is opened and bound. 0, or the failing step. */
static int mpich_order(struct side *s)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_ep *sep, *tx, *rx;
	struct fid_cq *cq;
	struct fid_cntr *cntr;
	int step = 0;

	if (fi_scalable_ep(s->domain, s->info, &sep, NULL))
		return 1;
	if (fi_scalable_ep_bind(sep, &s->av->fid, 0) || fi_cq_open(s->domain, &cq_attr, &cq, NULL) ||
	    fi_cntr_open(s->domain, &cntr_attr, &cntr, NULL))
		return 2;
	if (fi_tx_context(sep, 0, NULL, &tx, NULL) || fi_ep_bind(tx, &cq->fid, FI_SEND | FI_SELECTIVE_COMPLETION) ||
	    fi_ep_bind(tx, &cntr->fid, FI_WRITE | FI_READ) || fi_enable(tx))
		step = 3;
	else if (fi_rx_context(sep, 0, NULL, &rx, NULL) || fi_ep_bind(rx, &cq->fid, FI_RECV) || fi_enable(rx))
		step = 4;
	else if (fi_enable(sep) || fi_close(&rx->fid))
		step = 5;
	if (step != 3 && fi_close(&tx->fid))
		step = 6;
	if (fi_close(&cq->fid) || fi_close(&cntr->fid) || fi_close(&sep->fid))
		step = step ? step : 7;
	return step;
}

static int multi_ep_off(void)
{
	struct fi_info *info;
	int err;

	setenv("PSM2_MULTI_EP", "0", 1);
	if (getinfo(2, &err) || err != -FI_ENODATA)
		return 1;
	if (!(info = getinfo(1, &err)) || info->domain_attr->max_ep_tx_ctx != 1)
		return 2;
	fi_freeinfo(info);
	return 0;
}

int main(void)
{
	int up[2], down[2], status;
	struct fi_info *info;
	int err;

	/* Forks first, before any libfabric call, as fabtests does. */
	pid_t off = fork();
	if (off == 0)
		_exit(multi_ep_off());
	waitpid(off, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "PSM2_MULTI_EP=0: step %d failed",
	      WEXITSTATUS(status));
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

	info = getinfo(NCTX, &err);
	CHECK(info && info->domain_attr->max_ep_tx_ctx >= NCTX && info->domain_attr->max_ep_rx_ctx >= NCTX &&
	      info->domain_attr->tx_ctx_cnt >= NCTX && info->ep_attr->tx_ctx_cnt == NCTX,
	      "getinfo with %d contexts: %d", NCTX, err);
	fi_freeinfo(info);
	CHECK(!getinfo(65, &err) && err == -FI_ENODATA, "65 contexts: %d", err);

	struct side s = { 0 };
	int ret = open_side(&s);
	CHECK(ret == 0, "opening the SEP: step %d", ret);
	if (ret) {
		kill(pid, SIGKILL);
		return finish("sep");
	}
	char peer[64], buf[NCTX][16], dir[16], plain[16];
	struct fi_context ctx[8];
	struct fi_cq_tagged_entry e;
	fi_addr_t paddr, src;
	struct fid_ep *bad;

	/* What a SEP itself refuses. */
	CHECK(fi_tsend(s.sep, "x", 1, NULL, 0, 0, &ctx[0]) == -FI_EINVAL, "a send on the SEP itself");
	CHECK(fi_scalable_ep_bind(s.sep, &s.txcq[0]->fid, FI_SEND) == -FI_EINVAL, "binding a CQ to the SEP");
	CHECK(fi_tx_context(s.sep, NCTX, NULL, &bad, NULL) == -FI_EINVAL, "context %d of %d", NCTX, NCTX);
	CHECK(fi_close(&s.sep->fid) == -FI_EBUSY, "closing the SEP with its contexts open");

	CHECK(write(down[1], s.name, s.namelen) == (ssize_t) s.namelen && read(up[0], peer, 16) == 16, "names");
	CHECK(fi_av_insert(s.av, peer, 1, &paddr, 0, NULL) == 1, "inserting the peer's SEP name");
	for (int i = 0; i < NCTX; i++)
		fi_trecv(s.rx[i], buf[i], sizeof(buf[i]), NULL, FI_ADDR_UNSPEC, 0x10 + i, 0, &ctx[i]);
	fi_trecv(s.rx[0], plain, sizeof(plain), NULL, FI_ADDR_UNSPEC, 0x20, 0, &ctx[2]);
	fi_trecv(s.rx[1], dir, sizeof(dir), NULL, fi_rx_addr(paddr, 0, BITS), 0x30, 0, &ctx[3]);
	for (int i = 0; i < NCTX; i++) {
		char want[8];

		snprintf(want, sizeof(want), "to %d", i);
		ret = wait_comp(s.rxcq[i], &e, &src);
		CHECK(ret && e.op_context == &ctx[i] && !strcmp(buf[i], want) && src == paddr,
		      "context %d: %d, %s from %llu", i, ret, buf[i], (unsigned long long) src);
	}
	ret = wait_comp(s.rxcq[0], &e, NULL);
	CHECK(ret && e.op_context == &ctx[2] && !strcmp(plain, "plain"), "the plain address reached context 0");
	ret = wait_comp(s.rxcq[1], &e, NULL);
	CHECK(ret && e.op_context == &ctx[3] && !strcmp(dir, "from 0"),
	      "the receive directed at context 0 took \"%s\"", dir);
	/* Context 1's message waits, unexpected: a receive from it takes it. */
	fi_trecv(s.rx[1], dir, sizeof(dir), NULL, fi_rx_addr(paddr, 1, BITS), 0x30, 0, &ctx[4]);
	ret = wait_comp(s.rxcq[1], &e, NULL);
	CHECK(ret && e.op_context == &ctx[4] && !strcmp(dir, "from 1"), "then context 1's: \"%s\"", dir);

	CHECK(write(down[1], "x", 1) == 1, "go");
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the sender failed at step %d", WEXITSTATUS(status));
	ret = mpich_order(&s);
	CHECK(ret == 0, "MPICH's order (transmit role enabled before the receive role opens): step %d", ret);
	CHECK(close_side(&s) == 0, "closing contexts, CQs, SEP, AV, domain and fabric");
	return finish("sep");
}
