package sys

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
)

// ProcIdentity names a process across pid reuse: its pid and its start
// time in clock ticks since boot.
type ProcIdentity struct {
	PID   int
	Start uint64
}

var self struct {
	once sync.Once
	id   ProcIdentity
}

// SelfIdentity returns this process's identity, read once.
func SelfIdentity() ProcIdentity {
	self.once.Do(func() {
		pid := os.Getpid()
		start, _, _ := ProcStat(pid)
		self.id = ProcIdentity{PID: pid, Start: start}
	})
	return self.id
}

// ProcStat reads /proc/<pid>/stat: the start time (field 22) and the
// state (field 3). err wraps os.ErrNotExist when there is no such
// process.
func ProcStat(pid int) (start uint64, state byte, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// "pid (comm) S ppid ...": comm may hold spaces and parentheses, so
	// the fields start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, errors.New("sys: malformed /proc stat")
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return 0, 0, errors.New("sys: malformed /proc stat")
	}
	start, err = strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil || len(f[0]) != 1 {
		return 0, 0, errors.New("sys: malformed /proc stat")
	}
	return start, f[0][0], nil
}

// Gone reports whether the process id names is certainly gone: no such
// pid, a zombie (killed, not yet reaped by its parent), or a pid now used
// by a process that started at another time. Any doubt (an unreadable
// /proc) answers false.
func (id ProcIdentity) Gone() bool {
	if id.PID <= 0 {
		return false
	}
	start, state, err := ProcStat(id.PID)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true
	case err != nil:
		return false
	case state == 'Z' || state == 'X':
		return true
	}
	return id.Start != 0 && start != id.Start
}

// KernelID names the running kernel: a 32-bit hash (FNV-1a) of its boot
// id (/proc/sys/kernel/random/boot_id), which every network and mount
// namespace of the machine shares. Two endpoints with the same KernelID
// share the CPUs, whatever their addresses say (containers, or the test
// hosts of nshost/, on one machine). Never 0; 0 if the boot id cannot be
// read. Read once.
var KernelID = sync.OnceValue(func() uint32 {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	b = bytes.TrimSpace(b)
	if err != nil || len(b) == 0 {
		return 0
	}
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	return max(h, 1)
})
