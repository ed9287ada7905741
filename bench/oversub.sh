#!/usr/bin/env bash
# oversub.sh: ours against Open MPI's vader with more ranks than cores
# (make bench runs it after the sweep; BENCH_OVERSUB=0 skips it).
#
#   bench/pairs.c at 2 x cores ranks (two pairs on 2 cores), every pair
#   ping-ponging at once, 1 B to 8 MiB: cm/ofi on our psm2 against ob1 +
#   vader, both with mpi_yield_when_idle (scripts/mpirun.sh sets it when
#   the ranks outnumber the cores); one-way latency of rank 0's pair, best
#   of OVERSUB_REPEAT (default 2) runs.
#
# It prints the ratio at each size and the worst, and writes
# build/bench/oversub.dat (size, ours, vader) and, with gnuplot,
# build/bench/oversub.png.
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/plot.sh
out=build/bench
mkdir -p "$out"
REPEAT=${OVERSUB_REPEAT:-2}
np=$((2 * $(nproc)))
work=$(mktemp -d /tmp/psm2-oversub.XXXXXX)
trap 'rm -rf "$work"' EXIT
mpicc -std=gnu11 -O2 -Wall -o "$work/pairs" bench/pairs.c || exit 1
: >"$work/ours"; : >"$work/vader"
for ((r = 0; r < REPEAT; r++)); do
	timeout 600 scripts/mpirun.sh -np "$np" "$work/pairs" >>"$work/ours" 2>"$work/ours.err" || { echo "oversub: psm2 run failed: $(tail -3 "$work/ours.err")"; exit 1; }
	timeout 600 scripts/mpirun.sh --vader -np "$np" "$work/pairs" >>"$work/vader" 2>"$work/vader.err" || { echo "oversub: vader run failed: $(tail -3 "$work/vader.err")"; exit 1; }
done
best() { awk '!($1 in b) || $2 < b[$1] { b[$1] = $2 } END { for (s in b) print s, b[s] }' "$1" | sort -n; }
join <(best "$work/ours") <(best "$work/vader") >"$out/oversub.dat"
echo
echo "Oversubscribed: $np ranks on $(nproc) cores, pairs ping-ponging at once, one-way latency (usec), psm2/vader; best of $REPEAT"
awk 'BEGIN { printf "%-9s %12s %12s %7s\n", "size", "psm2", "vader", "ratio" }
	$2 > 0 && $3 > 0 { r = $2 / $3; printf "%-9s %12s %12s %7.2f\n", $1, $2, $3, r
		if (n == 0 || r > worst) { worst = r; at = $1 } n++ }
	END { if (n) printf "worst ratio %.2f at %s B (goal <= 1.0)\n", worst, at }' "$out/oversub.dat"
if command -v gnuplot >/dev/null; then
	gnuplot <<EOG
set terminal png size 900,600
set output "$out/oversub.png"
$(size_axes)
set ylabel "one-way latency (us)"
set title "$np ranks on $(nproc) cores, every pair ping-ponging (Open MPI)"
plot "$out/oversub.dat" using 1:2 with linespoints title "cm/ofi on psm2", "" using 1:3 with linespoints title "ob1 + vader"
EOG
	echo "oversub: plot $out/oversub.png (data: $out/oversub.dat)"
fi
