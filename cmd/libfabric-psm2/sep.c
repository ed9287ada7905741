/* sep.c: scalable endpoints (fi_scalable_ep; provider/sep.go says what
 * they are here). The SEP hands out its contexts as aliases of their
 * endpoints, so a context's data calls are an endpoint's, C fast path
 * included. */
#include <stdlib.h>
#include "shim.h"
#include "_cgo_export.h"

static struct psm2_sep *sep_of(struct fid *fid)
{
	if (!fid || fid->fclass != FI_CLASS_SEP || fid->ops != &psm2_sep_fi_ops)
		return NULL;
	return (struct psm2_sep *) fid;
}

static int sep_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_sep *s = sep_of(fid);
	int32_t i;

	if (!s)
		return -FI_EINVAL;
	for (i = 0; i < s->n; i++)
		if (__atomic_load_n(&s->ctx[i]->aliases, __ATOMIC_ACQUIRE) > 0)
			return -FI_EBUSY;	/* a context is still open */
	return psm2go_sep_close(s);
}

static int sep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_sep *s = sep_of(fid);
	void *h;

	if (!s || !bfid)
		return -FI_EINVAL;
	if (bfid->fclass != FI_CLASS_AV && bfid->fclass != FI_CLASS_EQ)
		return -FI_EINVAL;	/* CQs and counters bind to the contexts */
	if (!(h = psm2_fid_handle(bfid)))
		return -FI_EINVAL;
	return psm2go_sep_bind(s, h, flags);
}

static int sep_control(struct fid *fid, int command, void *arg)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_sep *s = sep_of(fid);

	(void) arg;
	if (!s)
		return -FI_EINVAL;
	if (command == FI_ENABLE)
		return psm2go_sep_enable(s);
	return -FI_ENOSYS;
}

/* sep_ctx opens context index's role: an alias of its endpoint, with the
 * attributes' op flags (the endpoint's when attr is NULL). */
static int sep_ctx(struct fid_ep *sep, int index, uint64_t role_flag, uint64_t op_flags,
		   size_t fclass, struct fid_ep **out, void *context)
{
	struct psm2_sep *s = sep_of(&sep->fid);
	struct fid *f;
	int ret;

	if (!s || !out || index < 0 || index >= s->n)
		return -FI_EINVAL;
	ret = psm2go_sep_ctx(s, index, fclass == FI_CLASS_TX_CTX ? PSM2_ROLE_TX : PSM2_ROLE_RX);
	if (ret)
		return ret;
	ret = psm2_ep_alias(s->ctx[index], fclass, role_flag | op_flags, context, &f);
	if (ret)
		return ret;
	*out = (struct fid_ep *) f;
	return 0;
}

static int sep_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		      struct fid_ep **tx_ep, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_sep *s = sep_of(sep ? &sep->fid : NULL);

	if (!s || index < 0 || index >= s->n)
		return -FI_EINVAL;
	return sep_ctx(sep, index, FI_TRANSMIT,
		       attr ? attr->op_flags : s->ctx[index]->tx_op_flags,
		       FI_CLASS_TX_CTX, tx_ep, context);
}

static int sep_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_sep *s = sep_of(sep ? &sep->fid : NULL);

	if (!s || index < 0 || index >= s->n)
		return -FI_EINVAL;
	return sep_ctx(sep, index, FI_RECV,
		       attr ? attr->op_flags : s->ctx[index]->rx_op_flags,
		       FI_CLASS_RX_CTX, rx_ep, context);
}

static ssize_t sep_cancel(fid_t fid, void *context)
{
	(void) fid; (void) context;
	return -FI_ENOSYS;
}

static int sep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	(void) fid; (void) level; (void) optname; (void) optval; (void) optlen;
	return -FI_ENOPROTOOPT;
}

static int sep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	(void) fid; (void) level; (void) optname; (void) optval; (void) optlen;
	return -FI_ENOPROTOOPT;
}

static ssize_t sep_size_left(struct fid_ep *ep)
{
	(void) ep;
	return -FI_ENOSYS;
}

static int sep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_sep *s = sep_of(fid);

	if (!s || !addrlen)
		return -FI_EINVAL;
	return psm2go_sep_getname(s, addr, addrlen);
}

static int sep_setname(fid_t fid, void *addr, size_t addrlen)
{
	(void) fid; (void) addr; (void) addrlen;
	return -FI_ENOSYS;
}

static int sep_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		    void *context)
{
	(void) ep; (void) addr; (void) flags; (void) mc; (void) context;
	return -FI_ENOSYS;
}

struct fi_ops psm2_sep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = sep_close,
	.bind = sep_bind,
	.control = sep_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

static struct fi_ops_ep sep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = sep_cancel,
	.getopt = sep_getopt,
	.setopt = sep_setopt,
	.tx_ctx = sep_tx_ctx,
	.rx_ctx = sep_rx_ctx,
	.rx_size_left = sep_size_left,
	.tx_size_left = sep_size_left,
};

static struct fi_ops_cm sep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = sep_setname,
	.getname = sep_getname,
	.getpeer = psm2_no_getpeer,
	.connect = psm2_no_connect,
	.listen = psm2_no_listen,
	.accept = psm2_no_accept,
	.reject = psm2_no_reject,
	.shutdown = psm2_no_shutdown,
	.join = sep_join,
};

struct psm2_sep *psm2_sep_new(void *context, int32_t n)
{
	struct psm2_sep *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->ctx = calloc(n, sizeof(*s->ctx));
	if (!s->ctx) {
		free(s);
		return NULL;
	}
	s->n = n;
	s->ep.ep_fid.fid.fclass = FI_CLASS_SEP;
	s->ep.ep_fid.fid.context = context;
	s->ep.ep_fid.fid.ops = &psm2_sep_fi_ops;
	s->ep.ep_fid.ops = &sep_ops;
	s->ep.ep_fid.cm = &sep_cm_ops;
	psm2_ep_data_ops(&s->ep.ep_fid);
	return s;
}
