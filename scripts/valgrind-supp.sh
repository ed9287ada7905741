#!/usr/bin/env bash
# Prints the valgrind suppressions for Go code: every memcheck error kind a
# frame can raise (Cond, Value1..32, Addr1..32), for every top frame that
# is Go's. scripts/ctest.sh writes them to build/ and passes them beside
# ctest/valgrind.supp, which keeps the entries that name one call site.
#
# Why Go frames are suppressed at all: valgrind is in ctest for the C fast
# path and the ABI. It does not understand Go's own memory: when the
# runtime moves a goroutine stack, valgrind takes the new stack (Go heap it
# saw no allocation for) for an unknown segment, and whatever runs on it is
# reported (seen in the runtime, fmt, internal/runtime/maps, the cgo
# wrappers, the network poller); Go's assembly helpers (IndexByte behind
# C.GoString, the map hash, the comparisons) read whole aligned words that
# may run past a C string but never past its page. Each of these was once
# a new CI failure with one more kind or one more function; the matrix
# covers them all at once, and no C function can match it:
#   - a package path ("a/b.F"), a method ("p.(*T).M"), a function of a
#     standard package without a slash ("fmt.F", from `go list std`; "main.F"
#     for the cgo exports), a linknamed runtime function ("pkg.runtime_F");
#   - cgo's generated wrappers (_cgo_<hash>_Cfunc_<name>, _cgoexp_<hash>_<name>),
#     which read their arguments from a goroutine's stack, and the C half
#     of the Go runtime (runtime/cgo: _cgo_*, x_cgo_*, crosscall*,
#     threadentry), which starts threads from values set on Go stacks;
#   - Go assembly with file-local names (the list below, from `nm` of the
#     library: the names without a dot that no C file of ours defines).
# C names, even GCC's clones ("f.isra.0", "f.part.0"), match none of these.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin

kinds="Cond Value1 Value2 Value4 Value8 Value16 Value32 Addr1 Addr2 Addr4 Addr8 Addr16 Addr32"
asm="aeshashbody callRet cmpbody countbody gcWriteBarrier gogo gosave_systemstack_switch
indexbody indexbytebody memeqbody expandAVX512_* debugCall*"

frames=('*/*' '*.(*' '*.runtime_*' '_cgo_*' '_cgoexp_*' 'x_cgo_*' crosscall1 crosscall2 threadentry)
for p in $(go list std | grep -v /) main; do
	frames+=("$p.*")
done
for a in $asm; do
	frames+=("$a")
done

n=0
for f in "${frames[@]}"; do
	for k in $kinds; do
		n=$((n + 1))
		printf '{\n   go-%d-%s\n   Memcheck:%s\n   fun:%s\n}\n' "$n" "$k" "$k" "$f"
	done
done

