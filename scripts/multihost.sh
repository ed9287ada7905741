#!/usr/bin/env bash
# multihost.sh: the inter-node (hfi) wire between "hosts" made by
# nshost/nshosts.sh (network, mount and UTS namespaces; see there):
#   - Debian's unmodified fi_pingpong -p psm2 across two hosts, rdm and
#     dgram, with and without -c (data checks), 64 B and 1 MiB;
#   - endpoints of different jobs (FI_PSM2_UUID) across hosts: nothing is
#     delivered, the client fails;
#   - FI_PSM2_PRINT_STATS under 5% loss: the packets sent, received,
#     retransmitted and duplicated agree with what nftables dropped;
#   - fi_getinfo(node, service) from another host finds an endpoint through
#     the name server with no FI_PSM2_IFACE (ctest/nsquery.c);
#   - our MPI conformance program under Open MPI (cm/ofi/psm2) across 2
#     and 3 hosts x 1 and 2 ranks, and 2 hosts x 1 with 5% of the
#     UDP packets dropped, 5% reordered and 1% duplicated each way
#     (nftables and nsdelay in the hosts' switch, per datagram);
#   - ctest/mpi/onesided.c (one-sided MPI over osc rdma + btl ofi, i.e.
#     our RMA and atomics) at 2 hosts x 1 and 2 ranks;
#   - ctest/mpi/threads.c (MPI_THREAD_MULTIPLE, 4 threads a rank) at 2
#     hosts x 2 ranks;
#   - NetPIPE across 2 hosts to 8 MiB; hpcc at 4 ranks on 2 hosts;
#   - with MPICH built by scripts/mpich.sh (ch4:ofi): the conformance,
#     one-sided and threads programs at 2 hosts x 1 rank;
#   - ctest/xfer.c across 2 hosts: 10,000 messages 1 B..4 MiB under that
#     loss, reordering and duplication, exactly once and intact (the
#     retransmission counts reported); a receiver, then a sender, killed
#     mid-transfer: the survivor ends within the connection timeout;
#   - ctest/rmakill.c: RMA reads and writes across hosts, then the target
#     killed: the pending RMA fails within the connection timeout;
#   - link faults (ctest/reconnect.c, ctest/xfer.c): the link cut for twice
#     the connection timeout, then healed, and a receiver restarted at the
#     same address: the sends that failed are sent again and everything
#     arrives verified; the MTU of every link 1500 -> 1280 -> 9000 in the
#     middle of xfer's 10,000 messages, verified;
# Everything is removed afterwards, also on failure. Needs root.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
export NSHOSTS_PREFIX=${NSHOSTS_PREFIX:-mh}
export NSHOSTS_NET=${NSHOSTS_NET:-78}
ns=$repo/nshost/nshosts.sh
lib=$repo/build/lib
out=$repo/build/multihost
mkdir -p "$out"
. bench/report.sh

if [ "$(id -u)" != 0 ]; then
	echo "SKIP multihost: needs root for network namespaces"
	exit 0
fi
trap '$ns down' EXIT INT TERM
$ns up 3 >/dev/null || { echo "FAIL nshosts up"; exit 1; }
h1=$($ns ip 1) h2=$($ns ip 2) h3=$($ns ip 3)
net=${h1%.*}.0/24
env=(env LD_LIBRARY_PATH="$lib" FI_PSM2_IFACE="$net")

# Hosts are separate: own host name, own /dev/shm.
if a=$($ns exec 1 bash -c 'hostname; touch /dev/shm/nsh-probe; ls /dev/shm') &&
   b=$($ns exec 2 bash -c 'hostname; ls /dev/shm') &&
   [ "$(head -1 <<<"$a")" != "$(head -1 <<<"$b")" ] && ! grep -q nsh-probe <<<"$b"; then
	ok "namespace hosts: own host names ($(head -1 <<<"$a"), $(head -1 <<<"$b")), private /dev/shm"
else
	fail "namespace hosts are not separate" "$a / $b"
fi

# stat LOG NAME: the value of NAME in LOG's hfi psm2-stats line.
stat() { sed -n "s/^psm2-stats .* group=hfi.* $2=\([0-9]*\).*/\1/p" "$1" | head -1; }

# pingpong EP SIZE ITERS [extra options]: server on host 1, client on host 2.
pingpong() {
	local ep=$1 size=$2 iters=$3; shift 3
	local port=$((20000 + RANDOM % 10000))
	$ns exec 1 "${env[@]}" timeout 60 fi_pingpong -p psm2 -e "$ep" -S "$size" -I "$iters" -B "$port" "$@" \
		>"$out/pp-server.log" 2>&1 &
	local s=$!
	sleep 0.5
	$ns exec 2 "${env[@]}" timeout 60 fi_pingpong -p psm2 -e "$ep" -S "$size" -I "$iters" -P "$port" "$@" "$h1" \
		>"$out/pp-client.log" 2>&1
	local rc=$?
	wait $s
	local rs=$?
	[ $rc = 0 ] && [ $rs = 0 ]
}
for ep in rdm dgram; do
	for c in "" -c; do
		for size in 64 1048576; do
			[ "$ep" = dgram ] && [ "$size" -gt 4096 ] && continue # dgram: one MTU
			it=2000; [ "$size" -gt 4096 ] && it=100
			if pingpong "$ep" "$size" "$it" $c; then
				ok "fi_pingpong -e $ep -S $size $c across hosts: $(awk 'NR==2{print $7 " us/xfer, " $6 " MB/s"}' "$out/pp-client.log")"
			else
				fail "fi_pingpong -e $ep -S $size $c across hosts" "$(cat "$out/pp-client.log" "$out/pp-server.log")"
			fi
		done
	done
done

# Without FI_PSM2_IFACE: these hosts have no default route, so each binds
# its only interface with an address (eth0), as on an isolated cluster
# network.
env=(env LD_LIBRARY_PATH="$lib")
if pingpong rdm 64 2000; then
	ok "fi_pingpong -e rdm -S 64 across hosts without FI_PSM2_IFACE (no default route: the sole interface)"
else
	fail "fi_pingpong -e rdm -S 64 across hosts without FI_PSM2_IFACE" "$(cat "$out/pp-client.log" "$out/pp-server.log")"
fi

# The name server across hosts, with no setting: host 1 serves service
# 7411, host 2 asks host 1's address for it.
cc -std=gnu11 -O2 -Wall -Iinclude -o "$out/nsquery" ctest/nsquery.c -L"$lib" -lfabric 2>"$out/cc.log" ||
	fail "cc ctest/nsquery.c" "$(cat "$out/cc.log")"
$ns exec 1 "${env[@]}" FI_PSM2_NAME_SERVER=1 FI_PSM2_UUID=5e4f0000-0000-0000-0000-00000000a11 \
	"$out/nsquery" serve 7411 20 >"$out/ns-serve.log" 2>&1 &
s=$!
for _ in $(seq 50); do grep -q ready "$out/ns-serve.log" 2>/dev/null && break; sleep 0.1; done
if $ns exec 2 "${env[@]}" FI_PSM2_NAME_SERVER=1 FI_PSM2_UUID=5e4f0000-0000-0000-0000-00000000a11 \
	"$out/nsquery" query "$h1" 7411 >"$out/ns-query.log" 2>&1; then
	ok "fi_getinfo($h1, 7411) from another host finds the endpoint through the name server (no FI_PSM2_IFACE)"
else
	fail "fi_getinfo($h1, 7411) from another host (no FI_PSM2_IFACE)" "$(cat "$out/ns-serve.log" "$out/ns-query.log")"
fi
kill $s 2>/dev/null
wait $s 2>/dev/null
env=(env LD_LIBRARY_PATH="$lib" FI_PSM2_IFACE="$net")

# With UDP segmentation offload on, as a veth has by default (nshosts.sh
# turns it off so that loss rules hit single datagrams): GSO batches
# cross the link whole and the receiver gets them coalesced (UDP GRO).
for h in 1 2; do $ns exec $h ethtool -K eth0 tx-udp-segmentation on >/dev/null 2>&1; done
if pingpong rdm 4194304 100; then
	ok "fi_pingpong -e rdm -S 4194304 across hosts with UDP segmentation offload: $(awk 'NR==2{print $7 " us/xfer, " $6 " MB/s"}' "$out/pp-client.log")"
else
	fail "fi_pingpong -e rdm -S 4194304 across hosts with UDP segmentation offload" "$(cat "$out/pp-client.log" "$out/pp-server.log")"
fi
for h in 1 2; do $ns exec $h ethtool -K eth0 tx-udp-segmentation off >/dev/null 2>&1; done

# Multirail (PSM2_MULTIRAIL=1): a second network (eth1 on its own
# bridge); a large message is striped over both, checked (-c), and a
# rail that goes down in the middle of a transfer (its switch port, for
# 2 s) loses nothing: a further rail is left for the other, the primary
# is left for the further one by both sides (rail_failovers). Both
# fi_pingpongs exit 0 with -c: no operation failed, so no live peer was
# declared dead.
$ns rail || fail "nshosts rail" ""
sw=$(cut -d' ' -f1 "${NSHOSTS_RUNDIR:-/run/nshosts}/$NSHOSTS_PREFIX/switch.pid")
railenv=("${env[@]}" PSM2_MULTIRAIL=1 FI_PSM2_PRINT_STATS=1)
railpp() { # ITERS [PORT-TO-CUT]
	local port=$((20000 + RANDOM % 10000)) s c rc rs
	$ns exec 1 "${railenv[@]}" timeout 60 fi_pingpong -p psm2 -e rdm -c -S 1048576 -I "$1" -B "$port" \
		>"$out/rail-server.log" 2>&1 &
	s=$!
	sleep 0.5
	$ns exec 2 "${railenv[@]}" timeout 60 fi_pingpong -p psm2 -e rdm -c -S 1048576 -I "$1" -P "$port" "$h1" \
		>"$out/rail-client.log" 2>&1 &
	c=$!
	if [ -n "${2:-}" ]; then
		sleep 1
		nsenter -t "$sw" -n ip link set "$2" down
		sleep 2
		nsenter -t "$sw" -n ip link set "$2" up
	fi
	wait $c
	rc=$?
	wait $s
	rs=$?
	[ $rc = 0 ] && [ $rs = 0 ]
}
railstat() { echo $(($(stat "$out/rail-server.log" "$1") + $(stat "$out/rail-client.log" "$1"))); }
if railpp 200; then
	sent=$(railstat sent) rp=$(railstat rail_pkts)
	if [ $((3 * rp)) -ge "$sent" ]; then
		ok "multirail: fi_pingpong -c 1 MiB across 2 rails: $rp of $sent packets on rail 1 ($(awk '$1 == "1m" {print $6 " MB/s"}' "$out/rail-client.log"))"
	else
		fail "multirail: 1 MiB messages not striped ($rp of $sent packets on rail 1)" "$(grep -h psm2-stats "$out"/rail-*.log)"
	fi
else
	fail "multirail: fi_pingpong -c 1 MiB across 2 rails" "$(cat "$out/rail-client.log" "$out/rail-server.log")"
fi
if railpp 1000 q2 && [ "$(railstat rails_down)" -gt 0 ]; then
	ok "multirail: rail 1 down for 2 s in the middle of 1000 x 1 MiB (-c): all delivered, rails_down $(railstat rails_down), retransmits $(railstat retransmits)"
else
	fail "multirail: rail 1 down mid-transfer" "$(cat "$out/rail-client.log" "$out/rail-server.log")"
fi
if railpp 1000 p2 && [ "$(stat "$out/rail-server.log" rail_failovers)" -gt 0 ] &&
	[ "$(stat "$out/rail-client.log" rail_failovers)" -gt 0 ]; then
	ok "multirail: the primary rail down for 2 s in the middle of 1000 x 1 MiB (-c): both sides moved to rail 1, all delivered, retransmits $(railstat retransmits)"
else
	fail "multirail: the primary rail down mid-transfer" "$(cat "$out/rail-client.log" "$out/rail-server.log")"
fi

# FI_PSM2_PRINT_STATS agrees with the loss applied: 5% of the UDP packets
# entering host 1 dropped (nftables counts them), a 64 KiB ping-pong.
# Every packet host 2 sent was received by host 1 or dropped, and the
# other way nothing was lost, but for a packet or two of connection
# set-up and close outside an endpoint's counts and the probes a sender
# makes after its peer closed (on a loaded machine an ACK comes late, and
# the timer probes); host 2's retransmissions are the drops they repaired
# plus the duplicates host 1 counted (plus such late probes), and a
# dropped acknowledgement needs no repair, so repairs are at most the
# drops and (64 KiB messages being mostly data) at least 9 in 10 of them.
$ns loss 1 5 udp in >/dev/null
env+=(FI_PSM2_PRINT_STATS=1)
if pingpong rdm 65536 300; then
	drops=$($ns rules 1 | sed -n 's/.*counter packets \([0-9]*\) .*comment "loss".*/\1/p')
	s1=$(stat "$out/pp-server.log" sent) r1=$(stat "$out/pp-server.log" received) d1=$(stat "$out/pp-server.log" dups)
	p1=$(stat "$out/pp-server.log" probes) p2=$(stat "$out/pp-client.log" probes)
	s2=$(stat "$out/pp-client.log" sent) r2=$(stat "$out/pp-client.log" received) x2=$(stat "$out/pp-client.log" retransmits)
	if [ -n "$drops" ] && [ -n "$s1" ] && [ -n "$s2" ] && [ -n "$x2" ] && [ -n "$p1" ] && [ -n "$p2" ] && [ "$drops" -gt 0 ] &&
		[ $((s2 - drops - r1)) -ge -2 ] && [ $((s2 - drops - r1)) -le $((2 + p2)) ] &&
		[ $((s1 - r2)) -ge -2 ] && [ $((s1 - r2)) -le $((2 + p1)) ] &&
		[ $((x2 - d1)) -le $((drops + p2)) ] && [ $((10 * (x2 - d1))) -ge $((9 * drops)) ]; then
		ok "FI_PSM2_PRINT_STATS under 5% loss into host 1: nft dropped $drops; host 2 sent $s2, host 1 received $r1; host 2 retransmitted $x2 = $((x2 - d1)) repairs + $d1 duplicates at host 1"
	else
		fail "FI_PSM2_PRINT_STATS under 5% loss: the counts disagree (nft drops ${drops:-?})" \
			"$(grep -h '^psm2-stats .*group=hfi' "$out/pp-server.log" "$out/pp-client.log")"
	fi
else
	fail "fi_pingpong -e rdm -S 65536 across hosts under 5% loss" "$(cat "$out/pp-client.log" "$out/pp-server.log")"
fi
unset 'env[${#env[@]}-1]'
$ns loss 1 0 >/dev/null

# Another job's endpoints: nothing is delivered; the client gives up.
port=$((20000 + RANDOM % 10000))
$ns exec 1 "${env[@]}" FI_PSM2_UUID=11111111-2222-3333-4444-555555555555 timeout 30 \
	fi_pingpong -p psm2 -e rdm -S 64 -I 10 -B $port >"$out/uuid-server.log" 2>&1 &
s=$!
sleep 0.5
$ns exec 2 "${env[@]}" FI_PSM2_UUID=66666666-7777-8888-9999-000000000000 FI_PSM2_CONN_TIMEOUT=2 timeout 30 \
	fi_pingpong -p psm2 -e rdm -S 64 -I 10 -P $port "$h1" >"$out/uuid-client.log" 2>&1
rc=$?
kill $s 2>/dev/null
wait $s 2>/dev/null
if [ $rc != 0 ] && [ $rc != 124 ] && ! grep -q '^64 ' "$out/uuid-client.log"; then
	ok "different FI_PSM2_UUID across hosts: nothing delivered, the client fails (exit $rc)"
else
	fail "different FI_PSM2_UUID across hosts (client exit $rc)" "$(cat "$out/uuid-client.log")"
fi

# MPI across hosts.
if ! mpicc -O2 -Wall -o "$out/conformance" ctest/mpi/conformance.c 2>"$out/mpicc.log"; then
	fail "mpicc ctest/mpi/conformance.c" "$(cat "$out/mpicc.log")"
else
	# mpirun_hosts HOSTS PER_HOST [mpirun args...]: from host 1, ranks
	# spread over the hosts; the working directory is the current one.
	mpirun_hosts() {
		local hosts=$1 per=$2; shift 2
		local hf=$out/hostfile
		: >"$hf"
		for ((i = 1; i <= hosts; i++)); do echo "$($ns ip $i) slots=$per" >>"$hf"; done
		$ns exec 1 env FI_PSM2_IFACE="$net" timeout 600 "$repo/scripts/mpirun.sh" --hostfile "$hf" \
			--mca plm_rsh_agent "$repo/nshost/nsrsh" --bind-to none --mca oob_tcp_if_include "$net" \
			-x FI_PSM2_IFACE -x NSHOSTS_PREFIX -x NSHOSTS_NET \
			-np $((hosts * per)) --map-by node "$@" 2>&1
	}
	mpi() { mpirun_hosts "$1" "$2" "$out/conformance"; } # mpi HOSTS PER_HOST
	for hp in "2 1" "2 2" "3 1" "3 2"; do
		set -- $hp
		if o=$(mpi "$1" "$2") && grep -q ', 0 failed' <<<"$o"; then
			ok "MPI conformance over cm/ofi/psm2, $1 hosts x $2 ranks: $(tail -1 <<<"$o")"
		else
			fail "MPI conformance, $1 hosts x $2 ranks" "$o"
		fi
	done
	# MPI_THREAD_MULTIPLE across hosts: 4 threads a rank, shm inside a
	# host and hfi across, one endpoint per rank.
	if mpicc -std=gnu11 -O2 -Wall -pthread -o "$out/threads" ctest/mpi/threads.c 2>"$out/mpicc.log"; then
		if o=$(mpirun_hosts 2 2 "$out/threads") && grep -q '^threads: .* 0 failed' <<<"$o"; then
			ok "MPI_THREAD_MULTIPLE over cm/ofi/psm2, 2 hosts x 2 ranks: $(grep '^threads:' <<<"$o")"
		else
			fail "MPI_THREAD_MULTIPLE, 2 hosts x 2 ranks" "$o"
		fi
	else
		fail "mpicc ctest/mpi/threads.c" "$(cat "$out/mpicc.log")"
	fi
	# One-sided MPI across hosts: osc rdma over btl ofi, that is our RMA
	# and atomics (over hfi between hosts, shm within one).
	if mpicc -std=gnu11 -O2 -Wall -o "$out/onesided" ctest/mpi/onesided.c 2>"$out/mpicc.log"; then
		for hp in "2 1" "2 2"; do
			set -- $hp
			hosts=$1 per=$2
			hf=$out/hostfile
			: >"$hf"
			for ((i = 1; i <= hosts; i++)); do echo "$($ns ip $i) slots=$per" >>"$hf"; done
			if o=$($ns exec 1 env FI_PSM2_IFACE="$net" timeout 600 "$repo/scripts/mpirun.sh" --osc --hostfile "$hf" \
				--mca plm_rsh_agent "$repo/nshost/nsrsh" --bind-to none --mca oob_tcp_if_include "$net" \
				-x FI_PSM2_IFACE -x NSHOSTS_PREFIX -x NSHOSTS_NET \
				-np $((hosts * per)) --map-by node "$out/onesided" 2>&1) &&
				grep -q '^onesided: [0-9]* passed, 0 failed' <<<"$o"; then
				ok "MPI one-sided over osc rdma + btl ofi, $hosts hosts x $per ranks: $(grep '^onesided:' <<<"$o")"
			else
				fail "MPI one-sided, $hosts hosts x $per ranks" "$o"
			fi
		done
	else
		fail "mpicc ctest/mpi/onesided.c" "$(cat "$out/mpicc.log")"
	fi
	# NetPIPE across 2 hosts, every size to 8 MiB.
	rm -f "$out/np.out"
	o=$(mpirun_hosts 2 1 NPopenmpi -u 8388608 -o "$out/np.out")
	last=$(tail -1 "$out/np.out" 2>/dev/null | awk '{print $1}')
	if [ "$last" = 8388611 ]; then
		ok "NetPIPE across 2 hosts over cm/ofi/psm2: every size to 8 MiB ($(wc -l <"$out/np.out") sizes; 1 B $(awk '$1 == 1 { printf "%.1f us", $3 * 1e6 }' "$out/np.out"), 8 MiB $(tail -1 "$out/np.out" | awk '{ printf "%.0f Mbps", $2 }'))"
	else
		fail "NetPIPE across 2 hosts (last size: ${last:-none})" "$o"
	fi
	# hpcc at 4 ranks on 2 hosts (2 x 2 process grid).
	hp=$out/hpcc
	mkdir -p "$hp"
	sed -e 's/^1 *Ps$/2            Ps/; s/^2 *Qs$/2            Qs/' ctest/mpi/hpccinf.txt >"$hp/hpccinf.txt"
	rm -f "$hp/hpccoutf.txt"
	o=$(cd "$hp" && mpirun_hosts 2 2 hpcc)
	if grep -q '^Success=1' "$hp/hpccoutf.txt" 2>/dev/null && grep -q 'End of HPC Challenge tests' "$hp/hpccoutf.txt"; then
		ok "hpcc at 4 ranks on 2 hosts over cm/ofi/psm2 ($(grep -E '^(HPL_Tflops|MinPingPongLatency_usec|MaxPingPongBandwidth_GBytes)=' "$hp/hpccoutf.txt" | tr '\n' ' '))"
	else
		fail "hpcc at 4 ranks on 2 hosts" "$o
$(tail -20 "$hp/hpccoutf.txt" 2>/dev/null)"
	fi
fi

# MPICH (ch4:ofi) across 2 hosts x 1 rank, when scripts/mpich.sh has built
# it: hydra launches through nsrsh, as it would through ssh.
if scripts/mpichrun.sh --have; then
	printf '%s:1\n' "$h1" "$h2" >"$out/hostfile-mpich"
	for prog in conformance onesided threads; do
		if ! scripts/mpichrun.sh --mpicc -std=gnu11 -O2 -Wall -Wno-stringop-overflow -pthread -o "$out/mpich-$prog" "ctest/mpi/$prog.c" 2>"$out/mpicc.log"; then
			fail "MPICH mpicc ctest/mpi/$prog.c" "$(cat "$out/mpicc.log")"
			continue
		fi
		if o=$($ns exec 1 env FI_PSM2_IFACE="$net" timeout 600 "$repo/scripts/mpichrun.sh" -f "$out/hostfile-mpich" \
			-launcher ssh -launcher-exec "$repo/nshost/nsrsh" -n 2 "$out/mpich-$prog" 2>&1) &&
			grep -q "^$prog: .* 0 failed" <<<"$o"; then
			ok "MPICH ch4:ofi over psm2, $prog, 2 hosts x 1 rank: $(grep "^$prog:" <<<"$o")"
		else
			fail "MPICH ch4:ofi, $prog, 2 hosts x 1 rank" "$o"
		fi
	done
else
	echo "SKIP MPICH ch4:ofi across hosts (not built; scripts/mpich.sh builds it)"
fi

# xfer (ctest/xfer.c): receiver on host 1, sender on host 2.
#   xfer_run TAG "recv options" "send options" [env...]
# leaves the exit codes in xr and xs.
cc -std=gnu11 -O2 -Wall -Iinclude -o "$out/xfer" ctest/xfer.c -L"$lib" -lfabric 2>"$out/cc.log" ||
	fail "cc ctest/xfer.c" "$(cat "$out/cc.log")"
xfer_run() {
	local tag=$1 ropt=$2 sopt=$3; shift 3
	rm -f "$out/$tag.name" "$out/$tag.progress"
	$ns exec 1 "${env[@]}" "$@" timeout 300 "$out/xfer" recv "$out/$tag.name" $ropt \
		>"$out/$tag-recv.log" 2>&1 &
	local r=$!
	$ns exec 2 "${env[@]}" "$@" timeout 300 "$out/xfer" send "$out/$tag.name" $sopt \
		>"$out/$tag-send.log" 2>&1
	xs=$?
	{ wait $r; } 2>/dev/null # (a receiver killed on purpose: no "Killed" line)
	xr=$?
}
# retransmits LOG: the hfi retransmission count the endpoint logged at close.
retransmits() { sed -n 's/.*hfi {.*Retransmits:\([0-9]*\).*/\1/p' "$1" | head -1; }

# Under 5% loss, 5% reordering and 1% duplication each way (per datagram):
# MPI conformance, and 10,000 messages of 1 B..4 MiB (tagged, untagged,
# inject, rendezvous) exactly once, intact.
$ns loss 2 5 >/dev/null && $ns reorder 2 5 >/dev/null && $ns dup 2 1 >/dev/null
if [ -x "$out/conformance" ]; then
	if o=$(mpi 2 1) && grep -q ', 0 failed' <<<"$o"; then
		ok "MPI conformance, 2 hosts x 1 rank, 5% loss + 5% reordering + 1% duplication each way: $(tail -1 <<<"$o")"
	else
		fail "MPI conformance under loss, reordering and duplication" "$o"
	fi
fi
xfer_run lossy "" "" FI_LOG_LEVEL=info
if [ "$xr" = 0 ] && [ "$xs" = 0 ]; then
	ok "xfer across hosts, 5% loss + 5% reordering + 1% duplication: $(grep '^xfer:' "$out/lossy-recv.log" | tail -1 | cut -c7-); $(retransmits "$out/lossy-send.log") packets retransmitted by the sender, $(retransmits "$out/lossy-recv.log") by the receiver"
else
	fail "xfer across hosts under loss (receiver $xr, sender $xs)" \
		"$(grep -v '^libfabric:.*info' "$out/lossy-recv.log" "$out/lossy-send.log")"
fi
$ns rules 2 >"$out/rules.txt" 2>&1
$ns loss 2 0 >/dev/null; $ns reorder 2 0 >/dev/null; $ns dup 2 0 >/dev/null

# A peer killed in the middle: the survivor's operations end (with errors,
# or cancelled) within FI_PSM2_CONN_TIMEOUT (2 s here) plus a margin; no
# hang. kill_run TAG VICTIM(recv|send) "recv options" "send options"
# prints the seconds from the kill to the survivor's exit, and leaves the
# survivor's exit code in $out/TAG.rc.
kill_run() {
	local tag=$1 victim=$2 ropt=$3 sopt=$4 i t0
	rm -f "$out/$tag.progress" "$out/$tag.rc"
	( xfer_run "$tag" "$ropt -p $out/$tag.progress" "$sopt" FI_PSM2_CONN_TIMEOUT=2
	  if [ "$victim" = recv ]; then echo "$xs"; else echo "$xr"; fi >"$out/$tag.rc" ) 2>/dev/null &
	local x=$!
	for ((i = 0; i < 600; i++)); do [ -e "$out/$tag.progress" ] && break; sleep 0.1; done
	t0=$(date +%s%N)
	pkill -KILL -f "xfer $victim $out/$tag.name"
	{ wait $x; } 2>/dev/null
	echo "scale=2; ($(date +%s%N) - $t0) / 1000000000" | bc
}
dt=$(kill_run killr recv "" "-k")
if [ "$(cat "$out/killr.rc")" = 0 ] && [ "$(echo "$dt < 7" | bc)" = 1 ]; then
	ok "receiver killed mid-transfer across hosts: the sender was done $dt s later: $(grep '^xfer: survivor' "$out/killr-send.log" | cut -c7-)"
else
	fail "receiver killed mid-transfer (sender exit $(cat "$out/killr.rc"), $dt s after the kill)" "$(cat "$out/killr-send.log")"
fi
dt=$(kill_run kills send "-k -l 200" "-l 200")
got=$(sed -n 's/^xfer: survivor receiver: \([0-9]*\) of.*/\1/p' "$out/kills-recv.log")
if [ "$(cat "$out/kills.rc")" = 0 ] && [ "$(echo "$dt < 9" | bc)" = 1 ] && [ "${got:-0}" -ge 1000 ]; then
	ok "sender killed mid-transfer across hosts: the receiver was done $dt s later: $(grep '^xfer: survivor' "$out/kills-recv.log" | cut -c7-)"
else
	fail "sender killed mid-transfer (receiver exit $(cat "$out/kills.rc"), $dt s after the kill)" "$(cat "$out/kills-recv.log")"
fi

# RMA across hosts (ctest/rmakill.c over hfi): reads and writes of 1 B to
# 60 KB checked at both ends, then the target is killed: an RMA to it must
# fail within FI_PSM2_CONN_TIMEOUT (2 s) plus a margin.
if cc -std=gnu11 -O2 -Wall -Iinclude -o "$out/rmakill" ctest/rmakill.c -L"$lib" -lfabric 2>"$out/cc.log"; then
	# (the logs go first: a stale target line would be taken for the new one)
	rm -f "$out/rk.in" "$out/rk-target.log" "$out/rk-init.log" && mkfifo "$out/rk.in"
	$ns exec 1 "${env[@]}" timeout 120 "$out/rmakill" target >"$out/rk-target.log" 2>&1 &
	rt=$!
	for ((i = 0; i < 200; i++)); do [ -s "$out/rk-target.log" ] && break; sleep 0.1; done
	$ns exec 2 "${env[@]}" timeout 120 "$out/rmakill" remote <"$out/rk.in" >"$out/rk-init.log" 2>&1 &
	rk=$!
	exec 7>"$out/rk.in"
	head -1 "$out/rk-target.log" >&7
	for ((i = 0; i < 600; i++)); do grep -q '^kill' "$out/rk-init.log" && break; sleep 0.1; done
	pkill -KILL -f "$out/rmakill target"
	echo killed >&7
	exec 7>&-
	wait $rk
	rc=$?
	{ wait $rt; } 2>/dev/null # (killed on purpose: no "Killed" line)
	if [ $rc = 0 ] && grep -q '^rmakill: .* 0 failed' "$out/rk-init.log"; then
		ok "RMA across hosts, 1 B to 60 KB read and written, then the target killed: $(grep '^# read to a dead' "$out/rk-init.log" | cut -c3-)"
	else
		fail "RMA across hosts (initiator exit $rc)" "$(cat "$out/rk-init.log" "$out/rk-target.log")"
	fi
else
	fail "cc ctest/rmakill.c" "$(cat "$out/cc.log")"
fi

# Link faults: ctest/reconnect.c sends 200 kB rounds from host 2 to host 1,
# each again until it completes; the receiver checks every one.
#   reconnect_start TAG [receiver env...]: leaves the pids in rr and rs.
if cc -std=gnu11 -O2 -Wall -Iinclude -o "$out/reconnect" ctest/reconnect.c -L"$lib" -lfabric 2>"$out/cc.log"; then
	wait_line() { # FILE PATTERN SECONDS
		local i
		for ((i = 0; i < $3 * 10; i++)); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
		return 1
	}
	recv_rc() { $ns exec 1 "${env[@]}" FI_PSM2_CONN_TIMEOUT=2 "$@" timeout 120 "$out/reconnect" recv "$out/rc.name" -n 40; }
	# The link cut (every UDP datagram of host 2 dropped, both ways) for
	# 4 s, twice FI_PSM2_CONN_TIMEOUT.
	rm -f "$out/rc.name"
	recv_rc >"$out/rc-recv.log" 2>&1 &
	rr=$!
	$ns exec 2 "${env[@]}" FI_PSM2_CONN_TIMEOUT=2 timeout 120 "$out/reconnect" send "$out/rc.name" -n 40 >"$out/rc-send.log" 2>&1 &
	rs=$!
	wait_line "$out/rc-send.log" '^sent 5$' 30
	cut=ok
	$ns loss 2 100 >/dev/null || cut=failed
	sleep 4
	$ns loss 2 0 >/dev/null || cut=failed
	wait $rs; xs=$?
	wait $rr; xr=$?
	nf=$(grep -c '^round .* failed' "$out/rc-send.log")
	if [ $cut = ok ] && [ $xs = 0 ] && [ $xr = 0 ] && [ "$nf" -ge 1 ]; then
		ok "link cut for twice the connection timeout, then healed: $nf sends failed meanwhile (timed out), then $(tail -1 "$out/rc-send.log" | sed 's/^reconnect: sender: //'); $(tail -1 "$out/rc-recv.log" | sed 's/^reconnect: //')"
	else
		fail "link cut and healed (cutting it: $cut; sender $xs, receiver $xr, $nf failed sends)" "$(cat "$out/rc-send.log" "$out/rc-recv.log" | tail -20)"
	fi
	# A receiver killed after round 5 and started again on the same port:
	# the same endpoint name, a new process.
	port=$((40000 + RANDOM % 10000))
	rm -f "$out/rc.name"
	recv_rc FI_PSM2_PORT_RANGE=$port-$port >"$out/rc-recv1.log" 2>&1 &
	rr=$!
	$ns exec 2 "${env[@]}" FI_PSM2_CONN_TIMEOUT=2 timeout 120 "$out/reconnect" send "$out/rc.name" -n 40 >"$out/rc-send2.log" 2>&1 &
	rs=$!
	wait_line "$out/rc-recv1.log" '^got 5$' 30
	pkill -KILL -f "reconnect recv $out/rc.name"
	{ wait $rr; } 2>/dev/null
	recv_rc FI_PSM2_PORT_RANGE=$port-$port >"$out/rc-recv2.log" 2>&1 &
	rr=$!
	wait $rs; xs=$?
	wait $rr; xr=$?
	if [ $xs = 0 ] && [ $xr = 0 ] && grep -q '^got 39$' "$out/rc-recv2.log"; then
		ok "receiver killed and restarted at the same address across hosts: $(grep -c '^round .* failed' "$out/rc-send2.log") sends failed, then $(tail -1 "$out/rc-send2.log" | sed 's/^reconnect: sender: //'); the new receiver got rounds $(grep -m1 '^got' "$out/rc-recv2.log" | cut -d' ' -f2) to 39, verified"
	else
		fail "receiver restarted at the same address (sender $xs, receiver $xr)" "$(cat "$out/rc-send2.log" "$out/rc-recv2.log" | tail -20)"
	fi
else
	fail "cc ctest/reconnect.c" "$(cat "$out/cc.log")"
fi

# The MTU of every link falls to 1280 in the middle of xfer's messages,
# then rises to 9000: segmented sends of 1472-byte packets fail with
# EMSGSIZE, go fragmented, and later packets are smaller; then they grow
# back. Every message arrives once, intact.
rm -f "$out/mtu.progress"
( xfer_run mtu "-p $out/mtu.progress" "" FI_LOG_LEVEL=info
  echo "$xr $xs" >"$out/mtu.rc" ) &
x=$!
wait_line "$out/mtu.progress" . 60
$ns mtu 1280
sleep 2
$ns mtu 9000
wait $x
$ns mtu 1500
read -r xr xs <"$out/mtu.rc"
mtudown() { sed -n 's/.*hfi {.*MTUDown:\([0-9]*\).*/\1/p' "$1" | head -1; }
if [ "$xr" = 0 ] && [ "$xs" = 0 ] && [ "$(mtudown "$out/mtu-send.log")" -ge 1 ] 2>/dev/null; then
	ok "MTU 1500 -> 1280 -> 9000 in the middle of xfer across hosts: $(grep '^xfer:' "$out/mtu-recv.log" | tail -1 | cut -c7-); packets lowered to the path MTU $(mtudown "$out/mtu-send.log") times by the sender, $(mtudown "$out/mtu-recv.log") by the receiver"
else
	fail "MTU change during xfer (receiver $xr, sender $xs, sender's MTUDown $(mtudown "$out/mtu-send.log"))" \
		"$(grep -v '^libfabric:.*info' "$out/mtu-recv.log" "$out/mtu-send.log" | tail -20)"
fi

echo
echo "multihost: $passed passed, $failed failed"
[ "$failed" = 0 ]
