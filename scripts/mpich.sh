#!/usr/bin/env bash
# Builds MPICH from Debian's source package (bookworm: 4.0.2-3) with the
# ch4:ofi netmod, compiled against our include/rdma headers and linked
# against our build/lib/libfabric.so.1. Runs only on request (make mpich);
# make check uses the result when it exists (scripts/mpi.sh, multihost.sh).
#
# The build lives outside the repository, in $MPICH_DIR (default
# ~/.cache/libfabric-psm2/mpich-4.0.2): src/ (unpacked, Debian patches
# applied), inst/ (installed), build.log. It takes 10-20 minutes on 2 cores.
#
# Choices, and why:
#   --with-device=ch4:ofi       the netmod Debian builds where UCX is absent;
#                               the provider is picked at run time
#                               (FI_PROVIDER=psm2), so the same build also
#                               runs over Debian's libfabric for comparison.
#   --without-ch4-shmmods       no MPICH shared-memory module: ranks on one
#                               host talk through libfabric too, i.e. through
#                               our shm wire; otherwise the one-host runs
#                               would never reach the provider.
#   --with-datatype-engine=dataloop, --disable-fortran/cxx/romio
#                               what the conformance program needs, and a
#                               build that fits in CI-sized time.
#   the rest as debian/rules:   hydra, hwloc from /usr, shared libraries.
#
# MPICH_VCIS=N (N > 1) builds the multi-VCI variant instead, in
# mpich-$VER-vci$N: --enable-thread-cs=per-vci --with-ch4-max-vcis=N, so
# that MPIR_CVAR_CH4_NUM_VCIS=2..N gives each VCI its own scalable
# endpoint context (run it with MPICH_DIR pointing there).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VER=4.0.2
DEBREV=3
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
VCIS=${MPICH_VCIS:-1}
extra=()
suffix=
if [ "$VCIS" -gt 1 ]; then
	extra=(--enable-thread-cs=per-vci --with-ch4-max-vcis="$VCIS")
	suffix=-vci$VCIS
fi
DIR=${MPICH_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/libfabric-psm2/mpich-$VER$suffix}

"$ROOT/scripts/deps.sh" mpich
[ -f "$ROOT/build/lib/libfabric.so.1" ] || make -C "$ROOT" all

mkdir -p "$DIR/dl"
cd "$DIR/dl"
dsc=mpich_$VER-$DEBREV.dsc
fetch() { # fetch FILE: from the mirror's pool, unless already here
	[ -s "$1" ] && return
	curl -fsS -o "$1.part" "$MIRROR/pool/main/m/mpich/$1" && mv -f "$1.part" "$1"
}
fetch "$dsc"
# The .dsc names the two tarballs and their SHA-256 sums; check both.
awk '/^Checksums-Sha256:/{on=1;next} /^[^ ]/{on=0} on&&NF==3{print $1"  "$3}' "$dsc" >sums
[ "$(wc -l <sums)" -eq 2 ] || { echo "mpich: cannot read checksums from $dsc" >&2; exit 1; }
while read -r _ f; do fetch "$f"; done <sums
sha256sum -c --quiet sums

rm -rf "$DIR/src" "$DIR/inst"
mkdir -p "$DIR/src"
tar -C "$DIR/src" --strip-components=1 -xf "mpich_$VER.orig.tar.xz"
tar -C "$DIR/src" -xf "mpich_$VER-$DEBREV.debian.tar.xz"
cd "$DIR/src"
# Debian's patches, in its order (comment lines skipped).
while read -r p _; do
	case $p in ''|'#'*) continue ;; esac
	patch -s -p1 <"debian/patches/$p"
done <debian/patches/series

# MPICH's configure takes libfabric's link dependencies from pkg-config;
# without a libfabric.pc of ours it would find Debian's, whose private
# libraries (psm, rdmacm, ...) are neither needed nor installed. So it gets
# a prefix of its own: our headers, our library, and a .pc naming only it.
fab=$DIR/fabric
rm -rf "$fab"
mkdir -p "$fab/lib/pkgconfig"
ln -s "$ROOT/include" "$fab/include"
ln -s "$ROOT/build/lib/libfabric.so.1" "$fab/lib/libfabric.so"
ln -s "$ROOT/build/lib/libfabric.so.1" "$fab/lib/libfabric.so.1"
cat >"$fab/lib/pkgconfig/libfabric.pc" <<EOF
prefix=$fab
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: libfabric
Description: libfabric psm2 provider in Go (this repository)
Version: 1.17.0
Libs: -L\${libdir} -lfabric
Cflags: -I\${includedir}
EOF

echo "mpich: configuring and building in $DIR (log: $DIR/build.log)"
{
	./configure --prefix="$DIR/inst" \
		--with-device=ch4:ofi --without-ch4-shmmods \
		--with-libfabric="$fab" \
		--with-pm=hydra --with-hwloc=/usr --enable-shared \
		--with-datatype-engine=dataloop \
		--disable-fortran --disable-cxx --disable-romio --disable-doc \
		--enable-fast=O2 --disable-rpath --disable-wrapper-rpath "${extra[@]}"
	make -j"$(nproc)"
	make install
} >"$DIR/build.log" 2>&1 || { tail -30 "$DIR/build.log" >&2; echo "mpich: build failed" >&2; exit 1; }
echo "$VER-$DEBREV" >"$DIR/inst/.built"
echo "mpich: installed in $DIR/inst"
