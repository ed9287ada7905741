/* getinfo.c: fi_getinfo, fi_dupinfo, fi_freeinfo, fi_fabric and the small
 * core calls, driven the way Open MPI, MPICH, fabtests and fi_info drive
 * them. Built against include/rdma only; run under valgrind by make check. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_ext_psm2.h>
#include "check.h"

static int count(struct fi_info *info)
{
	int n = 0;
	for (; info; info = info->next)
		n++;
	return n;
}

static uint64_t word(const void *addr, int i)
{
	uint64_t w;
	memcpy(&w, (const char *) addr + 8 * i, 8);
	return w;
}

static void null_hints(void)
{
	struct fi_info *info = NULL, *cur;
	int ret;

	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info);
	CHECK(ret == 0, "ret %d", ret);
	CHECK(count(info) == 3, "%d entries", count(info));
	if (count(info) != 3)
		goto out;
	/* TAG64, TAG60, RMA-only, in that order. */
	CHECK(info->domain_attr->cq_data_size == 0, "tag64 cq_data %zu", info->domain_attr->cq_data_size);
	CHECK(info->ep_attr->mem_tag_format == 0xAAAAAAAAAAAAAAAAULL, "tag64 format");
	CHECK(info->next->domain_attr->cq_data_size == 4, "tag60 cq_data");
	CHECK(info->next->ep_attr->mem_tag_format == 0x0AAAAAAAAAAAAAAAULL, "tag60 format");
	CHECK(info->next->next->domain_attr->cq_data_size == 8, "rma cq_data");
	CHECK(!(info->next->next->caps & (FI_TAGGED | FI_MSG)), "rma caps");
	CHECK(info->next->next->mode == 0, "rma mode");
	for (cur = info; cur; cur = cur->next) {
		CHECK(cur->mode == (cur->caps & FI_TAGGED ? FI_CONTEXT : 0), "mode %llx", (unsigned long long) cur->mode);
		CHECK(!strcmp(cur->fabric_attr->prov_name, "psm2"), "prov_name");
		CHECK(!strcmp(cur->fabric_attr->name, "psm2"), "fabric name");
		CHECK(!strcmp(cur->domain_attr->name, "hfi1_0"), "domain %s", cur->domain_attr->name);
		CHECK(cur->fabric_attr->prov_version == FI_VERSION(117, 0), "prov_version");
		CHECK(cur->fabric_attr->api_version == FI_VERSION(1, 17), "api_version");
		CHECK(cur->addr_format == FI_ADDR_PSMX2 && cur->src_addrlen == 16, "addr format");
		CHECK(word(cur->src_addr, 0) == 0xffff && word(cur->src_addr, 1) == 2, "src addr");
		CHECK(cur->dest_addr == NULL, "dest addr");
		CHECK(cur->ep_attr->type == FI_EP_RDM, "ep type");
		CHECK(cur->ep_attr->max_msg_size == 4294963200ULL, "max_msg_size");
		CHECK(cur->tx_attr->inject_size == 64, "inject_size");
		CHECK(cur->tx_attr->iov_limit == 13, "iov_limit");
		CHECK(cur->domain_attr->threading == FI_THREAD_SAFE, "threading");
		CHECK(cur->domain_attr->data_progress == FI_PROGRESS_MANUAL, "progress");
		CHECK(cur->domain_attr->mr_mode == 0, "mr_mode %d", cur->domain_attr->mr_mode);
		CHECK(cur->tx_attr->op_flags != 0, "NULL hints keep op_flags");
		CHECK(cur->caps & FI_TRIGGER, "NULL hints keep FI_TRIGGER");
		CHECK(cur->nic && cur->nic->link_attr && cur->nic->bus_attr, "nic");
	}
out:
	fi_freeinfo(info);

	/* MPICH's first call: version 0.0, NULL hints. */
	info = NULL;
	ret = fi_getinfo(FI_VERSION(0, 0), NULL, NULL, 0, NULL, &info);
	CHECK(ret == 0 && info, "version 0.0: %d", ret);
	CHECK(info && (info->caps & (FI_MSG | FI_MULTI_RECV)) == (FI_MSG | FI_MULTI_RECV), "MPICH needs MSG|MULTI_RECV");
	CHECK(info && info->domain_attr->mr_mode == FI_MR_BASIC, "api < 1.5 gives FI_MR_BASIC");
	fi_freeinfo(info);

	info = (void *) 1;
	ret = fi_getinfo(FI_VERSION(2, 0), NULL, NULL, 0, NULL, &info);
	CHECK(ret == -FI_ENOSYS, "newer version: %d", ret);
	CHECK(info == NULL, "info cleared");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, NULL);
	CHECK(ret == -FI_EINVAL, "NULL info: %d", ret);
}

static struct fi_info *ompi_mtl_hints(void)
{
	struct fi_info *h = fi_allocinfo();

	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->caps = FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV;
	h->tx_attr->msg_order = FI_ORDER_SAS;
	h->rx_attr->msg_order = FI_ORDER_SAS;
	h->tx_attr->op_flags = FI_COMPLETION;
	h->rx_attr->op_flags = FI_COMPLETION;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->cq_data_size = 4;
	h->domain_attr->av_type = FI_AV_MAP;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	return h;
}

static void open_mpi(void)
{
	struct fi_info *h = ompi_mtl_hints(), *info = NULL;
	int ret;

	/* Open MPI asks for efa first: the answer must be exactly ENODATA. */
	h->fabric_attr->prov_name = strdup("efa");
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(ret == -FI_ENODATA, "efa: %d", ret);
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = NULL;

	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(ret == 0, "mtl hints: %d", ret);
	CHECK(count(info) == 1, "one entry (TAG60), got %d", count(info));
	if (info) {
		CHECK(info->domain_attr->cq_data_size == 4, "cq_data_size");
		CHECK(info->domain_attr->threading == FI_THREAD_DOMAIN, "threading echoed");
		CHECK(info->domain_attr->av_type == FI_AV_MAP, "av_type echoed");
		CHECK(info->caps == (FI_TAGGED | FI_LOCAL_COMM | FI_REMOTE_COMM | FI_DIRECTED_RECV |
				     FI_SEND | FI_RECV | FI_MULTI_RECV | FI_SOURCE | FI_SOURCE_ERR |
				     FI_RMA_EVENT | FI_SHARED_AV),
		      "caps %llx", (unsigned long long) info->caps);
		CHECK(info->tx_attr->op_flags == FI_COMPLETION, "op_flags copied");
		CHECK(info->domain_attr->data_progress == FI_PROGRESS_MANUAL, "progress");
		CHECK(info->mode == FI_CONTEXT, "mode");
	}
	fi_freeinfo(info);

	/* MPI_THREAD_MULTIPLE asks for FI_THREAD_SAFE. */
	h->domain_attr->threading = FI_THREAD_SAFE;
	info = NULL;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(ret == 0 && info && info->domain_attr->threading == FI_THREAD_SAFE, "thread safe: %d", ret);
	fi_freeinfo(info);
	fi_freeinfo(h);

	/* btl/ofi: one-sided. */
	h = fi_allocinfo();
	h->caps = FI_RMA | FI_ATOMIC;
	h->mode = FI_CONTEXT | FI_CONTEXT2;
	h->ep_attr->type = FI_EP_RDM;
	h->domain_attr->mr_mode = FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	h->tx_attr->iov_limit = 1;
	h->rx_attr->iov_limit = 1;
	h->tx_attr->op_flags = FI_DELIVERY_COMPLETE;
	info = NULL;
	ret = fi_getinfo(FI_VERSION(1, 5), NULL, NULL, 0, h, &info);
	CHECK(ret == 0, "btl hints: %d", ret);
	CHECK(count(info) == 3, "btl entries %d", count(info));
	if (info) {
		struct fi_info *rma = info->next->next;
		CHECK(rma->caps & FI_RMA && rma->caps & FI_ATOMIC, "rma caps");
		CHECK(rma->domain_attr->cq_data_size == 8, "rma-only last");
	}
	fi_freeinfo(info);
	fi_freeinfo(h);
}

static void mpich(void)
{
	struct fi_info *h = fi_allocinfo(), *info = NULL, *first = NULL;
	int ret;

	ret = fi_getinfo(FI_VERSION(0, 0), NULL, NULL, 0, NULL, &first);
	CHECK(ret == 0, "call 1: %d", ret);
	h->mode = FI_CONTEXT | FI_ASYNC_IOV | FI_RX_CQ_DATA | FI_CONTEXT2;
	h->caps = first ? first->caps : 0;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	h->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	h->domain_attr->resource_mgmt = FI_RM_ENABLED;
	h->domain_attr->av_type = FI_AV_TABLE;
	h->domain_attr->mr_mode = 0;
	h->domain_attr->mode = FI_RESTRICTED_COMP;
	h->domain_attr->cq_data_size = 4;
	h->tx_attr->op_flags = FI_COMPLETION | FI_DELIVERY_COMPLETE;
	h->tx_attr->msg_order = FI_ORDER_SAS | FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW |
				FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW;
	h->ep_attr->mem_tag_format = 0x007000007FFFFFFFULL;
	h->ep_attr->type = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup("psm2");
	ret = fi_getinfo(FI_VERSION(1, 6), NULL, NULL, 0, h, &info);
	CHECK(ret == 0, "mpich hints: %d", ret);
	if (info) {
		CHECK(info->domain_attr->threading == FI_THREAD_DOMAIN, "threading echoed exactly");
		CHECK(info->domain_attr->cq_data_size == 4, "cq data");
		CHECK(info->caps & FI_MULTI_RECV, "multi recv");
		CHECK(info->domain_attr->av_type == FI_AV_TABLE, "av table");
	}
	fi_freeinfo(info);
	fi_freeinfo(first);
	fi_freeinfo(h);
}

static void rejected(void)
{
	struct fi_info *h, *info;
	int ret;

#define REJECT(what, setup)                                                  \
	do {                                                                 \
		h = fi_allocinfo();                                          \
		setup;                                                       \
		info = NULL;                                                 \
		ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info); \
		CHECK(ret == -FI_ENODATA && !info, "%s: %d", what, ret);     \
		fi_freeinfo(info);                                           \
		fi_freeinfo(h);                                              \
	} while (0)

	REJECT("msg endpoint", h->ep_attr->type = FI_EP_MSG);
	REJECT("sockaddr", h->addr_format = FI_SOCKADDR_IN);
	REJECT("hmem", h->caps = FI_HMEM);
	REJECT("collective on dgram", h->caps = FI_MSG | FI_COLLECTIVE; h->ep_attr->type = FI_EP_DGRAM);
	REJECT("fabric name", h->fabric_attr->name = strdup("verbs"));
	REJECT("domain name", h->domain_attr->name = strdup("mlx5_0"));
	REJECT("prov name", h->fabric_attr->prov_name = strdup("tcp"));
	REJECT("excluded", h->fabric_attr->prov_name = strdup("^psm2"));
	REJECT("cq data", h->domain_attr->cq_data_size = 16);
	REJECT("iov", h->tx_attr->iov_limit = 14);
	REJECT("inject", h->tx_attr->inject_size = 65);
	REJECT("msg size", h->ep_attr->max_msg_size = 1ULL << 33);
	REJECT("protocol", h->ep_attr->protocol = FI_PROTO_SOCK_TCP);
	REJECT("auth key size", h->ep_attr->auth_key_size = 8);
	REJECT("mr mode", h->domain_attr->mr_mode = FI_MR_BASIC | FI_MR_LOCAL);
	REJECT("tx ctx", h->ep_attr->tx_ctx_cnt = 65);	/* a scalable endpoint has up to 64 */
	REJECT("shared rx ctx", h->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT); /* shared tx contexts are offered: ctest/stx.c */
	REJECT("err data", h->domain_attr->max_err_data = 65);
#undef REJECT

	/* Accepted spellings. */
	h = fi_allocinfo();
	h->domain_attr->name = strdup("HFI1_7");
	h->fabric_attr->name = strdup("PSM2");
	info = NULL;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	CHECK(ret == 0, "names are case-insensitive, domain by prefix: %d", ret);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

static void addresses(void)
{
	struct fi_info *h = fi_allocinfo(), *info = NULL;
	int ret;

	ret = fi_getinfo(FI_VERSION(1, 17), "foo:0:1", "77", FI_SOURCE, NULL, &info);
	CHECK(ret == 0, "FI_SOURCE node: %d", ret);
	if (info) {
		CHECK(word(info->src_addr, 0) == 0xffff, "epid");
		CHECK(word(info->src_addr, 1) == 0x4d00010002ULL, "unit/port/service %llx",
		      (unsigned long long) word(info->src_addr, 1));
	}
	fi_freeinfo(info);

	info = NULL;
	ret = fi_getinfo(FI_VERSION(1, 17), "host:3:1", NULL, FI_SOURCE, NULL, &info);
	CHECK(ret == -FI_ENODATA, "unit 3 does not exist: %d", ret);

	info = NULL;
	ret = fi_getinfo(FI_VERSION(1, 17), "fi_addr_psmx2://1234:0", NULL, 0, NULL, &info);
	CHECK(ret == 0, "psmx2 dest: %d", ret);
	if (info) {
		CHECK(info->dest_addr && word(info->dest_addr, 0) == 0x1234, "dest epid");
		CHECK(info->dest_addrlen == 16, "dest len");
	}
	fi_freeinfo(info);

	info = NULL;
	ret = fi_getinfo(FI_VERSION(1, 17), "fi_addr_psmx2://abcd:102", NULL, FI_SOURCE, NULL, &info);
	CHECK(ret == -FI_ENODATA, "source with unit 1: %d", ret);

	h->addr_format = FI_ADDR_STR;
	info = NULL;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	CHECK(ret == 0, "FI_ADDR_STR: %d", ret);
	if (info) {
		CHECK(info->addr_format == FI_ADDR_STR, "format");
		CHECK(info->src_addrlen == 26, "src_addrlen %zu", info->src_addrlen);
		CHECK(!strcmp(info->src_addr, "fi_addr_psmx2://ffff:ff02"), "src %s", (char *) info->src_addr);
	}
	fi_freeinfo(info);

	h->addr_format = 0;
	h->mode = FI_CONTEXT;
	h->ep_attr->type = FI_EP_DGRAM;
	info = NULL;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	CHECK(ret == 0 && count(info) == 3, "DGRAM: %d", ret);
	CHECK(info && info->ep_attr->type == FI_EP_DGRAM, "dgram type");
	fi_freeinfo(info);

	/* A host name needs the name server. */
	info = NULL;
	ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "1", 0, NULL, &info);
	CHECK(ret == -FI_ENODATA, "host name without name server: %d", ret);
	fi_freeinfo(h);
}

static void alter(void)
{
	struct fi_info *h = fi_allocinfo(), *info = NULL, *cur;
	int ret;

	/* Without FI_CONTEXT in the mode the tagged entries still fit (we
	 * never write an fi_context; psm2 gives only its RMA-only entry),
	 * with the mode cleared. */
	h->caps = FI_TAGGED;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	CHECK(ret == 0 && count(info) == 2, "tagged without FI_CONTEXT: %d", ret);
	for (cur = info; ret == 0 && cur; cur = cur->next)
		CHECK(cur->mode == 0 && cur->tx_attr->mode == 0 && cur->rx_attr->mode == 0,
		      "mode %llx without FI_CONTEXT", (unsigned long long) cur->mode);
	fi_freeinfo(info);
	h->mode = FI_CONTEXT;
	info = NULL;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	CHECK(ret == 0 && count(info) == 2, "tagged: %d entries", count(info));
	for (cur = info; cur; cur = cur->next)
		CHECK(cur->caps == (FI_TAGGED | FI_RECV | FI_SEND | FI_MULTI_RECV | FI_SOURCE_ERR |
				    FI_SHARED_AV | FI_RMA_EVENT | FI_SOURCE),
		      "tagged caps %llx", (unsigned long long) cur->caps);
	fi_freeinfo(info);

	h->caps = FI_TAGGED | FI_TRIGGER;
	h->domain_attr->mr_mode = FI_MR_BASIC;
	h->domain_attr->data_progress = FI_PROGRESS_AUTO;
	h->domain_attr->threading = FI_THREAD_DOMAIN;
	info = NULL;
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &info);
	CHECK(ret == 0 && info, "trigger: %d", ret);
	if (info) {
		CHECK(info->caps & FI_TRIGGER, "trigger kept when asked");
		CHECK(info->domain_attr->mr_mode == FI_MR_BASIC, "mr basic");
		CHECK(info->domain_attr->data_progress == FI_PROGRESS_AUTO, "data auto");
		CHECK(info->domain_attr->control_progress == FI_PROGRESS_MANUAL, "control manual");
		CHECK(info->domain_attr->threading == FI_THREAD_DOMAIN, "threading");
	}
	fi_freeinfo(info);
	fi_freeinfo(h);
}

static void dup_free(void)
{
	struct fi_info *info = NULL, *dup, *cur, *h;
	int i, ret;

	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info);
	CHECK(ret == 0, "getinfo");
	for (i = 0; i < 2000; i++) {
		for (cur = info; cur; cur = cur->next) {
			dup = fi_dupinfo(cur);
			if (!dup) {
				CHECK(0, "dupinfo failed");
				break;
			}
			if (i == 0) {
				CHECK(dup->next == NULL, "dup is one entry");
				CHECK(dup->src_addr != cur->src_addr && !memcmp(dup->src_addr, cur->src_addr, 16), "addr copied");
				CHECK(dup->domain_attr->name != cur->domain_attr->name &&
				      !strcmp(dup->domain_attr->name, cur->domain_attr->name), "name copied");
				CHECK(dup->nic && dup->nic != cur->nic, "nic copied");
			}
			fi_freeinfo(dup);
		}
		h = fi_allocinfo();
		if (i == 0)
			CHECK(h && h->tx_attr && h->rx_attr && h->ep_attr && h->domain_attr &&
			      h->fabric_attr && !h->nic, "allocinfo");
		fi_freeinfo(h);
	}
	dup = fi_dupinfo(NULL);
	CHECK(dup != NULL, "dupinfo(NULL)");
	fi_freeinfo(dup);
	fi_freeinfo(NULL);
	fi_freeinfo(info);
}

static void fabric(void)
{
	struct fi_info *info = NULL;
	struct fid_fabric *fab = NULL;
	struct fi_fabric_attr attr = { 0 };
	int ret;

	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info);
	CHECK(ret == 0, "getinfo");
	if (!info)
		return;
	ret = fi_fabric(info->fabric_attr, &fab, (void *) 0x1234);
	CHECK(ret == 0 && fab, "fi_fabric: %d", ret);
	if (fab) {
		CHECK(fab->fid.fclass == FI_CLASS_FABRIC, "fclass");
		CHECK(fab->fid.context == (void *) 0x1234, "context");
		CHECK(fab->api_version == FI_VERSION(1, 17), "api_version");
		ret = fi_close(&fab->fid);
		CHECK(ret == 0, "close: %d", ret);
	}
	CHECK(fi_fabric(NULL, &fab, NULL) == -FI_EINVAL, "NULL attr");
	CHECK(fi_fabric(info->fabric_attr, NULL, NULL) == -FI_EINVAL, "NULL fabric");
	attr.name = "psm2";
	CHECK(fi_fabric(&attr, &fab, NULL) == -FI_EINVAL, "NULL prov_name");
	attr.prov_name = "tcp";
	CHECK(fi_fabric(&attr, &fab, NULL) == -FI_ENODATA, "other provider");
	attr.prov_name = "psm2";
	attr.name = "verbs";
	CHECK(fi_fabric(&attr, &fab, NULL) == -FI_ENODATA, "other fabric");
	fi_freeinfo(info);
}

static void misc(void)
{
	struct fid *fid = NULL;
	struct fi_info *info = NULL;
	const char *s;
	int e;

	CHECK(fi_version() == FI_VERSION(1, 17), "fi_version");
	CHECK(!strcmp(fi_strerror(FI_ETRUNC), "Truncation error"), "ETRUNC");
	CHECK(!strcmp(fi_strerror(-FI_EAVAIL), "Error available"), "EAVAIL");
	CHECK(!strcmp(fi_strerror(FI_ENODATA), "No data available"), "ENODATA");
	CHECK(!strcmp(fi_strerror(FI_ERRNO_MAX + 5), "Unspecified error"), "unknown");
	for (e = FI_ERRNO_OFFSET; e < FI_ERRNO_MAX; e++)
		CHECK(fi_strerror(e) && *fi_strerror(e), "text for %d", e);
	CHECK(fi_open(FI_VERSION(1, 13), "mr_cache", NULL, 0, 0, &fid, NULL) == -FI_ENOSYS, "mr_cache");
	CHECK(fi_open(FI_VERSION(1, 13), NULL, NULL, 0, 0, &fid, NULL) == -FI_EINVAL, "NULL name");
	fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, NULL, &info);
	s = fi_tostr(info, FI_TYPE_INFO);
	CHECK(s && strstr(s, "prov_name: psm2") && strstr(s, "nic:"), "tostr info");
	CHECK(fi_tostr(NULL, FI_TYPE_INFO) == NULL, "tostr NULL");
	fi_freeinfo(info);
}

int main(void)
{
	null_hints();
	open_mpi();
	mpich();
	rejected();
	addresses();
	alter();
	dup_free();
	fabric();
	misc();
	return finish("getinfo");
}
