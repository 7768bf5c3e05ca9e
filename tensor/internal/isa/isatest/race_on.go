//go:build race

package isatest

// raceEnabled is true in -race builds, where RunEachPath leaves the other
// paths to the plain test run (re-running them under the race detector
// would multiply the package's slowest tests by its slowdown).
const raceEnabled = true
