#!/usr/bin/env bash
# Installs the Debian packages the build and the tests use, only those that
# are missing. Safe to run again; needs root (or sudo) only when something
# is missing.
set -euo pipefail

pkgs=(
	gcc make binutils pkg-config valgrind iproute2 nftables ethtool man-db strace
	libfabric-dev libfabric-bin
	openmpi-bin libopenmpi-dev netpipe-openmpi hpcc
	libpsm2-dev
)
# `deps.sh bench`: also what make bench uses beyond the tests (the plot).
if [ "${1:-}" = bench ]; then
	pkgs+=(gnuplot-nox)
fi
# `deps.sh deb`: what make deb needs (Debian's packaging tools).
if [ "${1:-}" = deb ]; then
	pkgs+=(debhelper dpkg-dev fakeroot lintian)
fi
# `deps.sh mpich`: what scripts/mpich.sh needs to fetch and build MPICH.
if [ "${1:-}" = mpich ]; then
	pkgs+=(curl xz-utils patch libhwloc-dev)
fi

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi

echo "deps: installing ${missing[*]}"
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
