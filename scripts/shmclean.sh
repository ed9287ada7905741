#!/bin/bash
# shmclean.sh: removes the shared-memory regions Debian's libfabric shm
# provider (the benchmarks' reference) left in /dev/shm when its process
# was killed: files named <pid>:<n>:<n> that their process does not map.
# They are 16 MiB each, and a later process that gets the same pid fails
# fi_enable with -FI_EBUSY (a reference run then reports "failed"). Our
# provider's own segments (psm2go-*) are not touched: it reclaims those
# itself.
set -u
n=0
for f in /dev/shm/*:*:*; do
	[ -e "$f" ] || continue
	name=${f#/dev/shm/}
	[[ $name =~ ^([0-9]+):[0-9]+:[0-9]+$ ]] || continue
	pid=${BASH_REMATCH[1]}
	if [ -r "/proc/$pid/maps" ] && grep -qF "/dev/shm/$name" "/proc/$pid/maps" 2>/dev/null; then
		continue
	fi
	rm -f "$f" && n=$((n + 1))
done
[ "$n" -eq 0 ] || echo "shmclean: removed $n stale shm-provider regions from /dev/shm" >&2
exit 0
