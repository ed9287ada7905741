/* collective.c: fi_collective(3) through the C ABI, three processes on
 * this host (each its own fabric, domain, AV, CQ and EQ, as three MPI
 * ranks would have): fi_getinfo with FI_COLLECTIVE, AV sets and their
 * operations, fi_join_collective with its FI_JOIN_COMPLETE event,
 * fi_query_collective, and barrier, allreduce, allgather, broadcast,
 * scatter, gather and reduce with results checked at every member; bad
 * arguments answer their -FI_E* codes. */
#include <stdint.h>
#include <sys/wait.h>
#include <rdma/fi_collective.h>
#include "check.h"
#include "node.h"

#define NRANKS 3

static struct fid_eq *eq;

static int bind_eq(struct ct_node *n, void *arg)
{
	struct fi_eq_attr attr = { .wait_obj = FI_WAIT_NONE };
	int ret;

	(void) arg;
	if ((ret = fi_eq_open(n->fabric, &attr, &eq, NULL)))
		return ret;
	return fi_ep_bind(n->ep, &eq->fid, 0);
}

/* progress reads the CQ until the completion of ctx (0) or an error (the
 * error entry's code), for at most 10 s. */
static int progress(struct ct_node *n, void *ctx)
{
	double t0 = ct_now();

	while (ct_now() - t0 < 10) {
		struct fi_cq_tagged_entry e;
		ssize_t k = fi_cq_read(n->cq, &e, 1);

		if (k == 1) {
			if (e.op_context != ctx || !(e.flags & FI_COLLECTIVE))
				return -FI_EOTHER;
			return 0;
		}
		if (k == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(n->cq, &err, 0);
			return -err.err;
		}
	}
	return -FI_ETIMEDOUT;
}

static int join(struct ct_node *n, struct fid_av_set *set, struct fid_mc **mc)
{
	fi_addr_t addr;
	uint32_t ev;
	struct fi_eq_entry entry;
	double t0 = ct_now();
	int ret;

	if ((ret = fi_av_set_addr(set, &addr)) || (ret = fi_join_collective(n->ep, addr, set, 0, mc, &ev)))
		return ret;
	while (ct_now() - t0 < 10) {
		ssize_t k = fi_eq_read(eq, &ev, &entry, sizeof(entry), 0);

		if (k == (ssize_t) sizeof(entry))
			return ev == FI_JOIN_COMPLETE && entry.fid == &(*mc)->fid ? 0 : -FI_EOTHER;
		if (k != -FI_EAGAIN)
			return (int) k;
		fi_cq_read(n->cq, NULL, 0);
	}
	return -FI_ETIMEDOUT;
}

/* ops is one rank's part: every operation, its results checked. */
static void ops(struct ct_node *n, int rank, const fi_addr_t *addrs)
{
	struct fi_av_set_attr sattr = { .start_addr = addrs[0], .end_addr = addrs[NRANKS - 1], .stride = 1 };
	struct fi_collective_attr qattr = { .op = FI_SUM, .datatype = FI_UINT64 };
	struct fid_av_set *set, *other;
	struct fid_mc *mc;
	fi_addr_t coll;
	uint64_t in[4], out[4 * NRANKS];
	int ctx, ret, i;
	ssize_t s;

	CHECK(fi_query_collective(n->domain, FI_ALLREDUCE, &qattr, 0) == 0 && qattr.datatype_attr.size == 8 &&
	      qattr.datatype_attr.count > 0 && qattr.max_members >= NRANKS, "query allreduce sum uint64");
	qattr.op = FI_CSWAP;
	CHECK(fi_query_collective(n->domain, FI_ALLREDUCE, &qattr, 0) == -FI_EOPNOTSUPP, "query allreduce cswap");
	qattr.op = FI_NOOP;
	CHECK(fi_query_collective(n->domain, FI_ALLTOALL, &qattr, 0) == -FI_ENOSYS, "query alltoall");
	CHECK(fi_query_collective(n->domain, FI_BARRIER, NULL, 0) == -FI_EINVAL, "query without attr");

	/* Set operations: {0,2} | {1} = {0,2,1}; minus {2} = {0,1}; & {1,2} = {1}. */
	struct fi_av_set_attr oattr = { .start_addr = addrs[0], .end_addr = addrs[2], .stride = 2 };
	ret = fi_av_set(n->av, &oattr, &set, NULL);
	CHECK(ret == 0, "fi_av_set stride 2: %d", ret);
	if (ret)
		return;
	CHECK(fi_av_set_insert(set, addrs[0]) == -FI_EINVAL, "insert a member");
	CHECK(fi_av_set_remove(set, addrs[1]) == -FI_EINVAL, "remove a non-member");
	oattr = (struct fi_av_set_attr) { .start_addr = FI_ADDR_NOTAVAIL };
	ret = fi_av_set(n->av, &oattr, &other, NULL);
	CHECK(ret == 0, "empty set: %d", ret);
	if (ret)
		return;
	CHECK(fi_av_set_insert(other, addrs[1]) == 0, "insert");
	CHECK(fi_av_set_union(set, other) == 0, "union");
	CHECK(fi_av_set_remove(other, addrs[1]) == 0 && fi_av_set_insert(other, addrs[2]) == 0, "remove, insert");
	CHECK(fi_av_set_diff(set, other) == 0, "diff");
	CHECK(fi_av_set_insert(other, addrs[1]) == 0 && fi_av_set_intersect(set, other) == 0, "intersect");
	CHECK(fi_av_set_insert(set, addrs[1]) == -FI_EINVAL && fi_av_set_insert(set, addrs[0]) == 0 &&
	      fi_av_set_remove(set, addrs[0]) == 0 && fi_av_set_remove(set, addrs[1]) == 0 &&
	      fi_av_set_remove(set, addrs[1]) == -FI_EINVAL, "the intersection is {1}");
	CHECK(fi_close(&set->fid) == 0 && fi_close(&other->fid) == 0, "close sets");

	/* The group of all three. */
	ret = fi_av_set(n->av, &sattr, &set, NULL);
	CHECK(ret == 0, "fi_av_set: %d", ret);
	if (ret)
		return;
	ret = join(n, set, &mc);
	CHECK(ret == 0, "join: %d", ret);
	if (ret)
		return;
	coll = fi_mc_addr(mc);

	s = fi_barrier(n->ep, coll, &ctx);
	CHECK(s == 0 && progress(n, &ctx) == 0, "barrier: %zd", s);

	for (i = 0; i < 4; i++)
		in[i] = 100 * i + rank;
	s = fi_allreduce(n->ep, in, 4, NULL, out, NULL, coll, FI_UINT64, FI_SUM, 0, &ctx);
	CHECK(s == 0 && progress(n, &ctx) == 0, "allreduce: %zd", s);
	for (i = 0; i < 4; i++)
		CHECK(out[i] == 300u * i + 3, "allreduce element %d: %lu", i, (unsigned long) out[i]);

	in[0] = rank * 7;
	s = fi_allgather(n->ep, in, 1, NULL, out, NULL, coll, FI_UINT64, 0, &ctx);
	CHECK(s == 0 && progress(n, &ctx) == 0, "allgather: %zd", s);
	for (i = 0; i < NRANKS; i++)
		CHECK(out[i] == (uint64_t) i * 7, "allgather slot %d: %lu", i, (unsigned long) out[i]);

	for (i = 0; i < 4; i++)
		in[i] = rank == 1 ? 50 + i : 0;
	s = fi_broadcast(n->ep, in, 4, NULL, coll, addrs[1], FI_UINT64, 0, &ctx);
	CHECK(s == 0 && progress(n, &ctx) == 0, "broadcast: %zd", s);
	for (i = 0; i < 4; i++)
		CHECK(in[i] == 50u + i, "broadcast element %d: %lu", i, (unsigned long) in[i]);

	for (i = 0; i < NRANKS; i++)
		in[i] = 900 + i;
	s = fi_scatter(n->ep, rank == 2 ? in : NULL, 1, NULL, out, NULL, coll, addrs[2], FI_UINT64, 0, &ctx);
	CHECK(s == 0 && progress(n, &ctx) == 0, "scatter: %zd", s);
	CHECK(out[0] == 900u + rank, "scatter: %lu", (unsigned long) out[0]);

	in[0] = rank + 40;
	memset(out, 0, sizeof(out));
	s = fi_gather(n->ep, in, 1, NULL, rank == 0 ? out : NULL, NULL, coll, addrs[0], FI_UINT64, 0, &ctx);
	CHECK(s == 0 && progress(n, &ctx) == 0, "gather: %zd", s);
	if (rank == 0)
		for (i = 0; i < NRANKS; i++)
			CHECK(out[i] == 40u + i, "gather slot %d: %lu", i, (unsigned long) out[i]);

	in[0] = 10 - rank;
	out[0] = 0;
	s = fi_reduce(n->ep, in, 1, NULL, rank == 1 ? out : NULL, NULL, coll, addrs[1], FI_UINT64, FI_MAX, 0, &ctx);
	CHECK(s == 0 && progress(n, &ctx) == 0, "reduce: %zd", s);
	CHECK(rank != 1 || out[0] == 10, "reduce max at the root: %lu", (unsigned long) out[0]);

	/* Refused at once. */
	CHECK(fi_barrier(n->ep, coll + 1, &ctx) == -FI_EINVAL, "barrier on no group");
	CHECK(fi_alltoall(n->ep, in, 1, NULL, out, NULL, coll, FI_UINT64, 0, &ctx) == -FI_ENOSYS, "alltoall");
	CHECK(fi_allreduce(n->ep, in, 1, NULL, NULL, NULL, coll, FI_UINT64, FI_SUM, 0, &ctx) == -FI_EINVAL,
	      "allreduce without a result buffer");
	CHECK(fi_allreduce(n->ep, in, 1, NULL, out, NULL, coll, FI_DOUBLE, FI_BOR, 0, &ctx) == -FI_EOPNOTSUPP,
	      "bitwise or of doubles");
	CHECK(fi_broadcast(n->ep, in, 1, NULL, coll, 77, FI_UINT64, 0, &ctx) == -FI_EINVAL, "root not a member");
	CHECK(fi_barrier2(n->ep, coll, FI_MORE, &ctx) == -FI_EBADFLAGS, "barrier2 with flags");
	CHECK(fi_join_collective(n->ep, coll, NULL, 0, &mc, NULL) == -FI_EINVAL, "join without a set");

	/* One more barrier, so that nobody leaves while another still waits. */
	s = fi_barrier(n->ep, coll, &ctx);
	CHECK(s == 0 && progress(n, &ctx) == 0, "last barrier: %zd", s);
	CHECK(fi_close(&mc->fid) == 0, "close the group");
	CHECK(fi_barrier(n->ep, coll, &ctx) == -FI_EINVAL, "barrier on a closed group");
	CHECK(fi_close(&set->fid) == 0, "close the set");
}

int main(void)
{
	int up[NRANKS][2], down[NRANKS][2], rank = 0, ret;
	char names[NRANKS][64];
	pid_t pids[NRANKS] = { 0 };
	struct ct_node n;
	fi_addr_t addrs[NRANKS];

	/* Ranks 1 and 2 are children; they send their names up and get all
	 * three back (before any libfabric call in the parent). */
	for (int r = 1; r < NRANKS; r++) {
		if (pipe(up[r]) || pipe(down[r]))
			return 1;
		if ((pids[r] = fork()) == 0) {
			rank = r;
			break;
		}
	}
	ret = ct_open_node_hook(&n, FI_MSG | FI_COLLECTIVE, bind_eq, NULL);
	CHECK(ret == 0, "rank %d: open with FI_COLLECTIVE: %d", rank, ret);
	if (ret)
		return finish("collective");
	CHECK(n.info->caps & FI_COLLECTIVE, "FI_COLLECTIVE granted");
	if (rank) {
		if (write(up[rank][1], n.name, sizeof(names[0])) != sizeof(names[0]) ||
		    read(down[rank][0], names, sizeof(names)) != sizeof(names))
			return 1;
	} else {
		memcpy(names[0], n.name, sizeof(names[0]));
		for (int r = 1; r < NRANKS; r++)
			if (read(up[r][0], names[r], sizeof(names[0])) != sizeof(names[0]))
				return 1;
		for (int r = 1; r < NRANKS; r++)
			if (write(down[r][1], names, sizeof(names)) != sizeof(names))
				return 1;
	}
	for (int r = 0; r < NRANKS; r++) {
		ret = fi_av_insert(n.av, names[r], 1, &addrs[r], 0, NULL);
		CHECK(ret == 1, "fi_av_insert of rank %d: %d", r, ret);
		if (ret != 1)
			return finish("collective");
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	ops(&n, rank, addrs);
	fi_close(&n.ep->fid);
	n.ep = NULL;
	fi_close(&eq->fid);
	ct_close_node(&n);
	if (rank) {
		char what[32];

		snprintf(what, sizeof(what), "collective rank %d", rank);
		return finish(what);
	}
	for (int r = 1; r < NRANKS; r++) {
		int st;

		CHECK(waitpid(pids[r], &st, 0) == pids[r] && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "rank %d exit status %d", r, st);
	}
	return finish("collective");
}
