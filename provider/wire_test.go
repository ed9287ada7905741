package provider

import (
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/shm"
)

// TestWireErrno: the reason a wire failed to open keeps its meaning at
// the ABI (finding 6: every failure used to be -FI_ENOMEM).
func TestWireErrno(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want fi.Errno
	}{
		{fmt.Errorf("allocate segment: %w", syscall.ENOSPC), fi.ENOSPC},
		{fmt.Errorf("create segment: %w", syscall.EMFILE), fi.EMFILE},
		{fmt.Errorf("open: %w", shm.ErrForeign), fi.EACCES},
		{fmt.Errorf("create segment: %w", syscall.EEXIST), fi.EADDRINUSE},
		{fmt.Errorf("mmap: %w", syscall.ENOMEM), fi.ENOMEM},
		{errors.New("something else"), fi.ENOMEM},
		{fi.EBUSY, fi.EBUSY},
	} {
		if got := wireErrno(tc.err); got != tc.want {
			t.Errorf("wireErrno(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
