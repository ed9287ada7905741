#!/usr/bin/env bash
# The demo: Debian's unmodified fi_info loads our libfabric.so.1 and asks
# the psm2 provider what it offers. (It grows into an MPI job once the data
# path lands.)
set -euo pipefail
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$PWD/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

echo "== fi_info -l (Debian's fi_info, our libfabric.so.1)"
fi_info -l
echo
echo "== fi_info -p psm2 -v"
fi_info -p psm2 -v
echo
echo "== fi_info -p psm2 -e (runtime parameters)"
fi_info -e -g FI_PSM2
