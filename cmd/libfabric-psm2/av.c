/* av.c: the address vector fid and its ops table. */
#include <stdlib.h>
#include "shim.h"
#include "_cgo_export.h"

extern struct fi_ops psm2_av_fi_ops;
extern struct fi_ops_av psm2_av_ops;

struct psm2_av *psm2_av_new(void *context)
{
	struct psm2_av *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->av_fid.fid.fclass = FI_CLASS_AV;
	a->av_fid.fid.context = context;
	a->av_fid.fid.ops = &psm2_av_fi_ops;
	a->av_fid.ops = &psm2_av_ops;
	return a;
}

static int av_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fid)
		return -FI_EINVAL;
	return psm2go_av_close((struct psm2_av *) fid);
}

static int av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	void *h;

	if (!fid || !bfid)
		return -FI_EINVAL;
	/* Only an event queue binds to an AV. */
	if (bfid->fclass != FI_CLASS_EQ || !(h = psm2_fid_handle(bfid)))
		return -FI_EINVAL;
	return psm2go_av_bind((struct psm2_av *) fid, h, flags);
}

static int av_insert(struct fid_av *av, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!av)
		return -FI_EINVAL;
	return psm2go_av_insert((struct psm2_av *) av, (void *) addr, count,
				fi_addr, flags, context);
}

static int av_insertsvc(struct fid_av *av, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!av)
		return -FI_EINVAL;
	return psm2go_av_insertsvc((struct psm2_av *) av, (char *) node, (char *) service,
				   fi_addr, flags, context);
}

static int av_insertsym(struct fid_av *av, const char *node, size_t nodecnt,
			const char *service, size_t svccnt, fi_addr_t *fi_addr,
			uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!av)
		return -FI_EINVAL;
	return psm2go_av_insertsym((struct psm2_av *) av, (char *) node, nodecnt,
				   (char *) service, svccnt, fi_addr, flags, context);
}

static int av_remove(struct fid_av *av, fi_addr_t *fi_addr, size_t count,
		     uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!av)
		return -FI_EINVAL;
	return psm2go_av_remove((struct psm2_av *) av, fi_addr, count, flags);
}

static int av_lookup(struct fid_av *av, fi_addr_t fi_addr, void *addr,
		     size_t *addrlen)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!av || !addrlen)
		return -FI_EINVAL;
	return psm2go_av_lookup((struct psm2_av *) av, fi_addr, addr, addrlen);
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf,
			      size_t *len)
{
	PSM2_FORK_GUARD(NULL);
	if (!av || !addr || !len)
		return NULL;
	psm2go_av_straddr((struct psm2_av *) av, (void *) addr, buf, len);
	return buf;
}

static int av_set(struct fid_av *av, struct fi_av_set_attr *attr,
		  struct fid_av_set **av_set_fid, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!av || !attr || !av_set_fid)
		return -FI_EINVAL;
	return psm2go_av_set((struct psm2_av *) av, attr, av_set_fid, context);
}

struct fi_ops psm2_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = av_bind,
	.control = psm2_no_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

struct fi_ops_av psm2_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.insertsym = av_insertsym,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
	.av_set = av_set,
};
