package nn_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
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

// FuzzDecodeTensors runs safetensors bytes through DecodeTensors with the
// default limits: each decoded tensor must encode again to the same
// tensors.
func FuzzDecodeTensors(f *testing.F) {
	var good bytes.Buffer
	require.NoError(f, nn.EncodeTensors(&good, map[string]*tensor.Tensor{
		"w": tensor.FromSlice([]float32{1, -2, 3.5, 0}, 2, 2),
		"b": tensor.FromSlice([]int64{7}),
		"m": tensor.FromSlice([]bool{true, false, true}),
	}, map[string]string{"format": "pt"}))
	f.Add(good.Bytes())
	for _, header := range []string{
		`{"x":{"dtype":"F32","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}}`,
		`{"x":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}}`,
		`{"x":{"dtype":"F8_E4M3","shape":[1],"data_offsets":[0,1]}}`,
	} {
		b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
		f.Add(append(append(b, header...), 1, 2))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tensors, meta, err := nn.DecodeTensors(b)
		if err != nil {
			if len(err.Error()) > 1000 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		var again bytes.Buffer
		if err := nn.EncodeTensors(&again, tensors, meta); err != nil {
			t.Fatalf("encoding decoded tensors failed: %v", err)
		}
		round, _, err := nn.DecodeTensors(again.Bytes())
		if err != nil {
			t.Fatalf("decoding re-encoded tensors failed: %v", err)
		}
		for name, want := range tensors {
			got := round[name]
			if got == nil || !slices.Equal(got.Shape(), want.Shape()) || got.DType() != want.DType() || got.Numel() != want.Numel() {
				t.Fatalf("tensor %q changed in a round trip", name)
			}
		}
		var twice bytes.Buffer
		if err := nn.EncodeTensors(&twice, round, meta); err != nil {
			t.Fatalf("encoding round-tripped tensors failed: %v", err)
		}
		if !bytes.Equal(again.Bytes(), twice.Bytes()) {
			t.Fatal("the bytes changed in a second round trip")
		}
	})
}
