//go:build !race

package distributed

// raceRelease tells the race detector of the order the shared-memory
// counters give (race_on.go); without it there is nothing to tell.
func raceRelease([]byte) {}

// raceAcquire is raceRelease's other half.
func raceAcquire([]byte) {}
