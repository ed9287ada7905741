/* coll.c: collectives (fi_collective(3)): AV sets, the fid_mc of a joined
 * group and the endpoint's fi_ops_collective. The work is Go's
 * (provider/coll.go); these are the ops tables and argument checks. */
#include <stdlib.h>
#include "shim.h"
#include "_cgo_export.h"

extern struct fi_ops psm2_av_set_fi_ops;
extern struct fi_ops_av_set psm2_av_set_ops;
extern struct fi_ops psm2_mc_fi_ops;

struct psm2_av_set *psm2_av_set_new(void *context)
{
	struct psm2_av_set *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->set_fid.fid.fclass = FI_CLASS_AV_SET;
	s->set_fid.fid.context = context;
	s->set_fid.fid.ops = &psm2_av_set_fi_ops;
	s->set_fid.ops = &psm2_av_set_ops;
	return s;
}

static int av_set_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fid)
		return -FI_EINVAL;
	return psm2go_av_set_close((struct psm2_av_set *) fid);
}

/* The operations psm2go_av_set_op takes (provider.AVSet's methods). */
enum { SET_UNION, SET_INTERSECT, SET_DIFF, SET_INSERT, SET_REMOVE, SET_ADDR };

static int set_union(struct fid_av_set *dst, const struct fid_av_set *src)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!dst || !src)
		return -FI_EINVAL;
	return psm2go_av_set_op((struct psm2_av_set *) dst, SET_UNION, (struct psm2_av_set *) src, 0, NULL);
}

static int set_intersect(struct fid_av_set *dst, const struct fid_av_set *src)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!dst || !src)
		return -FI_EINVAL;
	return psm2go_av_set_op((struct psm2_av_set *) dst, SET_INTERSECT, (struct psm2_av_set *) src, 0, NULL);
}

static int set_diff(struct fid_av_set *dst, const struct fid_av_set *src)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!dst || !src)
		return -FI_EINVAL;
	return psm2go_av_set_op((struct psm2_av_set *) dst, SET_DIFF, (struct psm2_av_set *) src, 0, NULL);
}

static int set_insert(struct fid_av_set *set, fi_addr_t addr)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!set)
		return -FI_EINVAL;
	return psm2go_av_set_op((struct psm2_av_set *) set, SET_INSERT, NULL, addr, NULL);
}

static int set_remove(struct fid_av_set *set, fi_addr_t addr)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!set)
		return -FI_EINVAL;
	return psm2go_av_set_op((struct psm2_av_set *) set, SET_REMOVE, NULL, addr, NULL);
}

static int set_addr(struct fid_av_set *set, fi_addr_t *coll_addr)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!set || !coll_addr)
		return -FI_EINVAL;
	return psm2go_av_set_op((struct psm2_av_set *) set, SET_ADDR, NULL, 0, (uint64_t *) coll_addr);
}

struct fi_ops psm2_av_set_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_set_close,
	.bind = psm2_no_bind,
	.control = psm2_no_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

struct fi_ops_av_set psm2_av_set_ops = {
	.size = sizeof(struct fi_ops_av_set),
	.set_union = set_union,
	.intersect = set_intersect,
	.diff = set_diff,
	.insert = set_insert,
	.remove = set_remove,
	.addr = set_addr,
};

/* ---- joined groups ---- */

static int mc_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_mc *m = (struct psm2_mc *) fid;
	int ret;

	if (!fid)
		return -FI_EINVAL;
	if ((ret = psm2go_leave(m->ep->slot, m->mc_fid.fi_addr)))
		return ret;
	psm2_retire(&m->mc_fid.fid, sizeof(struct fid_mc), sizeof(*m));
	return 0;
}

struct fi_ops psm2_mc_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mc_close,
	.bind = psm2_no_bind,
	.control = psm2_no_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

/* psm2_join_collective is fi_join_collective: a group of the set's
 * members; FI_JOIN_COMPLETE reaches the endpoint's EQ. */
int psm2_join_collective(struct psm2_ep *ep, const void *addr, struct fid_mc **mc, void *context)
{
	const struct fi_collective_addr *ca = addr;
	struct psm2_mc *m;
	int ret;

	if (!ca->set)
		return -FI_EINVAL;
	if (ep->base)
		ep = ep->base;	/* an alias joins for its endpoint */
	if (!(m = calloc(1, sizeof(*m))))
		return -FI_ENOMEM;
	m->mc_fid.fid.fclass = FI_CLASS_MC;
	m->mc_fid.fid.context = context;
	m->mc_fid.fid.ops = &psm2_mc_fi_ops;
	m->ep = ep;
	/* Set before the call: a thread reading the EQ may see the event
	 * (with this fid) before the call returns. */
	*mc = &m->mc_fid;
	ret = psm2go_join(ep->slot, (struct psm2_av_set *) ca->set, &m->mc_fid.fid, context,
			  (uint64_t *) &m->mc_fid.fi_addr);
	if (ret) {
		*mc = NULL;
		free(m);
		return ret;
	}
	return 0;
}

/* ---- fi_ops_collective ---- */

static ssize_t coll(struct fid_ep *ep, int kind, const void *buf, void *result, size_t count,
		    fi_addr_t coll_addr, fi_addr_t root, enum fi_datatype dt, enum fi_op op,
		    uint64_t flags, void *context)
{
	struct psm2_ep *e = (struct psm2_ep *) ep;

	if (!ep)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (e->base)
		e = e->base;
	return psm2go_collective(e->slot, kind, (void *) buf, result, count, coll_addr, root, (int) dt, (int) op,
				 context);
}

static ssize_t coll_barrier(struct fid_ep *ep, fi_addr_t coll_addr, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return coll(ep, FI_BARRIER, NULL, NULL, 0, coll_addr, 0, FI_VOID, FI_NOOP, 0, context);
}

static ssize_t coll_barrier2(struct fid_ep *ep, fi_addr_t coll_addr, uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return coll(ep, FI_BARRIER, NULL, NULL, 0, coll_addr, 0, FI_VOID, FI_NOOP, flags, context);
}

static ssize_t coll_broadcast(struct fid_ep *ep, void *buf, size_t count, void *desc,
			      fi_addr_t coll_addr, fi_addr_t root_addr,
			      enum fi_datatype datatype, uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc;
	return coll(ep, FI_BROADCAST, buf, NULL, count, coll_addr, root_addr, datatype, FI_NOOP, flags,
		    context);
}

static ssize_t coll_alltoall(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			     void *result, void *result_desc, fi_addr_t coll_addr,
			     enum fi_datatype datatype, uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc; (void) result_desc;
	return coll(ep, FI_ALLTOALL, buf, result, count, coll_addr, 0, datatype, FI_NOOP, flags, context);
}

static ssize_t coll_allgather(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			      void *result, void *result_desc, fi_addr_t coll_addr,
			      enum fi_datatype datatype, uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc; (void) result_desc;
	return coll(ep, FI_ALLGATHER, buf, result, count, coll_addr, 0, datatype, FI_NOOP, flags, context);
}

static ssize_t coll_allreduce(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			      void *result, void *result_desc, fi_addr_t coll_addr,
			      enum fi_datatype datatype, enum fi_op op, uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc; (void) result_desc;
	return coll(ep, FI_ALLREDUCE, buf, result, count, coll_addr, 0, datatype, op, flags, context);
}

static ssize_t coll_reduce_scatter(struct fid_ep *ep, const void *buf, size_t count, void *desc,
				   void *result, void *result_desc, fi_addr_t coll_addr,
				   enum fi_datatype datatype, enum fi_op op, uint64_t flags,
				   void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc; (void) result_desc;
	return coll(ep, FI_REDUCE_SCATTER, buf, result, count, coll_addr, 0, datatype, op, flags, context);
}

static ssize_t coll_reduce(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   void *result, void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr,
			   enum fi_datatype datatype, enum fi_op op, uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc; (void) result_desc;
	return coll(ep, FI_REDUCE, buf, result, count, coll_addr, root_addr, datatype, op, flags, context);
}

static ssize_t coll_scatter(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			    void *result, void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr,
			    enum fi_datatype datatype, uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc; (void) result_desc;
	return coll(ep, FI_SCATTER, buf, result, count, coll_addr, root_addr, datatype, FI_NOOP, flags,
		    context);
}

static ssize_t coll_gather(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   void *result, void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr,
			   enum fi_datatype datatype, uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc; (void) result_desc;
	return coll(ep, FI_GATHER, buf, result, count, coll_addr, root_addr, datatype, FI_NOOP, flags,
		    context);
}

static ssize_t coll_msg(struct fid_ep *ep, const struct fi_msg_collective *msg,
			struct fi_ioc *resultv, void **result_desc, size_t result_count, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) ep; (void) msg; (void) resultv; (void) result_desc; (void) result_count; (void) flags;
	return -FI_ENOSYS;
}

struct fi_ops_collective psm2_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = coll_barrier,
	.broadcast = coll_broadcast,
	.alltoall = coll_alltoall,
	.allreduce = coll_allreduce,
	.allgather = coll_allgather,
	.reduce_scatter = coll_reduce_scatter,
	.reduce = coll_reduce,
	.scatter = coll_scatter,
	.gather = coll_gather,
	.msg = coll_msg,
	.barrier2 = coll_barrier2,
};
