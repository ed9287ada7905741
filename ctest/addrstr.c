/* addrstr.c: endpoints opened for FI_ADDR_STR (fi_getinfo(3)). Their names
 * are "fi_addr_psmx2://<hex>:<hex>" strings, and fi_av_insert takes an
 * array of such strings (char **, fi_av(3)):
 *   - two endpoints insert each other's fi_getname strings and exchange
 *     tagged messages through the addresses they got;
 *   - fi_av_insertsvc takes such a string as the node, with no service;
 *   - a string that is not an address, and a NULL in the array, are
 *     FI_ADDR_NOTAVAIL (with FI_SYNC_ERR, -FI_EINVAL in the error array)
 *     and the valid ones around them are inserted;
 *   - fi_av_lookup gives the name back as the string, and fi_av_straddr
 *     of that string prints it again. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include "check.h"
#include "node.h"

static int wait_one(struct fid_cq *cq)
{
	struct fi_cq_tagged_entry e;

	for (double t0 = ct_now(); ct_now() - t0 < 5;) {
		ssize_t r = fi_cq_read(cq, &e, 1);

		if (r == 1)
			return 1;
		if (r != -FI_EAGAIN)
			return 0;
	}
	return 0;
}

int main(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct ct_ep a = { 0 }, b = { 0 };
	fi_addr_t ab = FI_ADDR_NOTAVAIL, ba = FI_ADDR_NOTAVAIL, svc = FI_ADDR_NOTAVAIL;
	int ret;

	hints->caps = FI_TAGGED;
	hints->mode = FI_CONTEXT;
	hints->addr_format = FI_ADDR_STR;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("psm2");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	CHECK(ret == 0 && info && info->addr_format == FI_ADDR_STR, "fi_getinfo(FI_ADDR_STR): %d", ret);
	if (ret)
		return finish("addrstr");
	ret = fi_fabric(info->fabric_attr, &fabric, NULL) || fi_domain(fabric, info, &domain, NULL) ||
	      ct_open_ep(&a, domain, info, FI_WAIT_NONE) || ct_open_ep(&b, domain, info, FI_WAIT_NONE);
	CHECK(ret == 0, "open");
	if (ret)
		return finish("addrstr");
	CHECK(!strncmp(a.name, "fi_addr_psmx2://", 16), "getname: %.40s", a.name);

	/* Each inserts the other's string. */
	const char *bname = b.name, *aname = a.name;
	CHECK(fi_av_insert(a.av, &bname, 1, &ab, 0, NULL) == 1 && ab != FI_ADDR_NOTAVAIL,
	      "insert b's string into a's AV: %ju", (uintmax_t) ab);
	CHECK(fi_av_insert(b.av, &aname, 1, &ba, 0, NULL) == 1 && ba != FI_ADDR_NOTAVAIL,
	      "insert a's string into b's AV: %ju", (uintmax_t) ba);

	/* Messages both ways through those addresses. */
	char out[16] = "ping", in[16] = "";
	struct fi_context rctx, sctx;
	int ok = fi_trecv(b.ep, in, sizeof(in), NULL, ba, 7, 0, &rctx) == 0 &&
		 fi_tsend(a.ep, out, 5, NULL, ab, 7, &sctx) == 0;
	CHECK(ok && wait_one(b.cq) && wait_one(a.cq) && !strcmp(in, "ping"), "a to b: %s", in);
	strcpy(out, "pong");
	ok = fi_trecv(a.ep, in, sizeof(in), NULL, ab, 8, 0, &rctx) == 0 &&
	     fi_tsend(b.ep, out, 5, NULL, ba, 8, &sctx) == 0;
	CHECK(ok && wait_one(a.cq) && wait_one(b.cq) && !strcmp(in, "pong"), "b to a: %s", in);

	/* insertsvc: the string as the node, no service. */
	ret = fi_av_insertsvc(a.av, b.name, NULL, &svc, 0, NULL);
	CHECK(ret == 1 && svc != FI_ADDR_NOTAVAIL, "insertsvc(string, NULL): %d", ret);
	ret = fi_av_insertsvc(a.av, "localhost", "1234", &svc, 0, NULL);
	CHECK(ret == -FI_ENOSYS, "insertsvc(host, service): %d", ret);

	/* Bad strings among good ones. */
	const char *mixed[4] = { "not an address", bname, NULL, "fi_addr_psmx2://zz:1" };
	fi_addr_t addrs[4];
	int errs[4] = { 1, 1, 1, 1 };
	ret = fi_av_insert(a.av, mixed, 4, addrs, FI_SYNC_ERR, errs);
	CHECK(ret == 1, "mixed insert: %d inserted, want 1", ret);
	CHECK(addrs[0] == FI_ADDR_NOTAVAIL && addrs[1] != FI_ADDR_NOTAVAIL && addrs[2] == FI_ADDR_NOTAVAIL &&
	      addrs[3] == FI_ADDR_NOTAVAIL, "mixed addresses");
	CHECK(errs[0] == FI_EINVAL && errs[1] == 0 && errs[2] == FI_EINVAL && errs[3] == FI_EINVAL,
	      "FI_SYNC_ERR: %d %d %d %d", errs[0], errs[1], errs[2], errs[3]);

	/* lookup and straddr speak strings too. */
	char got[64] = "", str[64] = "";
	size_t gotlen = sizeof(got), len = sizeof(str);
	ret = fi_av_lookup(a.av, ab, got, &gotlen);
	CHECK(ret == 0 && gotlen == strlen(b.name) + 1 && !strcmp(got, b.name), "lookup: %d, %zu, %s", ret, gotlen, got);
	fi_av_straddr(a.av, got, str, &len);
	CHECK(!strcmp(str, b.name) && len == strlen(b.name) + 1, "straddr %s, getname %s", str, b.name);

	ct_close_ep(&b);
	ct_close_ep(&a);
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	return finish("addrstr");
}
