#!/usr/bin/env bash
# The demo: unmodified Debian programs on our libfabric.so.1.
#
#  1. fi_info: the psm2 provider, as Debian's fi_info sees it (short).
#  2. An MPI job: NetPIPE (Debian's NPopenmpi), 2 ranks, Open MPI's cm PML
#     and ofi MTL over our psm2 provider (scripts/mpirun.sh), message sizes
#     1 B to 8 MiB, summed up as a table of one-way latency and bandwidth.
#
# scripts/demo.sh --vader runs the same NetPIPE job over Open MPI's own
# shared memory (ob1/vader) instead, for comparison. Any failure, of
# fi_info or of the MPI job, ends the demo with a message and a non-zero
# exit status.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=psm2
[ "${1:-}" = --vader ] && mode=vader
libdir=$PWD/build/lib

die() {
	echo >&2
	echo "DEMO FAILED: $*" >&2
	exit 1
}

[ -e "$libdir/libfabric.so.1" ] || die "$libdir/libfabric.so.1 is missing; run make first"

echo "== fi_info -l (Debian's fi_info on our libfabric.so.1)"
LD_LIBRARY_PATH=$libdir fi_info -l || die "fi_info -l failed"
echo
echo "== fi_info -p psm2 (one line per entry: provider, fabric, domain, endpoint type)"
out=$(LD_LIBRARY_PATH=$libdir fi_info -p psm2) || die "fi_info -p psm2 failed"
awk '/provider:/ {p=$2} /fabric:/ {f=$2} /domain:/ {d=$2} /type:/ {print "   ", p, f, d, $2}' <<<"$out"
echo

work=$(mktemp -d /tmp/psm2-demo.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ $mode = psm2 ]; then
	echo "== NetPIPE: 2 MPI ranks, Open MPI cm/ofi over our psm2 provider (FI_PROVIDER=psm2)"
else
	echo "== NetPIPE: 2 MPI ranks, Open MPI ob1/vader (reference)"
fi
echo "   $(MPIRUN_DRYRUN=1 scripts/mpirun.sh --$mode -np 2 NPopenmpi -u 8388608 -p 0 -o "$work/np.out")"
set +e
timeout "${DEMO_TIMEOUT:-300}" scripts/mpirun.sh --$mode -np 2 NPopenmpi -u 8388608 -p 0 -o "$work/np.out" \
	>"$work/np.log" 2>&1
rc=$?
set -e
if [ $rc -ne 0 ]; then
	echo "--- mpirun output (last 30 lines) ---" >&2
	tail -30 "$work/np.log" >&2
	[ $rc -eq 124 ] && die "the MPI job did not finish within ${DEMO_TIMEOUT:-300} s"
	die "the MPI job (NetPIPE over $mode) exited with status $rc"
fi
if ! awk '$1 == 8388608 { found = 1 } END { exit !found }' "$work/np.out" 2>/dev/null; then
	tail -30 "$work/np.log" >&2
	die "NetPIPE exited 0 but did not report the 8 MiB result"
fi

# NetPIPE's output file: bytes, Mbps, seconds (one-way). Show the powers of
# two; the smallest latency and the largest bandwidth close the table.
echo
printf '   %10s %12s %12s %10s\n' bytes usec Mbps MB/s
awk '{ n = $1; while (n > 1 && n % 2 == 0) n /= 2 }
     n == 1 { printf "   %10d %12.2f %12.1f %10.1f\n", $1, $3 * 1e6, $2, $2 / 8 }
     NR == 1 || $3 < lat { lat = $3; ls = $1 }
     $2 > bw { bw = $2; bs = $1 }
     END { printf "\n   lowest latency %.2f usec (%d B), highest bandwidth %.0f Mbps = %.0f MB/s (%d B)\n",
		  lat * 1e6, ls, bw, bw / 8, bs }' "$work/np.out"
echo
echo "demo: NetPIPE over $mode completed, $(wc -l <"$work/np.out") message sizes from 1 B to 8 MiB"
