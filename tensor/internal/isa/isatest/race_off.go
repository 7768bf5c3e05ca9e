//go:build !race

package isatest

// raceEnabled is false: this build has no race detector.
const raceEnabled = false
