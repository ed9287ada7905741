/* shim.h: declarations shared by the C side of the libfabric-psm2 shim.
 *
 * The C side is only what the ABI needs: exported entry points, static ops
 * tables and one-line trampolines into Go (psm2go_*). Objects handed to the
 * application are C structs whose first member is the libfabric fid, with
 * the Go handle of the object behind it. */
#ifndef PSM2_SHIM_H
#define PSM2_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_domain.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>

/* fid_fabric plus its Go object. */
struct psm2_fabric {
	struct fid_fabric fabric_fid;
	void *handle;
};

/* Ops tables shared by the link modes. */
extern struct fi_ops psm2_nic_ops;
extern struct fi_ops psm2_fabric_fi_ops;
extern struct fi_ops_fabric psm2_fabric_ops;

/* Stubs for unsupported ops slots. */
int psm2_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int psm2_no_control(struct fid *fid, int command, void *arg);
int psm2_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		     void **ops, void *context);
int psm2_no_ops_set(struct fid *fid, const char *name, uint64_t flags,
		    void *ops, void *context);

/* Info memory, the same in both link modes (malloc'd, freed with free). */
void psm2_freeinfo(struct fi_info *info);
struct fi_info *psm2_dupinfo(const struct fi_info *info);
struct fid_nic *psm2_nic_new(void);
void psm2_nic_free(struct fid_nic *nic);

/* Buffer helper: append s to buf (capacity len), always NUL-terminated. */
void psm2_strncat(char *buf, size_t len, const char *s);

#endif
