/* eq.c: the event queue fid. */
#include <stdlib.h>
#include "shim.h"
#include "_cgo_export.h"

extern struct fi_ops psm2_eq_fi_ops;
extern struct fi_ops_eq psm2_eq_ops;

struct psm2_eq *psm2_eq_new(void *context, uint32_t api_version)
{
	struct psm2_eq *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->eq_fid.fid.fclass = FI_CLASS_EQ;
	e->eq_fid.fid.context = context;
	e->eq_fid.fid.ops = &psm2_eq_fi_ops;
	e->eq_fid.ops = &psm2_eq_ops;
	e->api_version = api_version;
	return e;
}

static ssize_t eq_read(struct fid_eq *eq, uint32_t *event, void *buf,
		       size_t len, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!eq || (!buf && len))
		return -FI_EINVAL;
	return psm2go_eq_read((struct psm2_eq *) eq, event, buf, len, flags, 0, 0);
}

static ssize_t eq_sread(struct fid_eq *eq, uint32_t *event, void *buf,
			size_t len, int timeout, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!eq || (!buf && len))
		return -FI_EINVAL;
	return psm2go_eq_read((struct psm2_eq *) eq, event, buf, len, flags, timeout, 1);
}

static ssize_t eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf,
			  uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!eq || !buf)
		return -FI_EINVAL;
	return psm2go_eq_readerr((struct psm2_eq *) eq, buf, flags);
}

static ssize_t eq_write(struct fid_eq *eq, uint32_t event, const void *buf,
			size_t len, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!eq || (!buf && len))
		return -FI_EINVAL;
	return psm2go_eq_write((struct psm2_eq *) eq, event, (void *) buf, len, flags);
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno,
			       const void *err_data, char *buf, size_t len)
{
	PSM2_FORK_GUARD(NULL);
	(void) err_data;
	if (!buf || !len)
		buf = psm2_strerror_buf(&len);
	psm2go_eq_strerror((struct psm2_eq *) eq, prov_errno, buf, len);
	return buf;
}

static int eq_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fid)
		return -FI_EINVAL;
	return psm2go_eq_close((struct psm2_eq *) fid);
}

static int eq_control(struct fid *fid, int command, void *arg)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_eq *e = (struct psm2_eq *) fid;
	int32_t obj;
	int fd;

	if (!fid || !arg)
		return -FI_EINVAL;
	switch (command) {
	case FI_GETWAIT:
		fd = psm2go_eq_waitfd(e, &obj);
		return fd < 0 ? fd : psm2_getwait_out(obj, fd, arg);
	case FI_GETWAITOBJ:
		psm2go_eq_waitfd(e, &obj);
		*(enum fi_wait_obj *) arg = (enum fi_wait_obj) obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

struct fi_ops psm2_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = psm2_no_bind,
	.control = eq_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

struct fi_ops_eq psm2_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};
