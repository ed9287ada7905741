/* fabric.c: the fabric fid and its ops tables. */
#include "shim.h"
#include "_cgo_export.h"

static int fabric_close(struct fid *fid)
{
	return psm2go_fabric_close((struct psm2_fabric *) fid);
}

static int fabric_domain(struct fid_fabric *fabric, struct fi_info *info,
			 struct fid_domain **dom, void *context)
{
	(void) fabric; (void) info; (void) dom; (void) context;
	return -FI_ENOSYS;
}

static int fabric_domain2(struct fid_fabric *fabric, struct fi_info *info,
			  struct fid_domain **dom, uint64_t flags, void *context)
{
	(void) flags;
	return fabric_domain(fabric, info, dom, context);
}

static int fabric_passive_ep(struct fid_fabric *fabric, struct fi_info *info,
			     struct fid_pep **pep, void *context)
{
	(void) fabric; (void) info; (void) pep; (void) context;
	return -FI_ENOSYS;
}

static int fabric_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
			  struct fid_eq **eq, void *context)
{
	(void) fabric; (void) attr; (void) eq; (void) context;
	return -FI_ENOSYS;
}

static int fabric_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			    struct fid_wait **waitset)
{
	(void) fabric; (void) attr; (void) waitset;
	return -FI_ENOSYS;
}

static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	(void) fabric; (void) fids; (void) count;
	return -FI_ENOSYS;
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
