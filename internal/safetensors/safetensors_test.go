package safetensors

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// le encodes values as consecutive little-endian bytes. Each value must be a
// fixed-size type accepted by binary.Write.
func le(values ...any) []byte {
	var buf bytes.Buffer
	for _, v := range values {
		if err := binary.Write(&buf, binary.LittleEndian, v); err != nil {
			panic(err)
		}
	}
	return buf.Bytes()
}

// fixtureTensors returns the tensors written by testdata/make_fixture.py.
// Keep in sync with expected() there.
func fixtureTensors() map[string]Tensor {
	return map[string]Tensor{
		"f32": {"F32", []int{2, 3}, le(float32(0.5), float32(-1.25), float32(3), float32(1024), float32(65504), float32(-7.75))},
		"f64": {"F64", []int{4}, le(1.0/3.0, math.Pi, -2.5, 1e300)},
		// 1.0, -2.0, 0.5, 65504.0 as IEEE half precision.
		"f16": {"F16", []int{2, 2}, le(uint16(0x3c00), uint16(0xc000), uint16(0x3800), uint16(0x7bff))},
		// 1.0, -2.0, 3.140625 as bfloat16.
		"bf16":   {"BF16", []int{3}, le(uint16(0x3f80), uint16(0xc000), uint16(0x4049))},
		"i64":    {"I64", []int{4}, le(int64(-1), int64(0), int64(1)<<40, int64(math.MaxInt64))},
		"i32":    {"I32", []int{2, 2}, le(int32(math.MinInt32), int32(math.MaxInt32), int32(0), int32(42))},
		"bool":   {"BOOL", []int{4}, []byte{1, 0, 0, 1}},
		"scalar": {"F32", []int{}, le(float32(2.5))},
		"empty":  {"F32", []int{0, 3}, []byte{}},
	}
}

var fixtureMetadata = map[string]string{"format": "pt", "source": "make_fixture.py"}

// assertSameTensors compares tensor maps, treating nil and empty slices alike.
func assertSameTensors(t *testing.T, want, got map[string]Tensor) {
	t.Helper()
	require.Len(t, got, len(want))
	for name, w := range want {
		g, ok := got[name]
		require.Truef(t, ok, "missing tensor %q", name)
		assert.Equalf(t, w.DType, g.DType, "dtype of %q", name)
		assert.Equalf(t, len(w.Shape), len(g.Shape), "rank of %q", name)
		if len(w.Shape) > 0 {
			assert.Equalf(t, w.Shape, g.Shape, "shape of %q", name)
		}
		assert.Truef(t, bytes.Equal(w.Data, g.Data), "data of %q: got %x, want %x", name, g.Data, w.Data)
	}
}

func TestDecodeTorchFixture(t *testing.T) {
	tensors, metadata, err := ReadFile(filepath.Join("testdata", "torch_written.safetensors"))
	require.NoError(t, err)
	assert.Equal(t, fixtureMetadata, metadata)
	assertSameTensors(t, fixtureTensors(), tensors)

	// Spot-check decoded values through the raw bytes.
	f32 := tensors["f32"].Data
	assert.Equal(t, float32(-7.75), math.Float32frombits(binary.LittleEndian.Uint32(f32[20:])))
	f64 := tensors["f64"].Data
	assert.Equal(t, math.Pi, math.Float64frombits(binary.LittleEndian.Uint64(f64[8:])))
	assert.Equal(t, uint16(0x4049), binary.LittleEndian.Uint16(tensors["bf16"].Data[4:]))
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	tests := []struct {
		name     string
		tensors  map[string]Tensor
		metadata map[string]string
	}{
		{"empty file", map[string]Tensor{}, nil},
		{"metadata only", nil, map[string]string{"k": "v", "unicode": "héllo <&>"}},
		{"fixture", fixtureTensors(), fixtureMetadata},
		{"all dtypes", map[string]Tensor{
			"a": {"F64", []int{1}, le(1.5)},
			"b": {"F32", []int{1}, le(float32(1.5))},
			"c": {"F16", []int{1}, le(uint16(0x3e00))},
			"d": {"BF16", []int{1}, le(uint16(0x3fc0))},
			"e": {"I64", []int{1}, le(int64(-7))},
			"f": {"I32", []int{1}, le(int32(-7))},
			"g": {"I16", []int{1}, le(int16(-7))},
			"h": {"I8", []int{1}, le(int8(-7))},
			"i": {"U8", []int{1}, []byte{250}},
			"j": {"BOOL", []int{1}, []byte{1}},
		}, nil},
		{"zero-size tensors", map[string]Tensor{
			"x": {"F32", []int{0}, nil},
			"y": {"I64", []int{3, 0, 2}, nil},
			"z": {"U8", []int{2}, []byte{1, 2}},
		}, nil},
		{"odd names", map[string]Tensor{
			"layer.0.weight": {"U8", []int{1}, []byte{7}},
			"":               {"U8", []int{1}, []byte{8}},
			"名前 \"quoted\"":  {"U8", []int{1}, []byte{9}},
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, Encode(&buf, tt.tensors, tt.metadata))
			b := buf.Bytes()

			n := binary.LittleEndian.Uint64(b)
			assert.Zero(t, n%8, "header length must be a multiple of 8")
			assert.NotContains(t, string(b[8:8+n]), "\n")

			got, meta, err := Decode(b)
			require.NoError(t, err)
			assertSameTensors(t, tt.tensors, got)
			if len(tt.metadata) == 0 {
				assert.Empty(t, meta)
			} else {
				assert.Equal(t, tt.metadata, meta)
			}

			// Encoding is deterministic.
			var again bytes.Buffer
			require.NoError(t, Encode(&again, got, meta))
			assert.Equal(t, b, again.Bytes())
		})
	}
}

func TestEncodeLayoutIsSorted(t *testing.T) {
	var buf bytes.Buffer
	err := Encode(&buf, map[string]Tensor{
		"b": {"U8", []int{1}, []byte{'B'}},
		"c": {"U8", []int{1}, []byte{'C'}},
		"a": {"U8", []int{2}, []byte{'A', 'A'}},
	}, nil)
	require.NoError(t, err)
	assert.True(t, bytes.HasSuffix(buf.Bytes(), []byte("AABC")))
	hdr := string(buf.Bytes()[8 : buf.Len()-4])
	assert.Less(t, strings.Index(hdr, `"a"`), strings.Index(hdr, `"b"`))
	assert.Contains(t, hdr, `"c":{"dtype":"U8","shape":[1],"data_offsets":[3,4]}`)
}

func TestEncodeErrors(t *testing.T) {
	tests := []struct {
		name     string
		tensors  map[string]Tensor
		metadata map[string]string
		wantErr  string
	}{
		{"unknown dtype", map[string]Tensor{"x": {"F128", []int{1}, make([]byte, 16)}}, nil, "unknown dtype"},
		{"negative dim", map[string]Tensor{"x": {"F32", []int{-1}, nil}}, nil, "negative dimension"},
		{"short data", map[string]Tensor{"x": {"F32", []int{2}, make([]byte, 4)}}, nil, "needs 8 bytes, data has 4"},
		{"long data", map[string]Tensor{"x": {"U8", []int{}, make([]byte, 2)}}, nil, "needs 1 bytes, data has 2"},
		{"overflow", map[string]Tensor{"x": {"F64", []int{1 << 40, 1 << 40}, nil}}, nil, "overflows"},
		{"reserved name", map[string]Tensor{MetadataKey: {"U8", []int{1}, []byte{1}}}, nil, "reserved"},
		{"invalid utf8 name", map[string]Tensor{"\xff": {"U8", []int{1}, []byte{1}}}, nil, "UTF-8"},
		{"invalid utf8 metadata", nil, map[string]string{"k": "\xfe"}, "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := Encode(&buf, tt.tensors, tt.metadata)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// file assembles a safetensors file from a raw header string and data.
func file(header string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		input   []byte
		wantErr string
	}{
		{"empty", nil, "too short"},
		{"seven bytes", make([]byte, 7), "too short"},
		{"header longer than file", append(le(uint64(100)), "{}"...), "header length 100 exceeds the 2 bytes"},
		{"huge header length", append(le(uint64(math.MaxUint64)), "{}"...), "exceeds"},
		{"empty header", file("", nil), "does not start with '{'"},
		{"not an object", file(`[]`, nil), "does not start with '{'"},
		{"bad JSON", file(`{"x":`, nil), "invalid header entry"},
		{"unterminated object", file(`{"x":{"dtype":"U8","shape":[],"data_offsets":[0,1]}`, []byte{1}), "invalid JSON header"},
		{"trailing garbage", file(`{} x`, nil), "trailing data"},
		{"two objects", file(`{}{}`, nil), "trailing data"},
		{"invalid utf8", file("{\"\xff\":1}", nil), "UTF-8"},
		{"entry not an object", file(`{"x":3}`, nil), "invalid header entry"},
		{"unknown dtype", file(`{"x":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}`, make([]byte, 8)), `tensor "x": unknown dtype "C64"`},
		{"missing dtype", file(`{"x":{"shape":[1],"data_offsets":[0,1]}}`, []byte{1}), "missing dtype"},
		{"null shape", file(`{"x":{"dtype":"U8","shape":null,"data_offsets":[0,1]}}`, []byte{1}), "missing shape"},
		{"missing offsets", file(`{"x":{"dtype":"U8","shape":[1]}}`, []byte{1}), "missing data_offsets"},
		{"negative dim", file(`{"x":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, nil), "negative dimension"},
		{"fractional dim", file(`{"x":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}}`, []byte{1}), "invalid header entry"},
		{"dim beyond int64", file(`{"x":{"dtype":"U8","shape":[99999999999999999999],"data_offsets":[0,1]}}`, []byte{1}), "invalid header entry"},
		{"shape overflow", file(`{"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil), "overflows"},
		{"size mismatch", file(`{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, make([]byte, 4)), "needs 8 bytes, data_offsets [0, 4] span 4"},
		{"three offsets", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}`, []byte{1}), "data_offsets has more than 2 elements"},
		{"reversed offsets", file(`{"x":{"dtype":"U8","shape":[0],"data_offsets":[1,0]}}`, []byte{1}), "invalid data_offsets"},
		{"negative offset", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[-1,0]}}`, []byte{1}), "invalid data_offsets"},
		{"out of range", file(`{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, []byte{1, 2}), "out of range"},
		{"overlap", file(`{"x":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"y":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, make([]byte, 3)), "overlap"},
		{"hole", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"y":{"dtype":"U8","shape":[1],"data_offsets":[2,3]}}`, make([]byte, 3)), "hole"},
		{"hole at start", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, make([]byte, 2)), "hole"},
		{"uncovered tail", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, make([]byte, 2)), "cover only 1"},
		{"data without tensors", file(`{}`, []byte{1}), "cover only 0"},
		{"duplicate name", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}), "duplicate"},
		{"metadata not strings", file(`{"__metadata__":{"a":1}}`, nil), "invalid __metadata__"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Decode(tt.input)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.True(t, strings.HasPrefix(err.Error(), "safetensors: "), "error %q lacks the package prefix", err)
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		want  map[string]Tensor
		meta  map[string]string
	}{
		{"unpadded header", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{5}),
			map[string]Tensor{"x": {"U8", []int{1}, []byte{5}}}, nil},
		{"whitespace padding", file("{ \"x\" : {\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]} }   \t\n", []byte{5}),
			map[string]Tensor{"x": {"U8", []int{1}, []byte{5}}}, nil},
		{"null metadata", file(`{"__metadata__":null}`, nil), map[string]Tensor{}, map[string]string{}},
		{"unknown entry fields", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"extra":true}}`, []byte{5}),
			map[string]Tensor{"x": {"U8", []int{1}, []byte{5}}}, nil},
		{"zero-size tensor shares offset", file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"y":{"dtype":"F32","shape":[0],"data_offsets":[1,1]}}`, []byte{5}),
			map[string]Tensor{"x": {"U8", []int{1}, []byte{5}}, "y": {"F32", []int{0}, nil}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, meta, err := Decode(tt.input)
			require.NoError(t, err)
			assertSameTensors(t, tt.want, got)
			assert.Equal(t, tt.meta, meta)
		})
	}
}

func TestDecodeDataIsClipped(t *testing.T) {
	b := file(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}`, []byte{1, 2})
	got, _, err := Decode(b)
	require.NoError(t, err)
	a := append(got["a"].Data, 9) // must not clobber b's byte
	assert.Equal(t, []byte{1, 9}, a)
	assert.Equal(t, []byte{2}, got["b"].Data)
}

func TestDTypeSize(t *testing.T) {
	tests := []struct {
		dtype string
		want  int
	}{
		{"F64", 8}, {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I64", 8},
		{"I32", 4}, {"I16", 2}, {"I8", 1}, {"U8", 1}, {"BOOL", 1},
	}
	for _, tt := range tests {
		got, err := DTypeSize(tt.dtype)
		require.NoError(t, err)
		assert.Equal(t, tt.want, got, tt.dtype)
	}
	_, err := DTypeSize("f32")
	assert.ErrorContains(t, err, `unknown dtype "f32"`)
}

func TestWriteFileReadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "model.safetensors")
	require.NoError(t, WriteFile(path, fixtureTensors(), fixtureMetadata))
	got, meta, err := ReadFile(path)
	require.NoError(t, err)
	assertSameTensors(t, fixtureTensors(), got)
	assert.Equal(t, fixtureMetadata, meta)

	_, _, err = ReadFile(filepath.Join(t.TempDir(), "missing.safetensors"))
	assert.Error(t, err)
	assert.Error(t, WriteFile(filepath.Join(t.TempDir(), "no", "such", "dir"), nil, nil))
}

// python is the interpreter with PyTorch used by the interop tests.
const python = "/usr/bin/python3"

// requireTorch skips the test unless python can import torch.
func requireTorch(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipping PyTorch interop in short mode")
	}
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s not available: %v", python, err)
	}
	if out, err := exec.Command(python, "-c", "import torch").CombinedOutput(); err != nil {
		t.Skipf("PyTorch not importable: %v\n%s", err, out)
	}
}

func TestTorchReadsGoWrittenFile(t *testing.T) {
	requireTorch(t)
	path := filepath.Join(t.TempDir(), "go_written.safetensors")
	require.NoError(t, WriteFile(path, fixtureTensors(), map[string]string{"writer": "ember"}))
	script := filepath.Join("testdata", "check_file.py")
	out, err := exec.Command(python, script, path, "writer=ember").CombinedOutput()
	require.NoError(t, err, "check_file.py failed:\n%s", out)
	assert.Contains(t, string(out), "OK")
}

func TestTorchChecksCommittedFixture(t *testing.T) {
	requireTorch(t)
	script := filepath.Join("testdata", "check_file.py")
	fixture := filepath.Join("testdata", "torch_written.safetensors")
	out, err := exec.Command(python, script, fixture, "format=pt").CombinedOutput()
	require.NoError(t, err, "check_file.py failed:\n%s", out)
	assert.Contains(t, string(out), "OK")
}
