// Package core is the part of libfabric that sits above providers, for
// when this library stands in for libfabric.so.1 itself: the parameter
// registry behind fi_param_define/fi_param_get/fi_getparams, the logging
// configuration (FI_LOG_LEVEL, FI_LOG_PROV, FI_LOG_SUBSYS) and line
// format, and the provider selection of fi_getinfo (FI_PROVIDER, the
// prov_name hint, FI_PROV_ATTR_ONLY, version checks).
//
// When the library is loaded as a DL provider by an installed libfabric,
// that libfabric plays this role and this package is not used.
package core
