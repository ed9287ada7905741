//go:build dl

package main

/*
#include <stdlib.h>
#include "shim.h"

void psm2_dl_param_define(const char *name, int type, const char *help);
int psm2_dl_log_enabled(int level, int subsys);
void psm2_dl_log(int level, int subsys, const char *func, int line, const char *msg);
*/
import "C"

import (
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider"
)

// In the DL link mode an installed libfabric is the core: it selects the
// provider, checks versions and stamps provider names; we answer as the
// psm2 provider only.

type library struct {
	prov *provider.Provider
}

// lib is made by psm2go_dl_init, which fi_prov_ini calls on the host
// libfabric's thread, so the provider's parameters are defined there and
// not from the Go runtime's own start-up thread.
var lib *library

//export psm2go_dl_init
func psm2go_dl_init() {
	defer guardVoid("psm2go_dl_init")
	if lib == nil {
		lib = &library{prov: provider.New(dlHost{})}
	}
}

// dlHost serves the provider from the host libfabric.
type dlHost struct{}

func (dlHost) DefineParam(name string, typ provider.ParamType, help string) {
	cn, ch := C.CString(name), C.CString(help)
	defer C.free(unsafe.Pointer(cn))
	defer C.free(unsafe.Pointer(ch))
	C.psm2_dl_param_define(cn, C.int(typ), ch)
}
func (dlHost) Getenv(name string) (string, bool) { return cGetenv(name) }
func (dlHost) LogEnabled(level fi.LogLevel, subsys fi.LogSubsys) bool {
	return C.psm2_dl_log_enabled(C.int(level), C.int(subsys)) != 0
}
func (dlHost) Log(level fi.LogLevel, subsys fi.LogSubsys, fn string, line int, msg string) {
	cf, cm := C.CString(fn), C.CString(msg)
	defer C.free(unsafe.Pointer(cf))
	defer C.free(unsafe.Pointer(cm))
	C.psm2_dl_log(C.int(level), C.int(subsys), cf, C.int(line), cm)
}

//export psm2go_dl_getinfo
func psm2go_dl_getinfo(version C.uint32_t, node, service *C.char, flags C.uint64_t,
	hints *C.struct_fi_info, out **C.struct_fi_info) (ret C.int) {
	defer guardInt(&ret, "psm2go_dl_getinfo")
	infos, err := lib.prov.GetInfo(uint32(version), goStr(node), goStr(service), uint64(flags), infoFromC(hints))
	if err != nil {
		return -C.int(fi.ToErrno(err))
	}
	head := infoListToC(infos)
	if head == nil {
		return -C.int(fi.ENOMEM)
	}
	*out = head
	return 0
}

//export psm2go_dl_fabric
func psm2go_dl_fabric(attr *C.struct_fi_fabric_attr, out **C.struct_fid_fabric, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_dl_fabric")
	return openFabric(attr, out, context)
}
