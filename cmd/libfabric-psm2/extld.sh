#!/bin/sh
# extld.sh: the external linker go build runs for libfabric.so.1 and
# libpsm2-fi.so (the Makefile passes -extld). It hides the Go runtime's
# load-time constructor: the .init_array section of go.o, the object
# holding all Go code, becomes psm2_goinit, which the loader does not run;
# start.c runs it on the first call that needs Go (see there for why).
# Everything else goes to the C compiler unchanged.
set -e
for a in "$@"; do
	case $a in
	*/go.o)
		objcopy --rename-section .init_array=psm2_goinit,alloc,load,data,contents "$a"
		if readelf -SW "$a" | grep -q '\.init_array'; then
			echo "extld.sh: $a still has an .init_array section" >&2
			exit 1
		fi
		;;
	esac
done
exec "${CC:-gcc}" "$@"
