//go:build !dl

/* core.c: the libfabric.so.1 entry points of the standalone link mode.
 * Symbol versions come from libfabric.map. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include "shim.h"
#include "_cgo_export.h"

/* Log configuration, written once by Go before psm2_log_ready is set. */
unsigned int psm2_log_levels, psm2_log_subsys, psm2_log_interval_ms;
int psm2_log_prov_filtered_psm2;
static int psm2_log_ready;

static void log_sync(void)
{
	if (!__atomic_load_n(&psm2_log_ready, __ATOMIC_ACQUIRE)) {
		psm2go_init();
		__atomic_store_n(&psm2_log_ready, 1, __ATOMIC_RELEASE);
	}
}

uint32_t fi_version(void)
{
	return FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
}

int fi_getinfo(uint32_t version, const char *node, const char *service,
	       uint64_t flags, const struct fi_info *hints, struct fi_info **info)
{
	int ret;

	if (!info)
		return -FI_EINVAL;
	*info = NULL;
	if ((ret = psm2_go_enter(__func__)))
		return ret;
	return psm2go_getinfo(version, (char *) node, (char *) service, flags,
			      (struct fi_info *) hints, info);
}

void fi_freeinfo(struct fi_info *info)
{
	psm2_freeinfo(info);
}

struct fi_info *fi_dupinfo(const struct fi_info *info)
{
	return psm2_dupinfo(info);
}

int fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	int ret;

	if ((ret = psm2_go_enter(__func__)))
		return ret;
	return psm2go_core_fabric(attr, fabric, context);
}

int fi_open(uint32_t version, const char *name, void *attr, size_t attr_len,
	    uint64_t flags, struct fid **fid, void *context)
{
	(void) version; (void) attr; (void) attr_len; (void) flags; (void) context;
	if (!name || !fid)
		return -FI_EINVAL;
	/* No named services (mr_cache, logging, ...) are offered. */
	return -FI_ENOSYS;
}

/* libfabric's own error texts, for the codes from FI_ERRNO_OFFSET on. */
static const char *const fabric_errstr[] = {
	"Unspecified error",
	"Provided buffer is too small",
	"Operation not permitted in current state",
	"Error available",
	"Flags not supported",
	"Missing or unavailable event queue",
	"Invalid resource domain",
	"Missing or unavailable completion queue",
	"CRC error",
	"Truncation error",
	"Required key not available",
	"Missing or unavailable address vector",
	"Queue has been overrun",
	"Receiver not ready, no receive buffers available",
};

const char *fi_strerror(int errnum)
{
	if (errnum < 0)
		errnum = -errnum;
	if (errnum < FI_ERRNO_OFFSET)
		return strerror(errnum);
	if (errnum < FI_ERRNO_MAX)
		return fabric_errstr[errnum - FI_ERRNO_OFFSET];
	return fabric_errstr[0];
}

char *fi_tostr_r(char *buf, size_t len, const void *data, enum fi_type datatype)
{
	const struct fid *fid;
	char tmp[32];

	if (!data || !buf || !len)
		return NULL;
	buf[0] = '\0';
	if (datatype == FI_TYPE_FID) {
		fid = data;
		if (FI_CHECK_OP(fid->ops, struct fi_ops, tostr)) {
			fid->ops->tostr(fid, buf, len);
		} else {
			snprintf(tmp, sizeof(tmp), "fid: %p\n", (void *) fid);
			psm2_strncat(buf, len, tmp);
		}
		return buf;
	}
	if (psm2_go_enter(__func__))
		return buf;
	psm2go_tostr(buf, len, (void *) data, datatype);
	return buf;
}

char *fi_tostr(const void *data, enum fi_type datatype)
{
	static char buf[8192];

	return fi_tostr_r(buf, sizeof(buf), data, datatype);
}

int fi_param_define(const struct fi_provider *provider, const char *param_name,
		    enum fi_param_type type, const char *help_string_fmt, ...)
{
	va_list ap;
	char *help = NULL;
	int ret;

	if (!param_name || !help_string_fmt || !*help_string_fmt)
		return -FI_EINVAL;
	va_start(ap, help_string_fmt);
	ret = vasprintf(&help, help_string_fmt, ap);
	va_end(ap);
	if (ret < 0)
		return -FI_ENOMEM;
	if ((ret = psm2_go_enter(__func__))) {
		free(help);
		return ret;
	}
	ret = psm2go_param_define(provider ? (char *) provider->name : NULL,
				  (char *) param_name, type, help);
	free(help);
	return ret;
}

static int parse_bool(const char *s)
{
	if (!strcmp(s, "0") || !strcasecmp(s, "false") || !strcasecmp(s, "no") ||
	    !strcasecmp(s, "off"))
		return 0;
	if (!strcmp(s, "1") || !strcasecmp(s, "true") || !strcasecmp(s, "yes") ||
	    !strcasecmp(s, "on"))
		return 1;
	return -1;
}

int fi_param_get(struct fi_provider *provider, const char *param_name, void *value)
{
	char env[256];
	const char *s;
	int type, ret, b;

	if (!param_name || !value)
		return -FI_EINVAL;
	if ((ret = psm2_go_enter(__func__)))
		return ret;
	ret = psm2go_param_lookup(provider ? (char *) provider->name : NULL,
				  (char *) param_name, env, sizeof(env), &type);
	if (ret)
		return ret;
	s = getenv(env);
	if (!s)
		return -FI_ENODATA;
	switch (type) {
	case FI_PARAM_STRING:
		*(const char **) value = s;
		break;
	case FI_PARAM_INT:
		*(int *) value = (int) strtol(s, NULL, 0);
		break;
	case FI_PARAM_BOOL:
		b = parse_bool(s);
		if (b < 0)
			return -FI_EINVAL;
		*(int *) value = b;
		break;
	case FI_PARAM_SIZE_T:
		*(size_t *) value = (size_t) strtol(s, NULL, 0);
		break;
	default:
		return -FI_EINVAL;
	}
	return 0;
}

int fi_getparams(struct fi_param **params, int *count)
{
	int ret;

	if (!params || !count)
		return -FI_EINVAL;
	if ((ret = psm2_go_enter(__func__)))
		return ret;
	return psm2go_getparams(params, count);
}

void fi_freeparams(struct fi_param *params)
{
	struct fi_param *p;

	if (!params)
		return;
	for (p = params; p->name; p++) {
		free((void *) p->name);
		free((void *) p->help_string);
		free((void *) p->value);
	}
	free(params);
}

int fi_log_enabled(const struct fi_provider *prov, enum fi_log_level level,
		   enum fi_log_subsys subsys)
{
	if (psm2_go_enter(__func__))
		return 0;
	log_sync();
	if ((unsigned) level >= FI_LOG_MAX || (unsigned) subsys >= FI_LOG_SUBSYS_MAX)
		return 0;
	if (!(psm2_log_levels & (1u << level)) || !(psm2_log_subsys & (1u << subsys)))
		return 0;
	if (prov && prov->name)
		return !psm2go_log_prov_filtered((char *) prov->name);
	return 1;
}

/* Whether FI_LOG_LEVEL asks for warnings, read without Go: for the log
 * line of a forked child (start.c). */
int psm2_log_warn_enabled(void)
{
	const char *l = getenv("FI_LOG_LEVEL");

	return l && (!strcasecmp(l, "warn") || !strcasecmp(l, "trace") ||
		     !strcasecmp(l, "info") || !strcasecmp(l, "debug"));
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

int fi_log_ready(const struct fi_provider *prov, enum fi_log_level level,
		 enum fi_log_subsys subsys, uint64_t *showtime)
{
	uint64_t cur;

	if (!showtime || !fi_log_enabled(prov, level, subsys))
		return 0;
	cur = now_ms();
	if (cur >= *showtime) {
		*showtime = cur + psm2_log_interval_ms;
		return 1;
	}
	return 0;
}

void fi_log(const struct fi_provider *prov, enum fi_log_level level,
	    enum fi_log_subsys subsys, const char *func, int line,
	    const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!fmt || psm2_go_enter(__func__))
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	psm2go_log(prov ? (char *) prov->name : NULL, level, subsys,
		   (char *) (func ? func : "?"), line, msg);
}
