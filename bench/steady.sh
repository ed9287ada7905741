# steady.sh: sourced by bench.sh and sweep.sh. Runs each measurement while
# the host hands cache lines between the benchmark cores at its usual speed.
#
# On the virtual machines this project is measured on, the one-way hand-off
# of a cache line between CPU 0 and CPU 1 (bench/floor.c) is ~55 ns most
# of the time and 4-5 times that for stretches of 2-10 s, about a third of
# the time: the hypervisor moves the virtual CPUs. Every intra-node latency
# and rate moves with it, ours and the references' alike, so a comparison
# of two runs made in different phases says nothing about either. Before
# each run, steady_run waits (at most BENCH_STEADY_WAIT seconds, default
# 20) until the hand-off is within 1.5x (+10 ns) of its median, and
# after it checks again; a run the slow phase overlapped is made again (3
# tries at most; the last one counts). Both sides of every comparison go
# through it. BENCH_STEADY=0 turns it off. The median hand-off and how
# often it waited or ran again are printed by steady_report.
#
#   steady_init WORKDIR    take 10 samples of floor (make bench-tools)
#   steady_run CMD...      CMD's output from a run inside a fast phase
#   steady_report          one line: the floor and the waits and reruns
STEADY=${BENCH_STEADY:-1}
STEADY_WAIT=${BENCH_STEADY_WAIT:-20}
steady_bin= steady_dir=

steady_init() {
	local i
	[ "$STEADY" = 1 ] || return 0
	# State in files: steady_run often runs in a command substitution.
	steady_dir=$1/steady
	steady_bin=$PWD/build/bench/bin/floor   # make bench-tools
	mkdir -p "$steady_dir" && : >"$steady_dir/events" && : >"$steady_dir/samples"
	if [ ! -x "$steady_bin" ]; then
		steady_bin= STEADY=0
		return 0
	fi
	for ((i = 0; i < 10; i++)); do
		steady_ok >/dev/null
		sleep 0.2
	done
}

# steady_ok: one sample; true when it is within 1.5x (+10 ns) of the
# host's usual hand-off: the median of all samples so far (a rare faster
# phase, ~25 ns, must not make the usual one look slow).
steady_ok() {
	local f usual
	f=$("$steady_bin") || return 0
	echo "$f" >>"$steady_dir/samples"
	usual=$(sort -n "$steady_dir/samples" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	awk -v a="$f" -v b="$usual" 'BEGIN { exit !(a <= 1.5 * b + 10) }'
}

# steady_wait: until a fast sample, at most STEADY_WAIT seconds.
steady_wait() {
	local t0=$SECONDS
	steady_ok && return 0
	echo waited >>"$steady_dir/events"
	while ((SECONDS - t0 < STEADY_WAIT)); do
		sleep 0.25
		steady_ok && return 0
	done
	echo gaveup >>"$steady_dir/events"
	return 1
}

steady_run() {
	local try out rc
	if [ "$STEADY" != 1 ]; then
		"$@"
		return
	fi
	for try in 1 2 3; do
		steady_wait
		out=$("$@")
		rc=$?
		if [ $rc -ne 0 ] || [ $try = 3 ] || steady_ok; then
			[ -z "$out" ] || printf '%s\n' "$out"
			return $rc
		fi
		echo rerun >>"$steady_dir/events"
	done
}

steady_report() {
	if [ "$STEADY" = 1 ]; then
		local e=$steady_dir/events
		echo "host: cache-line hand-off CPU 0 <-> 1: median $(sort -n "$steady_dir/samples" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }') ns of $(wc -l <"$steady_dir/samples") samples (bench/floor.c); waited for a fast phase $(grep -c waited "$e") times ($(grep -c gaveup "$e") in vain), ran again $(grep -c rerun "$e") times"
	fi
}
