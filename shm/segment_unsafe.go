//go:build linux

package shm

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// This file holds every system call of the package: opening, sizing and
// mapping shared memory objects, and the liveness probe of Reclaim. A
// mapping is memory outside Go's control: a slice into it is valid only
// until unmapObject, which is why this file carries the _unsafe suffix.
// Each call is retried on EINTR.

// openObject opens path with flags plus O_CLOEXEC (no leaking into
// children) and O_NOFOLLOW (a symlink planted in the shared directory is
// refused, not followed).
func openObject(path string, flags int, mode uint32) (int, error) {
	var fd int
	err := sys.IgnoringEINTR(func() (err error) {
		fd, err = unix.Open(path, flags|unix.O_CLOEXEC|unix.O_NOFOLLOW, mode)
		return err
	})
	return fd, err
}

// closeObject closes fd. A shared memory object has nothing to flush, so
// there is no error worth reporting; EINTR is not retried (Linux releases
// the descriptor anyway).
func closeObject(fd int) { _ = unix.Close(fd) }

func fchmodObject(fd int, mode uint32) error {
	return sys.IgnoringEINTR(func() error { return unix.Fchmod(fd, mode) })
}

// allocateObject makes the filesystem allocate the first size bytes of
// fd now (ENOSPC if it cannot). A filesystem without fallocate is left to
// allocate on use, as before.
func allocateObject(fd int, size int64) error {
	err := sys.IgnoringEINTR(func() error { return unix.Fallocate(fd, 0, 0, size) })
	if errors.Is(err, unix.EOPNOTSUPP) {
		return nil
	}
	return err
}

func truncateObject(fd int, size int64) error {
	return sys.IgnoringEINTR(func() error { return unix.Ftruncate(fd, size) })
}

// objectStat is what fstat says about an object: its size, and the
// device and inode that identify it.
type objectStat struct {
	size     int64
	dev, ino uint64
}

// statObject describes the regular file fd refers to.
func statObject(fd int) (objectStat, error) {
	var st unix.Stat_t
	if err := sys.IgnoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return objectStat{}, fmt.Errorf("fstat: %w", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return objectStat{}, fmt.Errorf("not a regular file (mode %#o): %w", st.Mode, ErrCorrupt)
	}
	// Only our own segments, open to nobody else, are used: anything
	// else under our names was put there by someone who could read what
	// we write, or shrink it under us.
	if st.Uid != uint32(os.Geteuid()) || st.Mode&0o077 != 0 {
		return objectStat{}, fmt.Errorf("owner %d, mode %#o: %w", st.Uid, st.Mode&0o777, ErrForeign)
	}
	return objectStat{size: st.Size, dev: uint64(st.Dev), ino: st.Ino}, nil
}

// objectSize returns the size of the regular file fd refers to.
func objectSize(fd int) (int64, error) {
	st, err := statObject(fd)
	return st.size, err
}

// readObject reads from offset 0 until buf is full or the object ends,
// looping over short reads. It returns the bytes read.
func readObject(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Pread(fd, buf[n:], int64(n))
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return n, fmt.Errorf("pread: %w", err)
		case m == 0:
			return n, nil
		}
		n += m
	}
	return n, nil
}

// mapObject maps size bytes of fd shared and read-write. The mapping
// outlives fd.
func mapObject(fd, size int) ([]byte, error) {
	for {
		mem, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != unix.EINTR && err != unix.EAGAIN {
			return mem, err
		}
	}
}

// unmapObject unmaps memory returned by mapObject. Nothing may touch it
// afterwards.
func unmapObject(mem []byte) error { return unix.Munmap(mem) }

func unlinkObject(path string) error {
	return sys.IgnoringEINTR(func() error { return unix.Unlink(path) })
}

// processAlive probes pid with signal 0. EPERM means the process exists
// but belongs to someone else.
func processAlive(pid int) (bool, error) {
	err := unix.Kill(pid, 0)
	switch {
	case err == nil, errors.Is(err, unix.EPERM):
		return true, nil
	case errors.Is(err, unix.ESRCH):
		return false, nil
	}
	return false, fmt.Errorf("kill(%d, 0): %w", pid, err)
}
