// Package clock is the one clock the wires' timers read: monotonic
// nanoseconds behind an interface, so that tests drive time instead of
// sleeping through it. hfi (retransmission, keep-alive, connection
// timeout, path MTU) and shm (liveness, stalled rings, rendezvous waits)
// take one in their Config; System is the default.
package clock
