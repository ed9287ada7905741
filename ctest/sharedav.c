/* sharedav.c: named AVs shared between the processes of a job on a node
 * (fi_av(3): fi_av_attr.name, FI_READ, map_addr), as fabtests'
 * fi_rdm_shared_av uses them:
 *   - the parent opens a named AV, inserts its receiver's name, and gets
 *     map_addr back (the table of fi_addr_t values);
 *   - a child process opens the same name with FI_READ, takes the address
 *     from map_addr[0] and sends through it: the parent receives;
 *   - FI_READ on a name nobody created is -FI_ENOENT, FI_READ without a
 *     name -FI_EINVAL, and inserting into a read-only AV -FI_EINVAL. */
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

struct res {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
};

static int open_res(struct res *r)
{
	struct fi_info *h = fi_allocinfo();
	int ret;

	h->caps = FI_TAGGED | FI_SHARED_AV;
	h->mode = FI_CONTEXT;
	h->ep_attr->type = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup("psm2");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &r->info);
	fi_freeinfo(h);
	return ret ? ret : fi_fabric(r->info->fabric_attr, &r->fabric, NULL) ||
				  fi_domain(r->fabric, r->info, &r->domain, NULL);
}

static int wait_one(struct fid_cq *cq)
{
	struct fi_cq_tagged_entry e;

	for (double t0 = ct_now(); ct_now() - t0 < 10;) {
		ssize_t n = fi_cq_read(cq, &e, 1);

		if (n == 1)
			return 1;
		if (n != -FI_EAGAIN)
			return 0;
	}
	return 0;
}

/* The child: opens the AV read-only and sends through map_addr[0].
 * Exit status: 0 sent, else the step that failed. */
static int child(int go, const char *avname)
{
	struct res r = { 0 };
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .name = avname, .flags = FI_READ };
	struct fid_av *av = NULL;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fi_context ctx;
	char c, msg[] = "through the shared AV";

	if (read(go, &c, 1) != 1 || open_res(&r))
		return 2;
	if (fi_av_open(r.domain, &attr, &av, NULL) || !attr.map_addr)
		return 3;
	fi_addr_t dest = ((fi_addr_t *) attr.map_addr)[0];
	char name[16];
	memset(name, 0, sizeof(name));
	if (fi_av_insert(av, name, 1, NULL, 0, NULL) != -FI_EINVAL)
		return 4;
	if (fi_cq_open(r.domain, &cq_attr, &cq, NULL) || fi_endpoint(r.domain, r.info, &ep, NULL) ||
	    fi_ep_bind(ep, &av->fid, 0) || fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) || fi_enable(ep))
		return 5;
	if (fi_tsend(ep, msg, sizeof(msg), NULL, dest, 0x5a, &ctx) || !wait_one(cq))
		return 6;
	fi_close(&ep->fid);
	fi_close(&cq->fid);
	fi_close(&av->fid);
	return 0;
}

int main(void)
{
	char avname[64];
	int pfd[2];

	snprintf(avname, sizeof(avname), "ctest_sharedav_%d", (int) getpid());
	if (pipe(pfd))
		return 1;
	pid_t pid = fork(); /* before any libfabric call, as fabtests does */
	if (pid == 0) {
		close(pfd[1]);
		_exit(child(pfd[0], avname));
	}
	close(pfd[0]);

	struct res r = { 0 };
	int ret = open_res(&r);
	CHECK(ret == 0, "fabric and domain: %d", ret);
	if (ret)
		return finish("sharedav");

	/* FI_READ needs a name that exists. */
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .name = "ctest_sharedav_nobody", .flags = FI_READ };
	struct fid_av *av = NULL;
	ret = fi_av_open(r.domain, &attr, &av, NULL);
	CHECK(ret == -FI_ENOENT, "FI_READ on a name nobody created: %d", ret);
	attr.name = NULL;
	ret = fi_av_open(r.domain, &attr, &av, NULL);
	CHECK(ret == -FI_EINVAL, "FI_READ without a name: %d", ret);

	/* The named AV, with the receiver in it. */
	struct ct_ep rx = { 0 };
	ret = ct_open_ep(&rx, r.domain, r.info, FI_WAIT_NONE);
	CHECK(ret == 0, "receiver: %d", ret);
	attr = (struct fi_av_attr) { .type = FI_AV_TABLE, .name = avname, .count = 8 };
	ret = fi_av_open(r.domain, &attr, &av, NULL);
	CHECK(ret == 0 && attr.map_addr, "named AV: %d, map_addr %p", ret, attr.map_addr);
	if (ret)
		return finish("sharedav");
	fi_addr_t a = FI_ADDR_NOTAVAIL;
	ret = fi_av_insert(av, rx.name, 1, &a, 0, NULL);
	CHECK(ret == 1 && a != FI_ADDR_NOTAVAIL && ((fi_addr_t *) attr.map_addr)[0] == a,
	      "insert: %d, address %ju, map_addr[0] %ju", ret, (uintmax_t) a, (uintmax_t) ((fi_addr_t *) attr.map_addr)[0]);

	char buf[64] = "";
	struct fi_context ctx;
	ret = fi_trecv(rx.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, 0x5a, 0, &ctx);
	CHECK(ret == 0, "post the receive: %d", ret);
	CHECK(write(pfd[1], "g", 1) == 1, "start the child");
	CHECK(wait_one(rx.cq) && !strcmp(buf, "through the shared AV"), "the child's message: \"%s\"", buf);
	int status = 0;
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: step %d failed",
	      WIFEXITED(status) ? WEXITSTATUS(status) : -1);

	ct_close_ep(&rx);
	CHECK(fi_close(&av->fid) == 0, "close the named AV");
	/* Its creator closed it: the name is gone. */
	attr = (struct fi_av_attr) { .type = FI_AV_TABLE, .name = avname, .flags = FI_READ };
	ret = fi_av_open(r.domain, &attr, &av, NULL);
	CHECK(ret == -FI_ENOENT, "FI_READ after the creator closed it: %d", ret);
	fi_close(&r.domain->fid);
	fi_close(&r.fabric->fid);
	fi_freeinfo(r.info);
	return finish("sharedav");
}
