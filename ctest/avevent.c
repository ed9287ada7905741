/* avevent.c: an asynchronous AV (fi_av(3): fi_av_attr.flags = FI_EVENT).
 *   - inserting before an EQ is bound fails with -FI_ENOEQ;
 *   - with an EQ bound, fi_av_insert returns 0 and the EQ gets one error
 *     entry per address that failed (its index, FI_EINVAL, the call's
 *     context) and then one FI_AV_COMPLETE event whose data is the number
 *     inserted;
 *   - the inserted addresses work: a message goes through one. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

int main(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fid_eq *eq = NULL;
	struct fid_av *av = NULL;
	struct fid_cq *cq = NULL;
	struct fid_ep *ep = NULL;
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE, .flags = FI_EVENT };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	char names[3][16];
	size_t len = 16;
	fi_addr_t addrs[3] = { 0, 0, 0 };
	int ret, ctxmark;

	hints->caps = FI_TAGGED;
	hints->mode = FI_CONTEXT;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("psm2");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	CHECK(ret == 0, "fi_getinfo: %d", ret);
	if (ret)
		return finish("avevent");
	ret = fi_fabric(info->fabric_attr, &fabric, NULL) || fi_domain(fabric, info, &domain, NULL) ||
	      fi_eq_open(fabric, &eq_attr, &eq, NULL);
	CHECK(ret == 0, "fabric, domain, EQ");
	ret = fi_av_open(domain, &av_attr, &av, NULL);
	CHECK(ret == 0, "fi_av_open(FI_EVENT): %d", ret);
	if (ret)
		return finish("avevent");
	memset(names, 0xee, sizeof(names));
	ret = fi_av_insert(av, names, 3, addrs, 0, &ctxmark);
	CHECK(ret == -FI_ENOEQ, "insert before an EQ is bound: %d", ret);
	ret = fi_av_bind(av, &eq->fid, 0);
	CHECK(ret == 0, "fi_av_bind: %d", ret);
	ret = fi_cq_open(domain, &cq_attr, &cq, NULL) || fi_endpoint(domain, info, &ep, NULL) ||
	      fi_ep_bind(ep, &av->fid, 0) || fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) || fi_enable(ep) ||
	      fi_getname(&ep->fid, names[0], &len);
	CHECK(ret == 0, "endpoint");
	memcpy(names[1], names[0], 16);
	/* names[2] stays 0xee...: not an endpoint's name */

	ret = fi_av_insert(av, names, 3, addrs, 0, &ctxmark);
	CHECK(ret == 0, "asynchronous insert returns 0: %d", ret);

	/* One error entry for the bad name, then the completion. */
	struct fi_eq_err_entry err;
	struct fi_eq_entry ent;
	uint32_t event = 0;
	ssize_t n = fi_eq_read(eq, &event, &ent, sizeof(ent), 0);
	CHECK(n == -FI_EAVAIL, "the error entry comes first: %zd", n);
	memset(&err, 0, sizeof(err));
	n = fi_eq_readerr(eq, &err, 0);
	CHECK(n == sizeof(err) || n == 1, "fi_eq_readerr: %zd", n);
	CHECK(err.err == FI_EINVAL && err.data == 2 && err.context == &ctxmark && err.fid == &av->fid,
	      "error entry: err %d, index %ju, context %s", err.err, (uintmax_t) err.data,
	      err.context == &ctxmark ? "the call's" : "another");
	n = fi_eq_read(eq, &event, &ent, sizeof(ent), 0);
	CHECK(n == sizeof(ent) && event == FI_AV_COMPLETE && ent.data == 2 && ent.context == &ctxmark &&
	      ent.fid == &av->fid, "FI_AV_COMPLETE: %zd, event %u, data %ju", n, event, (uintmax_t) ent.data);
	CHECK(addrs[0] != FI_ADDR_NOTAVAIL && addrs[1] != FI_ADDR_NOTAVAIL && addrs[2] == FI_ADDR_NOTAVAIL,
	      "addresses");

	/* The endpoint reaches itself through an address inserted that way. */
	char out[8] = "async", in[8] = "";
	struct fi_context rctx, sctx;
	struct fi_cq_tagged_entry ce;
	int got = 0;
	ret = fi_trecv(ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, 5, 0, &rctx) ||
	      fi_tsend(ep, out, 6, NULL, addrs[0], 5, &sctx);
	for (double t0 = ct_now(); got < 2 && ct_now() - t0 < 5;)
		if (fi_cq_read(cq, &ce, 1) == 1)
			got++;
	CHECK(ret == 0 && got == 2 && !strcmp(in, "async"), "a message through the address: %s", in);

	fi_close(&ep->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	fi_close(&eq->fid);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return finish("avevent");
}
