#!/usr/bin/env bash
# Runs an MPI program with the MPICH that scripts/mpich.sh built (ch4:ofi
# netmod, no MPICH shared-memory module), on our build/lib/libfabric.so.1
# with FI_PROVIDER=psm2:
#
#   scripts/mpichrun.sh [mpiexec options] program [args]
#   scripts/mpichrun.sh --mpicc [mpicc options]     MPICH's compiler wrapper
#   scripts/mpichrun.sh --have                      exit 0 if the build exists
#
# MPICH_DIR is where mpich.sh put it (default
# ~/.cache/libfabric-psm2/mpich-4.0.2). Across the namespace hosts, pass
# hydra its launcher: -launcher ssh -launcher-exec nshost/nsrsh -f HOSTFILE
# (multihost.sh does). MPIRUN_DRYRUN=1 prints the command instead.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
libdir=$repo/build/lib
dir=${MPICH_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/libfabric-psm2/mpich-4.0.2}
inst=$dir/inst

case "${1:-}" in
--have) [ -f "$inst/.built" ] && [ -x "$inst/bin/mpiexec" ]; exit ;;
-h|--help|"") sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac
if [ ! -f "$inst/.built" ]; then
	echo "mpichrun.sh: no MPICH build in $dir; run scripts/mpich.sh (make mpich)" >&2
	exit 2
fi
if [ "$1" = --mpicc ]; then
	shift
	exec "$inst/bin/mpicc" "$@"
fi
if [ ! -e "$libdir/libfabric.so.1" ]; then
	echo "mpichrun.sh: $libdir/libfabric.so.1 is missing; run make first" >&2
	exit 2
fi

# FI_PROVIDER=psm2: MPICH 4.0's ch4 takes the provider's name from there
# (our library offers nothing else; it keeps a mix-up with Debian's
# libfabric visible). The environment reaches every rank, local or remote: hydra forwards all
# of it by default.
cmd=("$inst/bin/mpiexec"
     -genv FI_PROVIDER psm2
     -genv LD_LIBRARY_PATH "$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
     "$@")
if [ "${MPIRUN_DRYRUN:-0}" = 1 ]; then
	printf '%q ' "${cmd[@]}"
	echo
	exit 0
fi
exec "${cmd[@]}"
