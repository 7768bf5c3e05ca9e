//go:build !unix && !windows

package atomicfile

// processDead reports false: this platform cannot query processes, so a
// temporary is removed only once it is older than StaleAge.
func processDead(pid int) bool { return false }
