package sys

import "golang.org/x/sys/unix"

// membarrier(2) commands.
const (
	membarrierGlobalExpedited         = 1 << 1 // MEMBARRIER_CMD_GLOBAL_EXPEDITED
	membarrierRegisterGlobalExpedited = 1 << 2 // MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED
)

// MembarrierRegister registers the process for Membarrier: false where
// the kernel has no expedited global membarrier.
func MembarrierRegister() bool {
	_, _, e := unix.Syscall(unix.SYS_MEMBARRIER, membarrierRegisterGlobalExpedited, 0, 0)
	return e == 0
}

// Membarrier runs a full memory fence on every running thread of every
// registered process.
func Membarrier() {
	_, _, _ = unix.Syscall(unix.SYS_MEMBARRIER, membarrierGlobalExpedited, 0, 0)
}
