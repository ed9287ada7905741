#!/bin/sh
# ABI conformance test: compares the libfabric headers in <our-include-dir>
# with the reference (Debian libfabric-dev) headers.
#
# usage: ctest/abi/run.sh <our-include-dir> <work-dir>
#
# Environment:
#   CC            C compiler (default gcc)
#   CXX           C++ compiler for the optional linkage check (default g++)
#   GO            go command (default: go from PATH, else /usr/local/go/bin/go)
#   ABI_REF_RDMA  reference rdma/ directory (default /usr/include/rdma)
#
# Prints the differences, then one line "ABI: N items compared, M differences".
# Exits 0 only when both probes compile and run, N >= 500 and M == 0.

set -u
LC_ALL=C
export LC_ALL

if [ $# -ne 2 ]; then
	echo "usage: $0 <our-include-dir> <work-dir>" >&2
	exit 2
fi

HEADERS="fabric.h fi_errno.h fi_domain.h fi_endpoint.h fi_eq.h fi_cm.h
fi_tagged.h fi_rma.h fi_atomic.h fi_trigger.h fi_collective.h fi_ext.h
fi_ext_psm2.h providers/fi_prov.h providers/fi_log.h"
MIN_ITEMS=500

CC=${CC:-gcc}
CXX=${CXX:-g++}
REF_RDMA=${ABI_REF_RDMA:-/usr/include/rdma}
REF_INC=$(dirname "$REF_RDMA")
CFLAGS="-std=gnu11 -Wall -O0"

if [ ! -d "$1" ]; then
	echo "abi: $1: no such directory" >&2
	exit 2
fi
OURS=$(cd "$1" && pwd -P)
mkdir -p "$2" || exit 2
WORK=$(cd "$2" && pwd -P)
ROOT=$(cd "$(dirname "$0")/../.." && pwd -P)

if [ -z "${GO:-}" ]; then
	if command -v go >/dev/null 2>&1; then
		GO=go
	else
		GO=/usr/local/go/bin/go
	fi
fi

# cxx_check <include-dir> <side>: C++ linkage of the library functions.
cxx_check() {
	if ! $CXX -w -c -I "$1" -I "$WORK/poison" "$WORK/linkage.cc" -o "$WORK/linkage_$2.o" 2>"$WORK/cxx_$2.log"; then
		echo "cxxcompile all-headers fails" >>"$WORK/cxx_$2.out"
		return
	fi
	echo "cxxcompile all-headers ok" >>"$WORK/cxx_$2.out"
	nm -u "$WORK/linkage_$2.o" | awk '{print $NF}' >"$WORK/linkage_$2.syms"
	sed -n 's|^// abi-extern ||p' "$WORK/linkage.cc" | while read -r fn; do
		if grep -qx "$fn" "$WORK/linkage_$2.syms"; then
			echo "cxxlinkage $fn C" >>"$WORK/cxx_$2.out"
		else
			echo "cxxlinkage $fn not-C" >>"$WORK/cxx_$2.out"
		fi
	done
}

# Summary and exit.  $1 = items, $2 = differences, $3 = extra failure flag.
finish() {
	echo "ABI: $1 items compared, $2 differences"
	if [ "$2" -ne 0 ] || [ "$3" -ne 0 ] || [ "$1" -lt "$MIN_ITEMS" ]; then
		exit 1
	fi
	exit 0
}

rm -rf "$WORK/poison" "$WORK/sc"
rm -f "$WORK"/*.out "$WORK"/*.log "$WORK"/*.all "$WORK/probe.c" \
	"$WORK/probe_ref" "$WORK/probe_ours" "$WORK/abi.diff"

# 1. Header file set: everything the reference ships must exist in ours.
: >"$WORK/files_ref.out"
: >"$WORK/files_ours.out"
for h in $HEADERS; do
	[ -f "$REF_RDMA/$h" ] || continue
	echo "file rdma/$h present" >>"$WORK/files_ref.out"
	if [ -f "$OURS/rdma/$h" ]; then
		echo "file rdma/$h present" >>"$WORK/files_ours.out"
	else
		echo "file rdma/$h missing" >>"$WORK/files_ours.out"
	fi
done

# Headers missing from ours must not silently fall back to the system
# copies: a poison directory searched right after ours shadows them with
# an #error.
mkdir -p "$WORK/poison/rdma/providers"
for h in $HEADERS; do
	if [ ! -f "$OURS/rdma/$h" ]; then
		printf '#error "rdma/%s is missing from %s"\n' "$h" "$OURS" >"$WORK/poison/rdma/$h"
	fi
done

# 2. Generate the probe from the reference headers.
if [ -f "$ROOT/go.mod" ]; then
	GENPKG=./ctest/abi/abigen
else
	GENPKG=./ctest/abi/abigen/main.go
fi
if ! (cd "$ROOT" && "$GO" run "$GENPKG" -ref "$REF_RDMA" -cc "$CC" -o "$WORK/probe.c" -cxx "$WORK/linkage.cc" -list "$WORK/names_ref.txt") 2>"$WORK/gen.log"; then
	echo "abi: generator failed:"
	cat "$WORK/gen.log"
	finish 0 0 1
fi
sed 's/^/abi: /' "$WORK/gen.log"

# 3. Build and run against the reference headers.
if ! $CC $CFLAGS -I "$REF_INC" "$WORK/probe.c" -o "$WORK/probe_ref" 2>"$WORK/cc_ref.log"; then
	echo "abi: the probe does not compile against the reference headers (generator bug):"
	head -n 100 "$WORK/cc_ref.log"
	finish 0 0 1
fi
if ! "$WORK/probe_ref" >"$WORK/probe_ref.out" 2>"$WORK/run_ref.log"; then
	echo "abi: the probe failed against the reference headers (generator bug):"
	cat "$WORK/run_ref.log"
	finish 0 0 1
fi

# 4. Each header must compile on its own, without warnings.
mkdir -p "$WORK/sc"
: >"$WORK/sc_ref.out"
: >"$WORK/sc_ours.out"
for h in $HEADERS; do
	[ -f "$REF_RDMA/$h" ] || continue
	src="$WORK/sc/$(echo "$h" | tr / _).c"
	printf '#include <rdma/%s>\nint abi_sc_dummy;\n' "$h" >"$src"
	if $CC $CFLAGS -Werror -fsyntax-only -I "$REF_INC" "$src" >/dev/null 2>&1; then r=ok; else r=fails; fi
	echo "standalone rdma/$h $r" >>"$WORK/sc_ref.out"
	if [ -f "$OURS/rdma/$h" ] && $CC $CFLAGS -Werror -fsyntax-only -I "$OURS" -I "$WORK/poison" "$src" >"$WORK/sc/$(basename "$src").log" 2>&1; then r=ok; else r=fails; fi
	echo "standalone rdma/$h $r" >>"$WORK/sc_ours.out"
	if [ $r = fails ] && [ -f "$OURS/rdma/$h" ]; then
		echo "abi: rdma/$h does not compile cleanly on its own:"
		grep 'error:\|warning:' "$WORK/sc/$(basename "$src").log" | head -n 5
	fi
done

# 4b. C++ linkage: with a C++ compiler at hand, every library function
# must be referenced under its plain C symbol name.
: >"$WORK/cxx_ref.out"
: >"$WORK/cxx_ours.out"
if command -v "$CXX" >/dev/null 2>&1 && command -v nm >/dev/null 2>&1; then
	cxx_check "$REF_INC" ref
	cxx_check "$OURS" ours
fi

cat "$WORK/files_ref.out" "$WORK/sc_ref.out" "$WORK/cxx_ref.out" "$WORK/probe_ref.out" >"$WORK/ref.all"
N=$(wc -l <"$WORK/ref.all" | tr -d ' ')

echo "abi: items by kind:" $(awk '{print $1}' "$WORK/ref.all" | sort | uniq -c | awk '{printf "%s=%s ", $2, $1}')

# 5. Build against ours.
fail=0
if ! $CC $CFLAGS -I "$OURS" -I "$WORK/poison" "$WORK/probe.c" -o "$WORK/probe_ours" 2>"$WORK/cc_ours.log"; then
	nerr=$(grep -c ': error:' "$WORK/cc_ours.log")
	echo "abi: the probe does not compile against $OURS ($nerr errors); a missing or mismatched declaration:"
	grep -v ': note: \|^ *|\|^ *[0-9]* |' "$WORK/cc_ours.log" | grep -v '^In file included from\|^  *from ' | head -n 300
	diff -U0 --label reference --label ours "$WORK/files_ref.out" "$WORK/files_ours.out" | grep '^[-+][^-+]'
	diff -U0 --label reference --label ours "$WORK/sc_ref.out" "$WORK/sc_ours.out" | grep '^[-+][^-+]'
	diff -U0 --label reference --label ours "$WORK/cxx_ref.out" "$WORK/cxx_ours.out" | grep '^[-+][^-+]'
	finish "$N" "$N" 1
fi
if grep -q 'warning:' "$WORK/cc_ours.log"; then
	echo "abi: compiler warnings against $OURS (not counted):"
	grep 'warning:' "$WORK/cc_ours.log" | head -n 50
fi

# Every rdma/ header the probe used must come from ours.
leaks=$($CC $CFLAGS -I "$OURS" -I "$WORK/poison" -M "$WORK/probe.c" 2>/dev/null | tr ' \\' '\n\n' |
	grep '/rdma/' | while read -r f; do
		case "$f" in "$OURS"/*) ;; *) echo "$f" ;; esac
	done)
if [ -n "$leaks" ]; then
	echo "abi: the build against $OURS used headers from elsewhere:"
	echo "$leaks"
	fail=1
fi

"$WORK/probe_ours" >"$WORK/probe_ours.out" 2>"$WORK/run_ours.log"
rc=$?
if [ $rc -ne 0 ]; then
	echo "abi: the probe built against $OURS exited with status $rc"
	cat "$WORK/run_ours.log"
	fail=1
fi
cat "$WORK/files_ours.out" "$WORK/sc_ours.out" "$WORK/cxx_ours.out" "$WORK/probe_ours.out" >"$WORK/ours.all"

# Informational: names our headers declare that the reference lacks
# (not counted; extra declarations do not break the ABI).
if [ -d "$OURS/rdma" ] && (cd "$ROOT" && "$GO" run "$GENPKG" -ref "$OURS/rdma" -cc "$CC" -o /dev/null -list "$WORK/names_ours.txt") 2>"$WORK/gen_ours.log"; then
	extra=$(comm -13 "$WORK/names_ref.txt" "$WORK/names_ours.txt")
	if [ -n "$extra" ]; then
		echo "abi: note: declared only by ours (not counted):" $extra
	fi
else
	echo "abi: note: could not list the names declared by ours (not counted):"
	sed 's/^/  /' "$WORK/gen_ours.log" | head -n 5
fi

# 6. Compare.
diff -U0 --label reference --label ours "$WORK/ref.all" "$WORK/ours.all" >"$WORK/abi.diff"
minus=$(grep -c '^-[^-]' "$WORK/abi.diff")
plus=$(grep -c '^+[^+]' "$WORK/abi.diff")
M=$minus
[ "$plus" -gt "$M" ] && M=$plus
if [ "$M" -ne 0 ]; then
	echo "abi: differences (- reference, + ours):"
	grep -v '^@@' "$WORK/abi.diff"
fi
finish "$N" "$M" "$fail"
