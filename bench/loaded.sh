#!/usr/bin/env bash
# loaded.sh: ours against the references on a machine crowded by other
# jobs (make bench runs it last; BENCH_LOADED=0 skips it).
#
#   fi_pingpong -e rdm at 64 B, 64 KiB and 1 MiB, not pinned: on this
#   host our psm2 against Debian's shm, and (as root) across two namespace
#   hosts (nshost/nshosts.sh, NSHOSTS_GSO=1) our psm2 against Debian's
#   tcp; first on an idle machine, then beside 2 CPU-spinning processes
#   per core (another job's threads that never sleep).
#
# A loaded run's time is set by when the scheduler gives each side a CPU,
# so it spreads 2-20x from run to run, for the references as for ours,
# with a long tail of lucky runs: the best of a few runs compares luck.
# So each figure is the median of LOADED_ROUNDS (default 5; 3 with
# BENCH_QUICK=1) runs, ours and the reference alternating. The target
# (issue 33): a loaded ratio ours/reference no worse than 1.5 times the
# idle one, printed MET or MISSED per row. Across the hosts it also counts
# spurious retransmissions, the packets a receiver dropped as duplicates
# (resent while the original was on its way: the receiving process was not
# on a CPU to acknowledge) against all packets sent, from
# FI_PSM2_PRINT_STATS (target: under 5%).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
lib=$repo/build/lib
ROUNDS=${LOADED_ROUNDS:-5}
[ "${BENCH_QUICK:-0}" = 1 ] && ROUNDS=3
TMO=${BENCH_TIMEOUT:-120}
SIZES=(64 65536 1048576)
declare -A ITERS=([64]=20000 [65536]=2000 [1048576]=300)
work=$(mktemp -d /tmp/psm2-loaded.XXXXXX)
spin=()
hosts=0
cleanup() {
	[ ${#spin[@]} -gt 0 ] && kill "${spin[@]}" 2>/dev/null
	[ "$hosts" = 1 ] && "$ns" down >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT
ns=$repo/nshost/nshosts.sh
if [ "$(id -u)" = 0 ]; then
	export NSHOSTS_PREFIX=loaded NSHOSTS_NET=${LOADED_NET:-84} NSHOSTS_GSO=1
	if "$ns" up 2 >/dev/null 2>"$work/ns.err"; then
		hosts=1
		dest=$("$ns" ip 1)
	else
		echo "loaded: no namespace hosts ($(tail -1 "$work/ns.err")); this host only"
	fi
fi
port=$((20000 + RANDOM % 10000))	# below the ephemeral ports (32768-60999)
failed=0

# pp WHERE PROV SIZE: one fi_pingpong; prints "usec dups sent" (the
# psm2 stats of both processes; 0 0 for the references).
pp() {
	local where=$1 prov=$2 size=$3 srv=() cli=() to=127.0.0.1 env=(env -u LD_LIBRARY_PATH) spid rc
	port=$((port + 1))
	[ "$prov" = psm2 ] && env=(env LD_LIBRARY_PATH="$lib" FI_PSM2_PRINT_STATS=1)
	if [ "$where" = hosts ]; then
		srv=("$ns" exec 1) cli=("$ns" exec 2) to=$dest
		env+=(FI_PSM2_IFACE=eth0 FI_TCP_IFACE=eth0)
	fi
	"${srv[@]}" "${env[@]}" timeout "$TMO" fi_pingpong -e rdm -p "$prov" -S "$size" -I "${ITERS[$size]}" \
		-B "$port" >"$work/srv.out" 2>&1 &
	spid=$!
	sleep 0.4
	"${cli[@]}" "${env[@]}" timeout "$TMO" fi_pingpong -e rdm -p "$prov" -S "$size" -I "${ITERS[$size]}" \
		-P "$port" "$to" >"$work/cli.out" 2>&1
	rc=$?
	wait "$spid" || rc=1
	[ $rc = 0 ] || { echo "loaded: $where $prov $size B failed: $(grep -v '^psm2-stats' "$work/cli.out" "$work/srv.out" | tail -2 | tr '\n' ' ')" >&2; return 1; }
	awk '$1 ~ /^[0-9]/ && NF >= 8 && !lat { lat = $7 }
		/group=hfi/ { for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == "dups") d += kv[2]; if (kv[1] == "sent") s += kv[2] } }
		END { if (lat == "") exit 1; print lat, d + 0, s + 0 }' "$work/cli.out" "$work/srv.out"
}

median() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)] }'; }

declare -A RUNS
dups=0 sent=0
measure() { # measure LOAD: every where, size, provider, ROUNDS alternating runs
	local load=$1 where ref size r out lat d s
	for where in host hosts; do
		[ "$where" = hosts ] && [ "$hosts" = 0 ] && continue
		ref=shm
		[ "$where" = hosts ] && ref=tcp
		for size in "${SIZES[@]}"; do
			for ((r = 0; r < ROUNDS; r++)); do
				for prov in psm2 $ref; do
					out=$(pp "$where" "$prov" "$size") || { failed=1; continue; }
					read -r lat d s <<<"$out"
					RUNS[$load:$where:$size:$prov]+=" $lat"
					if [ "$load" = 1 ] && [ "$where" = hosts ] && [ "$prov" = psm2 ]; then
						dups=$((dups + d)) sent=$((sent + s))
					fi
				done
			done
		done
	done
}

measure 0
for ((i = 0; i < 2 * $(nproc); i++)); do
	bash -c 'while :; do :; done' &
	spin+=($!)
done
sleep 1
measure 1
kill "${spin[@]}" 2>/dev/null
wait "${spin[@]}" 2>/dev/null
spin=()

echo
echo "Loaded: fi_pingpong beside $((2 * $(nproc))) CPU-spinning processes on $(nproc) CPUs, against idle; one-way usec, medians of $ROUNDS alternating runs"
printf '%-9s %-8s %10s %10s %6s %10s %10s %6s %8s  %s\n' where size "idle ours" "idle ref" ratio "load ours" "load ref" ratio "load/idle" "(goal <= 1.5)"
for where in host hosts; do
	[ "$where" = hosts ] && [ "$hosts" = 0 ] && continue
	ref=shm
	[ "$where" = hosts ] && ref=tcp
	for size in "${SIZES[@]}"; do
		a0=$(median "${RUNS[0:$where:$size:psm2]:-}") b0=$(median "${RUNS[0:$where:$size:$ref]:-}")
		a1=$(median "${RUNS[1:$where:$size:psm2]:-}") b1=$(median "${RUNS[1:$where:$size:$ref]:-}")
		awk -v w="$where/$ref" -v s="$size" -v a0="$a0" -v b0="$b0" -v a1="$a1" -v b1="$b1" 'BEGIN {
			if (a0 == "" || b0 == "" || a1 == "" || b1 == "" || b0 <= 0 || b1 <= 0 || a0 <= 0) {
				printf "%-9s %-8s %10s %10s %6s %10s %10s %6s %8s  %s\n", w, s, a0, b0, "-", a1, b1, "-", "-", "n/a"; exit }
			r0 = a0 / b0; r1 = a1 / b1; x = r1 / r0
			printf "%-9s %-8s %10s %10s %6.2f %10s %10s %6.2f %8.2f  %s\n", w, s, a0, b0, r0, a1, b1, r1, x, (x <= 1.5 ? "MET" : "MISSED") }'
	done
done
if [ "$hosts" = 1 ] && [ "$sent" -gt 0 ]; then
	awk -v d="$dups" -v s="$sent" 'BEGIN { printf "hosts, loaded: spurious retransmissions %d of %d packets sent (%.2f%%, goal < 5%%): %s\n", d, s, 100 * d / s, (100 * d / s < 5 ? "MET" : "MISSED") }'
fi
exit $failed
