package sys

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// AffinityCount is the number of CPUs the calling thread may run on, or 0
// if the kernel does not say.
func AffinityCount() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0
	}
	return set.Count()
}

// SetAffinity pins the calling thread to the CPUs listed.
func SetAffinity(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return unix.SchedSetaffinity(0, &set)
}

// OnlineCPUs is the number of CPUs online on the machine (the kernel's
// /sys/devices/system/cpu/online, what sysconf(_SC_NPROCESSORS_ONLN)
// reads), whatever this thread's affinity; 0 if it cannot be told.
func OnlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0
	}
	return CPUListCount(string(b))
}

// CPUListCount counts the CPUs of a kernel CPU list ("0-3,6,8-9\n": 7);
// 0 if s is not one.
func CPUListCount(s string) int {
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return 0
		}
		n += b - a + 1
	}
	return n
}
