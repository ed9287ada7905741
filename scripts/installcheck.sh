#!/usr/bin/env bash
# make install, tried as a site administrator would (make check runs it):
#   - into a staging root (DESTDIR=.../stage PREFIX=/usr): the tree has
#     every file scripts/install.sh lists, the libraries under their own
#     directories, and make uninstall leaves nothing;
#   - into a private prefix (PREFIX=.../prefix): a C program built with
#     pkg-config (PKG_CONFIG_PATH into the prefix) runs with no
#     LD_LIBRARY_PATH (libfabric.pc's rpath) on the installed library;
#     Debian's fi_info finds the installed plugin through FI_PROVIDER_PATH;
#     man renders the installed page.
# Prints PASS/FAIL lines; exit status 1 if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/report.sh
tmp=$(mktemp -d /tmp/psm2-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# --- staging root ---------------------------------------------------------
stage=$tmp/stage
if out=$(make -s install DESTDIR="$stage" PREFIX=/usr 2>&1); then
	want=$(PREFIX=/usr scripts/install.sh list | LC_ALL=C sort)
	got=$(cd "$stage" && find . \( -type f -o -type l \) | sed 's|^\.||' | LC_ALL=C sort)
	if [ "$want" = "$got" ]; then
		ok "make install DESTDIR=... PREFIX=/usr: $(wc -l <<<"$got") files, as scripts/install.sh lists them"
	else
		fail "make install tree" "$(diff <(echo "$want") <(echo "$got"))"
	fi
	echo "$got" | sed 's/^/    /' | grep -v '/rdma/' ; echo "    /usr/include/libfabric-psm2/rdma/*.h ($(grep -c '/rdma/' <<<"$got") headers)"
	pc=$stage/usr/lib/libfabric-psm2/pkgconfig/libfabric.pc
	if grep -qx 'prefix=/usr' "$pc" && grep -q -- '-Wl,-rpath,${libdir}' "$pc"; then
		ok "libfabric.pc names the prefix, not the staging root, and an rpath"
	else
		fail "libfabric.pc" "$(cat "$pc")"
	fi
	make -s uninstall DESTDIR="$stage" PREFIX=/usr >/dev/null 2>&1
	left=$(find "$stage" -mindepth 1 2>/dev/null)
	[ -z "$left" ] && ok "make uninstall leaves nothing behind" || fail "make uninstall left" "$left"
else
	fail "make install DESTDIR=... PREFIX=/usr" "$out"
fi

# --- private prefix -------------------------------------------------------
prefix=$tmp/prefix
if ! out=$(make -s install PREFIX="$prefix" 2>&1); then
	fail "make install PREFIX=$prefix" "$out"
	exit 1
fi
export PKG_CONFIG_PATH=$prefix/lib/libfabric-psm2/pkgconfig
flags=$(pkg-config --cflags --libs libfabric 2>&1)
# A program of the test suite, from the installed headers and library only.
if cc -std=gnu11 -O1 -Ictest $flags -o "$tmp/sep" ctest/sep.c $(pkg-config --libs libfabric) 2>"$tmp/cc.log" &&
	! grep -q "$PWD/include" <<<"$flags"; then
	lib=$(env -u LD_LIBRARY_PATH ldd "$tmp/sep" | awk '/libfabric.so.1/ {print $3}')
	o=$(env -u LD_LIBRARY_PATH timeout 120 "$tmp/sep" 2>&1)
	if [ $? -eq 0 ] && [ "$lib" = "$prefix/lib/libfabric-psm2/libfabric.so.1" ]; then
		ok "pkg-config --cflags --libs libfabric ($flags) builds ctest/sep.c, which runs on $lib: $(tail -1 <<<"$o")"
	else
		fail "the pkg-config build of ctest/sep.c (libfabric: ${lib:-none})" "$o"
	fi
else
	fail "building with pkg-config ($flags)" "$(cat "$tmp/cc.log")"
fi
o=$(env -u LD_LIBRARY_PATH FI_PROVIDER_PATH="$prefix/lib/libfabric" fi_info -p psm2 2>&1)
if grep -q 'provider: psm2' <<<"$o"; then
	ok "Debian's fi_info finds the installed plugin (FI_PROVIDER_PATH=\$PREFIX/lib/libfabric)"
else
	fail "fi_info with the installed plugin" "$o"
fi
o=$(MANWIDTH=80 man --warnings -l "$prefix/share/man/man7/fi_psm2go.7" 2>"$tmp/man.err" | sed 's/.\x08//g')
if grep -q 'FI_PSM2_NAME_SERVER' <<<"$o" && [ ! -s "$tmp/man.err" ]; then
	ok "man -l renders the installed fi_psm2go(7) ($(wc -l <<<"$o") lines)"
else
	fail "man -l fi_psm2go.7" "$(cat "$tmp/man.err")"
fi
make -s uninstall PREFIX="$prefix" >/dev/null 2>&1
left=$(find "$prefix" -mindepth 1 \( -type f -o -type l \) 2>/dev/null)
[ -z "$left" ] && ok "make uninstall PREFIX=... removes every file" || fail "make uninstall left" "$left"
echo
echo "installcheck: $passed passed, $failed failed"
[ $failed -eq 0 ]
