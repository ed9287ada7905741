/* mr.c: memory regions (fi_mr_reg/regv/regattr on the domain) and the MR
 * fid. */
#include <stdlib.h>
#include "shim.h"
#include "_cgo_export.h"

extern struct fi_ops psm2_mr_fi_ops;

struct psm2_mr *psm2_mr_new(void *context, uint64_t key)
{
	struct psm2_mr *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->mr_fid.fid.fclass = FI_CLASS_MR;
	m->mr_fid.fid.context = context;
	m->mr_fid.fid.ops = &psm2_mr_fi_ops;
	/* As psm2: the local descriptor is the MR object itself. */
	m->mr_fid.mem_desc = m;
	m->mr_fid.key = key;
	return m;
}

static struct psm2_domain *mr_domain(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_DOMAIN || !psm2_fid_handle(fid))
		return NULL;
	return (struct psm2_domain *) fid;
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		  uint64_t offset, uint64_t requested_key, uint64_t flags,
		  struct fid_mr **mr, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_domain *d = mr_domain(fid);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	if (!d || !mr)
		return -FI_EINVAL;
	return psm2go_mr_reg(d, &iov, 1, access, offset, requested_key, flags, mr, context);
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		   uint64_t access, uint64_t offset, uint64_t requested_key,
		   uint64_t flags, struct fid_mr **mr, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_domain *d = mr_domain(fid);

	if (!d || !mr || !iov || !count)
		return -FI_EINVAL;
	return psm2go_mr_reg(d, (struct iovec *) iov, count, access, offset,
			     requested_key, flags, mr, context);
}

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		      uint64_t flags, struct fid_mr **mr)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_domain *d = mr_domain(fid);

	if (!d || !mr || !attr || !attr->mr_iov || !attr->iov_count)
		return -FI_EINVAL;
	return psm2go_mr_reg(d, (struct iovec *) attr->mr_iov, attr->iov_count,
			     attr->access, attr->offset, attr->requested_key,
			     flags, mr, attr->context);
}

static int mr_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fid)
		return -FI_EINVAL;
	return psm2go_mr_close((struct psm2_mr *) fid);
}

static int mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	void *h;

	if (!fid || !bfid)
		return -FI_EINVAL;
	h = psm2_fid_handle(bfid);
	if (!h)
		return -FI_EINVAL;
	return psm2go_mr_bind((struct psm2_mr *) fid, h, flags);
}

static int mr_control(struct fid *fid, int command, void *arg)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_mr *m = (struct psm2_mr *) fid;
	struct fi_mr_raw_attr *attr;

	if (!fid)
		return -FI_EINVAL;
	switch (command) {
	case FI_GET_RAW_MR:
		/* psm2: the raw key is the 8-byte key, the base the first
		 * registered address. */
		attr = arg;
		if (!attr)
			return -FI_EINVAL;
		if (attr->base_addr)
			*attr->base_addr = psm2go_mr_base(m);
		if (attr->raw_key)
			memcpy(attr->raw_key, &m->mr_fid.key, sizeof(uint64_t));
		if (attr->key_size)
			*attr->key_size = sizeof(uint64_t);
		return 0;
	case FI_REFRESH:
	case FI_ENABLE:
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

struct fi_ops psm2_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = mr_bind,
	.control = mr_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

struct fi_ops_mr psm2_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};
