/*
 * fi_ext_psm2.h -- psm2-provider extensions (libfabric 1.17 ABI), written
 * for the libfabric-psm2 project.
 *
 * FI_PROV_SPECIFIC comes from <rdma/fabric.h>; include that first.
 */
#ifndef FI_EXT_PSM2_H
#define FI_EXT_PSM2_H

#ifdef __cplusplus
extern "C" {
#endif

/* fi_get_val()/fi_set_val() name understood by psm2 endpoints. */
#define FI_PSM2_DISCONNECT	(1U | FI_PROV_SPECIFIC)

#ifdef __cplusplus
}
#endif

#endif /* FI_EXT_PSM2_H */
