package provider

import "runtime"

// numCPU is the number of cores that affinity ids are checked against.
func numCPU() int { return runtime.NumCPU() }
