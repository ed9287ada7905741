/* objects.c: the object model through the C ABI. Opens fabric, domain,
 * AV, CQs of every format, counter, EQ, wait set, poll set, MR and an
 * endpoint; binds and enables the endpoint, inserts its own name into the
 * AV and sends a few tagged bytes to itself; exercises the endpoint and
 * domain controls; then closes everything, checking that a wrong order
 * answers -FI_EBUSY. Built against include/rdma only. */
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_ext_psm2.h>
#include "check.h"
#include "node.h"

static struct fi_info *info;
static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_av *av;
static struct fid_cq *cq;		/* FI_CQ_FORMAT_TAGGED, bound to the ep */
static struct fid_cntr *cntr;
static struct fid_eq *eq;
static struct fid_wait *waitset;
static struct fid_cq *wcq;		/* a CQ on the wait set */
static struct fid_poll *pollset;
static struct fid_ep *ep;
static fi_addr_t self = FI_ADDR_NOTAVAIL;

static int fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

static int open_fabric_domain(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fid_domain *d2;
	uint32_t v;
	int ret;

	hints->caps = FI_TAGGED | FI_MSG;
	hints->mode = FI_CONTEXT;
	hints->ep_attr->type = FI_EP_RDM;
	hints->fabric_attr->prov_name = strdup("psm2");
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	CHECK(ret == 0 && info, "fi_getinfo: %d", ret);
	if (ret)
		return -1;

	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	CHECK(ret == 0, "fi_fabric: %d", ret);
	if (ret)
		return -1;
	ret = fi_domain(fabric, info, &domain, NULL);
	CHECK(ret == 0, "fi_domain: %d", ret);
	if (ret)
		return -1;
	CHECK(domain->fid.fclass == FI_CLASS_DOMAIN, "domain class");
	ret = fi_domain2(fabric, info, &d2, FI_PEER, NULL);
	CHECK(ret == -FI_EBADFLAGS, "fi_domain2 with flags: %d", ret);

	/* fi_get_val / fi_set_val of FI_PSM2_DISCONNECT on the domain. */
	v = 7;
	ret = fi_get_val(&domain->fid, FI_PSM2_DISCONNECT, &v);
	CHECK(ret == 0 && v == 0, "get FI_PSM2_DISCONNECT: %d, %u", ret, v);
	v = 1;
	ret = fi_set_val(&domain->fid, FI_PSM2_DISCONNECT, &v);
	CHECK(ret == 0, "set FI_PSM2_DISCONNECT: %d", ret);
	v = 0;
	ret = fi_get_val(&domain->fid, FI_PSM2_DISCONNECT, &v);
	CHECK(ret == 0 && v == 1, "get after set: %d, %u", ret, v);
	v = 0;
	fi_set_val(&domain->fid, FI_PSM2_DISCONNECT, &v);
	ret = fi_get_val(&domain->fid, (int) (2U | FI_PROV_SPECIFIC), &v);
	CHECK(ret == -FI_EINVAL, "unknown value name: %d", ret);
	ret = fi_get_val(&domain->fid, FI_PSM2_DISCONNECT, NULL);
	CHECK(ret == -FI_EINVAL, "NULL value: %d", ret);
	ret = fi_control(&domain->fid, FI_GET_VAL, NULL);
	CHECK(ret == -FI_EINVAL, "FI_GET_VAL without fi_fid_var: %d", ret);
	return 0;
}

static void cq_formats(void)
{
	static const enum fi_cq_format formats[] = {
		FI_CQ_FORMAT_UNSPEC, FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
		FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED,
	};
	struct fi_cq_attr attr;
	struct fi_cq_tagged_entry e;
	struct fid_cq *c;
	enum fi_wait_obj obj;
	char buf[64];
	size_t i;
	int ret, fd;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		memset(&attr, 0, sizeof(attr));
		attr.format = formats[i];
		ret = fi_cq_open(domain, &attr, &c, NULL);
		CHECK(ret == 0, "fi_cq_open format %d: %d", formats[i], ret);
		if (ret)
			continue;
		CHECK(c->fid.fclass == FI_CLASS_CQ, "cq class");
		ret = (int) fi_cq_read(c, &e, 1);
		CHECK(ret == -FI_EAGAIN, "read of an empty CQ: %d", ret);
		CHECK(fi_close(&c->fid) == 0, "close cq format %d", formats[i]);
	}

	/* An fd wait object: FI_GETWAIT and FI_GETWAITOBJ. */
	memset(&attr, 0, sizeof(attr));
	attr.format = FI_CQ_FORMAT_CONTEXT;
	attr.wait_obj = FI_WAIT_FD;
	ret = fi_cq_open(domain, &attr, &c, NULL);
	CHECK(ret == 0, "fi_cq_open FI_WAIT_FD: %d", ret);
	if (!ret) {
		fd = -1;
		ret = fi_control(&c->fid, FI_GETWAIT, &fd);
		CHECK(ret == 0 && fd >= 0, "FI_GETWAIT: %d, fd %d", ret, fd);
		ret = fi_control(&c->fid, FI_GETWAITOBJ, &obj);
		CHECK(ret == 0 && obj == FI_WAIT_FD, "FI_GETWAITOBJ: %d, %d", ret, obj);
		ret = (int) fi_cq_sread(c, &e, 1, NULL, 10);
		CHECK(ret == -FI_EAGAIN, "sread timeout: %d", ret);
		CHECK(fi_cq_strerror(c, FI_ETRUNC, NULL, buf, sizeof(buf)) == buf && buf[0],
		      "fi_cq_strerror into a buffer");
		CHECK(fi_cq_strerror(c, FI_ETRUNC, NULL, NULL, 0) != NULL, "fi_cq_strerror");
		CHECK(fi_close(&c->fid) == 0, "close fd cq");
	}

	memset(&attr, 0, sizeof(attr));
	attr.format = FI_CQ_FORMAT_TAGGED;
	ret = fi_cq_open(domain, &attr, &cq, &cq);
	CHECK(ret == 0, "fi_cq_open tagged: %d", ret);
	CHECK(fi_cq_open(domain, NULL, &c, NULL) == -FI_EINVAL, "fi_cq_open(NULL attr)");
}

static void counter(void)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	int ret;

	ret = fi_cntr_open(domain, &attr, &cntr, NULL);
	CHECK(ret == 0, "fi_cntr_open: %d", ret);
	if (ret)
		return;
	CHECK(fi_cntr_add(cntr, 5) == 0 && fi_cntr_read(cntr) == 5, "add");
	CHECK(fi_cntr_set(cntr, 2) == 0 && fi_cntr_read(cntr) == 2, "set");
	CHECK(fi_cntr_adderr(cntr, 3) == 0 && fi_cntr_readerr(cntr) == 3, "adderr");
	CHECK(fi_cntr_seterr(cntr, 0) == 0 && fi_cntr_readerr(cntr) == 0, "seterr");
	ret = fi_cntr_wait(cntr, 2, 100);
	CHECK(ret == 0, "wait for a reached threshold: %d", ret);
	CHECK(fi_cntr_set(cntr, 0) == 0, "set 0");
}

static void event_queue(void)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_UNSPEC, .flags = FI_WRITE };
	struct fi_eq_entry in = { .data = 42 }, out;
	struct fi_eq_err_entry err;
	enum fi_wait_obj obj;
	uint32_t event;
	char buf[64];
	int ret, fd;

	ret = fi_eq_open(fabric, &attr, &eq, NULL);
	CHECK(ret == 0, "fi_eq_open: %d", ret);
	if (ret)
		return;
	ret = fi_control(&eq->fid, FI_GETWAITOBJ, &obj);
	CHECK(ret == 0 && obj == FI_WAIT_FD, "EQ FI_GETWAITOBJ: %d, %d", ret, obj);
	fd = -1;
	ret = fi_control(&eq->fid, FI_GETWAIT, &fd);
	CHECK(ret == 0 && fd >= 0, "EQ FI_GETWAIT: %d, %d", ret, fd);
	CHECK(fi_eq_read(eq, &event, &out, sizeof(out), 0) == -FI_EAGAIN, "read of an empty EQ");
	CHECK(fi_eq_sread(eq, &event, &out, sizeof(out), 10, 0) == -FI_EAGAIN, "sread timeout");
	in.context = &in;
	ret = (int) fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0);
	CHECK(ret == sizeof(in), "fi_eq_write: %d", ret);
	CHECK(fd < 0 || fd_readable(fd), "EQ fd readable with an event queued");
	ret = (int) fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK);
	CHECK(ret == sizeof(out) && event == FI_NOTIFY && out.data == 42, "peek: %d", ret);
	memset(&out, 0, sizeof(out));
	ret = (int) fi_eq_sread(eq, &event, &out, sizeof(out), 1000, 0);
	CHECK(ret == sizeof(out) && out.context == &in && out.data == 42, "sread: %d", ret);
	CHECK(fd < 0 || !fd_readable(fd), "EQ fd not readable once empty");
	CHECK(fi_eq_readerr(eq, &err, 0) == -FI_EAGAIN, "readerr of an empty EQ");
	CHECK(fi_eq_strerror(eq, FI_EAVAIL, NULL, buf, sizeof(buf)) == buf && buf[0], "fi_eq_strerror");
}

static void wait_and_poll_sets(void)
{
	struct fi_wait_attr wattr = { .wait_obj = FI_WAIT_FD };
	struct fi_cq_attr cattr = { .format = FI_CQ_FORMAT_CONTEXT, .wait_obj = FI_WAIT_SET };
	struct fi_poll_attr pattr = { 0 };
	struct fid *fids[1];
	void *ctx[4];
	int ret, fd;

	ret = fi_wait_open(fabric, &wattr, &waitset);
	CHECK(ret == 0, "fi_wait_open: %d", ret);
	if (ret)
		return;
	fd = -1;
	ret = fi_control(&waitset->fid, FI_GETWAIT, &fd);
	CHECK(ret == 0 && fd >= 0, "wait set FI_GETWAIT: %d", ret);
	cattr.wait_set = waitset;
	ret = fi_cq_open(domain, &cattr, &wcq, NULL);
	CHECK(ret == 0, "fi_cq_open on a wait set: %d", ret);
	ret = fi_wait(waitset, 0);
	CHECK(ret == -FI_ETIMEDOUT, "fi_wait with nothing ready: %d", ret);
	fids[0] = &waitset->fid;
	ret = fi_trywait(fabric, fids, 1);
	CHECK(ret == 0, "fi_trywait: %d", ret);
	fids[0] = &cntr->fid;
	ret = fi_trywait(fabric, fids, 1);
	CHECK(ret == -FI_ENOSYS, "fi_trywait on a counter: %d", ret);
	ret = fi_close(&waitset->fid);
	CHECK(ret == -FI_EBUSY, "closing a wait set with a CQ on it: %d", ret);

	ret = fi_poll_open(domain, &pattr, &pollset);
	CHECK(ret == 0, "fi_poll_open: %d", ret);
	if (ret)
		return;
	ret = fi_poll_add(pollset, &cq->fid, 0);
	CHECK(ret == 0, "fi_poll_add(cq): %d", ret);
	ret = fi_poll_add(pollset, &eq->fid, 0);
	CHECK(ret == -FI_EINVAL, "fi_poll_add(eq): %d", ret);
	ret = fi_poll(pollset, ctx, 4);
	CHECK(ret == 0, "fi_poll with nothing ready: %d", ret);
}

static void endpoint(void)
{
	struct fi_av_attr aattr = { .type = FI_AV_TABLE };
	struct fid_ep *ep2;
	char name[64];
	size_t len;
	int ret;

	ret = fi_av_open(domain, &aattr, &av, NULL);
	CHECK(ret == 0, "fi_av_open: %d", ret);
	ret = fi_endpoint(domain, info, &ep, NULL);
	CHECK(ret == 0, "fi_endpoint: %d", ret);
	if (ret)
		return;
	CHECK(ep->fid.fclass == FI_CLASS_EP, "ep class");
	ret = fi_endpoint2(domain, info, &ep2, 1, NULL);
	CHECK(ret == -FI_EBADFLAGS, "fi_endpoint2 with flags: %d", ret);
	ret = fi_ep_bind(ep, &av->fid, 0);
	CHECK(ret == 0, "bind av: %d", ret);
	ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	CHECK(ret == 0, "bind cq: %d", ret);
	ret = fi_ep_bind(ep, &cntr->fid, FI_SEND | FI_RECV);
	CHECK(ret == 0, "bind cntr: %d", ret);
	ret = fi_ep_bind(ep, &fabric->fid, 0);
	CHECK(ret == -FI_EINVAL, "bind a fabric: %d", ret);
	ret = fi_enable(ep);
	CHECK(ret == 0, "fi_enable: %d", ret);

	len = sizeof(name);
	ret = fi_getname(&ep->fid, name, &len);
	CHECK(ret == 0 && len == 16, "fi_getname: %d, len %zu", ret, len);
	len = 4;
	ret = fi_getname(&ep->fid, name, &len);
	CHECK(ret == -FI_ETOOSMALL && len == 16, "fi_getname short: %d, len %zu", ret, len);
	len = sizeof(name);
	fi_getname(&ep->fid, name, &len);
	ret = fi_av_insert(av, name, 1, &self, 0, NULL);
	CHECK(ret == 1 && self != FI_ADDR_NOTAVAIL, "fi_av_insert own name: %d", ret);
}

static void self_tagged(void)
{
	static const char msg[] = "psm2 in go";
	struct fi_context sctx, rctx;
	struct fi_cq_tagged_entry e[4];
	char rbuf[32];
	void *ctx[2];
	int got = 0, send_seen = 0, recv_seen = 0, polled = 0, i;
	double end;
	ssize_t ret;

	memset(rbuf, 0, sizeof(rbuf));
	ret = fi_trecv(ep, rbuf, sizeof(rbuf), NULL, FI_ADDR_UNSPEC, 0x1234, 0, &rctx);
	CHECK(ret == 0, "fi_trecv: %zd", ret);
	ret = fi_tsend(ep, msg, sizeof(msg), NULL, self, 0x1234, &sctx);
	CHECK(ret == 0, "fi_tsend: %zd", ret);

	/* The poll set reports the CQ once a completion is there. */
	end = ct_now() + 5;
	while (ct_now() < end) {
		int n = fi_poll(pollset, ctx, 2);
		if (n > 0) {
			polled = n == 1 && ctx[0] == &cq;
			break;
		}
	}
	CHECK(polled, "fi_poll returned the CQ's context");

	end = ct_now() + 5;
	while (got < 2 && ct_now() < end) {
		ret = fi_cq_read(cq, e, 4);
		if (ret == -FI_EAGAIN)
			continue;
		CHECK(ret > 0, "fi_cq_read: %zd", ret);
		if (ret <= 0)
			break;
		for (i = 0; i < ret; i++) {
			if (e[i].op_context == &sctx) {
				send_seen++;
				CHECK((e[i].flags & (FI_TAGGED | FI_SEND)) == (FI_TAGGED | FI_SEND),
				      "send flags %llx", (unsigned long long) e[i].flags);
			} else if (e[i].op_context == &rctx) {
				recv_seen++;
				CHECK((e[i].flags & (FI_TAGGED | FI_RECV)) == (FI_TAGGED | FI_RECV),
				      "recv flags %llx", (unsigned long long) e[i].flags);
				CHECK(e[i].len == sizeof(msg), "recv len %zu", e[i].len);
				CHECK(e[i].tag == 0x1234, "recv tag %llx", (unsigned long long) e[i].tag);
			}
		}
		got += (int) ret;
	}
	CHECK(send_seen == 1 && recv_seen == 1, "completions: send %d recv %d", send_seen, recv_seen);
	CHECK(!memcmp(rbuf, msg, sizeof(msg)), "received '%s'", rbuf);
	CHECK(fi_cntr_read(cntr) == 2, "counter after a send and a receive: %llu",
	      (unsigned long long) fi_cntr_read(cntr));
	ret = fi_cq_read(cq, e, 1);
	CHECK(ret == -FI_EAGAIN, "CQ empty afterwards: %zd", ret);
}

static void endpoint_controls(void)
{
	struct fid_ep *alias;
	uint64_t flags, aflags;
	size_t val, len;
	char buf[8];
	ssize_t sret;
	int ret;

	len = sizeof(val);
	val = 99;
	ret = fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &val, &len);
	CHECK(ret == 0 && val == 0 && len == sizeof(size_t), "getopt MIN_MULTI_RECV: %d, %zu", ret, val);
	val = 4096;
	ret = fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &val, sizeof(val));
	CHECK(ret == 0, "setopt MIN_MULTI_RECV: %d", ret);
	val = 0;
	len = sizeof(val);
	ret = fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &val, &len);
	CHECK(ret == 0 && val == 4096, "getopt after setopt: %d, %zu", ret, val);
	ret = fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &val, &len);
	CHECK(ret == -FI_ENOPROTOOPT, "getopt of an unknown option: %d", ret);

	flags = FI_TRANSMIT;
	ret = fi_control(&ep->fid, FI_GETOPSFLAG, &flags);
	CHECK(ret == 0, "GETOPSFLAG transmit: %d", ret);
	flags = FI_TRANSMIT | FI_COMPLETION | FI_INJECT_COMPLETE;
	ret = fi_control(&ep->fid, FI_SETOPSFLAG, &flags);
	CHECK(ret == 0, "SETOPSFLAG transmit: %d", ret);
	flags = FI_TRANSMIT;
	ret = fi_control(&ep->fid, FI_GETOPSFLAG, &flags);
	CHECK(ret == 0 && flags == (FI_COMPLETION | FI_INJECT_COMPLETE), "GETOPSFLAG after set: %llx",
	      (unsigned long long) flags);
	flags = FI_RECV | FI_COMPLETION;
	CHECK(fi_control(&ep->fid, FI_SETOPSFLAG, &flags) == 0, "SETOPSFLAG recv");
	flags = FI_RECV;
	ret = fi_control(&ep->fid, FI_GETOPSFLAG, &flags);
	CHECK(ret == 0 && flags == FI_COMPLETION, "GETOPSFLAG recv: %llx", (unsigned long long) flags);
	flags = FI_TRANSMIT | FI_RECV;
	CHECK(fi_control(&ep->fid, FI_GETOPSFLAG, &flags) == -FI_EINVAL, "GETOPSFLAG both");
	flags = 0;
	CHECK(fi_control(&ep->fid, FI_GETOPSFLAG, &flags) == -FI_EINVAL, "GETOPSFLAG neither");
	CHECK(fi_control(&ep->fid, FI_GETOPSFLAG, NULL) == -FI_EINVAL, "GETOPSFLAG NULL");

	/* An alias has its own op flags and keeps the endpoint open. */
	ret = fi_ep_alias(ep, &alias, FI_TRANSMIT | FI_INJECT);
	CHECK(ret == 0, "fi_ep_alias: %d", ret);
	if (!ret) {
		CHECK(alias != ep && alias->fid.fclass == FI_CLASS_EP, "alias is a new ep fid");
		aflags = FI_TRANSMIT;
		ret = fi_control(&alias->fid, FI_GETOPSFLAG, &aflags);
		CHECK(ret == 0 && aflags == FI_INJECT, "alias tx flags %llx", (unsigned long long) aflags);
		flags = FI_TRANSMIT;
		fi_control(&ep->fid, FI_GETOPSFLAG, &flags);
		CHECK(flags == (FI_COMPLETION | FI_INJECT_COMPLETE), "ep flags unchanged by the alias");
		aflags = FI_RECV;
		fi_control(&alias->fid, FI_GETOPSFLAG, &aflags);
		CHECK(aflags == FI_COMPLETION, "alias rx flags copied: %llx", (unsigned long long) aflags);
		ret = fi_close(&ep->fid);
		CHECK(ret == -FI_EBUSY, "closing an endpoint with an alias open: %d", ret);
		CHECK(fi_close(&alias->fid) == 0, "close alias");
	}

	/* RMA and atomics refuse bad arguments at once (rma.c and atomic.c
	 * test them in full). */
	sret = fi_read(ep, NULL, sizeof(buf), NULL, self, 0, 0, NULL);
	CHECK(sret == -FI_EINVAL, "fi_read into NULL: %zd", sret);
	sret = fi_inject_write(ep, buf, 1 << 20, self, 0, 0);
	CHECK(sret == -FI_EMSGSIZE, "fi_inject_write past inject_size: %zd", sret);
	ret = fi_atomicvalid(ep, FI_UINT64, FI_SUM, &len);
	CHECK(ret == 0 && len == 8128 / 8, "fi_atomicvalid: %d, count %zu", ret, len);
	CHECK(fi_query_atomic(domain, FI_UINT64, FI_SUM, NULL, 0) == -FI_EINVAL, "fi_query_atomic(NULL attr)");

	/* A collective on an address that names no joined group. */
	sret = fi_barrier(ep, 0, NULL);
	CHECK(sret == -FI_EINVAL, "fi_barrier: %zd", sret);

	/* What is not offered answers -FI_ENOSYS. */
	len = sizeof(buf);
	CHECK(fi_getpeer(ep, buf, &len) == -FI_ENOSYS, "fi_getpeer");
	CHECK(fi_connect(ep, buf, NULL, 0) == -FI_ENOSYS, "fi_connect");
	CHECK(fi_tx_context(ep, 0, NULL, &alias, NULL) == -FI_ENOSYS, "fi_tx_context on an endpoint");
	/* A scalable endpoint opens (ctest/sep.c tests it) and closes. */
	ret = fi_scalable_ep(domain, info, &alias, NULL);
	CHECK(ret == 0 && fi_close(&alias->fid) == 0, "fi_scalable_ep: %d", ret);

	/* A NULL message is refused, not followed. */
	CHECK(fi_tsendmsg(ep, NULL, 0) == -FI_EINVAL, "fi_tsendmsg(NULL)");
}

static void memory_region(void)
{
	static char region[4096];
	struct fid_mr *mr, *mr2;
	uint64_t base = 0, rawkey = 0;
	size_t keysize = sizeof(rawkey);
	struct fi_mr_raw_attr raw = { .base_addr = &base, .raw_key = (uint8_t *) &rawkey,
				      .key_size = &keysize };
	int ret;

	ret = fi_mr_reg(domain, region, sizeof(region), FI_REMOTE_WRITE | FI_REMOTE_READ,
			0, 77, 0, &mr, NULL);
	CHECK(ret == 0, "fi_mr_reg: %d", ret);
	if (ret)
		return;
	CHECK(mr->fid.fclass == FI_CLASS_MR && fi_mr_key(mr) == 77 && fi_mr_desc(mr),
	      "mr key %llu", (unsigned long long) fi_mr_key(mr));
	ret = fi_mr_reg(domain, region, sizeof(region), FI_REMOTE_WRITE, 0, 77, 0, &mr2, NULL);
	CHECK(ret == -FI_ENOKEY, "a key in use: %d", ret);
	ret = fi_mr_reg(domain, region, sizeof(region), FI_TAGGED, 0, 78, 0, &mr2, NULL);
	CHECK(ret == -FI_EINVAL, "bad access: %d", ret);
	ret = fi_control(&mr->fid, FI_GET_RAW_MR, &raw);
	CHECK(ret == 0 && rawkey == 77 && keysize == 8 && base == (uintptr_t) region,
	      "FI_GET_RAW_MR: %d", ret);
	ret = fi_mr_bind(mr, &cntr->fid, FI_REMOTE_WRITE);
	CHECK(ret == 0, "fi_mr_bind(cntr): %d", ret);
	CHECK(fi_close(&mr->fid) == 0, "close mr");
}

static void close_all(void)
{
	int ret;

	if (!fabric)
		return;
	if (domain) {
		ret = fi_close(&domain->fid);
		CHECK(ret == -FI_EBUSY, "closing the domain with objects open: %d", ret);
	}
	ret = fi_close(&fabric->fid);
	CHECK(ret == -FI_EBUSY, "closing the fabric with a domain open: %d", ret);
	if (cq) {
		ret = fi_close(&cq->fid);
		CHECK(ret == -FI_EBUSY, "closing a CQ bound to an endpoint: %d", ret);
	}
	if (cntr) {
		ret = fi_close(&cntr->fid);
		CHECK(ret == -FI_EBUSY, "closing a counter bound to an endpoint: %d", ret);
	}
	if (ep)
		CHECK(fi_close(&ep->fid) == 0, "close ep");
	if (av)
		CHECK(fi_close(&av->fid) == 0, "close av");
	if (pollset)
		CHECK(fi_close(&pollset->fid) == 0, "close poll set");
	if (cq)
		CHECK(fi_close(&cq->fid) == 0, "close cq");
	if (cntr)
		CHECK(fi_close(&cntr->fid) == 0, "close cntr");
	if (wcq)
		CHECK(fi_close(&wcq->fid) == 0, "close the wait set's CQ");
	if (waitset)
		CHECK(fi_close(&waitset->fid) == 0, "close wait set");
	if (eq)
		CHECK(fi_close(&eq->fid) == 0, "close eq");
	if (domain)
		CHECK(fi_close(&domain->fid) == 0, "close domain");
	CHECK(fi_close(&fabric->fid) == 0, "close fabric");
}

int main(void)
{
	if (open_fabric_domain() == 0) {
		cq_formats();
		counter();
		event_queue();
		if (cq && cntr && eq) {
			wait_and_poll_sets();
			endpoint();
		}
		if (ep && pollset && self != FI_ADDR_NOTAVAIL) {
			self_tagged();
			endpoint_controls();
		}
		if (cntr)
			memory_region();
	}
	close_all();
	fi_freeinfo(info);
	return finish("objects");
}
