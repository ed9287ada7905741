/*
 * providers/fi_prov.h: what a provider exposes to the libfabric core --
 * the provider descriptor, the entry point of a dynamically loaded
 * provider, and access to runtime configuration parameters.
 *
 * Matches the libfabric 1.17 ABI; written for the libfabric-psm2 project.
 */
#ifndef FI_PROV_H
#define FI_PROV_H

#include <rdma/fabric.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * File naming for loadable providers: provider "xyz" is built as
 * libxyz-fi.so and installed in $libdir/libfabric/.
 */
#define FI_LIB_EXTENSION "fi"
#define FI_LIB_SUFFIX FI_LIB_EXTENSION ".so"

/*
 * Entry point of a loadable provider.  The core dlopen()s the library and
 * calls fi_prov_ini(), so the symbol must stay exported.  Usage:
 *
 *	FI_EXT_INI
 *	{
 *		return &my_provider;
 *	}
 */
#define FI_EXT_INI \
	__attribute__((visibility ("default"),EXTERNALLY_VISIBLE)) \
	struct fi_provider* fi_prov_ini(void)

/* Provider descriptor returned by fi_prov_ini(). */
struct fi_provider {
	uint32_t version;	/* provider's own version */
	uint32_t fi_version;	/* libfabric API version it implements */
	struct fi_context context;	/* owned by the core */
	const char *name;
	int (*getinfo)(uint32_t version, const char *node, const char *service,
		       uint64_t flags, const struct fi_info *hints,
		       struct fi_info **info);
	int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context);
	void (*cleanup)(void);
};

/*
 * Configuration parameters.  fi_param_define() registers a parameter
 * (the help text is a printf-style format); fi_param_get() reads its
 * current value -- at present only from the environment.  The typed
 * getters below only add type checking for the value pointer.
 */
int fi_param_define(const struct fi_provider *provider, const char *param_name,
		    enum fi_param_type type, const char *help_string_fmt, ...);
int fi_param_get(struct fi_provider *provider, const char *param_name,
		 void *value);

static inline int fi_param_get_str(struct fi_provider *provider,
				   const char *param_name, char **value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int fi_param_get_int(struct fi_provider *provider,
				   const char *param_name, int *value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int fi_param_get_bool(struct fi_provider *provider,
				    const char *param_name, int *value)
{
	return fi_param_get(provider, param_name, value);
}

static inline int fi_param_get_size_t(struct fi_provider *provider,
				      const char *param_name, size_t *value)
{
	return fi_param_get(provider, param_name, value);
}

#ifdef __cplusplus
}
#endif

#endif /* FI_PROV_H */
