//go:build !dl

package main

/*
#include <stdlib.h>
#include <string.h>
#include "shim.h"

extern unsigned int psm2_log_levels, psm2_log_subsys, psm2_log_interval_ms;
extern int psm2_log_prov_filtered_psm2;
*/
import "C"

import (
	"strings"
	"unsafe"

	"github.com/gopsm2/libfabric-psm2/internal/core"
	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/provider"
	"github.com/gopsm2/libfabric-psm2/provider/getinfo"
)

// In the standalone link mode this library is libfabric.so.1: our core
// answers the fi_* calls, with the psm2 provider as its only provider.

type library struct {
	core *core.Core
	prov *provider.Provider
}

var lib = newLibrary()

func newLibrary() *library {
	c := core.New(cGetenv)
	l := &library{core: c}
	l.prov = provider.New(coreHost{c})
	levels, subsys := c.LogMasks()
	C.psm2_log_levels = C.uint(levels)
	C.psm2_log_subsys = C.uint(subsys)
	C.psm2_log_interval_ms = C.uint(c.LogInterval().Milliseconds())
	if c.ProvLogFiltered(getinfo.ProvName) {
		C.psm2_log_prov_filtered_psm2 = 1
	}
	return l
}

// coreHost serves the provider from our own core.
type coreHost struct{ c *core.Core }

func (h coreHost) DefineParam(name string, typ provider.ParamType, help string) {
	h.c.Define(getinfo.ProvName, name, typ, help)
}
func (h coreHost) Getenv(name string) (string, bool) { return h.c.Getenv(name) }
func (h coreHost) LogEnabled(level fi.LogLevel, subsys fi.LogSubsys) bool {
	return h.c.LogEnabled(getinfo.ProvName, level, subsys)
}
func (h coreHost) Log(level fi.LogLevel, subsys fi.LogSubsys, fn string, line int, msg string) {
	h.c.Log(getinfo.ProvName, level, subsys, fn, line, msg)
}

//export psm2go_init
func psm2go_init() {
	defer guardVoid("psm2go_init")
	// Nothing to do: calling any export waits for the Go runtime and the
	// package initialisation, which set the C-side log configuration.
	_ = lib
}

//export psm2go_getinfo
func psm2go_getinfo(version C.uint32_t, node, service *C.char, flags C.uint64_t,
	hints *C.struct_fi_info, out **C.struct_fi_info) (ret C.int) {
	defer guardInt(&ret, "psm2go_getinfo")
	infos, err := lib.core.GetInfo([]core.Provider{lib.prov}, uint32(version),
		goStr(node), goStr(service), uint64(flags), infoFromC(hints))
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

//export psm2go_core_fabric
func psm2go_core_fabric(attr *C.struct_fi_fabric_attr, out **C.struct_fid_fabric, context unsafe.Pointer) (ret C.int) {
	defer guardInt(&ret, "psm2go_core_fabric")
	if attr == nil || out == nil || attr.prov_name == nil || attr.name == nil {
		return -C.int(fi.EINVAL)
	}
	// A layered name "core;util" selects by its last component.
	name := goStr(attr.prov_name)
	if i := strings.LastIndexByte(name, ';'); i >= 0 {
		name = name[i+1:]
	}
	if !strings.EqualFold(name, getinfo.ProvName) {
		return -C.int(fi.ENODATA)
	}
	return openFabric(attr, out, context)
}

//export psm2go_param_define
func psm2go_param_define(prov, name *C.char, typ C.int, help *C.char) (ret C.int) {
	defer guardInt(&ret, "psm2go_param_define")
	if err := lib.core.Define(goStr(prov), goStr(name), fi.ParamType(typ), goStr(help)); err != nil {
		return -C.int(fi.ToErrno(err))
	}
	return 0
}

// psm2go_param_lookup finds a defined parameter and writes its environment
// variable name into env (capacity envlen) and its type into typ.
//
//export psm2go_param_lookup
func psm2go_param_lookup(prov, name *C.char, env *C.char, envlen C.size_t, typ *C.int) (ret C.int) {
	defer guardInt(&ret, "psm2go_param_lookup")
	p, ok := lib.core.Lookup(goStr(prov), goStr(name))
	if !ok {
		return -C.int(fi.ENOENT)
	}
	if C.size_t(len(p.EnvName)+1) > envlen {
		return -C.int(fi.ETOOSMALL)
	}
	dst := cView(unsafe.Pointer(env), envlen)
	copy(dst, p.EnvName)
	dst[len(p.EnvName)] = 0
	*typ = C.int(p.Type)
	return 0
}

//export psm2go_getparams
func psm2go_getparams(out **C.struct_fi_param, count *C.int) (ret C.int) {
	defer guardInt(&ret, "psm2go_getparams")
	params := lib.core.Params()
	arr := (*C.struct_fi_param)(C.calloc(C.size_t(len(params)+1), C.size_t(unsafe.Sizeof(C.struct_fi_param{}))))
	if arr == nil {
		return -C.int(fi.ENOMEM)
	}
	s := unsafe.Slice(arr, len(params)+1)
	for i, p := range params {
		s[i].name = C.CString(p.EnvName)
		s[i]._type = uint32(p.Type)
		s[i].help_string = C.CString(p.Help)
		if v, ok := cGetenv(p.EnvName); ok {
			s[i].value = C.CString(v)
		}
	}
	*out = arr
	*count = C.int(len(params))
	return 0
}

//export psm2go_log
func psm2go_log(prov *C.char, level, subsys C.int, fn *C.char, line C.int, msg *C.char) {
	defer guardVoid("psm2go_log")
	name := goStr(prov)
	if name == "" {
		name = "core"
	}
	lib.core.Log(name, fi.LogLevel(level), fi.LogSubsys(subsys), goStr(fn), int(line), goStr(msg))
}

//export psm2go_log_prov_filtered
func psm2go_log_prov_filtered(prov *C.char) (ret C.int) {
	defer guardInt(&ret, "psm2go_log_prov_filtered")
	if lib.core.ProvLogFiltered(goStr(prov)) {
		return 1
	}
	return 0
}
