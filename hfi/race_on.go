//go:build race

package hfi

// raceEnabled: the arrival ring publishes with stores the race detector
// does not see, so race builds add a synchronizing counter (recv.go).
const raceEnabled = true
