#!/usr/bin/env bash
# Runs parts of MPICH's own test suite (test/mpi of the source that
# scripts/mpich.sh builds) on our library, through MPICH's ch4:ofi:
#
#   scripts/mpichtests.sh [DIR...]      default: pt2pt rma coll comm threads/pt2pt
#
# The tests are built in a copy outside the repository
# (~/.cache/libfabric-psm2/mpich-tests, or MPICH_TESTS_DIR) and run by
# MPICH's runtests with FI_PROVIDER=psm2 and LD_LIBRARY_PATH=build/lib.
# MPICH_TESTS_MAXNP (default: 4, or the number of cores if more) caps the
# ranks. MPICH busy-polls and never yields by itself; our fi_cq_read
# yields when idle (FI_PSM2_YIELD_SPIN), so 4 ranks on 2 cores run in
# reasonable time, but the heaviest tests (comm/ctxsplit's 100000 splits,
# rma/large_acc_flush_local at 3 ranks) can still exceed their limit
# (MPITEST_TIMEOUT, default here 60 s, or the testlist's timeLimit).
# Tests that need more ranks than the cap fail with "requires N
# processes"; the summary lists every failure with its first line of
# output. Not part of make check. Exit status: 1 if any test failed.
set -uo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${MPICH_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/libfabric-psm2/mpich-4.0.2}
work=${MPICH_TESTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/libfabric-psm2/mpich-tests}
cores=$(nproc)
maxnp=${MPICH_TESTS_MAXNP:-$((cores > 4 ? cores : 4))}
[ $# -gt 0 ] || set -- pt2pt rma coll comm threads/pt2pt

if ! "$repo/scripts/mpichrun.sh" --have; then
	echo "mpichtests.sh: no MPICH build; run scripts/mpich.sh (make mpich)" >&2
	exit 2
fi
if [ ! -e "$repo/build/lib/libfabric.so.1" ]; then
	echo "mpichtests.sh: build/lib/libfabric.so.1 is missing; run make first" >&2
	exit 2
fi
if [ ! -f "$work/.copied" ]; then
	rm -rf "$work"
	mkdir -p "$(dirname "$work")"
	# -a keeps the timestamps, or make would rerun automake.
	cp -a "$dir/src/test/mpi" "$work" && touch "$work/.copied" || exit 2
	make -C "$work/util" >"$work/util.log" 2>&1 || { echo "mpichtests.sh: building util failed (see $work/util.log)" >&2; exit 2; }
fi
export FI_PROVIDER=psm2 LD_LIBRARY_PATH=$repo/build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-60}
bad=0
for d in "$@"; do
	name=${d//\//-}
	if ! make -j"$(nproc)" -C "$work/$d" >"$work/$name.build.log" 2>&1; then
		echo "FAIL $d: build (see $work/$name.build.log)"
		bad=1
		continue
	fi
	top=$(realpath --relative-to="$work/$d" "$work")
	(cd "$work/$d" && "$top/runtests" -srcdir=. -tests=testlist -maxnp="$maxnp" \
		-tapfile="$work/$name.tap" >"$work/$name.log" 2>&1)
	total=$(grep -c '^\(not \)\{0,1\}ok' "$work/$name.tap" 2>/dev/null || echo 0)
	failed=$(grep '^not ok' "$work/$name.tap" 2>/dev/null | awk '{ print $4 }' | sort -u)
	if [ -z "$failed" ] && [ "$total" -gt 0 ]; then
		echo "PASS $d: $total tests (at most $maxnp ranks)"
		continue
	fi
	bad=1
	echo "FAIL $d: $(wc -w <<<"$failed") of $total failed (at most $maxnp ranks; log $work/$name.log)"
	for t in $failed; do
		echo "    $t: $(grep -m1 "Unexpected output in ${t#./}:" "$work/$name.log" | cut -d: -f2- | cut -c1-120)"
	done
done
exit $bad
