/*
 * providers/fi_log.h: provider logging through the libfabric core
 * (FI_LOG_LEVEL / FI_LOG_PROV / FI_LOG_SUBSYS filtering is done there).
 *
 * Matches the libfabric 1.17 ABI; written for the libfabric-psm2 project.
 */
#ifndef FI_LOG_H
#define FI_LOG_H

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Subsystem a message belongs to. */
enum fi_log_subsys {
	FI_LOG_CORE = 0,
	FI_LOG_FABRIC = 1,
	FI_LOG_DOMAIN = 2,
	FI_LOG_EP_CTRL = 3,
	FI_LOG_EP_DATA = 4,
	FI_LOG_AV = 5,
	FI_LOG_CQ = 6,
	FI_LOG_EQ = 7,
	FI_LOG_MR = 8,
	FI_LOG_CNTR = 9,
	FI_LOG_SUBSYS_MAX = 10
};

/* Severity, most to least important (note TRACE sits above INFO). */
enum fi_log_level {
	FI_LOG_WARN = 0,
	FI_LOG_TRACE = 1,
	FI_LOG_INFO = 2,
	FI_LOG_DEBUG = 3,
	FI_LOG_MAX = 4
};

/* Is output for (prov, level, subsys) switched on? */
int fi_log_enabled(const struct fi_provider *prov, enum fi_log_level level,
		   enum fi_log_subsys subsys);
/* As fi_log_enabled(), but rate-limited through the caller's *showtime. */
int fi_log_ready(const struct fi_provider *prov, enum fi_log_level level,
		 enum fi_log_subsys subsys, uint64_t *showtime);
/* Emit one message; func/line name the call site. */
void fi_log(const struct fi_provider *prov, enum fi_log_level level,
	    enum fi_log_subsys subsys, const char *func, int line,
	    const char *fmt, ...) FI_FORMAT_PRINTF(6, 7);

/*
 * The macros below check the filter first so the arguments are evaluated
 * only when the message will be printed, and they leave errno untouched.
 */
#define FI_LOG(prov, level, subsystem, ...) \
	do { \
		if (fi_log_enabled(prov, level, subsystem)) { \
			int saved_errno = errno; \
			fi_log(prov, level, subsystem, \
			       __func__, __LINE__, __VA_ARGS__); \
			errno = saved_errno; \
		} \
	} while (0)

/* Rate-limited: each call site keeps its own timestamp. */
#define FI_LOG_SPARSE(prov, level, subsystem, ...) \
	do { \
		static uint64_t showtime; \
		if (fi_log_ready(prov, level, subsystem, &showtime)) { \
			int saved_errno = errno; \
			fi_log(prov, level, subsystem, \
			       __func__, __LINE__, __VA_ARGS__); \
			errno = saved_errno; \
		} \
	} while (0)

#define FI_WARN(prov, subsystem, ...) \
	FI_LOG(prov, FI_LOG_WARN, subsystem, __VA_ARGS__)
#define FI_WARN_SPARSE(prov, subsystem, ...) \
	FI_LOG_SPARSE(prov, FI_LOG_WARN, subsystem, __VA_ARGS__)
#define FI_TRACE(prov, subsystem, ...) \
	FI_LOG(prov, FI_LOG_TRACE, subsystem, __VA_ARGS__)
#define FI_INFO(prov, subsystem, ...) \
	FI_LOG(prov, FI_LOG_INFO, subsystem, __VA_ARGS__)

/* Debug output exists only in builds with ENABLE_DEBUG set non-zero. */
#if defined(ENABLE_DEBUG) && ENABLE_DEBUG
#define FI_DBG(prov, subsystem, ...) \
	FI_LOG(prov, FI_LOG_DEBUG, subsystem, __VA_ARGS__)
#define FI_DBG_TRACE(prov, subsystem, ...) \
	FI_LOG(prov, FI_LOG_TRACE, subsystem, __VA_ARGS__)
#else
#define FI_DBG(prov_name, subsystem, ...) do {} while (0)
#define FI_DBG_TRACE(prov, subsystem, ...) do {} while (0)
#endif

/* Printed at most once per call site (and only if warnings are on). */
#define FI_WARN_ONCE(prov, subsystem, ...) \
	do { \
		static int warned = 0; \
		if (!warned && \
		    fi_log_enabled(prov, FI_LOG_WARN, subsystem)) { \
			int saved_errno = errno; \
			fi_log(prov, FI_LOG_WARN, subsystem, \
			       __func__, __LINE__, __VA_ARGS__); \
			warned = 1; \
			errno = saved_errno; \
		} \
	} while (0)

#ifdef __cplusplus
}
#endif

#endif /* FI_LOG_H */
