package main

/*
#cgo CFLAGS: -I${SRCDIR}/../../include -O2 -Wall -Wno-unused-function
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import _ "github.com/gopsm2/libfabric-psm2/cmd/libfabric-psm2/fast"

func main() {}
