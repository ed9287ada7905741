# report.sh: the PASS/FAIL lines of the check scripts (mpi.sh,
# multihost.sh), sourced by them. ok NAME counts a pass; fail NAME
# [OUTPUT] counts a failure and shows the lines of OUTPUT that say what
# went wrong (test failures, a crashed rank's signal and backtrace, a Go
# panic), then its end. The counts are in $passed and $failed.
passed=0
failed=0
ok() { echo "PASS $1"; passed=$((passed + 1)); }
fail() {
	echo "FAIL $1"
	failed=$((failed + 1))
	[ $# -gt 1 ] || return 0
	{
		printf '%s\n' "$2" | grep -E '^(FAIL|# rank)|[Ss]ignal|Failing at|^\[[^]]*\] *\[ *[0-9]+\]|panic|fatal error' | head -40
		printf '%s\n' "$2" | tail -15
	} | sed 's/^/    /'
}
