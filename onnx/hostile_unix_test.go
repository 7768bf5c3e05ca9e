//go:build unix

package onnx

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// mkfifo makes a named pipe at p.
func mkfifo(p string) error { return syscall.Mkfifo(p, 0o600) }

// diskUsage returns the bytes the files under dir take on disk (a sparse
// file counts its allocated blocks only).
func diskUsage(t testing.TB, dir string) int64 {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && info.Mode().IsRegular() {
			total += st.Blocks * 512
		}
		return nil
	})
	require.NoError(t, err)
	return total
}

// A model path that is a FIFO is refused without blocking.
func TestLoadRefusesFIFOModel(t *testing.T) {
	p := filepath.Join(t.TempDir(), "model.onnx")
	require.NoError(t, mkfifo(p))
	done := make(chan error, 1)
	go func() {
		_, err := Load(p)
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		require.Contains(t, err.Error(), "named pipe")
	case <-time.After(60 * time.Second):
		t.Fatal("Load blocks on a FIFO")
	}
}
