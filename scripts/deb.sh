#!/usr/bin/env bash
# make deb: builds the Debian package with Debian's own tools
# (dpkg-buildpackage and debhelper, installed by scripts/deps.sh deb when
# missing) from a copy of the tree in build/deb/, then runs lintian on it.
# The package and lintian's report land in build/deb/. debian/ says what
# goes where; Go (1.26, not a Debian package) comes from /usr/local/go or
# PATH, so dpkg-buildpackage runs with -d (no build-dependency check).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh deb
ver=$(dpkg-parsechangelog -l debian/changelog -S Version)
out=build/deb
src=$out/libfabric-psm2-$ver
rm -rf "$out"
mkdir -p "$src"
# The tracked files, and new ones not yet committed (not what .gitignore
# excludes, such as build/).
git ls-files -z -co --exclude-standard | xargs -0 cp --parents -t "$src"
export PATH=$PATH:/usr/local/go/bin
(cd "$src" && dpkg-buildpackage -us -uc -b -d) >"$out/build.log" 2>&1 || {
	tail -30 "$out/build.log" >&2
	echo "deb.sh: dpkg-buildpackage failed (log: $out/build.log)" >&2
	exit 1
}
deb=$(ls "$out"/libfabric-psm2_"$ver"_*.deb)
echo "deb.sh: built $deb"
dpkg-deb -c "$deb" | awk '{print "    " $6 ($7 ? " " $7 " " $8 : "")}'
lintian --tag-display-limit 0 --display-info --pedantic "$deb" >"$out/lintian.txt" 2>&1 || true
echo "deb.sh: lintian ($out/lintian.txt):"
sed 's/^/    /' "$out/lintian.txt"
