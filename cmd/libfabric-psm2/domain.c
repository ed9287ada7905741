/* domain.c: the domain fid, its ops tables, and the fid -> handle map
 * every bind and control path uses. */
#include <stdlib.h>
#include <rdma/fi_ext_psm2.h>
#include "shim.h"
#include "_cgo_export.h"

extern struct fi_ops psm2_domain_fi_ops;
extern struct fi_ops psm2_av_fi_ops, psm2_cq_fi_ops, psm2_cntr_fi_ops;
extern struct fi_ops psm2_eq_fi_ops, psm2_wait_fi_ops, psm2_poll_fi_ops, psm2_stx_fi_ops;
extern struct fi_ops psm2_mr_fi_ops, psm2_ep_fi_ops;
extern struct fi_ops_domain psm2_domain_ops;
extern struct fi_ops_mr psm2_mr_ops;

void *psm2_fid_handle(const struct fid *fid)
{
	if (!fid)
		return NULL;
	switch (fid->fclass) {
	case FI_CLASS_DOMAIN:
		return fid->ops == &psm2_domain_fi_ops ? ((struct psm2_domain *) fid)->handle : NULL;
	case FI_CLASS_AV:
		return fid->ops == &psm2_av_fi_ops ? ((struct psm2_av *) fid)->handle : NULL;
	case FI_CLASS_CQ:
		return fid->ops == &psm2_cq_fi_ops ? ((struct psm2_cq *) fid)->handle : NULL;
	case FI_CLASS_CNTR:
		return fid->ops == &psm2_cntr_fi_ops ? ((struct psm2_cntr *) fid)->handle : NULL;
	case FI_CLASS_EQ:
		return fid->ops == &psm2_eq_fi_ops ? ((struct psm2_eq *) fid)->handle : NULL;
	case FI_CLASS_WAIT:
		return fid->ops == &psm2_wait_fi_ops ? ((struct psm2_wait *) fid)->handle : NULL;
	case FI_CLASS_POLL:
		return fid->ops == &psm2_poll_fi_ops ? ((struct psm2_poll *) fid)->handle : NULL;
	case FI_CLASS_MR:
		return fid->ops == &psm2_mr_fi_ops ? ((struct psm2_mr *) fid)->handle : NULL;
	case FI_CLASS_EP:
	case FI_CLASS_TX_CTX:
	case FI_CLASS_RX_CTX:
		return fid->ops == &psm2_ep_fi_ops ? ((struct psm2_ep *) fid)->handle : NULL;
	case FI_CLASS_SEP:
		return fid->ops == &psm2_sep_fi_ops ? ((struct psm2_sep *) fid)->ep.handle : NULL;
	case FI_CLASS_STX_CTX:
		return fid->ops == &psm2_stx_fi_ops ? ((struct psm2_stx *) fid)->handle : NULL;
	default:
		return NULL;
	}
}

struct psm2_domain *psm2_domain_new(struct psm2_fabric *fabric, void *context)
{
	struct psm2_domain *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	d->domain_fid.fid.context = context;
	d->domain_fid.fid.ops = &psm2_domain_fi_ops;
	d->domain_fid.ops = &psm2_domain_ops;
	d->domain_fid.mr = &psm2_mr_ops;
	d->fabric = fabric;
	return d;
}

static int domain_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fid)
		return -FI_EINVAL;
	return psm2go_domain_close((struct psm2_domain *) fid);
}

static int domain_control(struct fid *fid, int command, void *arg)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_domain *d = (struct psm2_domain *) fid;
	struct fi_mr_map_raw *map;
	struct fi_fid_var *var;

	if (!fid)
		return -FI_EINVAL;
	switch (command) {
	case FI_GET_VAL:
	case FI_SET_VAL:
		var = arg;
		if (!var || !var->val)
			return -FI_EINVAL;
		if ((unsigned int) var->name != FI_PSM2_DISCONNECT)
			return -FI_EINVAL;
		if (command == FI_GET_VAL)
			return psm2go_domain_get_disconnect(d, (uint32_t *) var->val);
		return psm2go_domain_set_disconnect(d, *(uint32_t *) var->val);
	case FI_MAP_RAW_MR:
		/* psm2's raw key is the 8-byte key itself. */
		map = arg;
		if (!map || !map->key || !map->raw_key)
			return -FI_EINVAL;
		memcpy(map->key, map->raw_key, sizeof(uint64_t));
		return 0;
	case FI_UNMAP_KEY:
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int domain_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
			  struct fid_av **av, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!domain || !av)
		return -FI_EINVAL;
	return psm2go_av_open((struct psm2_domain *) domain, attr, av, context);
}

static int domain_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
			  struct fid_cq **cq, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!domain || !attr || !cq)
		return -FI_EINVAL;
	return psm2go_cq_open((struct psm2_domain *) domain, attr, cq, context);
}

static int domain_endpoint(struct fid_domain *domain, struct fi_info *info,
			   struct fid_ep **ep, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!domain || !ep)
		return -FI_EINVAL;
	return psm2go_ep_open((struct psm2_domain *) domain, info, ep, context);
}

static int domain_endpoint2(struct fid_domain *domain, struct fi_info *info,
			    struct fid_ep **ep, uint64_t flags, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (flags)
		return -FI_EBADFLAGS;
	return domain_endpoint(domain, info, ep, context);
}

static int domain_scalable_ep(struct fid_domain *domain, struct fi_info *info,
			      struct fid_ep **sep, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!domain || !info || !sep)
		return -FI_EINVAL;
	return psm2go_sep_open((struct psm2_domain *) domain, info, sep, context);
}

static int domain_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
			    struct fid_cntr **cntr, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!domain || !attr || !cntr)
		return -FI_EINVAL;
	return psm2go_cntr_open((struct psm2_domain *) domain, attr, cntr, context);
}

static int domain_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
			    struct fid_poll **pollset)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!domain || !attr || !pollset)
		return -FI_EINVAL;
	return psm2go_poll_open((struct psm2_domain *) domain, attr, pollset);
}

static int domain_stx_ctx(struct fid_domain *domain, struct fi_tx_attr *attr,
			  struct fid_stx **stx, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) attr; /* the domain's transmit attributes hold */
	if (!domain || !stx)
		return -FI_EINVAL;
	return psm2go_stx_open((struct psm2_domain *) domain, stx, context);
}

static int domain_srx_ctx(struct fid_domain *domain, struct fi_rx_attr *attr,
			  struct fid_ep **rx_ep, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) domain; (void) attr; (void) rx_ep; (void) context;
	return -FI_ENOSYS;
}

static int domain_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
			       enum fi_op op, struct fi_atomic_attr *attr, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) domain;
	return psm2_query_atomic(datatype, op, attr, flags);
}

static int domain_query_collective(struct fid_domain *domain, enum fi_collective_op coll,
				   struct fi_collective_attr *attr, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) domain;
	if (!attr || flags)
		return -FI_EINVAL;
	return psm2go_query_collective((int) coll, (int) attr->op, (int) attr->datatype,
				       &attr->datatype_attr.count, &attr->datatype_attr.size,
				       &attr->max_members);
}

struct fi_ops psm2_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = psm2_no_bind,
	.control = domain_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

struct fi_ops_domain psm2_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = domain_av_open,
	.cq_open = domain_cq_open,
	.endpoint = domain_endpoint,
	.scalable_ep = domain_scalable_ep,
	.cntr_open = domain_cntr_open,
	.poll_open = domain_poll_open,
	.stx_ctx = domain_stx_ctx,
	.srx_ctx = domain_srx_ctx,
	.query_atomic = domain_query_atomic,
	.query_collective = domain_query_collective,
	.endpoint2 = domain_endpoint2,
};
