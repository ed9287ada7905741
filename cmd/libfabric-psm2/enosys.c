/* enosys.c: what an ops slot we do not implement answers. */
#include "shim.h"

int psm2_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void) fid; (void) bfid; (void) flags;
	return -FI_ENOSYS;
}

int psm2_no_control(struct fid *fid, int command, void *arg)
{
	(void) fid; (void) command; (void) arg;
	return -FI_ENOSYS;
}

int psm2_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context)
{
	(void) fid; (void) name; (void) flags; (void) ops; (void) context;
	return -FI_ENOSYS;
}

int psm2_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context)
{
	(void) fid; (void) name; (void) flags; (void) ops; (void) context;
	return -FI_ENOSYS;
}

/* The connection-management calls of an RDM endpoint (ep.c, sep.c):
 * not offered. */
int psm2_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) ep; (void) addr; (void) addrlen;
	return -FI_ENOSYS;
}

int psm2_no_connect(struct fid_ep *ep, const void *addr, const void *param,
		    size_t paramlen)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) ep; (void) addr; (void) param; (void) paramlen;
	return -FI_ENOSYS;
}

int psm2_no_listen(struct fid_pep *pep)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) pep;
	return -FI_ENOSYS;
}

int psm2_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) ep; (void) param; (void) paramlen;
	return -FI_ENOSYS;
}

int psm2_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		   size_t paramlen)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) pep; (void) handle; (void) param; (void) paramlen;
	return -FI_ENOSYS;
}

int psm2_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	(void) ep; (void) flags;
	return -FI_ENOSYS;
}

void psm2_strncat(char *buf, size_t len, const char *s)
{
	size_t used, n;

	if (!buf || !len)
		return;
	used = strnlen(buf, len);
	if (used >= len - 1) {
		buf[len - 1] = '\0';
		return;
	}
	n = strlen(s);
	if (n > len - 1 - used)
		n = len - 1 - used;
	memcpy(buf + used, s, n);
	buf[used + n] = '\0';
}
