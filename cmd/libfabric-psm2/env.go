package main

/*
#include <stdlib.h>
*/
import "C"

import "unsafe"

// cGetenv reads the C environment, which sees setenv() calls the
// application made after the library loaded (Go's os.Getenv does not).
func cGetenv(name string) (string, bool) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	v := C.getenv(cs)
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}
