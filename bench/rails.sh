#!/usr/bin/env bash
# rails.sh: multirail across two namespace hosts (make bench runs it;
# BENCH_RAILS=0 skips it; needs root).
#
#   Two hosts of nshost/nshosts.sh with a second network (`nshosts.sh
#   rail`: eth1 on a second bridge), every link shaped to RAILS_RATE
#   (default 2gbit) by tbf: one veth is limited by the CPU, not by a rate,
#   so unshaped it says nothing about a second NIC. fi_pingpong -e rdm
#   -S 1 MiB with our psm2 on one rail (PSM2_MULTIRAIL unset) and on two
#   (PSM2_MULTIRAIL=1), RAILS_ROUNDS (default 5) rounds alternating, the
#   median of each. Target (issue 32): two rails >= 1.7x one, printed MET
#   or MISSED. Spurious retransmissions (duplicates at the receiver, from
#   FI_PSM2_PRINT_STATS) of the two-rail runs are reported against the
#   packets sent: the rails reorder, and that must not cost resends.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
lib=$repo/build/lib
ROUNDS=${RAILS_ROUNDS:-5}
[ "${BENCH_QUICK:-0}" = 1 ] && ROUNDS=3
RATE=${RAILS_RATE:-2gbit}
TMO=${BENCH_TIMEOUT:-120}
ns=$repo/nshost/nshosts.sh
if [ "$(id -u)" != 0 ]; then
	echo "rails: not root, no namespace hosts: skipped"
	exit 0
fi
export NSHOSTS_PREFIX=rails NSHOSTS_NET=${RAILS_NET:-84} NSHOSTS_GSO=1
work=$(mktemp -d /tmp/psm2-rails.XXXXXX)
trap '"$ns" down >/dev/null 2>&1; rm -rf "$work"' EXIT
"$ns" up 2 >/dev/null && "$ns" rail || { echo "rails: nshosts up failed"; exit 1; }
for h in 1 2; do
	for dev in eth0 eth1; do
		"$ns" exec $h tc qdisc replace dev $dev root tbf rate "$RATE" burst 512kb latency 20ms ||
			{ echo "rails: tc tbf on $dev failed"; exit 1; }
	done
done
dest=$("$ns" ip 1)
port=$((20000 + RANDOM % 9000))

# run MULTIRAIL: one ping-pong; prints "MB/s dups sent".
run() {
	local e=(env LD_LIBRARY_PATH="$lib" FI_PSM2_IFACE=eth0 PSM2_MULTIRAIL="$1" FI_PSM2_PRINT_STATS=1) rc
	port=$((port + 1))
	"$ns" exec 1 "${e[@]}" timeout "$TMO" fi_pingpong -e rdm -p psm2 -S 1048576 -I 300 -B "$port" \
		>"$work/srv.out" 2>&1 &
	sleep 0.5
	"$ns" exec 2 "${e[@]}" timeout "$TMO" fi_pingpong -e rdm -p psm2 -S 1048576 -I 300 -P "$port" "$dest" \
		>"$work/cli.out" 2>&1
	rc=$?
	wait
	[ $rc = 0 ] || { echo "rails: fi_pingpong failed: $(tail -3 "$work/cli.out" "$work/srv.out" | tr '\n' ' ')" >&2; return 1; }
	local st=(0 0)
	for f in "$work/srv.out" "$work/cli.out"; do
		local l
		l=$(grep -h '^psm2-stats .*group=hfi' "$f" | head -1)
		st[0]=$((st[0] + $(sed -n 's/.* dups=\([0-9]*\).*/\1/p' <<<"$l")))
		st[1]=$((st[1] + $(sed -n 's/.* sent=\([0-9]*\).*/\1/p' <<<"$l")))
	done
	echo "$(awk '$1 == "1m" {print $6}' "$work/cli.out") ${st[0]} ${st[1]}"
}

median() { tr ' ' '\n' | grep . | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
one=() two=() dups=0 sent=0 failed=0
for _ in $(seq "$ROUNDS"); do
	if r=$(run 0); then one+=("${r%% *}"); else failed=1; fi
	if r=$(run 1); then
		read -r bw d s <<<"$r"
		two+=("$bw")
		dups=$((dups + d)) sent=$((sent + s))
	else
		failed=1
	fi
done
echo
echo "Multirail across two namespace hosts, every link tbf $RATE; fi_pingpong -S 1048576 -I 300, medians of $ROUNDS alternating rounds"
m1=$(echo "${one[*]}" | median) m2=$(echo "${two[*]}" | median)
printf '%-8s %10s   (%s)\n' "1 rail" "$m1 MB/s" "${one[*]}" "2 rails" "$m2 MB/s" "${two[*]}"
if [ -n "$m1" ] && [ -n "$m2" ]; then
	awk -v a="$m2" -v b="$m1" 'BEGIN { r = a / b; printf "target: 2 rails / 1 rail >= 1.7: %.2f %s\n", r, (r >= 1.7 ? "MET" : "MISSED") }'
fi
[ "$sent" -gt 0 ] && awk -v d="$dups" -v s="$sent" 'BEGIN { printf "2 rails: %d duplicates of %d packets sent (%.3f%%: resent while the original was on its way)\n", d, s, 100 * d / s }'
exit $failed
