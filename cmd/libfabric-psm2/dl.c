//go:build dl

/* dl.c: the provider-plugin link mode. An installed libfabric dlopens
 * libpsm2-fi.so from FI_PROVIDER_PATH and calls fi_prov_ini; parameters and
 * logging then go through that libfabric. */
#include <string.h>
#include <strings.h>
#include <stdlib.h>
#include "shim.h"
#include "_cgo_export.h"

static int dl_getinfo(uint32_t version, const char *node, const char *service,
		      uint64_t flags, const struct fi_info *hints,
		      struct fi_info **info)
{
	if (!info)
		return -FI_EINVAL;
	*info = NULL;
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
	return psm2go_dl_getinfo(version, (char *) node, (char *) service, flags,
				 (struct fi_info *) hints, info);
}

static int dl_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context)
{
	PSM2_FORK_GUARD(-FI_EOPNOTSUPP);
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

static int psm2_names_psm2(const char *p, const char *end)
{
	for (; end - p >= 4; p++)
		if (!strncasecmp(p, "psm2", 4))
			return 1;
	return 0;
}

/* Whether FI_PROVIDER (a list of names, or ^list to exclude) leaves psm2
 * out, in which case the host libfabric would only unload us again. */
static int psm2_dl_filtered_out(void)
{
	const char *f = getenv("FI_PROVIDER");
	int exclude = 0, found = 0;
	const char *p, *end;

	if (!f || !*f)
		return 0;
	if (*f == '^') {
		exclude = 1;
		f++;
	}
	for (p = f; *p; p = *end ? end + 1 : end) {
		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		/* Excluded only by name; kept by any entry that names psm2,
		 * layered ones included. */
		if (exclude ? (end - p == 4 && !strncasecmp(p, "psm2", 4))
			    : psm2_names_psm2(p, end))
			found = 1;
	}
	return exclude ? found : !found;
}

/* The host libfabric calls this for every provider it finds, whether or
 * not the application will ask for psm2. The Go runtime starts here only
 * when FI_PROVIDER lets psm2 be chosen: the provider's parameters must be
 * defined now, and they are defined in Go. */
__attribute__((visibility("default")))
struct fi_provider *fi_prov_ini(void)
{
	if (psm2_dl_filtered_out())
		return NULL;
	if (psm2_go_enter(__func__))
		return NULL;
	psm2go_dl_init();
	return &psm2_dl_prov;
}

int psm2_log_warn_enabled(void)
{
	return fi_log_enabled(&psm2_dl_prov, FI_LOG_WARN, FI_LOG_CORE);
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
