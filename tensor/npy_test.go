package tensor_test

import (
	"bytes"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// npyFixtures are files written by numpy (tensor/internal/npy/testdata/
// make_fixtures.py).
const npyFixtures = "internal/npy/testdata"

func TestReadNpyNumpyFixtures(t *testing.T) {
	tests := []struct {
		file  string
		dtype tensor.DType
		shape []int
		want  []float64
	}{
		{"f32_2x3.npy", tensor.Float32, []int{2, 3}, []float64{-2, -0.5, 1, 2.5, 4, 5.5}},
		{"f64_scalar.npy", tensor.Float64, nil, []float64{3.141592653589793}},
		{"bool_2x3.npy", tensor.Bool, []int{2, 3}, []float64{1, 0, 1, 0, 0, 1}},
		{"f32_fortran.npy", tensor.Float32, []int{2, 3, 4}, arange(24)},
		{"f8_bigendian.npy", tensor.Float64, []int{2, 2}, []float64{1.5, -2.25, 1e-300, math.Inf(1)}},
		{"i4_bigendian.npy", tensor.Int32, []int{4}, []float64{1, -2, 65536, -(1 << 31)}},
		{"f2_1d.npy", tensor.Float16, []int{4}, []float64{1, -2, 0.5, 65504}},
		{"i2_1d.npy", tensor.Int16, []int{3}, []float64{-32768, 0, 32767}},
		{"i1_1d.npy", tensor.Int8, []int{3}, []float64{-128, 0, 127}},
		{"u1_v2.npy", tensor.Uint8, []int{2, 2}, []float64{0, 1, 254, 255}},
		{"i4_v3.npy", tensor.Int32, []int{2}, []float64{7, -7}},
		{"f4_empty.npy", tensor.Float32, []int{0, 3}, []float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			x, err := tensor.LoadNpy(filepath.Join(npyFixtures, tt.file))
			require.NoError(t, err)
			assert.Equal(t, tt.dtype, x.DType())
			assert.Equal(t, tt.shape, x.Shape())
			assert.Equal(t, tt.want, x.Float64s())
		})
	}
	// int64 extremes do not survive float64; compare as int64.
	x, err := tensor.LoadNpy(filepath.Join(npyFixtures, "i64_1d.npy"))
	require.NoError(t, err)
	assert.Equal(t, tensor.Int64, x.DType())
	assert.Equal(t, []int64{math.MinInt64, -1, 0, 1, math.MaxInt64, 1 << 40}, x.Int64s())
}

func arange(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i)
	}
	return v
}

func TestNpyRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		x    *tensor.Tensor
	}{
		{"float32", tensor.FromSlice([]float32{1.5, float32(math.Inf(-1)), -0.25, 7}, 2, 2)},
		{"float64", tensor.FromSlice([]float64{math.Pi, -1e-300, math.MaxFloat64}, 3, 1)},
		{"int64", tensor.FromSlice([]int64{math.MinInt64, 0, math.MaxInt64})},
		{"int32", tensor.FromSlice([]int32{math.MinInt32, -1, math.MaxInt32, 5}, 1, 2, 2)},
		{"int16", tensor.FromSlice([]int16{math.MinInt16, -1, math.MaxInt16})},
		{"uint16", tensor.FromSlice([]uint16{0, 1, math.MaxUint16}, 3, 1)},
		{"int8", tensor.FromSlice([]int8{math.MinInt8, -1, 0, math.MaxInt8}, 2, 2)},
		{"uint8", tensor.FromSlice([]uint8{0, 1, 128, 255}, 4, 1).T()},
		{"bool", tensor.FromSlice([]bool{true, false, false, true, true, false}, 3, 2)},
		{"float16", tensor.FromHalfBits(tensor.Float16, []uint16{0x3c00, 0xc000, 0x7bff, 0x0001}, 4)},
		{"scalar", tensor.ScalarOf(2.5, tensor.Float64)},
		{"empty", tensor.Zeros([]int{0, 4}, tensor.Int64)},
		{"transposed", tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3).T()},
		{"sliced", tensor.Arange(0, 20, 1).Reshape(4, 5).Slice(1, 1, 5, 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, tensor.WriteNpy(&buf, tt.x))
			assert.Zero(t, (buf.Len()-tt.x.Numel()*tt.x.DType().Size())%64, "data starts 64-byte aligned")
			got, err := tensor.ReadNpy(&buf)
			require.NoError(t, err)
			assert.Equal(t, tt.x.DType(), got.DType())
			assert.Equal(t, tt.x.Shape(), got.Shape())
			assert.True(t, got.IsContiguous())
			assert.Equal(t, npyData(tt.x), npyData(got))
			assert.Zero(t, buf.Len(), "ReadNpy consumes the whole array")
		})
	}
}

// npyData returns the elements in a form that compares exactly (bits for
// floats, so NaN and -0 compare too).
func npyData(x *tensor.Tensor) any {
	switch x.DType() {
	case tensor.Float32:
		var b []uint32
		for _, v := range x.Float32s() {
			b = append(b, math.Float32bits(v))
		}
		return b
	case tensor.Float64:
		var b []uint64
		for _, v := range x.Float64s() {
			b = append(b, math.Float64bits(v))
		}
		return b
	case tensor.Float16:
		return x.HalfBits()
	case tensor.Bool:
		return x.Bools()
	}
	return x.Int64s()
}

func TestWriteNpyBFloat16(t *testing.T) {
	x := tensor.FromHalfBits(tensor.BFloat16, []uint16{0x3f80}, 1)
	var buf bytes.Buffer
	err := tensor.WriteNpy(&buf, x)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bfloat16")
	assert.Zero(t, buf.Len())
	require.Error(t, tensor.SaveNpy(filepath.Join(t.TempDir(), "x.npy"), x))
}

func TestReadNpyErrors(t *testing.T) {
	var good bytes.Buffer
	require.NoError(t, tensor.WriteNpy(&good, tensor.FromSlice([]float32{1, 2, 3})))
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "ReadNpy"},
		{"not npy", []byte("PK\x03\x04 a zip file"), "magic"},
		{"truncated data", good.Bytes()[:good.Len()-1], "truncated"},
		{"truncated header", good.Bytes()[:20], "header"},
		{"object dtype", npyWithHeader("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }"), "object"},
		{"complex dtype", npyWithHeader("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }"), "c8"},
		// Issue 26: accepted before, and a Sum over axis 0 gave a tensor
		// that panicked when read.
		{"zero beside overflow", npyWithHeader("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4611686018427387904), }"), "overflows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := tensor.ReadNpy(bytes.NewReader(tt.in))
			require.Error(t, err)
			assert.Nil(t, x)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	_, err := tensor.LoadNpy(filepath.Join(t.TempDir(), "missing.npy"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.npy")
}

// npyWithHeader builds a version 1.0 .npy prefix with the given header dict.
func npyWithHeader(dict string) []byte {
	h := dict + strings.Repeat(" ", 63-(10+len(dict))%64) + "\n"
	return append([]byte{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, byte(len(h)), byte(len(h) >> 8)}, h...)
}

func TestSaveLoadNpy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.npy")
	x := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	require.NoError(t, tensor.SaveNpy(path, x))
	got, err := tensor.LoadNpy(path)
	require.NoError(t, err)
	assert.Equal(t, x.Shape(), got.Shape())
	assert.Equal(t, x.Float64s(), got.Float64s())
}

// TestNpyReadableByNumpy checks that numpy.load reads what WriteNpy writes.
// It needs /usr/bin/python3 with numpy and is skipped without it.
func TestNpyReadableByNumpy(t *testing.T) {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Skip("python3 with numpy not available:", err)
	}
	dir := t.TempDir()
	files := map[string]*tensor.Tensor{
		"f4.npy":   tensor.FromSlice([]float32{1.5, -2, 3.25, 4, 5, 6}, 2, 3).T(),
		"f8.npy":   tensor.ScalarOf(0.1, tensor.Float64),
		"i8.npy":   tensor.FromSlice([]int64{-5, math.MaxInt64}),
		"i4.npy":   tensor.FromSlice([]int32{7, -7}, 2, 1),
		"b1.npy":   tensor.FromSlice([]bool{true, false}),
		"f2.npy":   tensor.FromHalfBits(tensor.Float16, []uint16{0x3c00, 0x3800}, 2),
		"none.npy": tensor.Zeros([]int{0, 2}),
	}
	for name, x := range files {
		require.NoError(t, tensor.SaveNpy(filepath.Join(dir, name), x))
	}
	script := `
import numpy as np, os, sys
d = sys.argv[1]
for n in sorted(os.listdir(d)):
    a = np.load(os.path.join(d, n), allow_pickle=False)
    print(n, a.dtype.str, a.shape, a.tolist())
`
	out, err := exec.Command(py, "-c", script, dir).CombinedOutput()
	require.NoError(t, err, string(out))
	want := `b1.npy |b1 (2,) [True, False]
f2.npy <f2 (2,) [1.0, 0.5]
f4.npy <f4 (3, 2) [[1.5, 4.0], [-2.0, 5.0], [3.25, 6.0]]
f8.npy <f8 () 0.1
i4.npy <i4 (2, 1) [[7], [-7]]
i8.npy <i8 (2,) [-5, 9223372036854775807]
none.npy <f4 (0, 2) []
`
	assert.Equal(t, want, string(out))
}
