#!/usr/bin/env bash
# nshosts.sh: "hosts" on this one machine that share nothing but the
# network, for multi-host tests of the inter-node (hfi) wire.
#
#   scripts/nshosts.sh up N          make hosts 1..N
#   scripts/nshosts.sh exec I cmd..  run cmd in host I
#   scripts/nshosts.sh ip I          print host I's address
#   scripts/nshosts.sh loss I PCT    drop PCT% of host I's packets (0: stop)
#   scripts/nshosts.sh agent         print the path of the mpirun launch agent
#   scripts/nshosts.sh down          remove everything (idempotent)
#
# Host I is a network namespace "<prefix>I" (veth to a bridge in the
# namespace "<prefix>sw", address 10.<net>.0.I/24, MTU 1500). Each command
# run in it also gets a mount namespace with a private tmpfs on /dev/shm
# and a UTS namespace with host name "<prefix>I" (ip netns alone would
# share /dev/shm and the host name, and a provider that routes by host
# would rightly use shared memory). Processes started by one command (an
# Open MPI daemon and its ranks) share these. NSHOSTS_PREFIX (default
# nsh) and NSHOSTS_NET (default 77) keep concurrent sets apart. Needs
# root. Loss uses nftables (this kernel has no netem).
#
# mpirun runs inside host 1 with a hostfile of the hosts' addresses and
# the launch agent `nshosts.sh rsh` (see scripts/multihost.sh). On real
# hosts none of this is needed: use mpirun's normal ssh launcher and a
# hostfile, and set FI_PSM2_IFACE to the network the hosts share.
set -euo pipefail
prefix=${NSHOSTS_PREFIX:-nsh}
net=${NSHOSTS_NET:-77}
self=$(readlink -f "$0")

die() { echo "nshosts: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"

addr() { echo "10.$net.0.$1"; }

in_host() { # in_host I cmd...: run cmd in host I's namespaces
	local i=$1; shift
	ip netns exec "$prefix$i" unshare --mount --uts --propagation private \
		bash -c 'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && hostname "$0" && exec "$@"' "$prefix$i" "$@"
}

case ${1:-} in
up)
	n=${2:?up N}
	"$self" down
	ip netns add "${prefix}sw"
	ip -n "${prefix}sw" link add br0 type bridge
	ip -n "${prefix}sw" link set br0 up
	for ((i = 1; i <= n; i++)); do
		ip netns add "$prefix$i"
		ip link add "${prefix}v$i" type veth peer name "${prefix}p$i"
		ip link set "${prefix}v$i" netns "$prefix$i"
		ip link set "${prefix}p$i" netns "${prefix}sw"
		ip -n "$prefix$i" link set "${prefix}v$i" name eth0
		ip -n "$prefix$i" addr add "$(addr "$i")/24" dev eth0
		ip -n "$prefix$i" link set eth0 mtu 1500 up
		ip -n "$prefix$i" link set lo up
		ip -n "$prefix$i" route add default dev eth0
		ip -n "${prefix}sw" link set "${prefix}p$i" master br0 up
	done
	;;
exec)
	i=${2:?exec I cmd}; shift 2
	in_host "$i" "$@"
	;;
ip)
	addr "${2:?ip I}"
	;;
loss)
	i=${2:?loss I PCT}; pct=${3:?loss I PCT}
	ip netns exec "$prefix$i" nft delete table inet nshloss 2>/dev/null || true
	if [ "$pct" -gt 0 ]; then
		ip netns exec "$prefix$i" nft -f - <<-NFT
		table inet nshloss {
			chain in { type filter hook input priority 0; meta l4proto udp numgen random mod 100 < $pct drop; }
			chain out { type filter hook output priority 0; meta l4proto udp numgen random mod 100 < $pct drop; }
		}
		NFT
	fi
	;;
rsh)
	# mpirun's launch agent: rsh [options] HOST command...
	shift
	while [[ ${1:-} == -* ]]; do shift; done
	h=${1:?rsh HOST cmd}; shift
	i=${h##*.}
	[[ $h == "$(addr "$i")" || $h == "$prefix$i" ]] || i=${h#"$prefix"}
	ip netns list | grep -qw "$prefix$i" || die "rsh: no host $h"
	in_host "$i" bash -c "$*"
	;;
agent)
	echo "$self"
	;;
down)
	for ns in $(ip netns list | awk '{print $1}' | grep -E "^$prefix([0-9]+|sw)\$" || true); do
		ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$ns"
	done
	;;
*)
	sed -n '2,/^set /p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 2
	;;
esac
