#!/usr/bin/env bash
# nshosts.sh: "hosts" on this one machine that share nothing but the
# network, for multi-host tests of the provider's inter-node (UDP) wire.
#
#   nshosts.sh up N              make hosts 1..N; prints "name address" lines
#   nshosts.sh down [--all]      remove the set (--all: every set); idempotent
#   nshosts.sh run N [--] cmd..  up N, run cmd (here, in the root namespaces)
#                                 with NSHOSTS_* exported, down (also on
#                                 failure, INT, TERM, HUP; a signal sent to
#                                 run alone is passed on to cmd); cmd's status
#   nshosts.sh exec H [cmd..]    run cmd (default $SHELL) in host H: all its
#                                 namespaces, same working directory, same
#                                 environment
#   nshosts.sh mpirun ARGS..     $NSHOSTS_MPIRUN (default mpirun) in host 1,
#                                 with --hostfile (every host), the launch
#                                 agent, --bind-to none, --allow-run-as-root
#   nshosts.sh ip H | name H     H's IPv4 address | host name
#   nshosts.sh list | hostfile   the set's hosts | path of its MPI hostfile
#   nshosts.sh agent             path of the mpirun launch agent (nsrsh)
#   nshosts.sh rsh [ssh opts] H cmd..   the launch agent itself
#   nshosts.sh loss H PCT [PROTO] [DIR]        drop PCT% of H's packets
#   nshosts.sh dup H PCT [PROTO] [DIR]         send PCT% of them twice
#   nshosts.sh reorder H PCT [MS] [PROTO] [DIR]
#                                 hold PCT% of them MS ms (default 1; each
#                                 one 0.5-1.5 x MS), so later ones overtake
#   nshosts.sh rules H           H's packet rules, with counters (each
#                                 loss/dup/reorder command resets them)
#   nshosts.sh mtu N             set the MTU of every link of the set (each
#                                 host's eth0, the switch's ports): a path
#                                 MTU change, as the hosts see it at once
#   nshosts.sh rail              a second network: every host gets eth1
#                                 (10.NET.1.I/24) on a second bridge br1;
#                                 its switch ports are qI (idempotent)
#   nshosts.sh sets              the sets on this machine
#
# H is a host's number (1..N), name or address. PCT is 0-100 (0 removes
# the rule), PROTO udp (default), tcp, ip (all IPv4) or all (every frame,
# ARP too), DIR both (default: PCT% each way), out (leaving H) or in
# (entering H). Rules of one host apply in the order loss, dup, reorder.
#
# Each host has its own network, mount and UTS namespaces (ip netns alone
# would share /dev/shm and the host name, and a provider that routes by
# host name would rightly use shared memory between them):
#   - network: lo, and eth0 (MTU 1500, 10.NET.0.I/24, no IPv6), one end of
#     a veth pair whose other end (pI) is a port of the bridge br0 in a
#     "switch" network namespace of the set. Nothing is added to the root
#     namespace's network: no interface, route, address or nft rule.
#   - mount: a private tmpfs on /dev/shm; a fresh /sys (so /sys/class/net
#     shows eth0; the cgroup mounts are carried over); /etc/hosts with the
#     set's host names added. /tmp and everything else is shared.
#   - UTS: host name PREFIX<I> (nsh1, nsh2, ...).
# The namespaces live as long as one holder process per host (and one for
# the switch): `sleep infinity` started by unshare, shown by ps as
# "nshosts:PREFIX:NAME". Every command enters them with nsenter -t PID,
# which also works from inside another host (mpirun's launch agent does
# that), as the PID namespace is shared. State (holder PIDs with their start
# times, so a recycled PID is never taken for a holder; the hostfile; the
# rules) is kept in $NSHOSTS_RUNDIR/PREFIX (default /run/nshosts/PREFIX;
# the lock, an empty file, is $NSHOSTS_RUNDIR.lock).
# `down` kills the processes still inside the set's namespaces, then the
# holders; the interfaces, bridge and nft tables go with the namespaces.
# (A killed holder whose parent is gone is reaped by init; where init reaps
# lazily, ps may show it as <defunct> for a while. Its namespaces are gone.)
#
# Packets. Loss, duplication and reordering act in the switch namespace,
# on frames as they cross pI (nftables netdev ingress and egress hooks:
# needs nft >= 1.0.1 and Linux >= 5.16), so that they hit single packets.
# A veth passes a GSO batch (one UDP_SEGMENT sendmsg: up to 64 datagrams;
# a TCP TSO burst: up to 64 KiB) on as one frame, so hosts have UDP
# segmentation offload off (ethtool -K eth0 tx-udp-segmentation off: each
# datagram is its own frame, as on a wire; TCP keeps TSO). NSHOSTS_GSO=0
# turns off every offload (gso_max_segs 1: TCP frames too are at most one
# MTU; TCP is slow then, ~25 MB/s here), NSHOSTS_GSO=1 keeps them all
# (rules then act on whole batches).
# The kernel here has no netem and nftables no `queue`: reordering diverts
# packets ("fwd to") to a tap device read by nshost/nsdelay.c (compiled
# on first use with gcc), which holds each and writes it back to the
# bridge. Duplicates are made with nftables' netdev `dup to`.
#
# Environment: NSHOSTS_PREFIX (default nsh; `run` takes the first free one
# of nsh, nsha, nshb, ...; without it, exec, rsh and ip called inside a
# host use that host's set, and given a host name or address, the one set
# that has it), NSHOSTS_NET (the second octet of 10.NET.0.0/24; default the
# lowest free from 77; sets are isolated from each other, so this only
# keeps addresses tellable apart), NSHOSTS_MTU (1500), NSHOSTS_GSO,
# NSHOSTS_SLOTS (slots per host in the hostfile; default: none given, so
# Open MPI counts each host's cores), NSHOSTS_MPIRUN, NSHOSTS_RUNDIR.
# `run` exports NSHOSTS_PREFIX, NSHOSTS_NET, NSHOSTS_N, NSHOSTS_NAMES,
# NSHOSTS_IPS (space separated), NSHOSTS_SUBNET (10.NET.0.0/24),
# NSHOSTS_IFACE (eth0), NSHOSTS_HOSTFILE, NSHOSTS_RSH (the agent) and
# NSHOSTS_TOOL (this script).
#
# Open MPI. mpirun must run inside host 1 (`nshosts.sh mpirun ...`, or
# `nshosts.sh exec 1 mpirun ...`), since the daemons it starts on the other
# hosts connect back to it over TCP and the root namespace is not on the
# hosts' network. It starts them with the agent nshost/nsrsh (called as
# ssh would be: `nsrsh [options] HOST command`), which runs the command in
# HOST's namespaces with a clean environment, as ssh would (PATH, HOME, ...
# and NSHOSTS_*; NSHOSTS_RSH_ENV=all keeps everything): pass variables to
# the ranks with -x. Example:
#   nshost/nshosts.sh run 2 -- nshost/nshosts.sh mpirun -np 4 \
#       --mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include eth0 ./a.out
# On real hosts none of this is needed: run mpirun where you are, with its
# normal ssh launcher (no plm_rsh_agent) and a hostfile of the real host
# names, --mca btl_tcp_if_include / oob_tcp_if_include naming the network
# the hosts share (and, for the provider, FI_PSM2_IFACE set to it).
#
# Needs root, util-linux (unshare, nsenter, flock, setsid), iproute2,
# ethtool and, for the packet rules, nftables (ethtool and nftables are
# installed with apt-get if missing), and gcc for reorder.
set -euo pipefail

self=$(readlink -f "$0")
here=$(dirname "$self")
rundir=${NSHOSTS_RUNDIR:-/run/nshosts}
mtu=${NSHOSTS_MTU:-1500}
# packet marks in the switch namespace: a duplicate made on its way into a
# host (which passes that host's egress chain again), and a packet that
# comes back from host I's delaying tap (0x400 | I << 16)
MARK_DUP_IN=0x200

die() { echo "nshosts: $*" >&2; exit 1; }
warn() { echo "nshosts: $*" >&2; }
usage() { sed -n '2,/^set /p' "$self" | sed '$d; s/^# \{0,1\}//'; exit 2; }

need_root() { [ "$(id -u)" = 0 ] || die "needs root (namespaces, mounts, nftables)"; }
need_tools() {
	local t missing=()
	for t in unshare nsenter flock setsid ip findmnt; do
		command -v "$t" >/dev/null || missing+=("$t")
	done
	[ ${#missing[@]} = 0 ] || die "missing ${missing[*]} (packages util-linux, iproute2)"
}
# need_pkg CMD PACKAGE: installs PACKAGE with apt-get if CMD is missing
need_pkg() {
	command -v "$1" >/dev/null && return 0
	command -v apt-get >/dev/null || die "$1 is missing (package $2)"
	echo "nshosts: installing $2" >&2
	{ DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2"; } >&2 ||
		die "could not install $2"
}

valid_prefix() { [[ $1 =~ ^[a-z][a-z0-9-]{0,19}$ ]] || die "bad prefix '$1' (lower-case letter, then up to 19 of [a-z0-9-])"; }

# lock: one lock for every set on the machine ($NSHOSTS_RUNDIR.lock, an
# empty file that stays), taken by the commands that change something
# (they are quick). Released when the process exits.
lock() {
	exec 9>>"$rundir.lock"
	flock 9
	mkdir -p "$rundir"
}

# start time of a PID (field 22 of /proc/PID/stat), empty if gone or a zombie
starttime() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
	s=${s##*) }
	# shellcheck disable=SC2086
	set -- $s
	[ "$1" != Z ] && [ "$1" != X ] && echo "${20}"
	return 0
}

# holder FILE: prints the PID recorded in FILE ("pid starttime netns") if
# that process still runs, else nothing (status 1)
holder() {
	local pid st ns
	[ -r "$1" ] || return 1
	read -r pid st ns <"$1" || true
	[ -n "${pid:-}" ] && [ "$(starttime "$pid")" = "$st" ] || return 1
	echo "$pid"
}
netns_of() { local pid st ns; read -r pid st ns <"$1" && echo "$ns"; }

# The set: NSHOSTS_PREFIX; else, inside a host, that host's set; else the
# one set that has a host named (or addressed) HOST, if HOST is given and
# is not a number; else nsh.
find_set() { # [HOST]
	local me f d i k found=()
	if [ -n "${NSHOSTS_PREFIX:-}" ]; then
		prefix=$NSHOSTS_PREFIX
	else
		prefix=
		me=$(readlink /proc/self/ns/net)
		for f in "$rundir"/*/h*.pid "$rundir"/*/switch.pid; do
			[ -e "$f" ] || continue
			if [ "$(netns_of "$f")" = "$me" ] && holder "$f" >/dev/null; then
				prefix=$(basename "$(dirname "$f")")
				break
			fi
		done
		if [ -z "$prefix" ] && [ -n "${1:-}" ] && ! [[ $1 =~ ^[0-9]+$ ]]; then
			for d in "$rundir"/*/; do
				[ -f "$d/n" ] || continue
				k=$(basename "$d")
				i=${1#"$k"}
				if { [[ $i =~ ^[0-9]+$ ]] && [ "$k$i" = "$1" ]; } || [[ $1 == "10.$(cat "$d/net").0."* ]]; then
					i=${i##*.}
					[ "$i" -ge 1 ] 2>/dev/null && [ "$i" -le "$(cat "$d/n")" ] && found+=("$k")
				fi
			done
			[ ${#found[@]} = 1 ] && prefix=${found[0]}
		fi
		prefix=${prefix:-nsh}
	fi
	valid_prefix "$prefix"
	dir=$rundir/$prefix
}
# the host argument of rsh: the first one that is not an ssh option
rsh_host() {
	while [ $# -gt 0 ]; do
		case $1 in
		--) echo "${2:-}"; return ;;
		-[BbcDEeFIiJLlmOopQRSWw]) shift 2 ;;
		-*) shift ;;
		*) echo "$1"; return ;;
		esac
	done
}
need_set() {
	[ -f "$dir/n" ] || die "no set '$prefix' (run: nshosts.sh up N, with NSHOSTS_PREFIX=$prefix)"
	n=$(cat "$dir/n") net=$(cat "$dir/net")
}
hname() { echo "$prefix$1"; }
haddr() { echo "10.$net.0.$1"; }
haddr2() { echo "10.$net.1.$1"; } # on the second network (rail)

# resolve H: number, name or address -> number
resolve() {
	local h=$1 i
	if [[ $h =~ ^[0-9]+$ ]] && [ "$h" -ge 1 ] && [ "$h" -le "$n" ]; then
		echo "$h"
		return
	fi
	for ((i = 1; i <= n; i++)); do
		if [ "$h" = "$(hname "$i")" ] || [ "$h" = "$(haddr "$i")" ]; then
			echo "$i"
			return
		fi
	done
	die "set '$prefix' has no host '$h' (hosts 1..$n: $(hname 1)..$(hname "$n"), $(haddr 1)..$(haddr "$n"))"
}
host_pid() {
	holder "$dir/h$1.pid" || die "host $(hname "$1") of set '$prefix' is gone (its holder process died); run down and up again"
}
switch_pid() {
	holder "$dir/switch.pid" || die "the switch of set '$prefix' is gone (its holder process died); run down and up again"
}
in_switch() { local sw; sw=$(switch_pid); nsenter -t "$sw" -n -- "$@"; }

# spawn NAME cmd...: starts cmd (which ends by writing its PID to
# $dir/NAME.ready and exec'ing the holder) detached, waits for it, records
# "pid starttime netns" in $dir/NAME.pid
spawn() {
	local name=$1 bg k pid
	shift
	rm -f "$dir/$name.ready"
	setsid "$@" </dev/null >>"$dir/$name.log" 2>&1 9>&- &
	bg=$!
	for ((k = 0; k < 200; k++)); do
		[ -s "$dir/$name.ready" ] && break
		kill -0 "$bg" 2>/dev/null || break
		sleep 0.05
	done
	if [ ! -s "$dir/$name.ready" ]; then
		kill "$bg" 2>/dev/null || true
		warn "could not start $name:"
		sed 's/^/    /' "$dir/$name.log" >&2
		return 1
	fi
	pid=$(cat "$dir/$name.ready")
	rm -f "$dir/$name.ready"
	echo "$pid $(starttime "$pid") $(readlink "/proc/$pid/ns/net")" >"$dir/$name.pid"
}

# Runs (by bash, under unshare) inside a new host's namespaces;
# $0 is the state file tag (hI), $1 the host name.
# shellcheck disable=SC2016
host_setup='
set -e
name=$1 dir=$2 prefix=$3 ipv6=$4
hostname "$name"
mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs /dev/shm
mount --bind "$dir/hosts" /etc/hosts
# a sysfs of this network namespace, with the mounts below /sys carried over
if t=$(mktemp -d "$dir/.sys.XXXXXX") && mount -t sysfs -o nosuid,nodev,noexec sysfs "$t"; then
	bound=
	while read -r m; do
		[ "$m" = /sys ] && continue
		[ -n "$bound" ] && case $m in "$bound"/*) continue ;; esac
		if [ -d "$t${m#/sys}" ]; then
			mount --rbind "$m" "$t${m#/sys}"
			bound=$m
		fi
	done < <(findmnt -rn -o TARGET -R /sys)
	umount -l /sys
	mount --move "$t" /sys
	rmdir "$t"
else
	echo "nshosts: $name keeps the machine'"'"'s /sys" >&2
fi
if [ "$ipv6" != 1 ] && [ -w /proc/sys/net/ipv6/conf/all/disable_ipv6 ]; then
	echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6
	echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6
fi
ip link set lo up
for f in /proc/$$/fd/*; do # the holder keeps no descriptor of its starter (locks, pipes)
	f=${f##*/}
	[ "$f" -gt 2 ] 2>/dev/null && eval "exec $f>&-"
done
echo $$ >"$dir/$0.ready"
exec -a "nshosts:$prefix:$name" sleep infinity
'
# shellcheck disable=SC2016
switch_setup='
set -e
dir=$1 prefix=$2
if [ -w /proc/sys/net/ipv6/conf/all/disable_ipv6 ]; then
	echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6
	echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6
fi
ip link set lo up
ip link add br0 type bridge stp_state 0 forward_delay 0 mcast_snooping 0
ip link set br0 up
for f in /proc/$$/fd/*; do # the holder keeps no descriptor of its starter (locks, pipes)
	f=${f##*/}
	[ "$f" -gt 2 ] 2>/dev/null && eval "exec $f>&-"
done
echo $$ >"$dir/switch.ready"
exec -a "nshosts:$prefix:switch" sleep infinity
'

build_set() { # (run in a subshell with set -e) N
	local i hpid sw
	echo "$1" >"$dir/n.new"
	echo "$net" >"$dir/net"
	echo "$self" >"$dir/tool"
	{
		cat /etc/hosts
		echo "# nshosts set $prefix"
		for ((i = 1; i <= $1; i++)); do echo "$(haddr "$i") $(hname "$i")"; done
	} >"$dir/hosts"
	: >"$dir/hostfile"
	for ((i = 1; i <= $1; i++)); do
		echo "$(hname "$i")${NSHOSTS_SLOTS:+ slots=$NSHOSTS_SLOTS}" >>"$dir/hostfile"
	done
	spawn switch unshare --net -- bash -c "$switch_setup" switch "$dir" "$prefix"
	sw=$(switch_pid)
	for ((i = 1; i <= $1; i++)); do
		spawn "h$i" unshare --net --mount --uts --propagation private -- \
			bash -c "$host_setup" "h$i" "$(hname "$i")" "$dir" "$prefix" "${NSHOSTS_IPV6:-0}"
		hpid=$(host_pid "$i")
		nsenter -t "$sw" -n -- ip link add "p$i" mtu "$mtu" type veth peer name eth0 mtu "$mtu" netns "$hpid"
		nsenter -t "$sw" -n -- ip link set "p$i" master br0 up
		nsenter -t "$hpid" -n -- ip addr add "$(haddr "$i")/24" dev eth0
		case ${NSHOSTS_GSO:-udp} in
		1) ;;
		0) nsenter -t "$hpid" -n -- ip link set eth0 gso_max_segs 1 ;;
		*) nsenter -t "$hpid" -n -- ethtool -K eth0 tx-udp-segmentation off ;;
		esac
		nsenter -t "$hpid" -n -- ip link set eth0 up
	done
	mv "$dir/n.new" "$dir/n"
}

set_healthy() {
	local i
	[ -f "$dir/n" ] && holder "$dir/switch.pid" >/dev/null || return 1
	for ((i = 1; i <= $(cat "$dir/n"); i++)); do
		holder "$dir/h$i.pid" >/dev/null || return 1
	done
}

print_list() {
	local i
	for ((i = 1; i <= n; i++)); do echo "$(hname "$i") $(haddr "$i")"; done
}

cmd_up() {
	local want=${1:-} rc used x
	[[ $want =~ ^[0-9]+$ ]] && [ "$want" -ge 1 ] && [ "$want" -le 250 ] || die "up N: N from 1 to 250"
	need_root
	need_tools
	case ${NSHOSTS_GSO:-udp} in
	0 | 1) ;;
	udp) need_pkg ethtool ethtool ;;
	*) die "NSHOSTS_GSO: udp (default), 0 or 1" ;;
	esac
	lock
	if [ -d "$dir" ]; then
		if set_healthy && [ "$(cat "$dir/n")" = "$want" ]; then
			need_set
			print_list
			return 0
		fi
		teardown
	fi
	if [ -n "${NSHOSTS_NET:-}" ]; then
		[[ $NSHOSTS_NET =~ ^[0-9]+$ ]] && [ "$NSHOSTS_NET" -le 255 ] || die "NSHOSTS_NET: 0 to 255"
		net=$NSHOSTS_NET
	else
		used=" $(cat "$rundir"/*/net 2>/dev/null | tr "\n" " " || true) "
		net=
		for x in $(seq 77 255) $(seq 1 76); do
			[[ $used == *" $x "* ]] || { net=$x; break; }
		done
		[ -n "$net" ] || die "no free 10.NET.0.0/24 left"
	fi
	mkdir -p "$dir"
	set +e
	(
		set -e
		build_set "$want"
	)
	rc=$?
	set -e
	if [ $rc != 0 ]; then
		teardown
		die "up $want failed (set '$prefix' removed again)"
	fi
	need_set
	print_list
}

# kill_wait PIDS...: TERM, KILL after 2 s; waits (3 s at most) until they are gone
kill_wait() {
	local p k left
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2>/dev/null || true
	for ((k = 0; k < 60; k++)); do
		left=()
		for p in "$@"; do [ -n "$(starttime "$p")" ] && left+=("$p"); done
		[ ${#left[@]} = 0 ] && return 0
		[ "$k" = 40 ] && kill -KILL "${left[@]}" 2>/dev/null || true
		sleep 0.05
	done
	warn "processes still there: ${left[*]}"
}

teardown() { # the set in $dir; caller holds the lock
	local f pid ns holders=() nss=() others=() p pns
	[ -d "$dir" ] || return 0
	for f in "$dir"/h*.pid "$dir"/switch.pid; do
		[ -e "$f" ] || continue
		if pid=$(holder "$f"); then
			holders+=("$pid")
			nss+=("$(netns_of "$f")")
		fi
	done
	# Processes still inside the namespaces (daemons, ranks, nsdelay), but
	# only of namespaces whose holder lives: an id of a dead namespace may
	# have been given to another one since.
	if [ ${#nss[@]} -gt 0 ]; then
		for p in /proc/[0-9]*; do
			p=${p#/proc/}
			[ "$p" = $$ ] && continue
			pns=$(readlink "/proc/$p/ns/net" 2>/dev/null) || continue
			for ns in "${nss[@]}"; do
				if [ "$pns" = "$ns" ]; then
					[[ " ${holders[*]} " == *" $p "* ]] || others+=("$p")
					break
				fi
			done
		done
		kill_wait "${others[@]}"
	fi
	kill_wait "${holders[@]}"
	rm -rf "$dir"
}

cmd_down() {
	need_root
	lock
	if [ "${1:-}" = --all ]; then
		local d
		for d in "$rundir"/*/; do
			[ -d "$d" ] || continue
			prefix=$(basename "$d") dir=${d%/}
			teardown
		done
	else
		teardown
	fi
	rmdir "$rundir" 2>/dev/null || true
	return 0
}

cmd_exec() {
	[ $# -ge 1 ] || die "exec H [cmd...]"
	need_root
	need_set
	local i pid
	i=$(resolve "$1")
	shift
	pid=$(host_pid "$i")
	[ $# -gt 0 ] || set -- "${SHELL:-/bin/sh}"
	exec nsenter -t "$pid" -n -m -u --wd="$PWD" -- "$@"
}

# The launch agent: rsh [ssh options] HOST command...
cmd_rsh() {
	while [ $# -gt 0 ]; do
		case $1 in
		--) shift; break ;;
		-[BbcDEeFIiJLlmOopQRSWw]) shift 2 ;;
		-*) shift ;;
		*) break ;;
		esac
	done
	[ $# -ge 1 ] || die "rsh: no host"
	local host=$1 i pid v keep=()
	shift
	[ $# -ge 1 ] || die "rsh $host: no command (interactive logins are not supported)"
	need_root
	need_set
	i=$(resolve "$host")
	pid=$(host_pid "$i")
	if [ "${NSHOSTS_RSH_ENV:-}" = all ]; then
		keep=(env)
	else
		# what ssh would give: a login's basics, plus NSHOSTS_* so that
		# an Open MPI daemon's own launches (tree spawn) find the set
		keep=(env -i)
		local extra=()
		mapfile -t extra < <(compgen -e | grep -E '^(LC_|NSHOSTS_)' || true)
		for v in PATH HOME USER LOGNAME SHELL TERM LANG TZ TMPDIR "${extra[@]}"; do
			[ -n "${!v+x}" ] && keep+=("$v=${!v}")
		done
	fi
	keep+=("NSHOSTS_PREFIX=$prefix" "NSHOSTS_TOOL=$self")
	exec "${keep[@]}" nsenter -t "$pid" -n -m -u --wd="${HOME:-/}" -- "${SHELL:-/bin/sh}" -c "$*"
}

cmd_mpirun() {
	need_root
	need_set
	local pid mpirun
	pid=$(host_pid 1)
	read -r -a mpirun <<<"${NSHOSTS_MPIRUN:-mpirun}"
	exec env NSHOSTS_PREFIX="$prefix" NSHOSTS_TOOL="$self" \
		nsenter -t "$pid" -n -m -u --wd="$PWD" -- "${mpirun[@]}" \
		--allow-run-as-root --hostfile "$dir/hostfile" --mca plm_rsh_agent "$here/nsrsh" \
		--bind-to none "$@"
}

cmd_run() {
	local want=${1:-} rc x
	shift || true
	[ "${1:-}" = -- ] && shift
	[ $# -ge 1 ] || die "run N [--] cmd..."
	need_root
	if [ -z "${NSHOSTS_PREFIX:-}" ]; then
		lock
		for x in nsh nsh{a..z}; do
			[ -e "$rundir/$x" ] || { prefix=$x; break; }
		done
		[ -n "${prefix:-}" ] || die "no free prefix; set NSHOSTS_PREFIX"
		dir=$rundir/$prefix
		mkdir -p "$dir"   # taken (up finds it empty and fills it)
		exec 9>&-
	fi
	trap 'lock; teardown; rmdir "$rundir" 2>/dev/null || true' EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 143' TERM
	cmd_up "$want" >&2
	exec 9>&- # the lock, taken by up
	local i names=() ips=()
	for ((i = 1; i <= n; i++)); do
		names+=("$(hname "$i")")
		ips+=("$(haddr "$i")")
	done
	export NSHOSTS_PREFIX=$prefix NSHOSTS_NET=$net NSHOSTS_N=$n
	export NSHOSTS_NAMES="${names[*]}" NSHOSTS_IPS="${ips[*]}"
	export NSHOSTS_SUBNET=10.$net.0.0/24 NSHOSTS_IFACE=eth0
	export NSHOSTS_HOSTFILE=$dir/hostfile NSHOSTS_RSH=$here/nsrsh NSHOSTS_TOOL=$self
	# cmd runs as a background job that we wait for, so that a signal sent
	# to this script alone (not to its process group) is passed on to cmd
	# at once instead of after cmd ends; its stdin stays ours and it gets
	# back the default SIGINT and SIGQUIT handling that bash takes away
	# from background jobs.
	local child sig
	set +e
	if env --default-signal=INT,QUIT true 2>/dev/null; then
		env --default-signal=INT,QUIT "$@" <&0 &
	else
		"$@" <&0 &
	fi
	child=$!
	for sig in HUP INT TERM; do
		# shellcheck disable=SC2064
		trap "kill -$sig $child 2>/dev/null" "$sig"
	done
	while :; do
		wait "$child"
		rc=$?
		kill -0 "$child" 2>/dev/null || break
	done
	set -e
	exit $rc
}

# Packet rules. $dir/rules.I holds lines "kind pct proto dir [ms]".
set_rule() { # I KIND PCT PROTO DIR [MS]
	local f=$dir/rules.$1
	touch "$f"
	grep -v "^$2 " "$f" >"$f.new" || true
	[ "$3" = 0 ] || echo "$2 $3 $4 $5 ${6:-}" >>"$f.new"
	mv "$f.new" "$f"
}
proto_match() {
	case $1 in
	udp) echo "ip protocol udp" ;;
	tcp) echo "ip protocol tcp" ;;
	ip) echo "meta protocol ip" ;;
	all) echo "" ;;
	esac
}
nsdelay_bin() {
	local bin=$dir/nsdelay
	if [ ! -x "$bin" ]; then
		command -v gcc >/dev/null || die "reorder needs gcc (to build nshost/nsdelay.c)"
		gcc -O2 -o "$bin" "$here/nsdelay.c" || die "could not build $here/nsdelay.c"
	fi
	echo "$bin"
}
apply_rules() { # I
	local i=$1 t=nshosts_p$1 kind pct proto d ms m out=() in=() rq=
	local f=$dir/rules.$i
	local own
	own=$(printf '0x%x' $((0x400 | i << 16)))
	# ours: our own duplicates, and what our tap held (each has been
	# through this chain already)
	in+=("meta mark & $MARK_DUP_IN == $MARK_DUP_IN accept")
	in+=("meta mark & 0xffff0400 == $own accept")
	# loss, then duplication, then reordering, whatever order they were set in
	while read -r kind pct proto d ms; do
		m=$(proto_match "$proto")
		# nft compares a random number mod 100 with PCT: 100 is every
		# packet (nft refuses "< 100", out of the range 0-99).
		if [ "$pct" -lt 100 ]; then
			m="$m numgen random mod 100 < $pct"
		fi
		case $kind in
		loss)
			[ "$d" = in ] || out+=("$m counter drop comment \"loss\"")
			[ "$d" = out ] || in+=("$m counter drop comment \"loss\"")
			;;
		dup)
			[ "$d" = in ] || out+=("$m counter dup to \"br0\" comment \"dup\"")
			[ "$d" = out ] || in+=("$m counter meta mark set meta mark | $MARK_DUP_IN dup to \"p$i\" comment \"dup\"")
			;;
		reorder)
			rq="$pct $ms"
			[ "$d" = in ] || out+=("$m counter fwd to \"d$i\" comment \"reorder\"")
			[ "$d" = out ] || in+=("$m counter fwd to \"d$i\" comment \"reorder\"")
			;;
		esac
	done < <(for kind in loss dup reorder; do grep -h "^$kind " "$f" 2>/dev/null || true; done)

	# the delaying tap and its daemon
	local dfile=$dir/d$i.pid want_tap=0 pid bin sw
	[ -n "$rq" ] && want_tap=1
	if pid=$(holder "$dfile"); then
		if [ "$want_tap" = 0 ] || [ "$(cat "$dir/d$i.args")" != "$rq" ]; then
			kill_wait "$pid"
		fi
	fi
	if [ "$want_tap" = 1 ] && ! holder "$dfile" >/dev/null; then
		bin=$(nsdelay_bin)
		sw=$(switch_pid)
		if ! in_switch ip link show "d$i" >/dev/null 2>&1; then
			in_switch ip tuntap add dev "d$i" mode tap
			in_switch ip link set "d$i" mtu "$mtu" master br0
			in_switch ip link set "d$i" type bridge_slave learning off flood off mcast_flood off bcast_flood off
			in_switch ip link set "d$i" up
		fi
		read -r pct ms <<<"$rq"
		setsid nsenter -t "$sw" -n -- "$bin" "d$i" $((ms * 1000)) $((ms * 500)) </dev/null >>"$dir/d$i.log" 2>&1 9>&- &
		pid=$!
		sleep 0.1
		[ -n "$(starttime "$pid")" ] || die "nsdelay did not start: $(cat "$dir/d$i.log")"
		echo "$pid $(starttime "$pid") -" >"$dfile"
		echo "$rq" >"$dir/d$i.args"
	fi
	if [ "$want_tap" = 0 ]; then
		in_switch ip link del "d$i" 2>/dev/null || true
		rm -f "$dfile" "$dir/d$i.args"
	fi

	local nftin
	nftin="table netdev $t
delete table netdev $t
"
	if [ ${#out[@]} -gt 0 ] || [ ${#in[@]} -gt 2 ]; then
		nftin+="table netdev $t {
	chain from_host {
		type filter hook ingress device \"p$i\" priority 0;
$(printf '\t\t%s\n' "${out[@]}")
	}
	chain to_host {
		type filter hook egress device \"p$i\" priority 0;
$(printf '\t\t%s\n' "${in[@]}")
	}
"
		if [ -n "$rq" ]; then
			nftin+="	chain delayed {
		type filter hook ingress device \"d$i\" priority 0;
		meta mark set meta mark & 0xffff | $own
	}
"
		fi
		nftin+="}
"
	fi
	in_switch nft -f - <<<"$nftin" || die "nft rejected the rules for $(hname "$i") (needs nft >= 1.0.1, Linux >= 5.16 for netdev egress):
$nftin"
}

cmd_rule() { # KIND H PCT [args]
	local kind=$1 i pct proto=udp d=both ms=1 a
	shift
	[ $# -ge 2 ] || die "$kind H PCT ..."
	need_root
	need_set
	need_pkg nft nftables
	i=$(resolve "$1")
	pct=$2
	[[ $pct =~ ^[0-9]+$ ]] && [ "$pct" -le 100 ] || die "$kind: PCT is 0 to 100"
	shift 2
	for a in "$@"; do
		case $a in
		udp | tcp | ip | all) proto=$a ;;
		in | out | both) d=$a ;;
		*)
			if [ "$kind" = reorder ] && [[ $a =~ ^[0-9]+$ ]] && [ "$a" -ge 1 ]; then
				ms=$a
			else
				die "$kind: unknown argument '$a'"
			fi
			;;
		esac
	done
	lock
	switch_pid >/dev/null
	set_rule "$i" "$kind" "$pct" "$proto" "$d" "$ms"
	apply_rules "$i"
}

cmd_rules() {
	need_root
	need_set
	local i
	i=$(resolve "${1:?rules H}")
	in_switch nft list table netdev "nshosts_p$i" 2>/dev/null || echo "no rules for $(hname "$i")"
}

cmd_mtu() { # N
	local m=${1:?mtu N} i
	[[ $m =~ ^[0-9]+$ ]] && [ "$m" -ge 576 ] && [ "$m" -le 65535 ] || die "mtu: N is 576 to 65535"
	need_root
	need_set
	for ((i = 1; i <= $(cat "$dir/n"); i++)); do
		in_switch ip link set "p$i" mtu "$m" || die "mtu: p$i"
		nsenter -t "$(host_pid "$i")" -n -- ip link set eth0 mtu "$m" || die "mtu: $(hname "$i") eth0"
	done
}

cmd_rail() { # add a second network: eth1 of every host on bridge br1
	local i hpid mtu
	need_root
	need_set
	if ! in_switch ip link show br1 >/dev/null 2>&1; then
		in_switch ip link add br1 type bridge stp_state 0 forward_delay 0 mcast_snooping 0 || die "rail: br1"
		in_switch ip link set br1 up
	fi
	for ((i = 1; i <= $(cat "$dir/n"); i++)); do
		hpid=$(host_pid "$i")
		nsenter -t "$hpid" -n -- ip link show eth1 >/dev/null 2>&1 && continue
		mtu=$(nsenter -t "$hpid" -n -- ip -o link show eth0 | sed -n 's/.* mtu \([0-9]*\) .*/\1/p')
		in_switch ip link add "q$i" mtu "$mtu" type veth peer name eth1 mtu "$mtu" netns "$hpid" || die "rail: q$i"
		in_switch ip link set "q$i" master br1 up
		nsenter -t "$hpid" -n -- ip addr add "$(haddr2 "$i")/24" dev eth1
		case ${NSHOSTS_GSO:-udp} in # as eth0 (build_set)
		1) ;;
		0) nsenter -t "$hpid" -n -- ip link set eth1 gso_max_segs 1 ;;
		*) nsenter -t "$hpid" -n -- ethtool -K eth1 tx-udp-segmentation off ;;
		esac
		nsenter -t "$hpid" -n -- ip link set eth1 up
	done
}

cmd_sets() {
	local d p
	for d in "$rundir"/*/; do
		[ -f "$d/n" ] || continue
		p=$(basename "$d")
		prefix=$p dir=${d%/}
		if set_healthy; then s=up; else s=broken; fi
		echo "$p: $(cat "$d/n") hosts, 10.$(cat "$d/net").0.0/24, $s"
	done
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
up) prefix=${NSHOSTS_PREFIX:-nsh}; valid_prefix "$prefix"; dir=$rundir/$prefix; cmd_up "$@" ;;
run) if [ -n "${NSHOSTS_PREFIX:-}" ]; then prefix=$NSHOSTS_PREFIX; valid_prefix "$prefix"; dir=$rundir/$prefix; fi
	cmd_run "$@" ;;
down) if [ "${1:-}" != --all ]; then prefix=${NSHOSTS_PREFIX:-nsh}; valid_prefix "$prefix"; dir=$rundir/$prefix; fi
	cmd_down "$@" ;;
exec) find_set "${1:-}"; cmd_exec "$@" ;;
rsh) find_set "$(rsh_host "$@")"; cmd_rsh "$@" ;;
mpirun) find_set; cmd_mpirun "$@" ;;
ip) find_set "${1:-}"; need_set; haddr "$(resolve "${1:?ip H}")" ;;
name) find_set; need_set; hname "$(resolve "${1:?name H}")" ;;
list) find_set; need_set; print_list ;;
hostfile) find_set; need_set; echo "$dir/hostfile" ;;
agent) echo "$here/nsrsh" ;;
loss | dup | reorder) find_set; cmd_rule "$cmd" "$@" ;;
rules) find_set; cmd_rules "$@" ;;
mtu) find_set; cmd_mtu "$@" ;;
rail) find_set; cmd_rail ;;
sets) cmd_sets ;;
-h | --help | help | "") usage ;;
*) echo "nshosts: unknown command '$cmd'" >&2; usage ;;
esac
