#!/bin/bash
# mtlpp.sh: where a small MPI message's time goes, ours against vader.
# Interleaved rounds of, at each size, one-way latency of
#   - bench/mtlpp.c on our library: the provider alone, making the calls
#     Open MPI's ofi MTL makes for a NetPIPE ping-pong;
#   - NetPIPE over cm/ofi on our library (scripts/mpirun.sh --psm2);
#   - NetPIPE over ob1 + vader (scripts/mpirun.sh --vader);
# then the median of each and of the paired ratios. The first against the
# third says whether the provider is behind vader; the second minus the
# first is Open MPI's cm PML and ofi MTL.
#
#   bench/mtlpp.sh [ROUNDS [SIZE...]]     (default: 8 rounds; 1 8 64 256)
#
# Needs make (build/lib) and the Open MPI packages (scripts/deps.sh). A
# benchmark, not a test: run it on a quiet machine.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
rounds=${1:-8}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 8 64 256)
lib=$PWD/build/lib
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
make -s bench-tools >/dev/null || exit 1
lo=${sizes[0]} hi=${sizes[0]}
for s in "${sizes[@]}"; do ((s < lo)) && lo=$s; ((s > hi)) && hi=$s; done

# netpipe MODE: "size usec" lines for the sizes asked.
netpipe() {
	rm -f "$work/np.out"
	timeout 300 scripts/mpirun.sh "--$1" -np 2 NPopenmpi -l "$lo" -u "$hi" -p 0 -n 20000 \
		-o "$work/np.out" >"$work/np.log" 2>&1 || { echo "NetPIPE $1 failed: $(tail -3 "$work/np.log")" >&2; return 1; }
	awk '$2 > 0 { printf "%d %.4f\n", $1, $1 * 8 / $2 }' "$work/np.out"
}

for ((r = 0; r < rounds; r++)); do
	LD_LIBRARY_PATH=$lib timeout 120 "$PWD/build/bench/bin/mtlpp" -n 200000 "${sizes[@]}" | sed "s/^/$r prov /" >>"$work/all" ||
		{ echo "mtlpp failed" >&2; exit 1; }
	netpipe psm2 | sed "s/^/$r cmofi /" >>"$work/all" || exit 1
	netpipe vader | sed "s/^/$r vader /" >>"$work/all" || exit 1
done

python3 - "$work/all" "${sizes[@]}" <<'EOF'
import statistics as st, sys
v = {}
for line in open(sys.argv[1]):
    r, kind, size, usec = line.split()
    v[(int(r), kind, int(size))] = float(usec)
rounds = sorted({k[0] for k in v})
# This VM kind flips between a fast and a slow phase every few hundred
# milliseconds, for every transport alike: best of the rounds, and the
# median of the ratios of runs made side by side.
print("one-way usec: best of %d interleaved rounds (median of the paired ratios)" % len(rounds))
print("%-8s %10s %10s %10s %20s %20s" % ("size", "provider", "cm/ofi", "vader", "provider/vader", "cm/ofi/vader"))
for s in map(int, sys.argv[2:]):
    p = [v[(r, "prov", s)] for r in rounds]
    c = [v[(r, "cmofi", s)] for r in rounds]
    w = [v[(r, "vader", s)] for r in rounds]
    print("%-8d %10.4f %10.4f %10.4f %13.2f (%4.2f) %13.2f (%4.2f)" % (s, min(p), min(c), min(w),
          min(p) / min(w), st.median([a / b for a, b in zip(p, w)]),
          min(c) / min(w), st.median([a / b for a, b in zip(c, w)])))
EOF
