package sys

import "golang.org/x/sys/unix"

// EventFD is a non-blocking, close-on-exec eventfd: the file descriptor
// libfabric hands out for FI_WAIT_FD, readable while raised. The zero value
// is not one; NoEventFD marks its absence.
type EventFD int

// NoEventFD is an EventFD that is not open.
const NoEventFD EventFD = -1

// NewEventFD opens an eventfd, lowered.
func NewEventFD() (EventFD, error) {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return NoEventFD, err
	}
	return EventFD(fd), nil
}

// Raise makes the eventfd readable (adds one to its count).
func (e EventFD) Raise() {
	one := [8]byte{1}
	for {
		if _, err := unix.Write(int(e), one[:]); err != unix.EINTR {
			return
		}
	}
}

// Lower makes it unreadable again (takes its count).
func (e EventFD) Lower() {
	var b [8]byte
	for {
		if _, err := unix.Read(int(e), b[:]); err != unix.EINTR {
			return
		}
	}
}

// Close closes it.
func (e EventFD) Close() { unix.Close(int(e)) }
