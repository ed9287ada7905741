/* node.h: what the C tests and the C benchmarks (bench/) share: a clock,
 * the valgrind check, and a "node": one RDM endpoint with its own fabric,
 * domain, AV and CQ (the shape a separate MPI process would have), opened
 * by ct_open for any provider and shape, or for psm2 tagged messages by
 * ct_open_node. */
#ifndef CTEST_NODE_H
#define CTEST_NODE_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

static inline double ct_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline int ct_under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}

struct ct_node {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	char name[256];		/* the endpoint's name (fi_getname) */
	size_t namelen;
};

/* ct_opts: how ct_open opens a node. Every field may be left 0. */
struct ct_opts {
	const char *prov;		/* provider name; NULL: "psm2" */
	uint32_t version;		/* fi_getinfo's; 0: FI_VERSION(1, 17) */
	uint64_t caps, mode, mr_mode;	/* hints; mode 0: FI_CONTEXT */
	int threading;			/* enum fi_threading; 0: the provider's */
	uint64_t tx_op_flags;
	enum fi_av_type av_type;	/* 0: FI_AV_TABLE */
	int rx_ctx_bits;		/* the AV's */
	enum fi_cq_format cq_format;	/* 0: FI_CQ_FORMAT_TAGGED */
	size_t cq_size;
	enum fi_wait_obj cq_wait;	/* 0: FI_WAIT_NONE */
	/* The CQ's bind flags for the two directions; both 0: one bind with
	 * FI_TRANSMIT | FI_RECV, else a bind for each. */
	uint64_t tx_bind, rx_bind;
	/* Called, if set, just before fi_enable, to bind more. */
	int (*hook)(struct ct_node *n, void *arg);
	void *arg;
};

/* ct_open opens n (zeroed first) as o says: fi_getinfo for an RDM
 * endpoint, then fabric, domain, AV, CQ and endpoint, bound and enabled,
 * and its name: 0 or the failing call's -FI_E*. */
static inline int ct_open(struct ct_node *n, const struct ct_opts *o)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_av_attr av_attr = { .type = o->av_type ? o->av_type : FI_AV_TABLE, .rx_ctx_bits = o->rx_ctx_bits };
	struct fi_cq_attr cq_attr = { .format = o->cq_format ? o->cq_format : FI_CQ_FORMAT_TAGGED,
				      .size = o->cq_size, .wait_obj = o->cq_wait ? o->cq_wait : FI_WAIT_NONE };
	int ret;

	memset(n, 0, sizeof(*n));
	hints->caps = o->caps;
	hints->mode = o->mode ? o->mode : FI_CONTEXT;
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->mr_mode = (int) o->mr_mode;
	hints->domain_attr->threading = (enum fi_threading) o->threading;
	hints->tx_attr->op_flags = o->tx_op_flags;
	hints->fabric_attr->prov_name = strdup(o->prov ? o->prov : "psm2");
	ret = fi_getinfo(o->version ? o->version : FI_VERSION(1, 17), NULL, NULL, 0, hints, &n->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	n->namelen = sizeof(n->name);
	if ((ret = fi_fabric(n->info->fabric_attr, &n->fabric, NULL)) ||
	    (ret = fi_domain(n->fabric, n->info, &n->domain, NULL)) ||
	    (ret = fi_av_open(n->domain, &av_attr, &n->av, NULL)) ||
	    (ret = fi_cq_open(n->domain, &cq_attr, &n->cq, NULL)) ||
	    (ret = fi_endpoint(n->domain, n->info, &n->ep, NULL)) ||
	    (ret = fi_ep_bind(n->ep, &n->av->fid, 0)))
		return ret;
	if (!o->tx_bind && !o->rx_bind)
		ret = fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV);
	else if (!(ret = fi_ep_bind(n->ep, &n->cq->fid, o->tx_bind ? o->tx_bind : FI_TRANSMIT)))
		ret = fi_ep_bind(n->ep, &n->cq->fid, o->rx_bind ? o->rx_bind : FI_RECV);
	if (ret || (o->hook && (ret = o->hook(n, o->arg))) ||
	    (ret = fi_enable(n->ep)) ||
	    (ret = fi_getname(&n->ep->fid, n->name, &n->namelen)))
		return ret;
	return 0;
}

/* ct_open_node_hook opens n for psm2 with capabilities caps, calling
 * hook(n, arg) (if not NULL) just before fi_enable, to bind more. */
static inline int ct_open_node_hook(struct ct_node *n, uint64_t caps,
				    int (*hook)(struct ct_node *, void *), void *arg)
{
	struct ct_opts o = { .caps = caps, .hook = hook, .arg = arg };

	return ct_open(n, &o);
}

/* ct_open_node_caps opens n with capabilities caps. */
static inline int ct_open_node_caps(struct ct_node *n, uint64_t caps)
{
	return ct_open_node_hook(n, caps, NULL, NULL);
}

/* ct_open_node opens n for tagged messages. */
static inline int ct_open_node(struct ct_node *n)
{
	return ct_open_node_caps(n, FI_TAGGED);
}

/* ct_wait_one waits (at most 10 s) for one completion on n's CQ, reading
 * other's CQ meanwhile (if not NULL: its provider serves n's RMA): 0, or
 * the error entry's err (positive), or a negative -FI_E* of the read.
 * The entry's context and flags go to *ctx and *flags (if not NULL). */
static inline int ct_wait_one(struct ct_node *n, struct ct_node *other, void **ctx, uint64_t *flags)
{
	struct fi_cq_tagged_entry e;
	double t0 = ct_now();

	for (;;) {
		ssize_t got = fi_cq_read(n->cq, &e, 1);

		if (got == 1) {
			if (ctx)
				*ctx = e.op_context;
			if (flags)
				*flags = e.flags;
			return 0;
		}
		if (got == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(n->cq, &err, 0);
			if (ctx)
				*ctx = err.op_context;
			if (flags)
				*flags = err.flags;
			return err.err ? err.err : -1;
		}
		if (got != -FI_EAGAIN)
			return (int) got;
		if (other)
			fi_cq_read(other->cq, &e, 0);
		if (ct_now() - t0 > 10)
			return -FI_ETIMEDOUT;
	}
}

/* ct_ep: an endpoint in a domain the test opened itself, with an AV
 * (table) and a tagged CQ of its own: several of them can share a
 * domain, which a ct_node cannot. */
struct ct_ep {
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	char name[64];		/* the endpoint's name (fi_getname) */
};

/* ct_open_ep_cond opens n in domain d for info, its CQ with wait object
 * wait and wait condition cond, binds and enables it: 0 or the failing
 * call's -FI_E*. ct_open_ep is the same without a wait condition. */
static inline int ct_open_ep_cond(struct ct_ep *n, struct fid_domain *d, struct fi_info *info,
				  enum fi_wait_obj wait, enum fi_cq_wait_cond cond)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 4096, .wait_obj = wait,
				      .wait_cond = cond };
	size_t len = sizeof(n->name);
	int ret;

	n->domain = d;
	if ((ret = fi_av_open(d, &av_attr, &n->av, NULL)) ||
	    (ret = fi_cq_open(d, &cq_attr, &n->cq, NULL)) ||
	    (ret = fi_endpoint(d, info, &n->ep, NULL)) ||
	    (ret = fi_ep_bind(n->ep, &n->av->fid, 0)) ||
	    (ret = fi_ep_bind(n->ep, &n->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (ret = fi_enable(n->ep)) ||
	    (ret = fi_getname(&n->ep->fid, n->name, &len)))
		return ret;
	return 0;
}

static inline int ct_open_ep(struct ct_ep *n, struct fid_domain *d, struct fi_info *info,
			     enum fi_wait_obj wait)
{
	return ct_open_ep_cond(n, d, info, wait, FI_CQ_COND_NONE);
}

/* ct_close_ep closes n's endpoint, CQ and AV (not its domain). */
static inline void ct_close_ep(struct ct_ep *n)
{
	fi_close(&n->ep->fid);
	fi_close(&n->cq->fid);
	fi_close(&n->av->fid);
}

/* ct_start_target runs this program again with argument "target" (argv0
 * is the caller's argv[0]) and returns the stream of its standard output
 * (NULL on failure), its pid in *pid. */
static inline FILE *ct_start_target(const char *argv0, pid_t *pid)
{
	int pfd[2];

	if (pipe(pfd))
		return NULL;
	if ((*pid = fork()) == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		execl("/proc/self/exe", argv0, "target", (char *) NULL);
		_exit(127);
	}
	close(pfd[1]);
	return fdopen(pfd[0], "r");
}

/* ct_read_target reads a target's line from in: its endpoint name in hex
 * (into name, up to 64 bytes; its length in *namelen), a space and its
 * region's key. 0, or -1 if no such line came. */
static inline int ct_read_target(FILE *in, unsigned char *name, size_t *namelen, unsigned long *key)
{
	char line[256], hex[3] = { 0 };

	*namelen = 0;
	if (!in || !fgets(line, sizeof(line), in) || !strchr(line, ' '))
		return -1;
	for (char *p = line; p[0] && p[1] && p[0] != ' ' && *namelen < 64; p += 2) {
		hex[0] = p[0], hex[1] = p[1];
		name[(*namelen)++] = (unsigned char) strtoul(hex, NULL, 16);
	}
	*key = strtoul(strchr(line, ' ') + 1, NULL, 10);
	return 0;
}

/* ct_target starts the target (ct_start_target) and reads its line
 * (ct_read_target): the stream of its output, or NULL, having printed a
 * FAIL line and killed it. */
static inline FILE *ct_target(const char *argv0, pid_t *pid, unsigned char *name, size_t *namelen,
			      unsigned long *key)
{
	FILE *in = ct_start_target(argv0, pid);

	if (ct_read_target(in, name, namelen, key)) {
		printf("FAIL: no target line\n");
		if (in)
			kill(*pid, SIGKILL);
		return NULL;
	}
	return in;
}

/* ct_close_ep_stats closes n's endpoint with the statistics it prints at
 * close (FI_PSM2_PRINT_STATS, set before it opened) going to a file, and
 * puts in vals[i] counter names[i] of group group (" group=shm ", "
 * received=" style: group and names as printed), or -1 if none was
 * printed. */
static inline void ct_close_ep_stats(struct ct_node *n, const char *group, const char *const *names, long *vals,
				     int k)
{
	char line[4096], g[64], key[64];
	FILE *log = tmpfile();
	int saved = dup(2);

	for (int i = 0; i < k; i++)
		vals[i] = -1;
	snprintf(g, sizeof(g), " group=%s ", group);
	fflush(stderr);
	if (!log || saved < 0 || dup2(fileno(log), 2) != 2) {
		if (log)
			fclose(log);
		if (saved >= 0)
			close(saved);
		return;
	}
	fi_close(&n->ep->fid);
	n->ep = NULL;
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(log);
	while (fgets(line, sizeof(line), log)) {
		if (strncmp(line, "psm2-stats ", 11) || !strstr(line, g))
			continue;
		for (int i = 0; i < k; i++) {
			char *p;

			snprintf(key, sizeof(key), " %s=", names[i]);
			if ((p = strstr(line, key)))
				vals[i] = strtol(p + strlen(key), NULL, 10);
		}
	}
	fclose(log);
}

/* ct_close_ep_stat is ct_close_ep_stats for one counter: its value. */
static inline long ct_close_ep_stat(struct ct_node *n, const char *group, const char *name)
{
	long v;

	ct_close_ep_stats(n, group, &name, &v, 1);
	return v;
}

/* ct_close_node closes whatever of n is open. */
static inline void ct_close_node(struct ct_node *n)
{
	if (n->ep)
		fi_close(&n->ep->fid);
	if (n->av)
		fi_close(&n->av->fid);
	if (n->cq)
		fi_close(&n->cq->fid);
	if (n->domain)
		fi_close(&n->domain->fid);
	if (n->fabric)
		fi_close(&n->fabric->fid);
	fi_freeinfo(n->info);
	memset(n, 0, sizeof(*n));
}

#endif
