#!/usr/bin/env bash
# Installs the package make deb built (build/deb/*.deb) into a fresh,
# container-like root and uses it from there: a mount namespace whose / is
# an overlay of this machine's (its changes go to a tmpfs and vanish), with
# a private /dev/shm and /tmp, and this repository hidden. There dpkg -i
# installs the package; Debian's fi_info -p psm2 -v finds the plugin
# through FI_PROVIDER_PATH=/usr/lib/libfabric, a program built with
# pkg-config against /usr/lib/libfabric-psm2 runs, and Open MPI's NetPIPE
# runs over psm2 from the installed plugin. Nothing reaches the real root.
# Prints PASS/FAIL lines; exit status 1 if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/report.sh
deb=$(ls build/deb/libfabric-psm2_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || { echo "debcheck.sh: no package in build/deb; run make deb" >&2; exit 2; }
repo=$PWD
tmp=$(mktemp -d /tmp/psm2-debcheck.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$deb" ctest/sep.c ctest/check.h ctest/node.h "$tmp/"

# Run inside the new root: the steps, each printing "STEP name rc".
cat >"$tmp/inside.sh" <<'EOF'
set -u
cd /tmp/in
step() { local name=$1; shift; "$@" >"$name.log" 2>&1; echo "STEP $name $?"; }
step dpkg dpkg -i ./libfabric-psm2_*.deb
step files test -f /usr/lib/libfabric/libpsm2-fi.so -a -f /usr/lib/libfabric-psm2/libfabric.so.1 -a -f /usr/share/man/man7/fi_psm2go.7.gz
step fi_info env -u LD_LIBRARY_PATH FI_PROVIDER_PATH=/usr/lib/libfabric fi_info -p psm2 -v
export PKG_CONFIG_PATH=/usr/lib/libfabric-psm2/pkgconfig
step cc sh -c 'cc -std=gnu11 -O1 -I. $(pkg-config --cflags libfabric) -o sep sep.c $(pkg-config --libs libfabric)'
step sep env -u LD_LIBRARY_PATH ./sep
step netpipe env -u LD_LIBRARY_PATH mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml cm --mca mtl ofi \
	-x FI_PROVIDER=psm2 -x FI_PROVIDER_PATH=/usr/lib/libfabric NPopenmpi -u 1048576 -o np.out
step man sh -c 'MANWIDTH=80 man fi_psm2go | grep -q FI_PSM2_PRINT_STATS'
EOF

out=$(unshare -m --propagation private bash -c '
	set -e
	t=$1 repo=$2
	mount -t tmpfs tmpfs "$t/ov" 2>/dev/null || { mkdir -p "$t/ov"; mount -t tmpfs tmpfs "$t/ov"; }
	mkdir -p "$t/ov/upper" "$t/ov/work" "$t/ov/root"
	mount -t overlay overlay -o lowerdir=/,upperdir="$t/ov/upper",workdir="$t/ov/work" "$t/ov/root"
	r=$t/ov/root
	mount --rbind /proc "$r/proc"; mount --rbind /sys "$r/sys"; mount --rbind /dev "$r/dev"
	mount -t tmpfs tmpfs "$r/dev/shm"
	# The repository out of sight (a tmpfs over /tmp hides it anyway when
	# it lives there).
	[ ! -d "$r$repo" ] || mount -t tmpfs tmpfs "$r$repo"
	mount -t tmpfs tmpfs "$r/tmp"
	mkdir -p "$r/tmp/in"
	cp "$t"/*.deb "$t"/sep.c "$t"/check.h "$t"/node.h "$r/tmp/in/"
	cp "$t/inside.sh" "$r/tmp/in/"
	chroot "$r" bash /tmp/in/inside.sh
	for f in "$r"/tmp/in/*.log "$r/tmp/in/np.out"; do [ -f "$f" ] && cp "$f" "$t/"; done
	true
' _ "$tmp" "$repo" 2>&1)
echo "$out" | grep -v '^STEP' | sed 's/^/    /' | tail -5
rc() { awk -v s="$1" '$1 == "STEP" && $2 == s {print $3}' <<<"$out"; }
log() { cat "$tmp/$1.log" 2>/dev/null; }
[ "$(rc dpkg)" = 0 ] && ok "dpkg -i $(basename "$deb") in a fresh overlay root" || fail "dpkg -i" "$(log dpkg)"
[ "$(rc files)" = 0 ] && ok "the plugin, the standalone library and the manual page are installed" || fail "installed files" "$(log files)"
if [ "$(rc fi_info)" = 0 ] && grep -q 'prov_name: psm2' "$tmp/fi_info.log"; then
	ok "Debian's fi_info -p psm2 -v loads the installed plugin ($(grep -c 'prov_name: psm2' "$tmp/fi_info.log") entries)"
else
	fail "fi_info -p psm2 -v with FI_PROVIDER_PATH=/usr/lib/libfabric" "$(log fi_info)"
fi
if [ "$(rc cc)" = 0 ] && [ "$(rc sep)" = 0 ]; then
	ok "pkg-config builds ctest/sep.c against the package, and it runs: $(tail -1 "$tmp/sep.log")"
else
	fail "pkg-config build and run (cc $(rc cc), run $(rc sep))" "$(log cc; log sep)"
fi
last=$(tail -1 "$tmp/np.out" 2>/dev/null | awk '{print $1}')
if [ "$(rc netpipe)" = 0 ] && [ -n "$last" ] && [ "$last" -ge 1048576 ]; then
	ok "Open MPI NetPIPE over the installed plugin, to 1 MiB ($(wc -l <"$tmp/np.out") sizes)"
else
	fail "NetPIPE over the installed plugin" "$(log netpipe)"
fi
[ "$(rc man)" = 0 ] && ok "man fi_psm2go shows the installed page" || fail "man fi_psm2go" "$(log man)"
echo
echo "debcheck: $passed passed, $failed failed"
[ $failed -eq 0 ]
