#!/usr/bin/env bash
# Installs (or uninstalls) what make builds, under DESTDIR and PREFIX
# (default /usr/local), as make install and make uninstall do:
#
#   scripts/install.sh install|uninstall|list
#
#   $PREFIX/lib/libfabric-psm2/libfabric.so.1 (+ libfabric.so)
#       the standalone library: a whole libfabric with our psm2 provider,
#       in a directory of its own so that it never shadows the system's
#       libfabric unless a program asks for it (LD_LIBRARY_PATH, an rpath,
#       or pkg-config below)
#   $PREFIX/lib/libfabric-psm2/pkgconfig/libfabric.pc
#       for PKG_CONFIG_PATH=$PREFIX/lib/libfabric-psm2/pkgconfig: the
#       headers below and the standalone library, with an rpath to it
#   $PREFIX/include/libfabric-psm2/rdma/*.h
#       the headers the library is built against (libfabric 1.17's, and
#       fi_ext_psm2.h)
#   $PREFIX/lib/libfabric/libpsm2-fi.so
#       the plugin for a system libfabric (Debian's): point
#       FI_PROVIDER_PATH at this directory
#   $PREFIX/share/man/man7/fi_psm2go.7
#       the manual page (built by make man from docs/)
#
# uninstall removes exactly these files, then the directories this
# created that are left empty; list prints the files.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
root=$DESTDIR$PREFIX

# files: "source destination mode" lines, destination relative to PREFIX.
files() {
	echo "build/lib/libfabric.so.1 lib/libfabric-psm2/libfabric.so.1 0755"
	echo "build/lib/libfabric/libpsm2-fi.so lib/libfabric/libpsm2-fi.so 0755"
	echo "build/pkgconfig/libfabric.pc lib/libfabric-psm2/pkgconfig/libfabric.pc 0644"
	echo "build/man/fi_psm2go.7 share/man/man7/fi_psm2go.7 0644"
	(cd include && find rdma -name '*.h' | LC_ALL=C sort) | while read -r h; do
		echo "include/$h include/libfabric-psm2/$h 0644"
	done
}
links() { echo "libfabric.so.1 lib/libfabric-psm2/libfabric.so"; }

pcfile() {
	mkdir -p build/pkgconfig
	cat >build/pkgconfig/libfabric.pc <<EOF
prefix=$PREFIX
libdir=\${prefix}/lib/libfabric-psm2
includedir=\${prefix}/include/libfabric-psm2

Name: libfabric
Description: libfabric with the psm2 provider in Go (libfabric-psm2), standalone
URL: https://github.com/gopsm2/libfabric-psm2
Version: 1.17.0
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lfabric
Cflags: -I\${includedir}
EOF
}

case "${1:-}" in
install)
	pcfile
	files | while read -r src dst mode; do
		[ -f "$src" ] || { echo "install.sh: $src is missing; run make (and make man)" >&2; exit 1; }
		install -D -m "$mode" "$src" "$root/$dst"
		echo "$PREFIX/$dst"
	done
	links | while read -r target dst; do
		ln -sfn "$target" "$root/$dst"
		echo "$PREFIX/$dst -> $target"
	done
	;;
uninstall)
	# Directories left empty go too: under DESTDIR all of them (it is a
	# staging root), in a real PREFIX only our own (libfabric*), not
	# share/man/man7 and the like.
	stop=${DESTDIR:-$PREFIX}
	{ files | awk '{print $2}'; links | awk '{print $2}'; } | while read -r dst; do
		rm -f "$root/$dst"
		d=$(dirname "$root/$dst")
		while [ "${d#"$stop"/}" != "$d" ]; do
			case "$d" in *libfabric*) ;; *) [ -n "$DESTDIR" ] || break ;; esac
			rmdir "$d" 2>/dev/null || break
			d=$(dirname "$d")
		done
	done
	;;
list)
	{ files | awk '{print $2}'; links | awk '{print $2}'; } | sed "s|^|$PREFIX/|"
	;;
*)
	sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 2
	;;
esac
