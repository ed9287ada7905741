#!/usr/bin/env bash
# End-to-end runs of unmodified programs on our library (make check):
#   - Debian's fi_pingpong, RDM and DGRAM, every default size, with and
#     without -c (data checks);
#   - our MPI conformance program (ctest/mpi/conformance.c) under Open MPI's
#     cm PML and ofi MTL with FI_PROVIDER=psm2, at -np 2 and -np 4;
#   - NetPIPE (NPopenmpi) to 8 MiB and hpcc at -np 2, same path;
#   - ctest/mpi/threads.c (MPI_THREAD_MULTIPLE, 4 threads a rank) at -np 3,
#     and at -np 2 on a scalable endpoint (mtl_ofi_enable_sep), and the
#     conformance program on one with thread grouping;
#   - with MPICH built by scripts/mpich.sh (ch4:ofi): the conformance,
#     one-sided and threads programs at -np 2.
# Prints PASS/FAIL lines; exit status 1 if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
lib=$PWD/build/lib
out=build/mpi
mkdir -p "$out"
. bench/report.sh

# mpirun.sh's yield setting comes from mpirun's own options only: a
# program's -n (NetPIPE's iteration count) once counted as 20000 ranks and
# made every NetPIPE run yield when idle.
yield_of() { MPIRUN_DRYRUN=1 scripts/mpirun.sh "$@" | grep -o 'mpi_yield_when_idle [01]' | cut -d' ' -f2; }
more=$(($(nproc) + 1))
y1=$(yield_of -np 2 NPopenmpi -n 20000) y2=$(yield_of --mca btl self -np "$more" x -n 1)
y3=$(yield_of --hostfile h -np 2 NPopenmpi -n 20000)
if [ "$y1" = 0 ] && [ "$y2" = 1 ] && [ "$y3" = 1 ]; then
	ok "mpirun.sh: yield when idle off for 2 ranks on $(nproc) cores, on for $more or across hosts"
else
	fail "mpirun.sh yield setting" "2 ranks: '$y1' (want 0), $more ranks: '$y2' (want 1), hostfile: '$y3' (want 1)"
fi

# fi_pingpong: the server first, then the client on 127.0.0.1.
pingpong() {
	local port=$1; shift
	LD_LIBRARY_PATH=$lib FI_PROVIDER=psm2 timeout 120 fi_pingpong -p psm2 -B "$port" "$@" >"$out/pp-server.log" 2>&1 &
	local srv=$!
	sleep 0.5
	local cout rc
	cout=$(LD_LIBRARY_PATH=$lib FI_PROVIDER=psm2 timeout 120 fi_pingpong -p psm2 -P "$port" "$@" 127.0.0.1 2>&1)
	rc=$?
	wait $srv
	local src=$?
	if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -q '^1m ' <<<"$cout"; then
		ok "fi_pingpong -p psm2 $* (every size to 1m)"
	else
		fail "fi_pingpong -p psm2 $* (client $rc, server $src)" "$cout
$(cat "$out/pp-server.log")"
	fi
}
pingpong 47591 -e rdm
pingpong 47592 -e rdm -c
pingpong 47593 -e dgram
pingpong 47594 -e dgram -c

# One-sided MPI on one host: osc pt2pt over the MTL (Open MPI 4.1's osc
# rdma over btl ofi crashes on a single node; multihost.sh runs it across
# hosts, where it uses our RMA and atomics).
if ! mpicc -std=gnu11 -O2 -Wall -o "$out/onesided" ctest/mpi/onesided.c 2>"$out/mpicc.log"; then
	fail "mpicc ctest/mpi/onesided.c" "$(cat "$out/mpicc.log")"
else
	for np in 2 4; do
		o=$(timeout 300 scripts/mpirun.sh -np $np --mca osc pt2pt "$out/onesided" 2>&1)
		if [ $? -eq 0 ] && grep -q '^onesided: [0-9]* passed, 0 failed' <<<"$o"; then
			ok "MPI one-sided (osc pt2pt) at -np $np: $(grep '^onesided:' <<<"$o")"
		else
			fail "MPI one-sided at -np $np" "$o"
		fi
	done
fi

# MPI_THREAD_MULTIPLE: 4 threads a rank on one endpoint (ctest/mpi/threads.c).
if ! mpicc -std=gnu11 -O2 -Wall -pthread -o "$out/threads" ctest/mpi/threads.c 2>"$out/mpicc.log"; then
	fail "mpicc ctest/mpi/threads.c" "$(cat "$out/mpicc.log")"
else
	o=$(timeout 300 scripts/mpirun.sh -np 3 "$out/threads" 2>&1)
	if [ $? -eq 0 ] && grep -q '^threads: .* 0 failed' <<<"$o"; then
		ok "MPI_THREAD_MULTIPLE over cm/ofi/psm2 at -np 3: $(grep '^threads:' <<<"$o")"
	else
		fail "MPI_THREAD_MULTIPLE at -np 3" "$o"
	fi
	# The same on a scalable endpoint (mtl_ofi_enable_sep). Not with
	# thread grouping (a context per communicator): Open MPI 4.1 closes a
	# freed communicator's context and CQ while its progress loop still
	# reads every context's CQ, whatever the provider (this program frees
	# communicators); the conformance program, which does not, runs with
	# it below.
	o=$(timeout 300 scripts/mpirun.sh -np 2 --mca mtl_ofi_enable_sep 1 --mca mtl_ofi_verbose 1 "$out/threads" 2>&1)
	if [ $? -eq 0 ] && grep -q '^threads: .* 0 failed' <<<"$o" && grep -q 'Scalable EP supported in psm2 provider' <<<"$o"; then
		ok "MPI_THREAD_MULTIPLE on a scalable endpoint (mtl_ofi_enable_sep): $(grep '^threads:' <<<"$o")"
	else
		fail "MPI_THREAD_MULTIPLE on a scalable endpoint" "$o"
	fi
fi

# MPI conformance, NetPIPE, hpcc.
if ! mpicc -O2 -Wall -o "$out/conformance" ctest/mpi/conformance.c 2>"$out/mpicc.log"; then
	fail "mpicc ctest/mpi/conformance.c" "$(cat "$out/mpicc.log")"
else
	for np in 2 4; do
		o=$(timeout 300 scripts/mpirun.sh -np $np "$out/conformance" 2>&1)
		if [ $? -eq 0 ] && grep -q 'conformance: [0-9]* passed, 0 failed' <<<"$o"; then
			ok "MPI conformance over cm/ofi/psm2 at -np $np: $(grep '^conformance:' <<<"$o")"
		else
			fail "MPI conformance at -np $np" "$o"
		fi
	done
	# On a scalable endpoint with thread grouping, 8 contexts (Open MPI
	# 4.1 indexes an array of mtl_ofi_num_ctxts + 2 entries by
	# communicator: fewer contexts than communicators overflow it).
	o=$(timeout 300 scripts/mpirun.sh -np 2 --mca mtl_ofi_enable_sep 1 --mca mtl_ofi_thread_grouping 1 \
		--mca mtl_ofi_num_ctxts 8 --mca mtl_ofi_verbose 1 "$out/conformance" 2>&1)
	if [ $? -eq 0 ] && grep -q 'conformance: [0-9]* passed, 0 failed' <<<"$o" && grep -q 'Scalable EP supported in psm2 provider' <<<"$o"; then
		ok "MPI conformance on a scalable endpoint (mtl_ofi_enable_sep, thread grouping): $(grep '^conformance:' <<<"$o")"
	else
		fail "MPI conformance on a scalable endpoint" "$o"
	fi
fi

# MPICH (ch4:ofi netmod, no shm module: every byte through our library),
# when scripts/mpich.sh has built it: the conformance program, two-sided
# and one-sided, at -np 2.
if scripts/mpichrun.sh --have; then
	for prog in conformance onesided threads; do
		if ! scripts/mpichrun.sh --mpicc -std=gnu11 -O2 -Wall -Wno-stringop-overflow -pthread -o "$out/mpich-$prog" "ctest/mpi/$prog.c" 2>"$out/mpicc.log"; then
			fail "MPICH mpicc ctest/mpi/$prog.c" "$(cat "$out/mpicc.log")"
			continue
		fi
		# MPICH's psm2 capability set asks for scalable endpoints:
		# its debug output says whether it got them.
		o=$(timeout 300 scripts/mpichrun.sh -genv MPIR_CVAR_CH4_OFI_CAPABILITY_SETS_DEBUG 1 -n 2 "$out/mpich-$prog" 2>&1)
		if [ $? -eq 0 ] && grep -q "^$prog: .* 0 failed" <<<"$o" && grep -q '^MPIDI_OFI_ENABLE_SCALABLE_ENDPOINTS: 1' <<<"$o"; then
			ok "MPICH ch4:ofi over psm2 (scalable endpoints), $prog at -np 2: $(grep "^$prog:" <<<"$o")"
		else
			fail "MPICH ch4:ofi, $prog at -np 2" "$o"
		fi
	done
else
	echo "SKIP MPICH ch4:ofi (not built; scripts/mpich.sh builds it)"
fi

o=$(timeout 300 scripts/mpirun.sh -np 2 NPopenmpi -u 8388608 -o "$out/np.out" 2>&1)
last=$(tail -1 "$out/np.out" 2>/dev/null | awk '{print $1}')
if [ $? -eq 0 ] && [ "$last" = 8388611 ]; then
	ok "NetPIPE over cm/ofi/psm2 completes every size to 8 MiB ($(wc -l <"$out/np.out") sizes)"
else
	fail "NetPIPE to 8 MiB (last size: ${last:-none})" "$o"
fi

hp=$out/hpcc
mkdir -p "$hp"
cp ctest/mpi/hpccinf.txt "$hp/hpccinf.txt"
o=$(cd "$hp" && rm -f hpccoutf.txt && timeout 600 ../../../scripts/mpirun.sh -np 2 hpcc 2>&1)
if grep -q '^Success=1' "$hp/hpccoutf.txt" 2>/dev/null && grep -q 'End of HPC Challenge tests' "$hp/hpccoutf.txt"; then
	ok "hpcc at -np 2 over cm/ofi/psm2 ($(grep -E '^(HPL_Tflops|MinPingPongLatency_usec)=' "$hp/hpccoutf.txt" | tr '\n' ' '))"
else
	fail "hpcc at -np 2" "$o
$(tail -20 "$hp/hpccoutf.txt" 2>/dev/null)"
fi

echo
echo "mpi: $passed passed, $failed failed"
[ $failed -eq 0 ]
