//go:build unix

package atomicfile

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"strconv"
	"syscall"
)

// processDead reports whether no process with this id is running. A zombie
// (a killed child its parent has not yet waited for) counts as dead on Linux.
func processDead(pid int) bool {
	if pid == os.Getpid() {
		return false
	}
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true
	}
	if err != nil {
		return false // EPERM: it exists, run by another user
	}
	if runtime.GOOS == "linux" {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err == nil {
			// The state follows the command name, which is in parentheses
			// and may itself contain ") ".
			if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
				return stat[i+2] == 'Z' || stat[i+2] == 'X'
			}
		}
	}
	return false
}
