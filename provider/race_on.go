//go:build race

package provider

// raceEnabled: the race detector cannot see the C-shared futex lock, so
// the domain lock is a sync.Mutex and the C posting fast paths are off.
const raceEnabled = true
