//go:build linux

package shm

import (
	"errors"
	"fmt"
	"os"
)

// Shared objects: plain shared memory objects in this user's private
// directory (dir.go), for state several processes of a job map, such as
// the provider's named address vectors. Unlike a Segment they carry no
// header of shm's: the user lays the memory out, and validates it, since
// another process writes it. They are created with O_EXCL and mode 0600,
// allocated at once (a full /dev/shm is ENOSPC here, never SIGBUS later),
// opened without following symlinks, and bounded by the segment size
// limit.

// CreateShared creates the shared object name of size bytes, zeroed, and
// maps it. An existing object is an error wrapping os.ErrExist.
func CreateShared(name string, size int) (mem []byte, err error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	if size <= 0 || int64(size) > maxSegmentSize() {
		return nil, fmt.Errorf("create shared %q: size %d out of range", name, size)
	}
	path, err := segPath(name)
	if err != nil {
		return nil, fmt.Errorf("create shared %q: %w", name, err)
	}
	fd, err := createObject(path, size)
	if err != nil {
		return nil, fmt.Errorf("create shared %q: %w", name, err)
	}
	defer closeObject(fd)
	mem, err = mapObject(fd, size)
	if err != nil {
		_ = unlinkObject(path)
		return nil, fmt.Errorf("map shared %q: %w", name, err)
	}
	return mem, nil
}

// OpenShared maps the existing shared object name whole. Its size is
// whatever the object has (at most the segment size limit, and at least
// min bytes); the caller checks what it holds. A missing object is an
// error wrapping os.ErrNotExist.
func OpenShared(name string, min int) ([]byte, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	path, err := segPath(name)
	if err != nil {
		return nil, fmt.Errorf("open shared %q: %w", name, err)
	}
	fd, err := openObject(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open shared %q: %w", name, err)
	}
	defer closeObject(fd)
	size, err := objectSize(fd)
	if err != nil {
		return nil, fmt.Errorf("open shared %q: %w", name, err)
	}
	if size < int64(min) || size > maxSegmentSize() {
		return nil, fmt.Errorf("open shared %q: size %d out of range: %w", name, size, ErrCorrupt)
	}
	mem, err := mapObject(fd, int(size))
	if err != nil {
		return nil, fmt.Errorf("map shared %q: %w", name, err)
	}
	return mem, nil
}

// UnmapShared unmaps memory CreateShared or OpenShared returned. Nothing
// may touch it afterwards.
func UnmapShared(mem []byte) error { return unmapObject(mem) }

// UnlinkShared removes the shared object name (mappings stay valid). A
// missing object is no error.
func UnlinkShared(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	path, err := segPath(name)
	if err != nil {
		return err
	}
	if err := unlinkObject(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
