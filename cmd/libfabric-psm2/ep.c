/* ep.c: the endpoint fid and every ops table it carries (over 600 lines:
 * msg, tagged, RMA, atomic, CM and collective tables, each entry the same
 * few lines of shape).
 *
 * The message and tagged calls are the data path: each builds its iovec
 * (on the stack for single-buffer calls) and its flags, then makes one call
 * into Go with the endpoint's slot and scalar arguments. The flags say
 * which API was used (FI_MSG or FI_TAGGED); fi_*msg passes the caller's
 * flags, every other call the fid's op flags (transmit for sends, receive
 * for receives), with FI_REMOTE_CQ_DATA for the *data calls. Inject calls
 * add FI_INJECT and PSM2_NO_COMPLETION: they never generate a completion.
 * FI_INJECT alone (an op flag of the fid, or fi_sendmsg's) only frees the
 * buffer at once; the send still completes as any other.
 *
 * RMA and atomics go to Go too (provider/rma.go, atomic.go). Collectives
 * are not offered: every slot answers -FI_ENOSYS (never NULL: the inline
 * wrappers call through unchecked). */
#include <stdlib.h>
#include "shim.h"
#include "fast.h"
#include "_cgo_export.h"

extern struct fi_ops psm2_ep_fi_ops;
static struct fi_ops_ep ep_ops;
static struct fi_ops_cm ep_cm_ops;
static struct fi_ops_msg ep_msg_ops;
static struct fi_ops_tagged ep_tagged_ops;
static struct fi_ops_rma ep_rma_ops;
static struct fi_ops_atomic ep_atomic_ops;

static int ep_set_opflags(struct psm2_ep *e, uint64_t flags);

struct psm2_ep *psm2_ep_new(void *context)
{
	struct psm2_ep *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->ep_fid.fid.fclass = FI_CLASS_EP;
	e->ep_fid.fid.context = context;
	e->ep_fid.fid.ops = &psm2_ep_fi_ops;
	e->ep_fid.ops = &ep_ops;
	e->ep_fid.cm = &ep_cm_ops;
	e->ep_fid.msg = &ep_msg_ops;
	e->ep_fid.rma = &ep_rma_ops;
	e->ep_fid.tagged = &ep_tagged_ops;
	e->ep_fid.atomic = &ep_atomic_ops;
	e->ep_fid.collective = &psm2_collective_ops;
	return e;
}

#define EP(ep) ((struct psm2_ep *) (ep))
#define INJECT_FLAGS(f) (((f) | FI_INJECT | PSM2_NO_COMPLETION) & ~FI_COMPLETION)

/* A bare fid (getname, cancel, getopt, ...) that must be one of our
 * endpoints or aliases. */
static struct psm2_ep *ep_of(struct fid *fid)
{
	if (!fid || fid->ops != &psm2_ep_fi_ops)
		return NULL;
	switch (fid->fclass) {
	case FI_CLASS_EP:
	case FI_CLASS_TX_CTX:	/* a scalable endpoint's context (sep.c) */
	case FI_CLASS_RX_CTX:
		return (struct psm2_ep *) fid;
	default:
		return NULL;
	}
}

/* psm2_ep_data_ops gives dst the endpoint's data-transfer tables (sep.c:
 * a scalable endpoint's own calls reach Go with slot 0, which answers
 * -FI_EINVAL, as fi_endpoint(3) has no transfers on one). */
void psm2_ep_data_ops(struct fid_ep *dst)
{
	dst->msg = &ep_msg_ops;
	dst->rma = &ep_rma_ops;
	dst->tagged = &ep_tagged_ops;
	dst->atomic = &ep_atomic_ops;
	dst->collective = &psm2_collective_ops;
}

/* psm2_ep_alias makes an alias of e (FI_ALIAS, or a scalable endpoint's
 * fi_tx_context/fi_rx_context): a copy of the struct with its own class,
 * context and op flags (flags: FI_TRANSMIT or FI_RECV and the flags). The
 * endpoint counts it and refuses to close while it is open. */
int psm2_ep_alias(struct psm2_ep *e, size_t fclass, uint64_t flags, void *context,
		  struct fid **out)
{
	struct psm2_ep *a, *base;
	int ret;

	a = malloc(sizeof(*a));
	if (!a)
		return -FI_ENOMEM;
	*a = *e;
	base = e->base ? e->base : e;
	a->base = base;
	a->aliases = 0;
	a->ep_fid.fid.fclass = fclass;
	a->ep_fid.fid.context = context;
	ret = ep_set_opflags(a, flags);
	if (ret) {
		free(a);
		return ret;
	}
	__atomic_add_fetch(&base->aliases, 1, __ATOMIC_ACQ_REL);
	*out = &a->ep_fid.fid;
	return 0;
}

/* ---- fi_ops ---- */

static int ep_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_ep *e = ep_of(fid);

	if (!e)
		return -FI_EINVAL;
	if (e->base) {
		/* An alias: only the struct is its own. The last fid of a
		 * scalable endpoint's context lets go of what was bound to
		 * it (provider/sep.go). */
		struct psm2_ep *base = e->base;
		int ctx = fid->fclass == FI_CLASS_TX_CTX || fid->fclass == FI_CLASS_RX_CTX;

		psm2_retire(&e->ep_fid.fid, sizeof(struct fid_ep), sizeof(*e));
		if (__atomic_sub_fetch(&base->aliases, 1, __ATOMIC_ACQ_REL) == 0 && ctx)
			return psm2go_ep_release_ctx(base);
		return 0;
	}
	if (__atomic_load_n(&e->aliases, __ATOMIC_ACQUIRE) > 0)
		return -FI_EBUSY;
	return psm2go_ep_close(e);
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_ep *e = ep_of(fid);
	void *h;

	if (!e || !bfid)
		return -FI_EINVAL;
	/* Binding an MR to the endpoint is the MR's bind, as in psm2. */
	if (bfid->fclass == FI_CLASS_MR) {
		if (!psm2_fid_handle(bfid))
			return -FI_EINVAL;
		return bfid->ops->bind(bfid, fid, flags);
	}
	switch (bfid->fclass) {
	case FI_CLASS_AV:
	case FI_CLASS_CQ:
	case FI_CLASS_CNTR:
	case FI_CLASS_EQ:
	case FI_CLASS_STX_CTX:
		break;
	default:
		return -FI_EINVAL;
	}
	if (!(h = psm2_fid_handle(bfid)))
		return -FI_EINVAL;
	return psm2go_ep_bind(e, h, flags);
}

/* psm2_ep_set_flags: FI_TRANSMIT or FI_RECV says which flags to set (both:
 * EINVAL, neither: nothing changes). */
static int ep_set_opflags(struct psm2_ep *e, uint64_t flags)
{
	uint64_t real = flags & ~(FI_TRANSMIT | FI_RECV);

	if ((flags & FI_TRANSMIT) && (flags & FI_RECV))
		return -FI_EINVAL;
	if (flags & FI_TRANSMIT)
		e->tx_op_flags = real;
	else if (flags & FI_RECV)
		e->rx_op_flags = real;
	else
		return 0;
	if (!e->base)
		psm2go_ep_set_opflags(e, e->tx_op_flags, e->rx_op_flags);
	return 0;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_ep *e = ep_of(fid);
	struct fi_alias *alias;
	uint64_t *flags;

	if (!e)
		return -FI_EINVAL;
	switch (command) {
	case FI_GETOPSFLAG:
		flags = arg;
		if (!flags)
			return -FI_EINVAL;
		if ((*flags & FI_TRANSMIT) && (*flags & FI_RECV))
			return -FI_EINVAL;
		if (*flags & FI_TRANSMIT)
			*flags = e->tx_op_flags;
		else if (*flags & FI_RECV)
			*flags = e->rx_op_flags;
		else
			return -FI_EINVAL;
		return 0;
	case FI_SETOPSFLAG:
		flags = arg;
		if (!flags)
			return -FI_EINVAL;
		return ep_set_opflags(e, *flags);
	case FI_ALIAS:
		alias = arg;
		if (!alias || !alias->fid)
			return -FI_EINVAL;
		return psm2_ep_alias(e, e->ep_fid.fid.fclass, alias->flags,
				     e->ep_fid.fid.context, alias->fid);
	case FI_ENABLE:
		/* A context's role: its endpoint is enabled with its
		 * last opened role (provider/sep.go). */
		if (e->ep_fid.fid.fclass == FI_CLASS_TX_CTX)
			return psm2go_ep_enable_role(e, PSM2_ROLE_TX);
		if (e->ep_fid.fid.fclass == FI_CLASS_RX_CTX)
			return psm2go_ep_enable_role(e, PSM2_ROLE_RX);
		return psm2go_ep_enable(e);
	default:
		return -FI_ENOSYS;
	}
}

struct fi_ops psm2_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

/* ---- fi_ops_ep ---- */

static ssize_t ep_cancel(fid_t fid, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_ep *e = ep_of(fid);

	if (!e)
		return -FI_EINVAL;
	return psm2go_ep_cancel(e, context);
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_ep *e = ep_of(fid);

	if (!e || !optval || !optlen)
		return -FI_EINVAL;
	return psm2go_ep_getopt(e, level, optname, optval, optlen);
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval,
		     size_t optlen)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_ep *e = ep_of(fid);

	if (!e || !optval)
		return -FI_EINVAL;
	return psm2go_ep_setopt(e, level, optname, (void *) optval, optlen);
}

static int ep_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		     struct fid_ep **tx_ep, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) sep; (void) index; (void) attr; (void) tx_ep; (void) context;
	return -FI_ENOSYS;
}

static int ep_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) sep; (void) index; (void) attr; (void) rx_ep; (void) context;
	return -FI_ENOSYS;
}

static ssize_t ep_rx_size_left(struct fid_ep *ep)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return psm2go_ep_size_left(EP(ep)->slot, 0);
}

static ssize_t ep_tx_size_left(struct fid_ep *ep)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return psm2go_ep_size_left(EP(ep)->slot, 1);
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = ep_tx_ctx,
	.rx_ctx = ep_rx_ctx,
	.rx_size_left = ep_rx_size_left,
	.tx_size_left = ep_tx_size_left,
};

/* ---- fi_ops_cm ---- */

static int cm_setname(fid_t fid, void *addr, size_t addrlen)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_ep *e = ep_of(fid);

	if (!e || !addr)
		return -FI_EINVAL;
	return psm2go_ep_setname(e, addr, addrlen);
}

static int cm_getname(fid_t fid, void *addr, size_t *addrlen)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_ep *e = ep_of(fid);

	if (!e || !addrlen)
		return -FI_EINVAL;
	return psm2go_ep_getname(e, addr, addrlen);
}

static int cm_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		   struct fid_mc **mc, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!(flags & FI_COLLECTIVE))
		return -FI_ENOSYS;	/* multicast: not offered */
	if (!ep || !addr || !mc)
		return -FI_EINVAL;
	return psm2_join_collective((struct psm2_ep *) ep, addr, mc, context);
}

static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = cm_setname,
	.getname = cm_getname,
	.getpeer = psm2_no_getpeer,
	.connect = psm2_no_connect,
	.listen = psm2_no_listen,
	.accept = psm2_no_accept,
	.reject = psm2_no_reject,
	.shutdown = psm2_no_shutdown,
	.join = cm_join,
};

/* ---- fi_ops_msg ---- */

static ssize_t msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	(void) desc;
	if (psm2_fast_recv(EP(ep)->fast, buf, len, src_addr, 0, 0, context,
			   EP(ep)->rx_op_flags | FI_MSG) == PSM2_FAST_DONE)
		return 0;
	return psm2go_ep_recv(EP(ep)->slot, &iov, 1, src_addr, 0, 0, context,
			      EP(ep)->rx_op_flags | FI_MSG);
}

static ssize_t msg_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t src_addr, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc;
	return psm2go_ep_recv(EP(ep)->slot, (struct iovec *) iov, count, src_addr, 0, 0,
			      context, EP(ep)->rx_op_flags | FI_MSG);
}

static ssize_t msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!msg)
		return -FI_EINVAL;
	return psm2go_ep_recv(EP(ep)->slot, (struct iovec *) msg->msg_iov, msg->iov_count,
			      msg->addr, 0, 0, msg->context, flags | FI_MSG);
}

static ssize_t msg_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			fi_addr_t dest_addr, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	(void) desc;
	if (psm2_fast_send(EP(ep)->fast, buf, len, dest_addr, 0, 0, 0, 0, context,
			   EP(ep)->tx_op_flags | FI_MSG) == PSM2_FAST_DONE)
		return 0;
	return psm2go_ep_send(EP(ep)->slot, &iov, 1, dest_addr, 0, 0, context,
			      EP(ep)->tx_op_flags | FI_MSG);
}

static ssize_t msg_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t dest_addr, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc;
	return psm2go_ep_send(EP(ep)->slot, (struct iovec *) iov, count, dest_addr, 0, 0,
			      context, EP(ep)->tx_op_flags | FI_MSG);
}

static ssize_t msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!msg)
		return -FI_EINVAL;
	return psm2go_ep_send(EP(ep)->slot, (struct iovec *) msg->msg_iov, msg->iov_count,
			      msg->addr, 0, msg->data, msg->context, flags | FI_MSG);
}

static ssize_t msg_inject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest_addr)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	if (psm2_fast_send(EP(ep)->fast, buf, len, dest_addr, 0, 0, 0, 0, NULL, FI_INJECT | PSM2_NO_COMPLETION) == PSM2_FAST_DONE)
		return 0;
	return psm2go_ep_send(EP(ep)->slot, &iov, 1, dest_addr, 0, 0, NULL,
			      INJECT_FLAGS(EP(ep)->tx_op_flags | FI_MSG));
}

static ssize_t msg_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest_addr, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	(void) desc;
	if (psm2_fast_send(EP(ep)->fast, buf, len, dest_addr, 0, 0, 1, data, context,
			   EP(ep)->tx_op_flags | FI_MSG | FI_REMOTE_CQ_DATA) == PSM2_FAST_DONE)
		return 0;
	return psm2go_ep_send(EP(ep)->slot, &iov, 1, dest_addr, 0, data, context,
			      EP(ep)->tx_op_flags | FI_MSG | FI_REMOTE_CQ_DATA);
}

static ssize_t msg_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	if (psm2_fast_send(EP(ep)->fast, buf, len, dest_addr, 0, 0, 1, data, NULL, FI_INJECT | PSM2_NO_COMPLETION) == PSM2_FAST_DONE)
		return 0;
	return psm2go_ep_send(EP(ep)->slot, &iov, 1, dest_addr, 0, data, NULL,
			      INJECT_FLAGS(EP(ep)->tx_op_flags | FI_MSG | FI_REMOTE_CQ_DATA));
}

static struct fi_ops_msg ep_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = msg_recv,
	.recvv = msg_recvv,
	.recvmsg = msg_recvmsg,
	.send = msg_send,
	.sendv = msg_sendv,
	.sendmsg = msg_sendmsg,
	.inject = msg_inject,
	.senddata = msg_senddata,
	.injectdata = msg_injectdata,
};

/* ---- fi_ops_tagged ---- */

static ssize_t tagged_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			   fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			   void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	(void) desc;
	if (psm2_fast_recv(EP(ep)->fast, buf, len, src_addr, tag, ignore, context,
			   EP(ep)->rx_op_flags | FI_TAGGED) == PSM2_FAST_DONE)
		return 0;
	return psm2go_ep_recv(EP(ep)->slot, &iov, 1, src_addr, tag, ignore, context,
			      EP(ep)->rx_op_flags | FI_TAGGED);
}

static ssize_t tagged_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			    size_t count, fi_addr_t src_addr, uint64_t tag,
			    uint64_t ignore, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc;
	return psm2go_ep_recv(EP(ep)->slot, (struct iovec *) iov, count, src_addr, tag,
			      ignore, context, EP(ep)->rx_op_flags | FI_TAGGED);
}

static ssize_t tagged_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			      uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!msg)
		return -FI_EINVAL;
	return psm2go_ep_recv(EP(ep)->slot, (struct iovec *) msg->msg_iov, msg->iov_count,
			      msg->addr, msg->tag, msg->ignore, msg->context,
			      flags | FI_TAGGED);
}

static ssize_t tagged_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			   fi_addr_t dest_addr, uint64_t tag, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	(void) desc;
	if (psm2_fast_send(EP(ep)->fast, buf, len, dest_addr, 1, tag, 0, 0, context,
			   EP(ep)->tx_op_flags | FI_TAGGED) == PSM2_FAST_DONE)
		return 0;
	return psm2go_ep_send(EP(ep)->slot, &iov, 1, dest_addr, tag, 0, context,
			      EP(ep)->tx_op_flags | FI_TAGGED);
}

static ssize_t tagged_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			    size_t count, fi_addr_t dest_addr, uint64_t tag,
			    void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc;
	return psm2go_ep_send(EP(ep)->slot, (struct iovec *) iov, count, dest_addr, tag, 0,
			      context, EP(ep)->tx_op_flags | FI_TAGGED);
}

static ssize_t tagged_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			      uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!msg)
		return -FI_EINVAL;
	return psm2go_ep_send(EP(ep)->slot, (struct iovec *) msg->msg_iov, msg->iov_count,
			      msg->addr, msg->tag, msg->data, msg->context,
			      flags | FI_TAGGED);
}

static ssize_t tagged_inject(struct fid_ep *ep, const void *buf, size_t len,
			     fi_addr_t dest_addr, uint64_t tag)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	if (psm2_fast_send(EP(ep)->fast, buf, len, dest_addr, 1, tag, 0, 0, NULL, FI_INJECT | PSM2_NO_COMPLETION) == PSM2_FAST_DONE)
		return 0;
	return psm2go_ep_send(EP(ep)->slot, &iov, 1, dest_addr, tag, 0, NULL,
			      INJECT_FLAGS(EP(ep)->tx_op_flags | FI_TAGGED));
}

static ssize_t tagged_senddata(struct fid_ep *ep, const void *buf, size_t len,
			       void *desc, uint64_t data, fi_addr_t dest_addr,
			       uint64_t tag, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	(void) desc;
	if (psm2_fast_send(EP(ep)->fast, buf, len, dest_addr, 1, tag, 1, data, context,
			   EP(ep)->tx_op_flags | FI_TAGGED | FI_REMOTE_CQ_DATA) == PSM2_FAST_DONE)
		return 0;
	return psm2go_ep_send(EP(ep)->slot, &iov, 1, dest_addr, tag, data, context,
			      EP(ep)->tx_op_flags | FI_TAGGED | FI_REMOTE_CQ_DATA);
}

static ssize_t tagged_injectdata(struct fid_ep *ep, const void *buf, size_t len,
				 uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	if (psm2_fast_send(EP(ep)->fast, buf, len, dest_addr, 1, tag, 1, data, NULL, FI_INJECT | PSM2_NO_COMPLETION) == PSM2_FAST_DONE)
		return 0;
	return psm2go_ep_send(EP(ep)->slot, &iov, 1, dest_addr, tag, data, NULL,
			      INJECT_FLAGS(EP(ep)->tx_op_flags | FI_TAGGED | FI_REMOTE_CQ_DATA));
}

static struct fi_ops_tagged ep_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = tagged_recv,
	.recvv = tagged_recvv,
	.recvmsg = tagged_recvmsg,
	.send = tagged_send,
	.sendv = tagged_sendv,
	.sendmsg = tagged_sendmsg,
	.inject = tagged_inject,
	.senddata = tagged_senddata,
	.injectdata = tagged_injectdata,
};

/* ---- fi_ops_rma ----
 *
 * Every call goes to Go (provider/rma.go) with FI_RMA and FI_READ or
 * FI_WRITE added to its flags: the fid's transmit op flags, or
 * fi_readmsg/fi_writemsg's; a small read or write of one local segment
 * to a connected shm peer is posted in C instead when it can be
 * (fast/atomic.c: psm2_fast_rma), whichever call made it (rma_fast). The
 * *msg calls take exactly one remote segment (rma_iov_limit is 1). */

#define RMA_READ_FLAGS(e) (EP(e)->tx_op_flags | FI_RMA | FI_READ)
#define RMA_WRITE_FLAGS(e) (EP(e)->tx_op_flags | FI_RMA | FI_WRITE)

/* The flags with which an op may be posted in C: what C's completion
 * (when the target's answer comes, after the bytes landed or were read)
 * honours. Anything else (FI_FENCE, FI_INJECT, FI_REMOTE_CQ_DATA,
 * FI_TRIGGER, ...) is Go's. */
#define RMA_FAST_FLAGS                                                                                       \
	(FI_RMA | FI_READ | FI_WRITE | FI_COMPLETION | FI_MORE | FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | \
	 FI_DELIVERY_COMPLETE)

/* rma_fast posts the read or write of count local segments iov in C if it
 * can: 1 if it did (the caller returns 0). */
static inline int rma_fast(struct fid_ep *ep, int write, const struct iovec *iov, size_t count, fi_addr_t peer,
			   uint64_t addr, uint64_t key, void *context, uint64_t flags)
{
	return count == 1 && iov && !(flags & ~(uint64_t) RMA_FAST_FLAGS) &&
	       psm2_fast_rma(EP(ep)->fast, write, iov[0].iov_base, iov[0].iov_len, peer, addr, key, context, flags) ==
		       PSM2_FAST_DONE;
}

static ssize_t rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, uint64_t addr, uint64_t key, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	(void) desc;
	if (psm2_fast_rma(EP(ep)->fast, 0, buf, len, src_addr, addr, key, context, RMA_READ_FLAGS(ep)) ==
	    PSM2_FAST_DONE)
		return 0;
	return psm2go_ep_rma(EP(ep)->slot, &iov, 1, src_addr, addr, key, 0, context,
			     RMA_READ_FLAGS(ep));
}

static ssize_t rma_readv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t src_addr, uint64_t addr,
			 uint64_t key, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc;
	if (rma_fast(ep, 0, iov, count, src_addr, addr, key, context, RMA_READ_FLAGS(ep)))
		return 0;
	return psm2go_ep_rma(EP(ep)->slot, (struct iovec *) iov, count, src_addr, addr, key, 0,
			     context, RMA_READ_FLAGS(ep));
}

static ssize_t rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!msg || !msg->rma_iov || msg->rma_iov_count != 1)
		return -FI_EINVAL;
	flags = (flags | FI_RMA | FI_READ) & ~FI_WRITE;
	if (rma_fast(ep, 0, msg->msg_iov, msg->iov_count, msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key,
		     msg->context, flags))
		return 0;
	return psm2go_ep_rma(EP(ep)->slot, (struct iovec *) msg->msg_iov, msg->iov_count,
			     msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key, 0,
			     msg->context, flags);
}

static ssize_t rma_write(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			 fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			 void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	(void) desc;
	if (psm2_fast_rma(EP(ep)->fast, 1, (void *) buf, len, dest_addr, addr, key, context, RMA_WRITE_FLAGS(ep)) ==
	    PSM2_FAST_DONE)
		return 0;
	return psm2go_ep_rma(EP(ep)->slot, &iov, 1, dest_addr, addr, key, 0, context,
			     RMA_WRITE_FLAGS(ep));
}

static ssize_t rma_writev(struct fid_ep *ep, const struct iovec *iov, void **desc,
			  size_t count, fi_addr_t dest_addr, uint64_t addr,
			  uint64_t key, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc;
	if (rma_fast(ep, 1, iov, count, dest_addr, addr, key, context, RMA_WRITE_FLAGS(ep)))
		return 0;
	return psm2go_ep_rma(EP(ep)->slot, (struct iovec *) iov, count, dest_addr, addr, key, 0,
			     context, RMA_WRITE_FLAGS(ep));
}

static ssize_t rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!msg || !msg->rma_iov || msg->rma_iov_count != 1)
		return -FI_EINVAL;
	flags = (flags | FI_RMA | FI_WRITE) & ~FI_READ;
	if (rma_fast(ep, 1, msg->msg_iov, msg->iov_count, msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key,
		     msg->context, flags))
		return 0;
	return psm2go_ep_rma(EP(ep)->slot, (struct iovec *) msg->msg_iov, msg->iov_count,
			     msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->data,
			     msg->context, flags);
}

static ssize_t rma_inject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest_addr, uint64_t addr, uint64_t key)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return psm2go_ep_rma(EP(ep)->slot, &iov, 1, dest_addr, addr, key, 0, NULL,
			     INJECT_FLAGS(RMA_WRITE_FLAGS(ep)));
}

static ssize_t rma_writedata(struct fid_ep *ep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest_addr,
			     uint64_t addr, uint64_t key, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	(void) desc;
	return psm2go_ep_rma(EP(ep)->slot, &iov, 1, dest_addr, addr, key, data, context,
			     RMA_WRITE_FLAGS(ep) | FI_REMOTE_CQ_DATA);
}

static ssize_t rma_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr, uint64_t addr,
			      uint64_t key)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return psm2go_ep_rma(EP(ep)->slot, &iov, 1, dest_addr, addr, key, data, NULL,
			     INJECT_FLAGS(RMA_WRITE_FLAGS(ep) | FI_REMOTE_CQ_DATA));
}

static struct fi_ops_rma ep_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read,
	.readv = rma_readv,
	.readmsg = rma_readmsg,
	.write = rma_write,
	.writev = rma_writev,
	.writemsg = rma_writemsg,
	.inject = rma_inject,
	.writedata = rma_writedata,
	.injectdata = rma_injectdata,
};

/* ---- fi_ops_atomic ----
 *
 * Every call goes to Go (provider/atomic.go) with its operand, compare and
 * result struct fi_ioc arrays, the kind (0 atomic, 1 fetch, 2 compare),
 * and FI_ATOMIC with FI_WRITE (atomic) or FI_READ (fetch, compare) added
 * to the flags. The *msg calls take exactly one remote segment. */

#define ATOMIC_WRITE_FLAGS(e) (EP(e)->tx_op_flags | FI_ATOMIC | FI_WRITE)
#define ATOMIC_READ_FLAGS(e) (EP(e)->tx_op_flags | FI_ATOMIC | FI_READ)

static ssize_t atomic_call(struct fid_ep *ep, int kind, const struct fi_ioc *buf, size_t nbuf,
			   const struct fi_ioc *cmp, size_t ncmp, struct fi_ioc *res, size_t nres,
			   fi_addr_t dest, uint64_t addr, uint64_t key, enum fi_datatype datatype,
			   enum fi_op op, void *context, uint64_t flags)
{
	return psm2go_ep_atomic(EP(ep)->slot, kind, (void *) buf, nbuf, (void *) cmp, ncmp, res, nres,
				dest, addr, key, (int) datatype, (int) op, context, flags);
}

static ssize_t atomic_write(struct fid_ep *ep, const void *buf, size_t count,
			    void *desc, fi_addr_t dest_addr, uint64_t addr,
			    uint64_t key, enum fi_datatype datatype, enum fi_op op,
			    void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct fi_ioc ioc = { .addr = (void *) buf, .count = count };

	(void) desc;
	if (psm2_fast_atomic(EP(ep)->fast, RMA_ATOMIC, buf, NULL, count, NULL, dest_addr, addr, key,
			     (int) datatype, (int) op, context, ATOMIC_WRITE_FLAGS(ep)) == PSM2_FAST_DONE)
		return 0;
	return atomic_call(ep, 0, &ioc, 1, NULL, 0, NULL, 0, dest_addr, addr, key, datatype, op,
			   context, ATOMIC_WRITE_FLAGS(ep));
}

static ssize_t atomic_writev(struct fid_ep *ep, const struct fi_ioc *iov,
			     void **desc, size_t count, fi_addr_t dest_addr,
			     uint64_t addr, uint64_t key, enum fi_datatype datatype,
			     enum fi_op op, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc;
	return atomic_call(ep, 0, iov, count, NULL, 0, NULL, 0, dest_addr, addr, key, datatype, op,
			   context, ATOMIC_WRITE_FLAGS(ep));
}

static ssize_t atomic_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			       uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!msg || !msg->rma_iov || msg->rma_iov_count != 1)
		return -FI_EINVAL;
	return atomic_call(ep, 0, msg->msg_iov, msg->iov_count, NULL, 0, NULL, 0, msg->addr,
			   msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->datatype, msg->op,
			   msg->context, (flags | FI_ATOMIC | FI_WRITE) & ~FI_READ);
}

static ssize_t atomic_inject(struct fid_ep *ep, const void *buf, size_t count,
			     fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			     enum fi_datatype datatype, enum fi_op op)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct fi_ioc ioc = { .addr = (void *) buf, .count = count };

	return atomic_call(ep, 0, &ioc, 1, NULL, 0, NULL, 0, dest_addr, addr, key, datatype, op,
			   NULL, INJECT_FLAGS(ATOMIC_WRITE_FLAGS(ep)));
}

static ssize_t atomic_readwrite(struct fid_ep *ep, const void *buf, size_t count,
				void *desc, void *result, void *result_desc,
				fi_addr_t dest_addr, uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct fi_ioc ioc = { .addr = (void *) buf, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	(void) desc; (void) result_desc;
	if (psm2_fast_atomic(EP(ep)->fast, RMA_ATOMIC_FETCH, buf, NULL, count, result, dest_addr, addr, key,
			     (int) datatype, (int) op, context, ATOMIC_READ_FLAGS(ep)) == PSM2_FAST_DONE)
		return 0;
	return atomic_call(ep, 1, &ioc, buf ? 1 : 0, NULL, 0, &res, 1, dest_addr, addr, key,
			   datatype, op, context, ATOMIC_READ_FLAGS(ep));
}

static ssize_t atomic_readwritev(struct fid_ep *ep, const struct fi_ioc *iov,
				 void **desc, size_t count, struct fi_ioc *resultv,
				 void **result_desc, size_t result_count,
				 fi_addr_t dest_addr, uint64_t addr, uint64_t key,
				 enum fi_datatype datatype, enum fi_op op, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc; (void) result_desc;
	return atomic_call(ep, 1, iov, count, NULL, 0, resultv, result_count, dest_addr, addr, key,
			   datatype, op, context, ATOMIC_READ_FLAGS(ep));
}

static ssize_t atomic_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
				   struct fi_ioc *resultv, void **result_desc,
				   size_t result_count, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) result_desc;
	if (!msg || !msg->rma_iov || msg->rma_iov_count != 1)
		return -FI_EINVAL;
	return atomic_call(ep, 1, msg->msg_iov, msg->iov_count, NULL, 0, resultv, result_count,
			   msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->datatype,
			   msg->op, msg->context, (flags | FI_ATOMIC | FI_READ) & ~FI_WRITE);
}

static ssize_t atomic_compwrite(struct fid_ep *ep, const void *buf, size_t count,
				void *desc, const void *compare, void *compare_desc,
				void *result, void *result_desc, fi_addr_t dest_addr,
				uint64_t addr, uint64_t key, enum fi_datatype datatype,
				enum fi_op op, void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct fi_ioc ioc = { .addr = (void *) buf, .count = count };
	struct fi_ioc cmp = { .addr = (void *) compare, .count = count };
	struct fi_ioc res = { .addr = result, .count = count };

	(void) desc; (void) compare_desc; (void) result_desc;
	if (psm2_fast_atomic(EP(ep)->fast, RMA_ATOMIC_COMPARE, buf, compare, count, result, dest_addr, addr, key,
			     (int) datatype, (int) op, context, ATOMIC_READ_FLAGS(ep)) == PSM2_FAST_DONE)
		return 0;
	return atomic_call(ep, 2, &ioc, 1, &cmp, 1, &res, 1, dest_addr, addr, key, datatype, op,
			   context, ATOMIC_READ_FLAGS(ep));
}

static ssize_t atomic_compwritev(struct fid_ep *ep, const struct fi_ioc *iov,
				 void **desc, size_t count, const struct fi_ioc *comparev,
				 void **compare_desc, size_t compare_count,
				 struct fi_ioc *resultv, void **result_desc,
				 size_t result_count, fi_addr_t dest_addr, uint64_t addr,
				 uint64_t key, enum fi_datatype datatype, enum fi_op op,
				 void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) desc; (void) compare_desc; (void) result_desc;
	return atomic_call(ep, 2, iov, count, comparev, compare_count, resultv, result_count,
			   dest_addr, addr, key, datatype, op, context, ATOMIC_READ_FLAGS(ep));
}

static ssize_t atomic_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
				   const struct fi_ioc *comparev, void **compare_desc,
				   size_t compare_count, struct fi_ioc *resultv,
				   void **result_desc, size_t result_count, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) compare_desc; (void) result_desc;
	if (!msg || !msg->rma_iov || msg->rma_iov_count != 1)
		return -FI_EINVAL;
	return atomic_call(ep, 2, msg->msg_iov, msg->iov_count, comparev, compare_count, resultv,
			   result_count, msg->addr, msg->rma_iov[0].addr, msg->rma_iov[0].key,
			   msg->datatype, msg->op, msg->context, (flags | FI_ATOMIC | FI_READ) & ~FI_WRITE);
}

static int atomic_valid_kind(int kind, enum fi_datatype datatype, enum fi_op op, size_t *count)
{
	size_t n = 0;
	int ret = psm2go_atomic_valid(kind, (int) datatype, (int) op, &n);

	if (!ret && count)
		*count = n;
	return ret;
}

static int atomic_writevalid(struct fid_ep *ep, enum fi_datatype datatype,
			     enum fi_op op, size_t *count)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) ep;
	return atomic_valid_kind(0, datatype, op, count);
}

static int atomic_readwritevalid(struct fid_ep *ep, enum fi_datatype datatype,
				 enum fi_op op, size_t *count)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) ep;
	return atomic_valid_kind(1, datatype, op, count);
}

static int atomic_compwritevalid(struct fid_ep *ep, enum fi_datatype datatype,
				 enum fi_op op, size_t *count)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) ep;
	return atomic_valid_kind(2, datatype, op, count);
}

/* psm2_query_atomic is fi_query_atomic (domain.c): the kind by the flags,
 * as psm2: FI_TAGGED is not supported. */
int psm2_query_atomic(enum fi_datatype datatype, enum fi_op op, struct fi_atomic_attr *attr,
		      uint64_t flags)
{
	size_t n = 0;
	int ret;

	if (!attr)
		return -FI_EINVAL;
	if (flags & FI_TAGGED)
		return -FI_EOPNOTSUPP;
	ret = atomic_valid_kind((flags & FI_COMPARE_ATOMIC) ? 2 : (flags & FI_FETCH_ATOMIC) ? 1 : 0,
				datatype, op, &n);
	if (ret)
		return ret;
	attr->count = n;
	attr->size = psm2_datatype_size(datatype);
	return 0;
}

static struct fi_ops_atomic ep_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = atomic_write,
	.writev = atomic_writev,
	.writemsg = atomic_writemsg,
	.inject = atomic_inject,
	.readwrite = atomic_readwrite,
	.readwritev = atomic_readwritev,
	.readwritemsg = atomic_readwritemsg,
	.compwrite = atomic_compwrite,
	.compwritev = atomic_compwritev,
	.compwritemsg = atomic_compwritemsg,
	.writevalid = atomic_writevalid,
	.readwritevalid = atomic_readwritevalid,
	.compwritevalid = atomic_compwritevalid,
};

/* fi_ops_collective: coll.c (psm2_collective_ops). */

