#!/usr/bin/env bash
# Runs an MPI program with Open MPI's mpirun on one of three transports:
#
#   scripts/mpirun.sh [--psm2] [mpirun options] program [args]
#       our build/lib/libfabric.so.1 through Open MPI's cm PML and ofi MTL,
#       FI_PROVIDER=psm2 (the default mode)
#   scripts/mpirun.sh --osc [mpirun options] program [args]
#       the psm2 mode plus one-sided MPI over our RMA and atomics: btl ofi
#       on psm2 for osc rdma (needs ranks on more than one host: Open MPI
#       4.1's osc rdma crashes in btl ofi on a single node, whatever the
#       provider; one host uses osc pt2pt over the MTL instead)
#   scripts/mpirun.sh --vader [mpirun options] program [args]
#       the reference: ob1 PML with the self and vader (shared memory) BTLs
#   scripts/mpirun.sh --tcp [mpirun options] program [args]
#       the inter-node reference, what Open MPI uses on Ethernet: ob1 PML
#       with the self, vader (ranks on one host) and tcp BTLs
#   scripts/mpirun.sh --ofi=PROV [mpirun options] program [args]
#       cm/ofi on Debian's own libfabric with provider PROV (tcp works; shm
#       does not, it lacks FI_REMOTE_COMM, which the MTL asks for): a
#       sanity check of the cm/ofi path itself
#
# It adds --allow-run-as-root and --oversubscribe, and --mca
# mpi_yield_when_idle 1 when more ranks are asked for (-np/-n) than there
# are cores or the ranks go to a hostfile's namespace hosts (a spinning
# rank otherwise starves the one it waits for), else 0 (which
# --oversubscribe would turn on). MPIRUN_DRYRUN=1
# prints the command instead of running it. Exit status: mpirun's.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
libdir=$repo/build/lib

mode=psm2
case "${1:-}" in
--psm2) shift ;;
--osc) mode=osc; shift ;;
--vader) mode=vader; shift ;;
--tcp) mode=tcp; shift ;;
--ofi=*) mode=ofi; prov=${1#--ofi=}; shift ;;
-h|--help|"") sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 2 ;;
esac

# How many ranks? (for the yield decision only)
# mpirun's options only: the scan stops at the program, whose own
# options (NetPIPE's -n, the iteration count) are not ours to read.
np=1
hosts=0
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
	case "${args[i]}" in
	-np|-n|--np|-c) np=${args[i+1]:-1}; i=$((i + 1)) ;;
	--hostfile|-hostfile|--machinefile|-machinefile|-H|-host|--host) hosts=1; i=$((i + 1)) ;;
	--mca|-mca|--gmca|-gmca) i=$((i + 2)) ;;
	-x|--map-by|-map-by|--bind-to|-bind-to|--rank-by|-rank-by|-N|--npernode|-npernode|--wdir|-wdir) i=$((i + 1)) ;;
	-*) ;;
	*) break ;;
	esac
done

# Yielding is set either way. On one host, with --oversubscribe, Open MPI
# 4.1 turns mpi_yield_when_idle on by itself, even for 2 ranks on 2 cores,
# and every idle progress loop then calls sched_yield (about 1.5 calls a
# NetPIPE round trip, 40% of the samples in the kernel's scheduler), for
# our library and for the references alike. Across namespace "hosts" (a
# hostfile) it is on: every host believes it has this machine's cores to
# itself, so ranks of different hosts share cores.
cmd=(mpirun --allow-run-as-root --oversubscribe)
if [ "$hosts" = 1 ] || [ "$np" -gt "$(nproc)" ] 2>/dev/null; then
	cmd+=(--mca mpi_yield_when_idle 1)
else
	cmd+=(--mca mpi_yield_when_idle 0)
fi

case $mode in
psm2|osc)
	if [ ! -e "$libdir/libfabric.so.1" ]; then
		echo "mpirun.sh: $libdir/libfabric.so.1 is missing; run make first" >&2
		exit 2
	fi
	# btl ofi would also open our provider (for one-sided MPI); keep the
	# job to the MTL path. provider_include makes the MTL take psm2 only.
	# memory ^patcher: right after fi_getinfo, which starts our Go
	# runtime and its threads, Open MPI 4.1's ofi MTL opens its memory
	# patcher (libfabric's mr_cache import, as fi_version() >= 1.14), which
	# rewrites the first 13 bytes of libc's mmap, munmap, madvise, ... in
	# place, not atomically. A Go thread inside one of them (a new thread's
	# first free() creates a malloc arena with mmap/munmap) then runs half
	# old, half new code: a silent SIGSEGV in MPI_Init, about 1 job in 100.
	# We offer no mr_cache (fi_open answers -FI_ENOSYS): the patcher buys
	# nothing here.
	cmd+=(--mca memory '^patcher')
	btl=('^ofi')
	if [ $mode = osc ]; then
		btl=(ofi,self --mca btl_ofi_provider_include psm2 --mca osc rdma --mca osc_rdma_btls ofi)
	fi
	cmd+=(--mca pml cm --mca mtl ofi --mca btl "${btl[@]}"
	      --mca mtl_ofi_provider_include psm2
	      -x FI_PROVIDER=psm2
	      -x "LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
	;;
vader)
	cmd+=(--mca pml ob1 --mca btl self,vader)
	;;
tcp)
	cmd+=(--mca pml ob1 --mca btl self,vader,tcp)
	;;
ofi)
	# Open MPI's default mtl_ofi_provider_exclude is
	# "shm,sockets,tcp,udp,rstream,usnic"; provider_include replaces it.
	# LD_LIBRARY_PATH must not point at our build here.
	cmd+=(--mca pml cm --mca mtl ofi --mca btl '^ofi'
	      --mca mtl_ofi_provider_include "$prov"
	      -x "FI_PROVIDER=$prov")
	if [ -n "${LD_LIBRARY_PATH:-}" ]; then
		cleaned=$(tr ':' '\n' <<<"$LD_LIBRARY_PATH" | grep -vxF "$libdir" | paste -sd: -)
		if [ -n "$cleaned" ]; then
			export LD_LIBRARY_PATH=$cleaned
		else
			unset LD_LIBRARY_PATH
		fi
	fi
	;;
esac

cmd+=("$@")
if [ "${MPIRUN_DRYRUN:-0}" = 1 ]; then
	printf '%q ' "${cmd[@]}"
	echo
	exit 0
fi
exec "${cmd[@]}"
