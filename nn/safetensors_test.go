package nn_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

func TestSaveTensorsIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.safetensors")
	require.NoError(t, nn.SaveTensors(path, map[string]*tensor.Tensor{"a": tensor.FromSlice([]float32{1, 2})}, nil))
	// A tensor Ember cannot write fails the save and leaves the old file.
	err := nn.SaveTensors(path, map[string]*tensor.Tensor{"a": tensor.FromSlice([]float32{3}), "b": nil}, nil)
	require.ErrorContains(t, err, `tensor "b" is nil`)
	got, _, err := nn.LoadTensors(path)
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2}, got["a"].Float32s())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "a temporary was left behind")
}

func TestLoadTensorsRefusesHostileFiles(t *testing.T) {
	dir := t.TempDir()
	_, _, err := nn.LoadTensors(dir)
	require.ErrorContains(t, err, "is a folder, not a regular file")

	// A header length of 100 MB (the file is sparse): refused from the
	// first 8 bytes.
	path := filepath.Join(dir, "huge.safetensors")
	f, err := os.Create(path)
	require.NoError(t, err)
	_, err = f.Write(binary.LittleEndian.AppendUint64(nil, 100_000_000))
	require.NoError(t, err)
	require.NoError(t, f.Truncate(100_000_008))
	require.NoError(t, f.Close())
	_, _, err = nn.LoadTensors(path)
	require.ErrorContains(t, err, "header length 100000000 exceeds the limit")
	assert.Less(t, len(err.Error()), 300)

	// [0, 2^62, 2^62]: accepted before, and a Sum over axis 0 gave a
	// tensor that panicked when read.
	header := `{"x":{"dtype":"F32","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}}`
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	_, _, err = nn.DecodeTensors(append(b, header...))
	require.ErrorContains(t, err, "overflows")
}
