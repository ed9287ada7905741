# Reads valgrind's output (-q) and prints the reports that count: every
# report except a system-call parameter flagged at one of Go's raw system
# calls (internal/runtime/syscall/linux.Syscall6, the runtime's own such
# as runtime.futex, package syscall's, x/sys/unix's). Those hand the
# kernel Go memory (hfi's recvmmsg headers, a file name, a buffer on a
# goroutine stack the runtime moved, the runtime's own futex words) that
# valgrind never saw initialised, or the
# application's buffers that shm's CMA copy hands the kernel, which may be
# PROT_NONE on purpose (ctest/efault: the kernel answers EFAULT); memcheck
# matches a parameter's name exactly, and the names vary (one per header
# of a batch, per system call), so they are told by their frame here
# instead of by suppressions. Set aside reports are counted on stderr.
# Lines that are not valgrind's (the test's own output) pass through.
function flush() {
	if (nb == 0) return
	if (param && goframe) { skipped++ } else { for (i = 1; i <= nb; i++) print blk[i] }
	nb = 0; param = 0; goframe = 0; seenat = 0
}
/^==[0-9]+== ?$/ { flush(); next }
/^==[0-9]+== / {
	line = $0; sub(/^==[0-9]+== /, "", line)
	if (line ~ /^Thread [0-9]+:$/) { flush(); next }
	blk[++nb] = $0
	if (nb == 1 && line ~ /^Syscall param /) param = 1
	if (!seenat && line ~ /^ +at 0x/) {
		seenat = 1
		if (line ~ /: (internal\/runtime\/syscall\/linux|runtime|syscall|golang\.org\/x\/sys\/unix)\.[A-Za-z0-9_.]+ \(/) goframe = 1
	}
	next
}
{ print }
END { flush(); if (skipped) printf "%d Go system-call reports set aside\n", skipped > "/dev/stderr" }
