#!/usr/bin/env bash
# patterns.sh: the MPI patterns of bench/patterns.c (IMB-MPI1's PingPong,
# Sendrecv, Exchange, Allreduce, Alltoall, Bcast at 0 B - 4 MiB), Open
# MPI's cm/ofi on our psm2 against what Open MPI users have without it
# (make bench runs it last; BENCH_PATTERNS=0 skips it):
#
#   np2     2 ranks on this host, against ob1 + vader
#   np4     2 x cores ranks on this host (oversubscribed), against ob1 +
#           vader, both with mpi_yield_when_idle (scripts/mpirun.sh)
#   hosts1  1 rank on each of two namespace hosts (nshost/nshosts.sh,
#           root only; PATTERNS_INTERNODE=0 skips), against ob1 + btl tcp
#   hosts2  2 ranks on each (--map-by node: every neighbour is on the
#           other host), against ob1 + vader + btl tcp
#
# Each configuration runs PATTERNS_REPEAT times (default 2), alternating
# ours and the reference, and keeps the lowest time of each pattern and
# size. It prints, per configuration, the ratio ours/reference of every
# pattern at every size and the worst (among calls that take the reference
# 0.02 us or more: a collective of 0 B moves nothing), and writes
# build/bench/patterns-CONFIG.dat (pattern, size, ours, reference, ratio)
# and, with gnuplot, build/bench/patterns.png (the ratios, one panel per
# configuration). PATTERNS_TIME is the seconds per pattern and size
# (patterns -t, default 0.05).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
source bench/plot.sh
out=build/bench
mkdir -p "$out"
REPEAT=${PATTERNS_REPEAT:-2}
T=${PATTERNS_TIME:-0.05}
np=$((2 * $(nproc)))
work=$(mktemp -d /tmp/psm2-patterns.XXXXXX)
trap 'rm -rf "$work"' EXIT
note() { printf '%s\n' "$*" >&2; }
mpicc -std=gnu11 -O2 -Wall -o "$work/patterns" bench/patterns.c || exit 1
scripts/shmclean.sh

configs=(np2 np4)
internode=0
if [ "${PATTERNS_INTERNODE:-1}" = 1 ] && [ "$(id -u)" = 0 ]; then
	export NSHOSTS_PREFIX=pat NSHOSTS_NET=${PATTERNS_NET:-86} NSHOSTS_GSO=${NSHOSTS_GSO:-1}
	ns=$repo/nshost/nshosts.sh
	trap 'rm -rf "$work"; $ns down >/dev/null 2>&1' EXIT
	if $ns up 2 >/dev/null; then
		internode=1
		configs+=(hosts1 hosts2)
		ip1=$($ns ip 1) net=${ip1%.*}.0/24
	else
		note "patterns: nshosts up failed; no inter-node configurations"
	fi
fi

# one CONFIG ours|ref: one run, its lines appended to $work/CONFIG-WHICH.
one() {
	local cfg=$1 which=$2 mode slots ranks
	local -a launch
	case $cfg in
	np2|np4)
		[ "$which" = ours ] && mode=psm2 || mode=vader
		ranks=2; [ "$cfg" = np4 ] && ranks=$np
		launch=(timeout 900 scripts/mpirun.sh "--$mode" -np "$ranks")
		;;
	hosts1|hosts2)
		[ "$which" = ours ] && mode=psm2 || mode=tcp
		slots=${cfg#hosts}
		printf '%s slots=%s\n%s slots=%s\n' "$ip1" "$slots" "$($ns ip 2)" "$slots" >"$work/hosts"
		launch=("$ns" exec 1 env FI_PSM2_IFACE="$net" timeout 900 scripts/mpirun.sh "--$mode"
			--hostfile "$work/hosts" --mca plm_rsh_agent "$repo/nshost/nsrsh" --bind-to none
			--mca oob_tcp_if_include "$net" --mca btl_tcp_if_include "$net"
			-x FI_PSM2_IFACE -x NSHOSTS_PREFIX -x NSHOSTS_NET -np $((2 * slots)) --map-by node)
		;;
	esac
	if ! "${launch[@]}" "$work/patterns" -t "$T" >>"$work/$cfg-$which" 2>"$work/err"; then
		note "patterns: $cfg $which ($mode) failed: $(grep -v '^\s*$' "$work/err" | tail -3 | tr '\n' ' ')"
		return 1
	fi
}

# best FILE: the lowest time of each pattern and size, as "PATTERN:SIZE USEC"
# lines sorted for join.
best() { awk '!(($1, $2) in b) || $3 < b[$1, $2] { b[$1, $2] = $3 } END { for (k in b) { split(k, x, SUBSEP); print x[1] ":" x[2], b[k] } }' "$1" | sort -k1,1; }

failed=0
for cfg in "${configs[@]}"; do
	note "patterns: $cfg, ours and the reference alternating (best of $REPEAT)"
	: >"$work/$cfg-ours"; : >"$work/$cfg-ref"
	for ((r = 0; r < REPEAT; r++)); do
		one "$cfg" ours || { failed=1; continue 2; }
		one "$cfg" ref || { failed=1; continue 2; }
	done
	join -j1 <(best "$work/$cfg-ours") <(best "$work/$cfg-ref") |
		awk '{ split($1, k, ":"); r = ($3 > 0) ? $2 / $3 : 0; printf "%s %s %s %s %.3f\n", k[1], k[2], $2, $3, r }' |
		sort -k1,1 -k2,2n >"$out/patterns-$cfg.dat"
done

ref_of() { case $1 in np2|np4) echo vader ;; hosts1) echo "btl tcp" ;; hosts2) echo "vader + btl tcp" ;; esac; }
what_of() {
	case $1 in
	np2) echo "2 ranks on this host" ;;
	np4) echo "$np ranks on $(nproc) cores" ;;
	hosts1) echo "2 namespace hosts x 1 rank" ;;
	hosts2) echo "2 namespace hosts x 2 ranks" ;;
	esac
}
for cfg in "${configs[@]}"; do
	f=$out/patterns-$cfg.dat
	[ -s "$f" ] || continue
	echo
	echo "MPI patterns, $(what_of "$cfg"): time per call (usec), cm/ofi on psm2 / ob1 + $(ref_of "$cfg"); best of $REPEAT"
	awk '{ r[$1, $2] = $5; if (!($1 in p)) { p[$1]; pats[np++] = $1 } if (!($2 in s)) { s[$2]; sizes[ns++] = $2 }
		if ($4 >= 0.02 && (!w || $5 > worst)) { worst = $5; wat = $1 " " $2 " B (" $3 " us against " $4 ")"; w = 1 } }
		END {
			printf "%-9s", "size"; for (i = 0; i < np; i++) printf " %9s", pats[i]; printf "\n"
			for (j = 0; j < ns; j++) {
				printf "%-9s", sizes[j]
				for (i = 0; i < np; i++) printf " %9s", ((pats[i], sizes[j]) in r) ? sprintf("%.2f", r[pats[i], sizes[j]]) : "-"
				printf "\n"
			}
			if (w) printf "worst ratio %.2f: %s\n", worst, wat
		}' <(sort -k2,2n -s "$f")
done

if command -v gnuplot >/dev/null; then
	panels=0 script=""
	for cfg in "${configs[@]}"; do
		f=$out/patterns-$cfg.dat
		[ -s "$f" ] || continue
		panels=$((panels + 1))
		# gnuplot cannot take log of 0 B: size 0 is left out of the plot.
		plot="plot"
		for p in PingPong Sendrecv Exchange Allreduce Alltoall Bcast; do
			plot+=" \"< awk '\$1 == \\\"$p\\\" && \$2 > 0' $f\" using 2:5 with linespoints title \"$p\","
		done
		script+="set title \"$(what_of "$cfg"): ours / $(ref_of "$cfg")\"
${plot%,}
"
	done
	if [ $panels -gt 0 ]; then
		gnuplot <<EOG
set terminal png size 1200,$((420 * ((panels + 1) / 2)))
set output "$out/patterns.png"
$(size_axes)
set logscale y 2
set ylabel "time ratio, ours / reference"
set key outside right top
set multiplot layout $(((panels + 1) / 2)),2 title "MPI patterns (bench/patterns.c), below 1 = ours faster"
$script
unset multiplot
EOG
		echo "patterns: plot $out/patterns.png (data: $out/patterns-*.dat)"
	fi
fi
exit $failed
