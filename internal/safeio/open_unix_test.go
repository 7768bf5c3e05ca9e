//go:build unix

package safeio_test

import (
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/safeio"
)

// TestOpenRefusesFIFO checks that a named pipe is refused without blocking
// (a blocking open would hang the test until its deadline).
func TestOpenRefusesFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data.npy")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	_, _, err := safeio.Open(path)
	require.ErrorContains(t, err, "is a named pipe (FIFO), not a regular file")
	_, err = safeio.ReadFile(path, 1<<20)
	require.ErrorContains(t, err, "named pipe")
}

func TestOpenRefusesDevice(t *testing.T) {
	_, err := safeio.ReadFile("/dev/zero", 1<<20)
	require.ErrorContains(t, err, "is a device, not a regular file")
}
