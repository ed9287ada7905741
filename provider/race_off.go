//go:build !race

package provider

// raceEnabled: see race_on.go.
const raceEnabled = false
