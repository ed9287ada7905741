/* retire.c: what happens to an object's struct when it is closed.
 *
 * A closed struct is not freed at once. Its fid's ops are pointed at a
 * table whose every entry fails with -FI_EINVAL, its private part (the Go
 * handle, slot and fast-path pages that follow the libfabric fid struct)
 * is zeroed, and it waits in a FIFO of the last RETIRED_MAX closed
 * structs before it goes back to malloc. An application that closes an
 * object twice, or uses one it closed, in the meantime gets -FI_EINVAL
 * (every ops function checks the ops table, or resolves the zeroed handle
 * or slot to nothing) instead of reading freed memory. Nothing can make a
 * use after the FIFO has moved on safe; the FIFO makes it unlikely. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"

#define RETIRED_MAX 1024

static int closed_close(struct fid *fid)
{
	(void) fid;
	return -FI_EINVAL;
}

static int closed_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void) fid, (void) bfid, (void) flags;
	return -FI_EINVAL;
}

static int closed_control(struct fid *fid, int command, void *arg)
{
	(void) fid, (void) command, (void) arg;
	return -FI_EINVAL;
}

static int closed_ops_open(struct fid *fid, const char *name, uint64_t flags,
			   void **ops, void *context)
{
	(void) fid, (void) name, (void) flags, (void) ops, (void) context;
	return -FI_EINVAL;
}

static int closed_tostr(const struct fid *fid, char *buf, size_t len)
{
	(void) fid, (void) buf, (void) len;
	return -FI_EINVAL;
}

static int closed_ops_set(struct fid *fid, const char *name, uint64_t flags,
			  void *ops, void *context)
{
	(void) fid, (void) name, (void) flags, (void) ops, (void) context;
	return -FI_EINVAL;
}

struct fi_ops psm2_closed_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = closed_close,
	.bind = closed_bind,
	.control = closed_control,
	.ops_open = closed_ops_open,
	.tostr = closed_tostr,
	.ops_set = closed_ops_set,
};

static pthread_mutex_t retired_lock = PTHREAD_MUTEX_INITIALIZER;
static void *retired[RETIRED_MAX];
static unsigned retired_next;

void psm2_retire(struct fid *fid, size_t keep, size_t size)
{
	void *old;

	if (!fid)
		return;
	fid->ops = &psm2_closed_fi_ops;
	if (size > keep)
		memset((char *) fid + keep, 0, size - keep);
	pthread_mutex_lock(&retired_lock);
	old = retired[retired_next];
	retired[retired_next] = fid;
	retired_next = (retired_next + 1) % RETIRED_MAX;
	pthread_mutex_unlock(&retired_lock);
	free(old);
}
