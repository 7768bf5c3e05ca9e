package tensorboard

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadScalarsByRunAndTag(t *testing.T) {
	dir := t.TempDir()
	w, err := NewWriter(dir, Options{})
	require.NoError(t, err)
	w.AddText("notes", "not a scalar", 1)
	w.AddScalar("loss", 3, 1)
	w.AddScalar("loss", 2, 2)
	w.AddScalars("acc", map[string]float64{"train": 0.5}, 1)
	require.NoError(t, w.Close())

	got, err := ReadScalars(dir)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Len(t, got["."], 1, "the text is not a scalar")
	require.Len(t, got["."]["loss"], 2)
	assert.Equal(t, int64(2), got["."]["loss"][1].Step)
	assert.Equal(t, 2.0, got["."]["loss"][1].Value)
	assert.Equal(t, 0.5, got["acc_train"]["acc"][0].Value)

	// A file cut inside its last record (still being written) reads up
	// to that record.
	b, err := os.ReadFile(w.Path())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(w.Path(), b[:len(b)-2], 0o644))
	got, err = ReadScalars(dir)
	require.NoError(t, err)
	assert.Len(t, got["."]["loss"], 1)

	// A damaged record is an error naming the file and offset.
	b[len(b)-6] ^= 0xff
	require.NoError(t, os.WriteFile(w.Path(), b, 0o644))
	_, err = ReadScalars(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Base(w.Path()))
	assert.Contains(t, err.Error(), "offset")
}
