package sys

import "golang.org/x/sys/unix"

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
