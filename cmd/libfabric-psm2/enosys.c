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
