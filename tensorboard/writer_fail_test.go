package tensorboard

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingFile accepts limit bytes, then fails every write; Sync fails too.
type failingFile struct {
	limit, written int
	closed         bool
}

var errDiskFull = errors.New("no space left on device")

func (f *failingFile) Write(b []byte) (int, error) {
	if f.written+len(b) > f.limit {
		return 0, errDiskFull
	}
	f.written += len(b)
	return len(b), nil
}

func (f *failingFile) Sync() error  { return errDiskFull }
func (f *failingFile) Close() error { f.closed = true; return nil }

func TestWriteErrorsAreReturnedByFlushAndClose(t *testing.T) {
	w, err := NewWriter(t.TempDir(), Options{})
	require.NoError(t, err)
	// Swap the file for one that fails: stop the goroutine on the real
	// file first, then start a new one on the failing file.
	require.NoError(t, w.Close())
	bad := &failingFile{limit: 0}
	w.closed = false
	w.done = make(chan struct{})
	go w.run(bad)

	w.AddScalar("x", 1, 1)
	err = w.Flush()
	require.Error(t, err)
	assert.ErrorIs(t, err, errDiskFull)
	assert.Contains(t, err.Error(), w.Path())
	// Later events are dropped; the first error stays.
	w.AddScalar("x", 2, 2)
	err = w.Close()
	assert.ErrorIs(t, err, errDiskFull)
	assert.True(t, bad.closed, "the file is closed even after a failure")
}
