/* stx.c: shared transmit contexts (fi_stx_context; provider/stx.go says
 * what they are here). The object is a handle: endpoints bind it, and it
 * has no endpoint operations of its own. */
#include <stdlib.h>
#include "shim.h"
#include "_cgo_export.h"

static int stx_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fid)
		return -FI_EINVAL;
	return psm2go_stx_close((struct psm2_stx *) fid);
}

static ssize_t stx_cancel(fid_t fid, void *context)
{
	(void) fid; (void) context;
	return -FI_ENOSYS;
}

static int stx_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	(void) fid; (void) level; (void) optname; (void) optval; (void) optlen;
	return -FI_ENOSYS;
}

static int stx_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	(void) fid; (void) level; (void) optname; (void) optval; (void) optlen;
	return -FI_ENOSYS;
}

static int stx_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr, struct fid_ep **tx_ep,
		      void *context)
{
	(void) sep; (void) index; (void) attr; (void) tx_ep; (void) context;
	return -FI_ENOSYS;
}

static int stx_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		      void *context)
{
	(void) sep; (void) index; (void) attr; (void) rx_ep; (void) context;
	return -FI_ENOSYS;
}

static ssize_t stx_size_left(struct fid_ep *ep)
{
	(void) ep;
	return -FI_ENOSYS;
}

struct fi_ops psm2_stx_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = stx_close,
	.bind = psm2_no_bind,
	.control = psm2_no_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

static struct fi_ops_ep psm2_stx_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = stx_cancel,
	.getopt = stx_getopt,
	.setopt = stx_setopt,
	.tx_ctx = stx_tx_ctx,
	.rx_ctx = stx_rx_ctx,
	.rx_size_left = stx_size_left,
	.tx_size_left = stx_size_left,
};

struct psm2_stx *psm2_stx_new(void *context)
{
	struct psm2_stx *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->stx_fid.fid.fclass = FI_CLASS_STX_CTX;
	s->stx_fid.fid.context = context;
	s->stx_fid.fid.ops = &psm2_stx_fi_ops;
	s->stx_fid.ops = &psm2_stx_ops;
	return s;
}
