// Package sys is the library's one door to the kernel: the system calls
// the wires and the provider make, wrapped once, with their EINTR and
// partial-progress handling. It owns the futex calls (FutexWait,
// FutexWake), eventfds (EventFD), anonymous mappings (MapAnon),
// cross-memory attach (CMA), memory barriers across processes
// (Membarrier), CPU affinity (Affinity, SetAffinity), and the errno values
// callers compare with.
//
// golang.org/x/sys/unix is imported here and, by documented exception,
// in a few files that are themselves the owner of a kernel interface
// (TestUnixImports lists them with the reason); anything else goes
// through this package.
package sys
