#!/usr/bin/env bash
# make bench: our psm2 provider against the references, in one report.
#
#  (a) Debian's unmodified fi_pingpong -e rdm, server and client on this
#      host (the client connects to 127.0.0.1; fi_pingpong exchanges the
#      fabric addresses over its own TCP control socket, so neither psm2's
#      name server nor shm's address strings are involved):
#        psm2 = our build/lib/libfabric.so.1 (LD_LIBRARY_PATH), -p psm2
#        shm  = Debian's libfabric 1.17 (system library), -p shm
#  (b) NetPIPE (NPopenmpi) with 2 ranks through scripts/mpirun.sh:
#        psm2  = Open MPI cm PML + ofi MTL on our library, FI_PROVIDER=psm2
#        vader = Open MPI ob1 PML + vader BTL (shared memory)
#  (c) inter-node, between two "hosts" of nshost/nshosts.sh (network,
#      mount and UTS namespaces joined by veth pairs to a bridge, MTU 1500;
#      needs root, else skipped): fi_pingpong -e rdm with our psm2 (its hfi
#      wire, UDP) against Debian's tcp provider; udppp (bench/udppp.c), a
#      UDP ping-pong busy-polling its socket, the floor of any UDP design;
#      psm2 with FI_PSM2_PATHS=4 at 1 MiB; and NetPIPE across the two
#      hosts, cm/ofi on our psm2 against Open MPI's ob1 + btl tcp.
#  (d) RMA and atomics on this host (bench/rmabench.c): 8-byte write,
#      read and fetch-add latency and 1 MiB write and read bandwidth, our
#      psm2 against Debian's shm (targets: latency <= 1.0x, bandwidth
#      >= 1.0x); and across the hosts of (c) against Debian's tcp provider
#      (targets: latency <= 0.6x, bandwidth >= 1.0x).
#  (e) one message in flight (bench/msgrate.c -w 1), 8 B and 256 B
#      messages per second, our psm2 against Debian's shm (target >=
#      1.0x): with one more idle endpoint in each process's domain (-e 1),
#      with completions awaited in fi_cq_sread (-s), and counted by a
#      counter and awaited in fi_cntr_wait (-c).
#  (f) short jobs: a 32 B fi_pingpong of 20000 round trips from fresh,
#      unpinned processes, BENCH_WARM_RUNS times (10), the mean against
#      the steady state (400000 round trips, best of BENCH_REPEAT), our
#      psm2 and Debian's shm (target: psm2's ratio <= 1.5).
#  (g) threads on contexts (bench/ctxrate.c -1): 2 threads on 2 contexts
#      of a scalable endpoint against 2 endpoints of one domain (>= 0.95)
#      and against one thread (>= 1.7); 2 domains against one thread
#      (>= 1.7) shows what the domain lock costs (docs/provider.md).
#
# Every measurement is repeated BENCH_REPEAT times (default 3) and the BEST
# is kept: the lowest latency and the highest bandwidth. Each run is made
# inside a fast phase of the host (bench/steady.sh: the virtual CPUs'
# cache-line hand-off, checked before and after; BENCH_STEADY=0 turns it
# off). fi_pingpong's
# server and client are not pinned by default: taskset pins every thread of
# a process, the Go runtime's too, to one core, which cost our 1 MiB
# transfers ~40% while giving shm nothing (BENCH_PIN=1 pins the server to
# CPU 0 and the client to CPU 1). mpirun binds the two NetPIPE ranks to
# cores 0 and 1 itself, as it does for any 2-rank job. Latencies are one-way (half a
# round trip) in microseconds; fi_pingpong bandwidth is in MB/s (10^6),
# NetPIPE's in Mbps (10^6 bit/s).
#
# Targets: 64 B latency psm2/shm <= 1.0, 1 MiB bandwidth psm2/shm >= 1.0,
# NetPIPE 8 B latency psm2/vader <= 2.0, NetPIPE 1 MiB bandwidth
# psm2/vader >= 0.9; across hosts, 64 B latency psm2/tcp <= 0.6 and
# psm2/udppp <= 1.15, 256 KiB latency psm2/(udppp -G, the floor of a UDP
# design that copies nothing in user space) <= 1.4, 1 MiB bandwidth
# psm2/tcp >= 2.0, NetPIPE 1 B latency
# psm2/tcp <= 0.8 and 1 MiB bandwidth psm2/tcp >= 1.2, with every packet
# authenticated (FI_PSM2_AUTH=1) against without 64 B latency <= 1.1 and
# 1 MiB bandwidth >= 0.8 (message rates reported), RMA 8 B latencies
# psm2/tcp <= 0.6 and psm2/(raw UDP round trip) <= 1.5 (the floor: each
# waits for its answer); each is printed MET or MISSED. The exit status is 0
# when every run worked, whether or not the targets were met, and 1 when a
# run failed (a failed transport is reported as "psm2 run failed" and its
# remaining measurements are skipped).
#
# Then bench/sweep.sh compares every size (fi_pingpong 1 B - 4 MiB and a
# message rate against shm, NetPIPE 1 B - 8 MiB against vader; as root,
# fi_pingpong and NetPIPE 1 B - 8 MiB across two namespace hosts against
# tcp), with a plot in build/bench/sweep.png; BENCH_SWEEP=0 skips it.
# And bench/oversub.sh the same with more ranks than cores (pairs
# ping-ponging at once, against vader), plotted in build/bench/oversub.png;
# BENCH_OVERSUB=0 skips it. Last, bench/patterns.sh: the patterns of MPI
# codes (IMB-MPI1's PingPong, Sendrecv, Exchange, Allreduce, Alltoall,
# Bcast; bench/patterns.c) at 0 B - 4 MiB, at 2 and 2 x cores ranks on this
# host against vader and across two namespace hosts against btl tcp, a
# table of ratios and build/bench/patterns.png; BENCH_PATTERNS=0 skips it.
# And bench/loaded.sh: fi_pingpong at 64 B, 64 KiB and 1 MiB beside 2
# CPU-spinning processes per core against idle, on this host against shm
# and across two namespace hosts against tcp, medians of alternating runs
# (target: loaded ratio <= 1.5 x idle ratio; spurious retransmissions
# < 5%); BENCH_LOADED=0 skips it. And bench/rails.sh (as root): 1 MiB
# fi_pingpong across two namespace hosts with two networks, every link
# shaped to 2 Gbit/s, on one rail against two (PSM2_MULTIRAIL=1; target:
# two >= 1.7x one); BENCH_RAILS=0 skips it.
#
# Environment: BENCH_REPEAT (3), BENCH_TIMEOUT (seconds per run, 120),
# BENCH_STEADY (1) and BENCH_STEADY_WAIT (seconds, 20): see steady.sh,
# BENCH_QUICK=1 (a tenth of the iterations), BENCH_SKIP_PSM2=1 (reference
# rows only, to check the harness), BENCH_PIN=1 (taskset fi_pingpong's
# server and client onto CPUs 0 and 1), BENCH_INTERNODE=0 (skip (c)),
# NSHOSTS_GSO (see nshosts.sh; default here 1: the hosts' veths keep their
# offloads, UDP segmentation and TCP's alike, as a veth has by default;
# NSHOSTS_GSO=udp turns UDP segmentation off, each datagram its own frame).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
libdir=$repo/build/lib
bin=$repo/build/bench/bin   # make bench-tools

REPEAT=${BENCH_REPEAT:-3}
TMO=${BENCH_TIMEOUT:-120}
QUICK=${BENCH_QUICK:-0}
SKIP_PSM2=${BENCH_SKIP_PSM2:-0}
PIN=${BENCH_PIN:-0}
work=$(mktemp -d /tmp/psm2-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# fi_pingpong sizes and iteration counts.
PP_SIZES=(64 1024 16384 65536 1048576)
declare -A PP_ITERS=([64]=100000 [1024]=100000 [16384]=20000 [65536]=10000 [1048576]=1000)
NP_SMALL=8
NP_SMALL_ITERS=100000
NP_BIG=1048576
NP_BIG_ITERS=1000
if [ "$QUICK" = 1 ]; then
	for s in "${PP_SIZES[@]}"; do PP_ITERS[$s]=$(( PP_ITERS[$s] / 10 )); done
	NP_SMALL_ITERS=10000
	NP_BIG_ITERS=100
fi

run_failed=0
declare -A LAT BW FAILED
port=$(( 20000 + RANDOM % 10000 ))	# below the ephemeral ports (32768-60999)

note() { printf '%s\n' "$*" >&2; }
scripts/shmclean.sh # stale reference regions would fail its runs with EBUSY
# Each run inside a fast phase of the host (bench/steady.sh).
source bench/steady.sh
steady_init "$work"

# why FILE...: the first lines that look like the reason a run failed.
why() {
	local w
	w=$(grep -hiE -m2 'panic|fatal|error|fail|abort|signal' "$@" 2>/dev/null | head -3)
	[ -n "$w" ] || w=$(cat "$@" 2>/dev/null | grep -v '^bytes' | tail -3)
	printf '%s' "$w" | tr '\n' ' ' | cut -c1-300
}

# wait_listen PORT: until something listens on the TCP port (10 s at most).
wait_listen() {
	local i
	for ((i = 0; i < 100; i++)); do
		if command -v ss >/dev/null; then
			"${PP_SRV[@]}" ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		elif [ $i -ge 5 ]; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# Where fi_pingpong runs: command prefixes for the server and the client
# (a namespace host's `nshosts.sh exec H`), the server's address, and
# extra environment. The defaults: this host, 127.0.0.1.
PP_SRV=() PP_CLI=() PP_DEST=127.0.0.1 PP_ENV=()

# pingpong LABEL PROVIDER LIBPATH SIZE ITERS: one server/client run; prints
# "usec MBps" from the client's result line, or fails.
pingpong() {
	local label=$1 prov=$2 lp=$3 size=$4 iters=$5 spid rc src
	local env=(env)
	local pin0=() pin1=()
	if [ -n "$lp" ]; then env+=("LD_LIBRARY_PATH=$lp"); else env+=(-u LD_LIBRARY_PATH); fi
	env+=("${PP_ENV[@]}")
	if [ "$PIN" = 1 ]; then pin0=(taskset -c 0); pin1=(taskset -c 1); fi
	"${PP_SRV[@]}" "${env[@]}" timeout "$TMO" "${pin0[@]}" fi_pingpong -e rdm -p "$prov" -S "$size" -I "$iters" \
		-B "$port" >"$work/srv.out" 2>&1 &
	spid=$!
	if ! wait_listen "$port"; then
		kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
		note "  $label: server did not start: $(tail -2 "$work/srv.out" | tr '\n' ' ')"
		return 1
	fi
	"${PP_CLI[@]}" "${env[@]}" timeout "$TMO" "${pin1[@]}" fi_pingpong -e rdm -p "$prov" -S "$size" -I "$iters" \
		-P "$port" "$PP_DEST" >"$work/cli.out" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		sleep 1
		kill "$spid" 2>/dev/null
	fi
	wait "$spid"
	src=$?
	if [ $rc -ne 0 ] || [ $src -ne 0 ]; then
		note "  $label fi_pingpong -S $size: client exit $rc, server exit $src: $(why "$work/cli.out" "$work/srv.out")"
		return 1
	fi
	awk 'NR == 2 && NF >= 7 { print $7, $6; found = 1 } END { exit !found }' "$work/cli.out" || {
		note "  $label fi_pingpong -S $size: no result line: $(head -3 "$work/cli.out" | tr '\n' ' ')"
		return 1
	}
}

# netpipe MODE SIZE ITERS: prints "usec Mbps" for one NetPIPE size.
netpipe() {
	local mode=$1 size=$2 iters=$3 rc
	rm -f "$work/np.out"
	timeout "$TMO" scripts/mpirun.sh "--$mode" -np 2 NPopenmpi -l "$size" -u "$size" -p 0 -n "$iters" \
		-o "$work/np.out" >"$work/np.log" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || [ ! -s "$work/np.out" ]; then
		note "  NetPIPE $mode $size B: exit $rc: $(why "$work/np.log")"
		return 1
	fi
	awk -v s="$size" '$1 == s && $2 > 0 { printf "%.4f %.2f\n", s * 8 / $2, $2; found = 1 } END { exit !found }' "$work/np.out"
}

# measure KEY CMD...: BENCH_REPEAT runs, keeps the lowest latency and the
# highest bandwidth in LAT[KEY], BW[KEY].
measure() {
	local key=$1 tr=${1%%:*} i out lat bw
	shift
	if [ -n "${FAILED[$tr]:-}" ]; then
		return
	fi
	for ((i = 0; i < REPEAT; i++)); do
		port=$(( port + 1 ))	# a fresh control port for each fi_pingpong
		if ! out=$(steady_run "$@"); then
			FAILED[$tr]=1
			run_failed=1
			note "  $tr run failed; skipping its remaining measurements"
			return
		fi
		read -r lat bw <<<"$out"
		if [ -z "${LAT[$key]:-}" ] || awk -v a="$lat" -v b="${LAT[$key]}" 'BEGIN { exit !(a < b) }'; then
			LAT[$key]=$lat
		fi
		if [ -z "${BW[$key]:-}" ] || awk -v a="$bw" -v b="${BW[$key]}" 'BEGIN { exit !(a > b) }'; then
			BW[$key]=$bw
		fi
	done
}

cell() { # cell ARRAY KEY TRANSPORT
	local -n arr=$1
	if [ -n "${arr[$2]:-}" ]; then
		printf '%s' "${arr[$2]}"
	elif [ -n "${FAILED[$3]:-}" ]; then
		printf 'failed'
	elif [[ $3 == psm2 || $3 == mpi-psm2 || $3 == net-psm2* || $3 == mpinet-psm2 ]]; then
		[ "$SKIP_PSM2" = 1 ] && printf 'skipped' || printf '-'
	else
		printf '-'
	fi
}

if [ "$SKIP_PSM2" != 1 ] && [ ! -e "$libdir/libfabric.so.1" ]; then
	note "bench: $libdir/libfabric.so.1 is missing; run make first"
	exit 1
fi

start=$(date +%s)
note "bench: fi_pingpong (best of $REPEAT)"
for s in "${PP_SIZES[@]}"; do
	[ "$SKIP_PSM2" = 1 ] || measure "psm2:$s" pingpong psm2 psm2 "$libdir" "$s" "${PP_ITERS[$s]}"
	measure "shm:$s" pingpong shm shm "" "$s" "${PP_ITERS[$s]}"
done
note "bench: NetPIPE (best of $REPEAT)"
for s in $NP_SMALL $NP_BIG; do
	[ "$SKIP_PSM2" = 1 ] || measure "mpi-psm2:$s" netpipe psm2 "$s" "$( [ "$s" = $NP_SMALL ] && echo $NP_SMALL_ITERS || echo $NP_BIG_ITERS)"
	measure "mpi-vader:$s" netpipe vader "$s" "$( [ "$s" = $NP_SMALL ] && echo $NP_SMALL_ITERS || echo $NP_BIG_ITERS)"
done

# (d) RMA and atomics on this host: bench/rmabench.c (8-byte write, read
# and fetch-add latency, one at a time; 1 MiB write and read bandwidth, 16
# in flight) on our psm2 and on Debian's shm; best of REPEAT per figure.
declare -A RMA
# rma_merge PREFIX OUTPUT: keep the best of each figure ("NAME VALUE"
# lines) in RMA[PREFIX:NAME]: the lowest latency, the highest bandwidth.
rma_merge() {
	local pre=$1 name v old
	while read -r name v; do
		old=${RMA[$pre:$name]:-}
		if [ -z "$old" ] || awk -v a="$v" -v b="$old" -v n="$name" \
			'BEGIN { exit !(n ~ /_lat$/ ? a < b : a > b) }'; then
			RMA[$pre:$name]=$v
		fi
	done <<<"$2"
}
rmabench_run() { # rmabench_run TRANSPORT: one run on this host
	local out
	if [ "$1" = psm2 ]; then
		out=$(LD_LIBRARY_PATH=$libdir timeout "$TMO" "$bin/rmabench" -p psm2 -t 0.5) || return 1
	else
		out=$(env -u LD_LIBRARY_PATH timeout "$TMO" "$bin/rmabench" -p "$1" -t 0.5) || return 1
	fi
	rma_merge "$1" "$out"
}
note "bench: RMA and atomics (best of $REPEAT)"
if [ -x "$bin/rmabench" ]; then
	for ((i = 0; i < REPEAT; i++)); do
		if [ "$SKIP_PSM2" != 1 ] && [ -z "${FAILED[rma-psm2]:-}" ]; then
			rmabench_run psm2 || { FAILED[rma-psm2]=1; run_failed=1; note "  rmabench psm2 failed"; }
		fi
		[ -n "${FAILED[rma-shm]:-}" ] || rmabench_run shm || { FAILED[rma-shm]=1; run_failed=1; note "  rmabench shm failed"; }
	done
else
	note "bench: no $bin/rmabench (make bench-tools)"
	run_failed=1
fi

# (e) Two cases a fast path for the common one can leave slow, each a
# one-message-in-flight bench/msgrate.c (-w 1: a ping-pong), 8 B and
# 256 B, our psm2 against Debian's shm, best of REPEAT: one more idle
# endpoint, with a CQ of its own, in each process's domain (-e 1); and
# CQs with a wait object, completions awaited in fi_cq_sread (-s); and
# completions counted by a counter, awaited in fi_cntr_wait (-c).
declare -A MEP
mep_run() { # mep_run TRANSPORT KEY OPTION
	local out size rate rest old
	if [ "$1" = psm2 ]; then
		out=$(LD_LIBRARY_PATH=$libdir timeout "$TMO" "$bin/msgrate" -p psm2 -w 1 $3 -t 0.3 8 256) || return 1
	else
		out=$(env -u LD_LIBRARY_PATH timeout "$TMO" "$bin/msgrate" -p "$1" -w 1 $3 -t 0.3 8 256) || return 1
	fi
	while read -r size rate rest; do
		old=${MEP[$1:$2$size]:-0}
		if awk -v a="$rate" -v b="$old" 'BEGIN { exit !(a > b) }'; then
			MEP[$1:$2$size]=$rate
		fi
	done <<<"$out"
}
note "bench: one message in flight: two endpoints per domain, fi_cq_sread, fi_cntr_wait (best of $REPEAT)"
if [ -x "$bin/msgrate" ]; then
	for ((i = 0; i < REPEAT; i++)); do
		for m in "e:-e 1" "s:-s" "c:-c"; do
			k=${m%%:*} o=${m#*:}
			if [ "$SKIP_PSM2" != 1 ] && [ -z "${FAILED[mep-psm2]:-}" ]; then
				mep_run psm2 "$k" "$o" || { FAILED[mep-psm2]=1; run_failed=1; note "  msgrate $o psm2 failed"; }
			fi
			[ -n "${FAILED[mep-shm]:-}" ] || mep_run shm "$k" "$o" || { FAILED[mep-shm]=1; run_failed=1; note "  msgrate $o shm failed"; }
		done
	done
else
	note "bench: no $bin/msgrate (make bench-tools)"
	run_failed=1
fi

# (g) Threads on contexts: bench/ctxrate.c -1 (one process, each thread
# sending 8 B messages, 64 at a time, from a context or endpoint of its
# own to another and reaping both CQs, so N threads are N running
# threads): 1 thread on one endpoint, 2 threads on 2 endpoints of one
# domain, on 2 contexts of one scalable endpoint, and on endpoints of 2
# domains; best of REPEAT. Issue 32's targets: the scalable endpoint's
# contexts >= 0.95x the endpoints, and >= 1.7x one thread.
declare -A CTX
note "bench: threads on contexts, bench/ctxrate -1 (best of $REPEAT)"
if [ "$SKIP_PSM2" != 1 ] && [ -x "$bin/ctxrate" ]; then
	for ((i = 0; i < REPEAT; i++)); do
		for m in "eps1:eps -n 1" "eps2:eps -n 2" "sep2:sep -n 2" "doms2:doms -n 2"; do
			k=${m%%:*} o=${m#*:}
			# shellcheck disable=SC2086 # $o is the mode and thread options
			out=$(LD_LIBRARY_PATH=$libdir timeout "$TMO" "$bin/ctxrate" -p psm2 -1 -m $o -t 0.5) ||
				{ FAILED[ctx-psm2]=1; run_failed=1; note "  ctxrate -m $o failed"; break 2; }
			rate=${out##* }
			if awk -v a="$rate" -v b="${CTX[$k]:-0}" 'BEGIN { exit !(a > b) }'; then
				CTX[$k]=$rate
			fi
		done
	done
elif [ "$SKIP_PSM2" != 1 ]; then
	note "bench: no $bin/ctxrate (make bench-tools)"
	run_failed=1
fi

# (f) Short jobs: a 32 B fi_pingpong of 20000 round trips, from fresh
# processes each time, WARM_RUNS times (10), not pinned, so that what a
# job pays at its start (the connection, the first waits, where the
# scheduler first puts the two processes) weighs as in a short job; the
# mean of those runs against the steady state, the best of REPEAT runs of
# 400000 round trips. Our psm2 and Debian's shm.
WARM_RUNS=${BENCH_WARM_RUNS:-10}
[ "$QUICK" = 1 ] && WARM_RUNS=3
declare -A WARM
# warm_lat "USEC MBPS": a 32 B transfer's time from the bandwidth, which
# fi_pingpong prints with more digits than its 0.1-us latencies.
warm_lat() { awk '{ printf("%.4f", ($2 > 0) ? 32 / $2 : $1) }' <<<"$1"; }
warm_run() { # warm_run TRANSPORT LIBPATH: WARM[T:short] (mean), WARM[T:steady] (best)
	local tr=$1 lp=$2 i out lat sum=0 n=0 best= PIN=0
	for ((i = 0; i < WARM_RUNS; i++)); do
		port=$(( port + 1 ))
		out=$(steady_run pingpong "warm-$tr" "$tr" "$lp" 32 20000) || return 1
		lat=$(warm_lat "$out")
		sum=$(awk -v s="$sum" -v l="$lat" 'BEGIN { print s + l }')
		n=$((n + 1))
	done
	WARM[$tr:short]=$(awk -v s="$sum" -v n="$n" 'BEGIN { printf("%.4f", s / n) }')
	for ((i = 0; i < REPEAT; i++)); do
		port=$(( port + 1 ))
		out=$(steady_run pingpong "warm-$tr" "$tr" "$lp" 32 400000) || return 1
		lat=$(warm_lat "$out")
		if [ -z "$best" ] || awk -v a="$lat" -v b="$best" 'BEGIN { exit !(a < b) }'; then
			best=$lat
		fi
	done
	WARM[$tr:steady]=$best
}
note "bench: short jobs, fi_pingpong 32 B x 20000 ($WARM_RUNS runs) against 400000 (best of $REPEAT)"
if [ "$SKIP_PSM2" != 1 ]; then
	warm_run psm2 "$libdir" || { FAILED[warm-psm2]=1; run_failed=1; note "  short-job psm2 runs failed"; }
fi
warm_run shm "" || { FAILED[warm-shm]=1; run_failed=1; note "  short-job shm runs failed"; }

# (c) Across two namespace hosts.
NET_SIZES=(1 64 1024 16384 65536 262144 1048576 4194304)
declare -A NET_ITERS=([1]=20000 [64]=20000 [1024]=20000 [16384]=5000 [65536]=2000 [262144]=1000 [1048576]=300 [4194304]=100)
NP_NET_SMALL=1
internode=0
if [ "${BENCH_INTERNODE:-1}" = 1 ] && [ "$(id -u)" = 0 ]; then
	internode=1
	if [ "$QUICK" = 1 ]; then
		for s in "${NET_SIZES[@]}"; do NET_ITERS[$s]=$(( (NET_ITERS[$s] + 9) / 10 )); done
	fi
	# A veth keeps its offloads by default (UDP segmentation too); so do
	# these hosts unless NSHOSTS_GSO says otherwise.
	export NSHOSTS_PREFIX=bench NSHOSTS_NET=${NSHOSTS_NET:-82} NSHOSTS_GSO=${NSHOSTS_GSO:-1}
	ns=$repo/nshost/nshosts.sh
	trap 'rm -rf "$work"; $ns down >/dev/null 2>&1' EXIT
	if ! $ns up 2 >/dev/null; then
		note "bench: nshosts up failed; no inter-node section"
		internode=0
	fi
fi
# udppp SIZE ITERS [-G]: the raw UDP busy-poll ping-pong between the
# hosts; with -G a message of SIZE bytes sent with UDP_SEGMENT and read
# with UDP_GRO, no copy in user space (bench/udppp.c).
udppp() {
	local size=$1 iters=$2 spid out
	shift 2
	"${PP_SRV[@]}" timeout "$TMO" "$bin/udppp" -s -p "$port" -S "$size" -I "$iters" "$@" >"$work/udp-srv.out" 2>&1 &
	spid=$!
	sleep 0.3
	out=$("${PP_CLI[@]}" timeout "$TMO" "$bin/udppp" -c "$PP_DEST" -p "$port" -S "$size" -I "$iters" "$@" 2>&1)
	kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null
	awk '{ print $2, $3; found = 1 } END { exit !found }' <<<"$out" || { note "  udppp: $out"; return 1; }
}
# npnet MODE SIZE ITERS: NetPIPE with one rank on each host.
npnet() {
	local mode=$1 size=$2 iters=$3 rc net=${PP_DEST%.*}.0/24
	rm -f "$work/np.out"
	printf '%s slots=1\n%s slots=1\n' "$PP_DEST" "$($ns ip 2)" >"$work/np.hosts"
	"${PP_SRV[@]}" env FI_PSM2_IFACE="$net" timeout "$TMO" scripts/mpirun.sh "--$mode" \
		--hostfile "$work/np.hosts" --mca plm_rsh_agent "$repo/nshost/nsrsh" --bind-to none \
		--mca oob_tcp_if_include "$net" --mca btl_tcp_if_include "$net" \
		-x FI_PSM2_IFACE -x NSHOSTS_PREFIX -x NSHOSTS_NET -np 2 --map-by node \
		NPopenmpi -l "$size" -u "$size" -p 0 -n "$iters" -o "$work/np.out" >"$work/np.log" 2>&1
	rc=$?
	if [ $rc -ne 0 ] || [ ! -s "$work/np.out" ]; then
		note "  NetPIPE across hosts, $mode $size B: exit $rc: $(why "$work/np.log")"
		return 1
	fi
	awk -v s="$size" '$1 == s && $2 > 0 { printf "%.4f %.2f\n", s * 8 / $2, $2; found = 1 } END { exit !found }' "$work/np.out"
}
if [ "$internode" = 1 ]; then
	note "bench: across two namespace hosts (best of $REPEAT)"
	[ -x "$bin/udppp" ] || { note "bench: no $bin/udppp (make bench-tools)"; exit 1; }
	PP_SRV=("$ns" exec 1) PP_CLI=("$ns" exec 2) PP_DEST=$($ns ip 1) PP_ENV=(FI_PSM2_IFACE=eth0 FI_TCP_IFACE=eth0)
	for s in "${NET_SIZES[@]}"; do
		[ "$SKIP_PSM2" = 1 ] || measure "net-psm2:$s" pingpong psm2 psm2 "$libdir" "$s" "${NET_ITERS[$s]}"
		if [ "$SKIP_PSM2" != 1 ]; then
			# Every packet authenticated (docs/hfi.md, "Authentication").
			PP_ENV+=(FI_PSM2_AUTH=1)
			measure "net-psm2a:$s" pingpong psm2a psm2 "$libdir" "$s" "${NET_ITERS[$s]}"
			unset 'PP_ENV[-1]'
		fi
		measure "net-tcp:$s" pingpong tcp tcp "" "$s" "${NET_ITERS[$s]}"
	done
	# Message rate across the hosts (bench/msgrate.c, 64 in flight),
	# with and without authentication: mr_host KEY [env...] keeps the best
	# rate of each size in MR[KEY:size].
	mr_host() {
		local key=$1 spid rc out mport
		shift
		local e=(env LD_LIBRARY_PATH="$libdir" FI_PSM2_IFACE=eth0 "$@")
		mport=$((port + 1000 + RANDOM % 1000))
		"$ns" exec 1 "${e[@]}" timeout "$TMO" "$bin/msgrate" -p psm2 -S "$mport" -t 0.3 8 1024 65536 >"$work/mrh-srv.out" 2>&1 &
		spid=$!
		out=$("$ns" exec 2 "${e[@]}" timeout "$TMO" "$bin/msgrate" -p psm2 -S "$mport" -C "$PP_DEST" -t 0.3 8 1024 65536 2>&1)
		rc=$?
		wait "$spid" 2>/dev/null
		[ $rc = 0 ] || { note "  msgrate $key across hosts: $out"; return 1; }
		while read -r sz rate _; do
			if [ -z "${MR[$key:$sz]:-}" ] || awk -v a="$rate" -v b="${MR[$key:$sz]}" 'BEGIN { exit !(a > b) }'; then
				MR[$key:$sz]=$rate
			fi
		done <<<"$out"
	}
	declare -A MR
	if [ "$SKIP_PSM2" != 1 ] && [ -x "$bin/msgrate" ]; then
		for ((i = 0; i < REPEAT; i++)); do
			mr_host off || break
			mr_host auth FI_PSM2_AUTH=1 || break
		done
	fi
	measure "net-udp:64" udppp 64 "${NET_ITERS[64]}"
	for s in 262144 1048576; do measure "net-udpg:$s" udppp "$s" "${NET_ITERS[$s]}" -G; done
	if [ "$SKIP_PSM2" != 1 ]; then
		PP_ENV+=(FI_PSM2_PATHS=4)
		measure "net-psm2p4:1048576" pingpong psm2p4 psm2 "$libdir" 1048576 "${NET_ITERS[1048576]}"
		measure "net-psm2p4:4194304" pingpong psm2p4 psm2 "$libdir" 4194304 "${NET_ITERS[4194304]}"
	fi
	for s in $NP_NET_SMALL $NP_BIG; do
		it=$( [ "$s" = $NP_NET_SMALL ] && echo $((NP_SMALL_ITERS / 5)) || echo $NP_BIG_ITERS)
		[ "$SKIP_PSM2" = 1 ] || measure "mpinet-psm2:$s" npnet psm2 "$s" "$it"
		measure "mpinet-tcp:$s" npnet tcp "$s" "$it"
	done
	# RMA and atomics across the hosts: rmabench's target on host 1, its
	# initiator on host 2, our psm2 against Debian's tcp provider.
	rmabench_net() { # rmabench_net TRANSPORT
		local tr=$1 out rc srv port=$((40000 + RANDOM % 20000)) e
		if [ "$tr" = psm2 ]; then
			e=(env LD_LIBRARY_PATH="$libdir" FI_PSM2_IFACE=eth0)
		else
			e=(env -u LD_LIBRARY_PATH FI_TCP_IFACE=eth0)
		fi
		"$ns" exec 1 "${e[@]}" timeout "$TMO" "$bin/rmabench" -p "$tr" -S "$port" >"$work/rb-srv.out" 2>&1 &
		srv=$!
		out=$("$ns" exec 2 "${e[@]}" timeout "$TMO" "$bin/rmabench" -p "$tr" -S "$port" -C "$PP_DEST" -t 0.5 2>&1)
		rc=$?
		wait "$srv" 2>/dev/null
		[ $rc = 0 ] || { note "  rmabench $tr across hosts: $out"; return 1; }
		rma_merge "net-$tr" "$out"
	}
	if [ -x "$bin/rmabench" ]; then
		for ((i = 0; i < REPEAT; i++)); do
			if [ "$SKIP_PSM2" != 1 ] && [ -z "${FAILED[rmanet-psm2]:-}" ]; then
				rmabench_net psm2 || { FAILED[rmanet-psm2]=1; run_failed=1; }
			fi
			[ -n "${FAILED[rmanet-tcp]:-}" ] || rmabench_net tcp || { FAILED[rmanet-tcp]=1; run_failed=1; }
		done
	fi
	PP_SRV=() PP_CLI=() PP_DEST=127.0.0.1 PP_ENV=()
fi

echo
steady_report
echo
if [ "$PIN" = 1 ]; then
	echo "fi_pingpong -e rdm, localhost, server on CPU 0, client on CPU 1; best of $REPEAT"
else
	echo "fi_pingpong -e rdm, localhost, not pinned; best of $REPEAT"
fi
printf '%-9s %8s %12s %12s %12s %12s\n' size iters "psm2 usec" "psm2 MB/s" "shm usec" "shm MB/s"
for s in "${PP_SIZES[@]}"; do
	printf '%-9s %8s %12s %12s %12s %12s\n' "$s" "${PP_ITERS[$s]}" \
		"$(cell LAT "psm2:$s" psm2)" "$(cell BW "psm2:$s" psm2)" \
		"$(cell LAT "shm:$s" shm)" "$(cell BW "shm:$s" shm)"
done
echo
echo "NetPIPE (NPopenmpi -p 0 -n N), 2 ranks on cores 0 and 1; best of $REPEAT"
printf '%-9s %8s %12s %12s %12s %12s\n' size iters "psm2 usec" "psm2 Mbps" "vader usec" "vader Mbps"
for s in $NP_SMALL $NP_BIG; do
	printf '%-9s %8s %12s %12s %12s %12s\n' "$s" "$( [ "$s" = $NP_SMALL ] && echo $NP_SMALL_ITERS || echo $NP_BIG_ITERS)" \
		"$(cell LAT "mpi-psm2:$s" mpi-psm2)" "$(cell BW "mpi-psm2:$s" mpi-psm2)" \
		"$(cell LAT "mpi-vader:$s" mpi-vader)" "$(cell BW "mpi-vader:$s" mpi-vader)"
done
if [ "$internode" = 1 ]; then
	echo
	echo "Across two namespace hosts (veth + bridge, MTU 1500, NSHOSTS_GSO=$NSHOSTS_GSO); best of $REPEAT"
	echo "fi_pingpong -e rdm: psm2 (ours, UDP) and Debian's tcp; udppp: raw UDP, busy-polled"
	printf '%-9s %8s %12s %12s %12s %12s\n' size iters "psm2 usec" "psm2 MB/s" "tcp usec" "tcp MB/s"
	for s in "${NET_SIZES[@]}"; do
		printf '%-9s %8s %12s %12s %12s %12s\n' "$s" "${NET_ITERS[$s]}" \
			"$(cell LAT "net-psm2:$s" net-psm2)" "$(cell BW "net-psm2:$s" net-psm2)" \
			"$(cell LAT "net-tcp:$s" net-tcp)" "$(cell BW "net-tcp:$s" net-tcp)"
	done
	printf '%-9s %8s %12s %12s   (udppp)\n' 64 "${NET_ITERS[64]}" "$(cell LAT net-udp:64 net-udp)" "$(cell BW net-udp:64 net-udp)"
	for s in 262144 1048576; do
		printf '%-9s %8s %12s %12s   (udppp -G: UDP_SEGMENT and UDP_GRO, no user-space copy)\n' "$s" "${NET_ITERS[$s]}" \
			"$(cell LAT "net-udpg:$s" net-udpg)" "$(cell BW "net-udpg:$s" net-udpg)"
	done
	for s in 1048576 4194304; do
		printf '%-9s %8s %12s %12s   (psm2, FI_PSM2_PATHS=4; 1 path: %s MB/s)\n' "$s" "${NET_ITERS[$s]}" \
			"$(cell LAT "net-psm2p4:$s" net-psm2p4)" "$(cell BW "net-psm2p4:$s" net-psm2p4)" "$(cell BW "net-psm2:$s" net-psm2)"
	done
	echo
	echo "psm2 across the hosts with every packet authenticated (FI_PSM2_AUTH=1) and without"
	printf '%-9s %12s %12s %12s %12s %8s %8s\n' size "auth usec" "auth MB/s" "plain usec" "plain MB/s" "lat x" "bw x"
	for s in "${NET_SIZES[@]}"; do
		printf '%-9s %12s %12s %12s %12s %8s %8s\n' "$s" \
			"$(cell LAT "net-psm2a:$s" net-psm2a)" "$(cell BW "net-psm2a:$s" net-psm2a)" \
			"$(cell LAT "net-psm2:$s" net-psm2)" "$(cell BW "net-psm2:$s" net-psm2)" \
			"$(awk -v a="${LAT[net-psm2a:$s]:-}" -v b="${LAT[net-psm2:$s]:-}" 'BEGIN { if (a != "" && b > 0) printf("%.2f", a / b); else print "-" }')" \
			"$(awk -v a="${BW[net-psm2a:$s]:-}" -v b="${BW[net-psm2:$s]:-}" 'BEGIN { if (a != "" && b > 0) printf("%.2f", a / b); else print "-" }')"
	done
	for sz in 8 1024 65536; do
		printf 'msgrate %-6s %12s msg/s auth, %12s msg/s plain, x %s\n' "$sz" "${MR[auth:$sz]:--}" "${MR[off:$sz]:--}" \
			"$(awk -v a="${MR[auth:$sz]:-}" -v b="${MR[off:$sz]:-}" 'BEGIN { if (a != "" && b > 0) printf("%.2f", a / b); else print "-" }')"
	done
	echo
	echo "NetPIPE across the two hosts, 1 rank each: cm/ofi on psm2 (ours) and ob1 + btl tcp"
	printf '%-9s %8s %12s %12s %12s %12s\n' size iters "psm2 usec" "psm2 Mbps" "tcp usec" "tcp Mbps"
	for s in $NP_NET_SMALL $NP_BIG; do
		printf '%-9s %8s %12s %12s %12s %12s\n' "$s" "$( [ "$s" = $NP_NET_SMALL ] && echo $((NP_SMALL_ITERS / 5)) || echo $NP_BIG_ITERS)" \
			"$(cell LAT "mpinet-psm2:$s" mpinet-psm2)" "$(cell BW "mpinet-psm2:$s" mpinet-psm2)" \
			"$(cell LAT "mpinet-tcp:$s" mpinet-tcp)" "$(cell BW "mpinet-tcp:$s" mpinet-tcp)"
	done
fi

# target NAME OURS REF OP LIMIT OURTR REFTR
target() {
	local name=$1 ours=$2 ref=$3 op=$4 limit=$5 ourtr=$6 reftr=$7 ratio verdict
	if [ -z "$ours" ] || [ -z "$ref" ]; then
		if [ -n "${FAILED[$ourtr]:-}" ]; then
			verdict="MISSED (psm2 run failed)"
		elif [ -n "${FAILED[$reftr]:-}" ]; then
			verdict="n/a (reference run failed)"
		elif [ "$SKIP_PSM2" = 1 ]; then
			verdict="n/a (psm2 skipped)"
		else
			verdict="n/a"
		fi
		printf '%-34s %11s %11s %7s %8s  %s\n' "$name" "${ours:--}" "${ref:--}" - "$op $limit" "$verdict"
		return
	fi
	ratio=$(awk -v a="$ours" -v b="$ref" 'BEGIN { printf("%.2f", (b > 0) ? a / b : 0) }')
	if awk -v r="$ratio" -v l="$limit" -v op="$op" 'BEGIN { exit !(op == "<=" ? r <= l : r >= l) }'; then
		verdict=MET
	else
		verdict=MISSED
	fi
	printf '%-34s %11s %11s %7s %8s  %s\n' "$name" "$ours" "$ref" "$ratio" "$op $limit" "$verdict"
}

echo
echo "Short jobs: fi_pingpong -S 32 -I 20000 from fresh processes, not pinned, mean of $WARM_RUNS runs, against -I 400000 (best of $REPEAT); usec"
printf '%-9s %12s %12s %8s\n' provider "20000 mean" "steady" ratio
for tr in psm2 shm; do
	printf '%-9s %12s %12s %8s\n' "$tr" "${WARM[$tr:short]:--}" "${WARM[$tr:steady]:--}" \
		"$(awk -v a="${WARM[$tr:short]:-}" -v b="${WARM[$tr:steady]:-}" 'BEGIN { if (a != "" && b > 0) printf("%.2f", a / b); else printf("-") }')"
done
echo
printf '%-34s %11s %11s %7s %8s  %s\n' target psm2 reference ratio goal result
target "64 B latency (usec), psm2/shm" "${LAT[psm2:64]:-}" "${LAT[shm:64]:-}" "<=" 1.0 psm2 shm
target "1 MiB bandwidth (MB/s), psm2/shm" "${BW[psm2:1048576]:-}" "${BW[shm:1048576]:-}" ">=" 1.0 psm2 shm
target "NetPIPE 8 B latency, psm2/vader" "${LAT[mpi-psm2:$NP_SMALL]:-}" "${LAT[mpi-vader:$NP_SMALL]:-}" "<=" 2.0 mpi-psm2 mpi-vader
target "NetPIPE 1 MiB Mbps, psm2/vader" "${BW[mpi-psm2:$NP_BIG]:-}" "${BW[mpi-vader:$NP_BIG]:-}" ">=" 0.9 mpi-psm2 mpi-vader
target "RMA 8 B write latency, psm2/shm" "${RMA[psm2:write_lat]:-}" "${RMA[shm:write_lat]:-}" "<=" 1.0 rma-psm2 rma-shm
target "RMA 8 B read latency, psm2/shm" "${RMA[psm2:read_lat]:-}" "${RMA[shm:read_lat]:-}" "<=" 1.0 rma-psm2 rma-shm
target "fetch-add latency, psm2/shm" "${RMA[psm2:fadd_lat]:-}" "${RMA[shm:fadd_lat]:-}" "<=" 1.0 rma-psm2 rma-shm
target "RMA 1 MiB write MB/s, psm2/shm" "${RMA[psm2:write_bw]:-}" "${RMA[shm:write_bw]:-}" ">=" 1.0 rma-psm2 rma-shm
target "RMA 1 MiB read MB/s, psm2/shm" "${RMA[psm2:read_bw]:-}" "${RMA[shm:read_bw]:-}" ">=" 1.0 rma-psm2 rma-shm
target "2 EPs/domain 8 B msg/s, psm2/shm" "${MEP[psm2:e8]:-}" "${MEP[shm:e8]:-}" ">=" 1.0 mep-psm2 mep-shm
target "2 EPs/domain 256 B msg/s, psm2/shm" "${MEP[psm2:e256]:-}" "${MEP[shm:e256]:-}" ">=" 1.0 mep-psm2 mep-shm
target "sread 8 B msg/s, psm2/shm" "${MEP[psm2:s8]:-}" "${MEP[shm:s8]:-}" ">=" 1.0 mep-psm2 mep-shm
target "sread 256 B msg/s, psm2/shm" "${MEP[psm2:s256]:-}" "${MEP[shm:s256]:-}" ">=" 1.0 mep-psm2 mep-shm
target "cntr_wait 8 B msg/s, psm2/shm" "${MEP[psm2:c8]:-}" "${MEP[shm:c8]:-}" ">=" 1.0 mep-psm2 mep-shm
target "cntr_wait 256 B msg/s, psm2/shm" "${MEP[psm2:c256]:-}" "${MEP[shm:c256]:-}" ">=" 1.0 mep-psm2 mep-shm
target "short job 32 B, first 20000/steady" "${WARM[psm2:short]:-}" "${WARM[psm2:steady]:-}" "<=" 1.5 warm-psm2 warm-psm2
target "2 threads: SEP ctxs/EPs msg/s" "${CTX[sep2]:-}" "${CTX[eps2]:-}" ">=" 0.95 ctx-psm2 ctx-psm2
target "2 threads: SEP ctxs/1 thread msg/s" "${CTX[sep2]:-}" "${CTX[eps1]:-}" ">=" 1.7 ctx-psm2 ctx-psm2
target "2 threads: 2 domains/1 thread" "${CTX[doms2]:-}" "${CTX[eps1]:-}" ">=" 1.7 ctx-psm2 ctx-psm2
if [ "$internode" = 1 ]; then
	target "hosts: 64 B latency, psm2/tcp" "${LAT[net-psm2:64]:-}" "${LAT[net-tcp:64]:-}" "<=" 0.6 net-psm2 net-tcp
	target "hosts: 64 B latency, psm2/udppp" "${LAT[net-psm2:64]:-}" "${LAT[net-udp:64]:-}" "<=" 1.15 net-psm2 net-udp
	target "hosts: 256 KiB lat., psm2/udppp -G" "${LAT[net-psm2:262144]:-}" "${LAT[net-udpg:262144]:-}" "<=" 1.4 net-psm2 net-udpg
	target "hosts: 1 MiB MB/s, psm2/tcp" "${BW[net-psm2:1048576]:-}" "${BW[net-tcp:1048576]:-}" ">=" 2.0 net-psm2 net-tcp
	target "hosts: 64 B latency, auth/plain" "${LAT[net-psm2a:64]:-}" "${LAT[net-psm2:64]:-}" "<=" 1.1 net-psm2a net-psm2
	target "hosts: 1 MiB MB/s, auth/plain" "${BW[net-psm2a:1048576]:-}" "${BW[net-psm2:1048576]:-}" ">=" 0.8 net-psm2a net-psm2
	target "hosts: NetPIPE 1 B latency, psm2/tcp" "${LAT[mpinet-psm2:$NP_NET_SMALL]:-}" "${LAT[mpinet-tcp:$NP_NET_SMALL]:-}" "<=" 0.8 mpinet-psm2 mpinet-tcp
	target "hosts: NetPIPE 1 MiB Mbps, psm2/tcp" "${BW[mpinet-psm2:$NP_BIG]:-}" "${BW[mpinet-tcp:$NP_BIG]:-}" ">=" 1.2 mpinet-psm2 mpinet-tcp
	target "hosts: RMA 8 B write latency, psm2/tcp" "${RMA[net-psm2:write_lat]:-}" "${RMA[net-tcp:write_lat]:-}" "<=" 0.6 rmanet-psm2 rmanet-tcp
	target "hosts: RMA 8 B read latency, psm2/tcp" "${RMA[net-psm2:read_lat]:-}" "${RMA[net-tcp:read_lat]:-}" "<=" 0.6 rmanet-psm2 rmanet-tcp
	target "hosts: fetch-add latency, psm2/tcp" "${RMA[net-psm2:fadd_lat]:-}" "${RMA[net-tcp:fadd_lat]:-}" "<=" 0.6 rmanet-psm2 rmanet-tcp
	target "hosts: RMA 1 MiB write MB/s, psm2/tcp" "${RMA[net-psm2:write_bw]:-}" "${RMA[net-tcp:write_bw]:-}" ">=" 1.0 rmanet-psm2 rmanet-tcp
	target "hosts: RMA 1 MiB read MB/s, psm2/tcp" "${RMA[net-psm2:read_bw]:-}" "${RMA[net-tcp:read_bw]:-}" ">=" 1.0 rmanet-psm2 rmanet-tcp
	# The floor under any RMA or atomic across hosts: it waits for its
	# answer, so one raw UDP round trip (twice udppp's one-way time). Where
	# 0.6x tcp is below that, no design over UDP meets the tcp targets
	# above; these rows say how far ours is from the floor.
	udp_rtt=$(awk -v u="${LAT[net-udp:64]:-}" 'BEGIN { if (u != "") printf("%.3f", 2 * u) }')
	target "hosts: RMA write lat./UDP RTT" "${RMA[net-psm2:write_lat]:-}" "$udp_rtt" "<=" 1.5 rmanet-psm2 net-udp
	target "hosts: RMA read lat./UDP RTT" "${RMA[net-psm2:read_lat]:-}" "$udp_rtt" "<=" 1.5 rmanet-psm2 net-udp
	target "hosts: fetch-add lat./UDP RTT" "${RMA[net-psm2:fadd_lat]:-}" "$udp_rtt" "<=" 1.5 rmanet-psm2 net-udp
fi
if [ "${BENCH_SWEEP:-1}" = 1 ] && [ "$SKIP_PSM2" != 1 ]; then
	bench/sweep.sh || run_failed=1
fi
if [ "${BENCH_OVERSUB:-1}" = 1 ] && [ "$SKIP_PSM2" != 1 ]; then
	bench/oversub.sh || run_failed=1
fi
if [ "${BENCH_PATTERNS:-1}" = 1 ] && [ "$SKIP_PSM2" != 1 ]; then
	bench/patterns.sh || run_failed=1
fi
if [ "${BENCH_LOADED:-1}" = 1 ] && [ "$SKIP_PSM2" != 1 ]; then
	bench/loaded.sh || run_failed=1
fi
if [ "${BENCH_RAILS:-1}" = 1 ] && [ "$SKIP_PSM2" != 1 ]; then
	bench/rails.sh || run_failed=1
fi
echo
echo "bench: $(( $(date +%s) - start )) s; load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
if [ $run_failed -ne 0 ]; then
	echo "bench: some runs failed (see above)"
	exit 1
fi
