//go:build unix

package data

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHostileIDXFIFO(t *testing.T) {
	dir := t.TempDir()
	// A named pipe instead of a dataset file is refused at once (a plain
	// open would block until a writer came).
	fifo := filepath.Join(dir, "fifo", "train-images-idx3-ubyte")
	require.NoError(t, os.MkdirAll(filepath.Dir(fifo), 0o755))
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fifo", "train-labels-idx1-ubyte"), idxFile(IDXUbyte, []uint32{1}, []byte{1}), 0o644))
	probe(t, "FIFO as images", 0, "named pipe (FIFO), not a regular file", func() error {
		_, err := LoadMNIST(filepath.Join(dir, "fifo"), true)
		return err
	})
}

func TestReadCSVFileRefusesFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "table.csv")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	_, err := ReadCSVFile(path, CSVOptions{})
	require.ErrorContains(t, err, "named pipe (FIFO), not a regular file")
}
