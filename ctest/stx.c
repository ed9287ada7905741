/* stx.c: shared transmit contexts (fi_stx_context, fi_psm2(7)):
 *   - fi_getinfo accepts ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT and
 *     reports max_ep_stx_ctx > 0;
 *   - two transmit-only endpoints opened that way, bound to one STX, each
 *     send tagged messages to a receiver: every message arrives, and each
 *     sender's completions come on its own CQ;
 *   - such an endpoint does not enable before it is bound to an STX, an
 *     ordinary endpoint cannot bind one, and the STX does not close while
 *     an endpoint is bound to it (-FI_EBUSY), then closes. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

static struct fi_info *getinfo(uint64_t caps, size_t tx_ctx_cnt)
{
	struct fi_info *h = fi_allocinfo(), *info = NULL;
	int ret;

	h->caps = caps;
	h->mode = FI_CONTEXT;
	h->ep_attr->type = FI_EP_RDM;
	h->ep_attr->tx_ctx_cnt = tx_ctx_cnt;
	h->fabric_attr->prov_name = strdup("psm2");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	fi_freeinfo(h);
	CHECK(ret == 0, "fi_getinfo(tx_ctx_cnt %zu): %d", tx_ctx_cnt, ret);
	return ret ? NULL : info;
}

/* A transmit-only endpoint on the shared info, with a CQ of its own. */
struct txep {
	struct fid_ep *ep;
	struct fid_cq *cq;
};

static int open_txep(struct txep *t, struct fid_domain *d, struct fi_info *info, struct fid_av *av,
		     struct fid_stx *stx)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	int ret;

	if ((ret = fi_cq_open(d, &cq_attr, &t->cq, NULL)) || (ret = fi_endpoint(d, info, &t->ep, NULL)) ||
	    (ret = fi_ep_bind(t->ep, &av->fid, 0)) || (ret = fi_ep_bind(t->ep, &t->cq->fid, FI_TRANSMIT)))
		return ret;
	if (stx && (ret = fi_ep_bind(t->ep, &stx->fid, 0)))
		return ret;
	return fi_enable(t->ep);
}

static int reap(struct fid_cq *cq, int want, struct fi_cq_tagged_entry *last)
{
	int got = 0;

	for (double t0 = ct_now(); got < want && ct_now() - t0 < 5;) {
		ssize_t r = fi_cq_read(cq, last, 1);

		if (r == 1)
			got++;
		else if (r != -FI_EAGAIN)
			break;
	}
	return got;
}

int main(void)
{
	struct fi_info *rinfo = getinfo(FI_TAGGED, 0), *sinfo = getinfo(FI_TAGGED | FI_SEND, FI_SHARED_CONTEXT);
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fid_av *av = NULL;
	struct fid_stx *stx = NULL;
	struct ct_ep r = { 0 };
	struct txep t[2] = { 0 }, bad = { 0 };
	fi_addr_t raddr;
	int ret;

	if (!rinfo || !sinfo)
		return finish("stx");
	CHECK(sinfo->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT, "tx_ctx_cnt %zu", sinfo->ep_attr->tx_ctx_cnt);
	CHECK(sinfo->domain_attr->max_ep_stx_ctx > 0, "max_ep_stx_ctx %zu", sinfo->domain_attr->max_ep_stx_ctx);

	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	ret = fi_fabric(rinfo->fabric_attr, &fabric, NULL) || fi_domain(fabric, rinfo, &domain, NULL) ||
	      fi_av_open(domain, &av_attr, &av, NULL) || ct_open_ep(&r, domain, rinfo, FI_WAIT_NONE);
	CHECK(ret == 0, "receiver");
	if (ret)
		return finish("stx");
	ret = fi_stx_context(domain, sinfo->tx_attr, &stx, NULL);
	CHECK(ret == 0 && stx, "fi_stx_context: %d", ret);
	if (ret)
		return finish("stx");
	CHECK(fi_av_insert(av, r.name, 1, &raddr, 0, NULL) == 1, "insert the receiver");

	/* Without an STX the shared-context endpoint does not enable. */
	ret = open_txep(&bad, domain, sinfo, av, NULL);
	CHECK(ret == -FI_EINVAL, "enable without an STX: %d", ret);
	/* An ordinary endpoint has its own context: it cannot bind one. */
	struct fid_ep *plain = NULL;
	ret = fi_endpoint(domain, rinfo, &plain, NULL);
	CHECK(ret == 0 && fi_ep_bind(plain, &stx->fid, 0) == -FI_EINVAL, "an ordinary endpoint binds an STX");
	if (plain)
		fi_close(&plain->fid);

	for (int i = 0; i < 2; i++) {
		ret = open_txep(&t[i], domain, sinfo, av, stx);
		CHECK(ret == 0, "transmit endpoint %d on the STX: %d", i, ret);
	}

	/* Each sends 3 messages; the receiver takes all 6. */
	enum { N = 3 };
	char in[2 * N][16], out[2][16];
	struct fi_context rctx[2 * N], sctx[2][N];
	int ok = 1;
	for (int k = 0; k < 2 * N; k++)
		ok &= fi_trecv(r.ep, in[k], sizeof(in[k]), NULL, FI_ADDR_UNSPEC, 0x40, 0xf, &rctx[k]) == 0;
	for (int i = 0; i < 2; i++) {
		snprintf(out[i], sizeof(out[i]), "from %d", i);
		for (int k = 0; k < N; k++)
			ok &= fi_tsend(t[i].ep, out[i], strlen(out[i]) + 1, NULL, raddr, 0x40 | i, &sctx[i][k]) == 0;
	}
	CHECK(ok, "posting");
	struct fi_cq_tagged_entry e;
	int got = reap(r.cq, 2 * N, &e);
	CHECK(got == 2 * N, "the receiver took %d of %d messages", got, 2 * N);
	int from0 = 0, from1 = 0;
	for (int k = 0; k < got; k++) {
		from0 += !strcmp(in[k], "from 0");
		from1 += !strcmp(in[k], "from 1");
	}
	CHECK(from0 == N && from1 == N, "messages from each sender: %d, %d", from0, from1);
	for (int i = 0; i < 2; i++) {
		int n = reap(t[i].cq, N, &e);
		CHECK(n == N, "sender %d: %d send completions on its own CQ", i, n);
		CHECK(fi_cq_read(t[i].cq, &e, 1) == -FI_EAGAIN, "sender %d: no other completion", i);
	}

	CHECK(fi_close(&stx->fid) == -FI_EBUSY, "closing the STX with endpoints bound");
	for (int i = 0; i < 2; i++) {
		fi_close(&t[i].ep->fid);
		fi_close(&t[i].cq->fid);
	}
	if (bad.ep)
		fi_close(&bad.ep->fid);
	if (bad.cq)
		fi_close(&bad.cq->fid);
	CHECK(fi_close(&stx->fid) == 0, "closing the STX once its endpoints are closed");
	ct_close_ep(&r);
	fi_close(&av->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(rinfo);
	fi_freeinfo(sinfo);
	return finish("stx");
}
