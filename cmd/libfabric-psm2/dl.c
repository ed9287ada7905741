//go:build dl

/* dl.c: the provider-plugin link mode. An installed libfabric dlopens
 * libpsm2-fi.so from FI_PROVIDER_PATH and calls fi_prov_ini; parameters and
 * logging then go through that libfabric. */
#include "shim.h"
#include "_cgo_export.h"

static int dl_getinfo(uint32_t version, const char *node, const char *service,
		      uint64_t flags, const struct fi_info *hints,
		      struct fi_info **info)
{
	if (!info)
		return -FI_EINVAL;
	*info = NULL;
	return psm2go_dl_getinfo(version, (char *) node, (char *) service, flags,
				 (struct fi_info *) hints, info);
}

static int dl_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context)
{
	return psm2go_dl_fabric(attr, fabric, context);
}

static void dl_cleanup(void)
{
}

static struct fi_provider psm2_dl_prov = {
	.version = FI_VERSION(117, 0),
	.fi_version = FI_VERSION(1, 17),
	.name = "psm2",
	.getinfo = dl_getinfo,
	.fabric = dl_fabric,
	.cleanup = dl_cleanup,
};

__attribute__((visibility("default")))
struct fi_provider *fi_prov_ini(void)
{
	return &psm2_dl_prov;
}

void psm2_dl_param_define(const char *name, int type, const char *help)
{
	fi_param_define(&psm2_dl_prov, name, (enum fi_param_type) type, "%s", help);
}

int psm2_dl_log_enabled(int level, int subsys)
{
	return fi_log_enabled(&psm2_dl_prov, (enum fi_log_level) level,
			      (enum fi_log_subsys) subsys);
}

void psm2_dl_log(int level, int subsys, const char *func, int line, const char *msg)
{
	fi_log(&psm2_dl_prov, (enum fi_log_level) level, (enum fi_log_subsys) subsys,
	       func, line, "%s", msg);
}
