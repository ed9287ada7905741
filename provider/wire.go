package provider

import (
	"errors"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gopsm2/libfabric-psm2/internal/fi"
	"github.com/gopsm2/libfabric-psm2/shm"
	"github.com/gopsm2/libfabric-psm2/transport"
)

// wireConfig is what an endpoint asks of its wire.
type wireConfig struct {
	job         UUID
	epid        uint64
	connTimeout time.Duration
	rndvThresh  int
	disableCMA  bool
}

// newWire opens the wire endpoint under a provider endpoint: the
// shared-memory one (the HFI path joins it for peers on other nodes).
func newWire(c wireConfig) (transport.Endpoint, error) {
	return shm.NewEndpoint(shm.Config{
		Job:           c.job,
		EPID:          c.epid,
		ConnTimeout:   c.connTimeout,
		RndvThreshold: shmThreshold(c.rndvThresh),
		DisableCMA:    c.disableCMA,
	})
}

// shmThreshold maps a byte threshold to shm.Config's, where 0 means the
// default and a negative value a threshold of 0.
func shmThreshold(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// rndvThreshold is PSM2_MQ_RNDV_SHM_THRESH (default 16000): messages
// longer than this go by rendezvous.
func (p *Provider) rndvThreshold() int {
	if s, ok := p.host.Getenv("PSM2_MQ_RNDV_SHM_THRESH"); ok {
		if v, err := strconv.Atoi(s); err == nil && v >= 0 {
			return v
		}
		p.log.Warnf(0, "PSM2_MQ_RNDV_SHM_THRESH=%q is not a byte count; using 16000", s)
	}
	return 16000
}

// disableCMA reports whether single-copy (process_vm_readv) transfers are
// switched off: FI_SHM_DISABLE_CMA=1 (as for libfabric's shm provider) or
// PSM2_KASSIST_MODE=none (as for PSM2).
func (p *Provider) disableCMA() bool {
	if s, ok := p.host.Getenv("FI_SHM_DISABLE_CMA"); ok {
		if b, ok := ParseBool(s); ok && b {
			return true
		}
	}
	s, _ := p.host.Getenv("PSM2_KASSIST_MODE")
	return strings.EqualFold(s, "none")
}

// wireOpen reports whether endpoint epid of job is open on this node: its
// segment exists, is not marked closed, and its owner lives. Endpoints of
// other nodes are taken to be open (the wire finds out when it connects).
func wireOpen(job UUID, epid uint64) bool {
	if epidNode(epid) != nodeID() {
		return true
	}
	seg, err := shm.Open(shm.SegmentName(job, epid))
	if err != nil {
		return false
	}
	defer seg.Close()
	return !seg.Closed() && unix.Kill(seg.Owner(), 0) != unix.ESRCH
}

// wireErrno is the FI_E* code for a failure to open an endpoint's wire:
// the operating system's reason where there is one (a full /dev/shm is
// -FI_ENOSPC, a segment directory taken by another user -FI_EACCES, no
// descriptors left -FI_EMFILE), -FI_ENOMEM otherwise.
func wireErrno(err error) fi.Errno {
	var e fi.Errno
	if errors.As(err, &e) {
		return e
	}
	var sys syscall.Errno
	if !errors.As(err, &sys) {
		return fi.ENOMEM
	}
	switch sys {
	case syscall.EACCES, syscall.EPERM, syscall.EROFS:
		return fi.EACCES
	case syscall.EMFILE, syscall.ENFILE:
		return fi.EMFILE
	case syscall.ENOSPC, syscall.EDQUOT:
		return fi.ENOSPC
	case syscall.EEXIST, syscall.EADDRINUSE:
		// libfabric has no FI_EEXIST: the endpoint's name is in use.
		return fi.EADDRINUSE
	}
	return fi.ENOMEM
}
