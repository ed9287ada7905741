/* wait.c: wait sets (opened on the fabric), poll sets (on the domain), and
 * the helpers the blocking objects share. */
#include <stdlib.h>
#include "shim.h"
#include "_cgo_export.h"

extern struct fi_ops psm2_wait_fi_ops, psm2_poll_fi_ops;
extern struct fi_ops_wait psm2_wait_ops;
extern struct fi_ops_poll psm2_poll_ops;

int psm2_getwait_out(int32_t wait_obj, int fd, void *arg)
{
	struct fi_wait_pollfd *pfd;

	if (!arg)
		return -FI_EINVAL;
	if (wait_obj != FI_WAIT_POLLFD) {
		*(int *) arg = fd;
		return 0;
	}
	/* One fd that never changes. */
	pfd = arg;
	pfd->change_index = 1;
	if (pfd->nfds < 1 || !pfd->fd) {
		pfd->nfds = 1;
		return -FI_ETOOSMALL;
	}
	pfd->nfds = 1;
	pfd->fd[0].fd = fd;
	pfd->fd[0].events = POLLIN;
	pfd->fd[0].revents = 0;
	return 0;
}

char *psm2_strerror_buf(size_t *len)
{
	static __thread char buf[256];

	*len = sizeof(buf);
	return buf;
}

/* ---- wait sets ---- */

struct psm2_wait *psm2_wait_new(void)
{
	struct psm2_wait *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->wait_fid.fid.fclass = FI_CLASS_WAIT;
	w->wait_fid.fid.ops = &psm2_wait_fi_ops;
	w->wait_fid.ops = &psm2_wait_ops;
	return w;
}

static int wait_wait(struct fid_wait *waitset, int timeout)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!waitset)
		return -FI_EINVAL;
	return psm2go_wait_wait((struct psm2_wait *) waitset, timeout);
}

static int wait_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fid)
		return -FI_EINVAL;
	return psm2go_wait_close((struct psm2_wait *) fid);
}

static int wait_control(struct fid *fid, int command, void *arg)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_wait *w = (struct psm2_wait *) fid;
	int32_t obj;
	int fd;

	if (!fid || !arg)
		return -FI_EINVAL;
	switch (command) {
	case FI_GETWAIT:
		fd = psm2go_wait_waitfd(w, &obj);
		return fd < 0 ? fd : psm2_getwait_out(obj, fd, arg);
	case FI_GETWAITOBJ:
		psm2go_wait_waitfd(w, &obj);
		*(enum fi_wait_obj *) arg = (enum fi_wait_obj) obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

struct fi_ops psm2_wait_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = wait_close,
	.bind = psm2_no_bind,
	.control = wait_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

struct fi_ops_wait psm2_wait_ops = {
	.size = sizeof(struct fi_ops_wait),
	.wait = wait_wait,
};

/* ---- poll sets ---- */

struct psm2_poll *psm2_poll_new(void)
{
	struct psm2_poll *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->poll_fid.fid.fclass = FI_CLASS_POLL;
	p->poll_fid.fid.ops = &psm2_poll_fi_ops;
	p->poll_fid.ops = &psm2_poll_ops;
	return p;
}

static int poll_poll(struct fid_poll *pollset, void **context, int count)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!pollset || count < 0 || (!context && count))
		return -FI_EINVAL;
	return psm2go_poll_poll((struct psm2_poll *) pollset, context, count);
}

static int poll_add(struct fid_poll *pollset, struct fid *event_fid, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	void *h;

	if (!pollset || !event_fid)
		return -FI_EINVAL;
	/* A domain's poll set holds CQs and counters. */
	if (event_fid->fclass != FI_CLASS_CQ && event_fid->fclass != FI_CLASS_CNTR)
		return -FI_EINVAL;
	if (!(h = psm2_fid_handle(event_fid)))
		return -FI_EINVAL;
	return psm2go_poll_add((struct psm2_poll *) pollset, h, event_fid->context, flags);
}

static int poll_del(struct fid_poll *pollset, struct fid *event_fid, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	void *h;

	if (!pollset || !event_fid || !(h = psm2_fid_handle(event_fid)))
		return -FI_EINVAL;
	return psm2go_poll_del((struct psm2_poll *) pollset, h, flags);
}

static int poll_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fid)
		return -FI_EINVAL;
	return psm2go_poll_close((struct psm2_poll *) fid);
}

struct fi_ops psm2_poll_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = poll_close,
	.bind = psm2_no_bind,
	.control = psm2_no_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

struct fi_ops_poll psm2_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = poll_poll,
	.poll_add = poll_add,
	.poll_del = poll_del,
};
