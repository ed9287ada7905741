//go:build linux

package shm

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/sys"
)

// ErrForeign is returned for a segment, or a segment directory, that this
// user does not own or that others may open: another user's object under
// a name we expected to be ours. It matches unix.EACCES.
var ErrForeign = fmt.Errorf("shm: object owned by another user or open to others: %w", unix.EACCES)

// Segments live in a private directory of the user, Dir/psm2go-<euid>,
// mode 0700, instead of Dir itself: /dev/shm is writable by everyone, so
// any predictable name there can be taken first by another user, who
// could then read what we write into it, or truncate it under us. Inside
// a directory only we can enter, nobody else can create, open or replace
// a segment.
//
// If that name is held by someone else (a file, a symbolic link, or a
// directory that is not ours), the next candidate, psm2go-<euid>-1, and so
// on up to dirCandidates, is used. Every process of the user walks the
// candidates in the same order and takes the first one that is its own,
// so they all agree; another user can only push them down the list, and
// only by taking every candidate make endpoints fail (with EACCES).
const dirCandidates = 8

// segDirs caches the directory per base directory (Dir, or a test's), made
// on first use; the answer does not change for the life of the process.
var segDirs sync.Map // base -> *dirResult

type dirResult struct {
	once sync.Once
	path string
	err  error
}

// SegmentDir returns this user's private segment directory under Dir,
// creating it if needed.
func SegmentDir() (string, error) { return segmentDir(Dir) }

func segmentDir(base string) (string, error) {
	v, _ := segDirs.LoadOrStore(base, &dirResult{})
	r := v.(*dirResult)
	r.once.Do(func() { r.path, r.err = privateDir(base, os.Geteuid()) })
	return r.path, r.err
}

// privateDir finds or makes the first candidate directory under base that
// is uid's own.
func privateDir(base string, uid int) (string, error) {
	for k := 0; k < dirCandidates; k++ {
		path := fmt.Sprintf("%s/%s-%d", base, namePrefix, uid)
		if k > 0 {
			path += fmt.Sprintf("-%d", k)
		}
		err := sys.IgnoringEINTR(func() error { return unix.Mkdir(path, 0o700) })
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return "", fmt.Errorf("segment directory %s: %w", path, err)
		}
		switch err := ownDir(path, uid); {
		case err == nil:
			return path, nil
		case errors.Is(err, ErrForeign):
			continue // somebody else's: try the next name
		default:
			return "", fmt.Errorf("segment directory %s: %w", path, err)
		}
	}
	return "", fmt.Errorf("segment directory: all %d names under %s are taken by others: %w",
		dirCandidates, base, ErrForeign)
}

// ownDir checks that path is a directory (not a link to one) owned by uid,
// and makes it 0700 if it is. ErrForeign otherwise.
func ownDir(path string, uid int) error {
	var fd int
	err := sys.IgnoringEINTR(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return ErrForeign // a symbolic link or a file under our name
	}
	if err != nil {
		return err
	}
	defer closeObject(fd)
	var st unix.Stat_t
	if err := sys.IgnoringEINTR(func() error { return unix.Fstat(fd, &st) }); err != nil {
		return err
	}
	if st.Uid != uint32(uid) {
		return ErrForeign
	}
	if st.Mode&0o7777 != 0o700 {
		// Ours, made with another mode (an older version, a umask
		// that added bits is impossible with mkdir 0700, but a chmod
		// is not): take the others' access away.
		if err := sys.IgnoringEINTR(func() error { return unix.Fchmod(fd, 0o700) }); err != nil {
			return err
		}
	}
	return nil
}
