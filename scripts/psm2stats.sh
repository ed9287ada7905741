#!/usr/bin/env bash
# Prints the counters of running processes that use the library with
# FI_PSM2_PRINT_STATS set (provider/stats.go): the psm2-stats lines each
# endpoint keeps in the user's shm directory, refreshed every N seconds
# (every second with FI_PSM2_PRINT_STATS=1), without stopping them.
#
#   scripts/psm2stats.sh [PID...]     default: every process that has some
#
# The directory is the first of /dev/shm/psm2go-<euid>, psm2go-<euid>-1,
# ... that is the user's own (shm/dir.go). Inside a namespace host, run it
# there (each host has its own /dev/shm). Exit status 1 if nothing is found.
set -uo pipefail
uid=$(id -u)
dir=
for d in /dev/shm/psm2go-$uid /dev/shm/psm2go-$uid-{1..7}; do
	if [ -d "$d" ] && [ -O "$d" ] && [ ! -L "$d" ]; then
		dir=$d
		break
	fi
done
[ -n "$dir" ] || { echo "psm2stats.sh: no shm directory of user $uid" >&2; exit 1; }
shopt -s nullglob
files=()
if [ $# -eq 0 ]; then
	files=("$dir"/psm2-stats-*)
else
	for p in "$@"; do files+=("$dir"/psm2-stats-"$p"-*); done
fi
files=("${files[@]/%.tmp/}")
[ ${#files[@]} -gt 0 ] || { echo "psm2stats.sh: no statistics in $dir (is FI_PSM2_PRINT_STATS set?)" >&2; exit 1; }
# A process killed before it closed its endpoints leaves its files: only
# live processes' are shown.
shown=0
for f in "${files[@]}"; do
	[[ $f == *.tmp ]] && continue
	p=${f##*/psm2-stats-}
	p=${p%%-*}
	kill -0 "$p" 2>/dev/null || [ -d "/proc/$p" ] || continue
	cat "$f" 2>/dev/null && shown=1
done
[ $shown = 1 ] || { echo "psm2stats.sh: no running process has statistics in $dir" >&2; exit 1; }
