/* cntr.c: the counter fid. Reads go to Go by slot. */
#include <stdlib.h>
#include "shim.h"
#include "_cgo_export.h"

extern struct fi_ops psm2_cntr_fi_ops;
extern struct fi_ops_cntr psm2_cntr_ops;

struct psm2_cntr *psm2_cntr_new(void *context, int32_t wait_obj)
{
	struct psm2_cntr *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	c->cntr_fid.fid.context = context;
	c->cntr_fid.fid.ops = &psm2_cntr_fi_ops;
	c->cntr_fid.ops = &psm2_cntr_ops;
	c->wait_obj = wait_obj;
	return c;
}

static uint64_t cntr_read(struct fid_cntr *cntr)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return psm2go_cntr_read(((struct psm2_cntr *) cntr)->slot, 0);
}

static uint64_t cntr_readerr(struct fid_cntr *cntr)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return psm2go_cntr_read(((struct psm2_cntr *) cntr)->slot, 1);
}

enum { CNTR_ADD, CNTR_SET, CNTR_ADDERR, CNTR_SETERR };

static int cntr_add(struct fid_cntr *cntr, uint64_t value)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return psm2go_cntr_update(((struct psm2_cntr *) cntr)->slot, CNTR_ADD, value);
}

static int cntr_set(struct fid_cntr *cntr, uint64_t value)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return psm2go_cntr_update(((struct psm2_cntr *) cntr)->slot, CNTR_SET, value);
}

static int cntr_adderr(struct fid_cntr *cntr, uint64_t value)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return psm2go_cntr_update(((struct psm2_cntr *) cntr)->slot, CNTR_ADDERR, value);
}

static int cntr_seterr(struct fid_cntr *cntr, uint64_t value)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return psm2go_cntr_update(((struct psm2_cntr *) cntr)->slot, CNTR_SETERR, value);
}

static int cntr_wait(struct fid_cntr *cntr, uint64_t threshold, int timeout)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return psm2go_cntr_wait(((struct psm2_cntr *) cntr)->slot, threshold, timeout);
}

static int cntr_close(struct fid *fid)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	if (!fid)
		return -FI_EINVAL;
	return psm2go_cntr_close((struct psm2_cntr *) fid);
}

static int cntr_control(struct fid *fid, int command, void *arg)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	struct psm2_cntr *c = (struct psm2_cntr *) fid;
	int fd;

	if (!fid || !arg)
		return -FI_EINVAL;
	switch (command) {
	case FI_GETWAIT:
		fd = psm2go_cntr_waitfd(c);
		return fd < 0 ? fd : psm2_getwait_out(c->wait_obj, fd, arg);
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *) arg = (enum fi_wait_obj) c->wait_obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

struct fi_ops psm2_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cntr_close,
	.bind = psm2_no_bind,
	.control = cntr_control,
	.ops_open = psm2_no_ops_open,
	.tostr = NULL,
	.ops_set = psm2_no_ops_set,
};

struct fi_ops_cntr psm2_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = cntr_read,
	.readerr = cntr_readerr,
	.add = cntr_add,
	.set = cntr_set,
	.wait = cntr_wait,
	.adderr = cntr_adderr,
	.seterr = cntr_seterr,
};

/* psm2_trigger_cntr reads the struct fi_triggered_context at ctx of a
 * triggered call: its counter (one of ours) and threshold. Only threshold
 * triggers exist in psm2: anything else is -FI_EINVAL. */
int psm2_trigger_cntr(void *ctx, struct psm2_cntr **cntr, uint64_t *threshold)
{
	struct fi_triggered_context *t = ctx;
	struct fid_cntr *c;

	if (!t || t->event_type != FI_TRIGGER_THRESHOLD)
		return -FI_EINVAL;
	c = t->trigger.threshold.cntr;
	if (!c || c->fid.fclass != FI_CLASS_CNTR || c->fid.ops != &psm2_cntr_fi_ops)
		return -FI_EINVAL;
	*cntr = (struct psm2_cntr *) c;
	*threshold = t->trigger.threshold.threshold;
	return 0;
}
