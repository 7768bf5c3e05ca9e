//go:build !unix

package onnx

import (
	"errors"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// mkfifo is unavailable without named pipes.
func mkfifo(string) error { return errors.New("no named pipes on this system") }

// diskUsage returns the sizes of the regular files under dir.
func diskUsage(t testing.TB, dir string) int64 {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err == nil && info.Mode().IsRegular() {
			total += info.Size()
		}
		return err
	})
	require.NoError(t, err)
	return total
}
