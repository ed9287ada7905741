/* fabric.c: the fabric fid and its ops tables. */
#include "shim.h"
#include "_cgo_export.h"

static int fabric_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return psm2go_fabric_close((struct psm2_fabric *) fid);
}

static int fabric_domain(struct fid_fabric *fabric, struct fi_info *info,
			 struct fid_domain **dom, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fabric || !info || !dom)
		return -FI_EINVAL;
	return psm2go_domain_open((struct psm2_fabric *) fabric, info, dom, context);
}

/* fi_domain2 calls this only with flags set, and none are supported. */
static int fabric_domain2(struct fid_fabric *fabric, struct fi_info *info,
			  struct fid_domain **dom, uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (flags)
		return -FI_EBADFLAGS;
	return fabric_domain(fabric, info, dom, context);
}

static int fabric_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			     struct fid_pep **pep, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) fabric; (void) info; (void) pep; (void) context;
	return -FI_ENOSYS;
}

static int fabric_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
			  struct fid_eq **eq, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fabric || !attr || !eq)
		return -FI_EINVAL;
	return psm2go_eq_open((struct psm2_fabric *) fabric, attr, eq, context);
}

static int fabric_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			    struct fid_wait **waitset)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fabric || !attr || !waitset)
		return -FI_EINVAL;
	return psm2go_wait_open((struct psm2_fabric *) fabric, attr, waitset);
}

/* fi_trywait takes CQs, EQs and wait sets; counters are not supported
 * (as in psm2), anything else is invalid. */
static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	int i;

	if (!fabric || count < 0 || (count && !fids))
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		if (!fids[i])
			return -FI_EINVAL;
		switch (fids[i]->fclass) {
		case FI_CLASS_CQ:
		case FI_CLASS_EQ:
		case FI_CLASS_WAIT:
			if (!psm2_fid_handle(fids[i]))
				return -FI_EINVAL;
			break;
		case FI_CLASS_CNTR:
			return -FI_ENOSYS;
		default:
			return -FI_EINVAL;
		}
	}
	return psm2go_trywait((struct psm2_fabric *) fabric, fids, count);
}

struct fi_ops psm2_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = psm2_no_bind,
	.control = psm2_no_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

struct fi_ops_fabric psm2_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = fabric_domain,
	.passive_ep = fabric_passive_ep,
	.eq_open = fabric_eq_open,
	.wait_open = fabric_wait_open,
	.trywait = fabric_trywait,
	.domain2 = fabric_domain2,
};
