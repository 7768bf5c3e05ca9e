package npy

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

// f32s returns the little-endian bytes of float32 values.
func f32s(vs ...float32) []byte {
	args := make([]any, len(vs))
	for i, v := range vs {
		args[i] = v
	}
	return le(args...)
}

// fixtures returns the arrays written by testdata/make_fixtures.py, as Read
// must return them: canonical descr, little-endian, C order. Keep in sync
// with fixtures() there.
func fixtures() map[string]Array {
	iota24 := make([]float32, 24)
	for i := range iota24 {
		iota24[i] = float32(i)
	}
	return map[string]Array{
		"f32_2x3.npy":      {DescrFloat32, []int{2, 3}, f32s(-2, -0.5, 1, 2.5, 4, 5.5)},
		"f64_scalar.npy":   {DescrFloat64, []int{}, le(math.Pi)},
		"i64_1d.npy":       {DescrInt64, []int{6}, le(int64(math.MinInt64), int64(-1), int64(0), int64(1), int64(math.MaxInt64), int64(1)<<40)},
		"bool_2x3.npy":     {DescrBool, []int{2, 3}, []byte{1, 0, 1, 0, 0, 1}},
		"f32_fortran.npy":  {DescrFloat32, []int{2, 3, 4}, f32s(iota24...)},
		"f8_bigendian.npy": {DescrFloat64, []int{2, 2}, le(1.5, -2.25, 1e-300, math.Inf(1))},
		"i4_bigendian.npy": {DescrInt32, []int{4}, le(int32(1), int32(-2), int32(65536), int32(math.MinInt32))},
		// 1.0, -2.0, 0.5, 65504.0 as IEEE half precision.
		"f2_1d.npy":    {DescrFloat16, []int{4}, le(uint16(0x3c00), uint16(0xc000), uint16(0x3800), uint16(0x7bff))},
		"i2_1d.npy":    {DescrInt16, []int{3}, le(int16(math.MinInt16), int16(0), int16(math.MaxInt16))},
		"i1_1d.npy":    {DescrInt8, []int{3}, le(int8(math.MinInt8), int8(0), int8(math.MaxInt8))},
		"u1_v2.npy":    {DescrUint8, []int{2, 2}, []byte{0, 1, 254, 255}},
		"i4_v3.npy":    {DescrInt32, []int{2}, le(int32(7), int32(-7))},
		"f4_empty.npy": {DescrFloat32, []int{0, 3}, []byte{}},
	}
}

// assertSameArray compares arrays, treating nil and empty slices alike.
func assertSameArray(t *testing.T, want, got Array) {
	t.Helper()
	assert.Equal(t, want.Descr, got.Descr)
	assert.Equal(t, len(want.Shape), len(got.Shape), "rank")
	if len(want.Shape) > 0 {
		assert.Equal(t, want.Shape, got.Shape)
	}
	assert.True(t, bytes.Equal(want.Data, got.Data), "data: got %x, want %x", got.Data, want.Data)
}

func TestReadNumpyFixtures(t *testing.T) {
	for name, want := range fixtures() {
		t.Run(name, func(t *testing.T) {
			got, err := ReadFile(filepath.Join("testdata", name))
			require.NoError(t, err)
			assertSameArray(t, want, got)
		})
	}
}

func TestReadFixtureValues(t *testing.T) {
	// Decode a few values explicitly rather than through the byte helpers.
	a, err := ReadFile(filepath.Join("testdata", "f32_fortran.npy"))
	require.NoError(t, err)
	// Element [1, 2, 3] in C order is 1*12 + 2*4 + 3 = 23.
	assert.Equal(t, float32(23), math.Float32frombits(binary.LittleEndian.Uint32(a.Data[23*4:])))
	assert.Equal(t, float32(13), math.Float32frombits(binary.LittleEndian.Uint32(a.Data[13*4:])))

	b, err := ReadFile(filepath.Join("testdata", "f8_bigendian.npy"))
	require.NoError(t, err)
	assert.Equal(t, -2.25, math.Float64frombits(binary.LittleEndian.Uint64(b.Data[8:])))
	assert.True(t, math.IsInf(math.Float64frombits(binary.LittleEndian.Uint64(b.Data[24:])), 1))
}

func TestWriteReadRoundTrip(t *testing.T) {
	for name, a := range fixtures() {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, Write(&buf, a))
			b := buf.Bytes()
			require.True(t, bytes.HasPrefix(b, []byte("\x93NUMPY\x01\x00")))
			hlen := int(binary.LittleEndian.Uint16(b[8:]))
			assert.Zero(t, (10+hlen)%64, "data must start 64-byte aligned")
			assert.Equal(t, byte('\n'), b[10+hlen-1])

			got, err := Read(bytes.NewReader(b))
			require.NoError(t, err)
			assertSameArray(t, a, got)
		})
	}
}

func TestWriteHeader(t *testing.T) {
	tests := []struct {
		shape []int
		want  string
	}{
		{[]int{}, "{'descr': '|u1', 'fortran_order': False, 'shape': (), }"},
		{[]int{0}, "{'descr': '|u1', 'fortran_order': False, 'shape': (0,), }"},
		{[]int{1, 2, 0}, "{'descr': '|u1', 'fortran_order': False, 'shape': (1, 2, 0), }"},
	}
	for _, tt := range tests {
		size := 1
		for _, d := range tt.shape {
			size *= d
		}
		var buf bytes.Buffer
		require.NoError(t, Write(&buf, Array{DescrUint8, tt.shape, make([]byte, size)}))
		hdr := buf.Bytes()[10:]
		assert.True(t, strings.HasPrefix(string(hdr), tt.want+" "), "header %q", hdr)
	}
}

func TestWriteCanonicalizesDescr(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, Array{"<u1", []int{1}, []byte{3}}))
	got, err := Read(&buf)
	require.NoError(t, err)
	assert.Equal(t, DescrUint8, got.Descr)
}

func TestWriteErrors(t *testing.T) {
	tests := []struct {
		name    string
		a       Array
		wantErr string
	}{
		{"unknown descr", Array{"<c8", []int{1}, make([]byte, 8)}, "unsupported dtype descr"},
		{"object", Array{"|O", []int{1}, make([]byte, 8)}, "object arrays"},
		{"big-endian", Array{">f4", []int{1}, make([]byte, 4)}, "big-endian"},
		{"no byte order", Array{"|f4", []int{1}, make([]byte, 4)}, "explicit byte order"},
		{"negative dim", Array{DescrUint8, []int{-1}, nil}, "negative dimension"},
		{"overflow", Array{DescrFloat64, []int{1 << 31, 1 << 31, 1 << 31}, nil}, "overflows"},
		{"too many dims", Array{DescrUint8, make([]int, MaxDims+1), nil}, "exceed the limit"},
		{"size mismatch", Array{DescrFloat32, []int{2}, make([]byte, 7)}, "needs 8 bytes, data has 7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Write(&bytes.Buffer{}, tt.a)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

// npyHeader returns a header dict with the given field texts.
func npyHeader(descr, fortran, shape string) string {
	return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }"
}

// npyFile assembles a version 1.0 .npy file from a raw header and data.
func npyFile(header string, data []byte) []byte {
	b := []byte("\x93NUMPY\x01\x00")
	b = binary.LittleEndian.AppendUint16(b, uint16(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

// npyFileV assembles a .npy file of the given major version (2 or 3).
func npyFileV(major byte, header string, data []byte) []byte {
	b := []byte{0x93, 'N', 'U', 'M', 'P', 'Y', major, 0}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func TestReadErrors(t *testing.T) {
	hdr := func(descr, fortran, shape string) string {
		return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n"
	}
	tests := []struct {
		name    string
		input   []byte
		wantErr string
	}{
		{"empty", nil, "reading magic: unexpected end of file"},
		{"short magic", []byte("\x93NUM"), "unexpected end of file"},
		{"bad magic", []byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"), "bad magic"},
		{"bad version", []byte("\x93NUMPY\x04\x00\x00\x00"), "unsupported format version 4.0"},
		{"bad minor version", []byte("\x93NUMPY\x01\x01\x00\x00"), "unsupported format version 1.1"},
		{"missing header length", []byte("\x93NUMPY\x01\x00\x05"), "reading header length"},
		{"truncated header", npyFile(hdr("'<f4'", "False", "(1,)"), nil)[:20], "reading 58-byte header: unexpected end of file"},
		{"huge header", []byte("\x93NUMPY\x02\x00\xff\xff\xff\xff"), "exceeds the limit"},
		{"not a dict", npyFile("['descr']\n", nil), "not a dict"},
		{"bad syntax", npyFile("{'descr': '<f4' 'shape': ()}\n", nil), "bad header"},
		{"unterminated", npyFile("{'descr': '<f4', ", nil), "unexpected end of header"},
		{"trailing junk", npyFile(hdr("'<f4'", "False", "()")+"x", nil), "after the literal"},
		{"missing key", npyFile("{'descr': '<f4', 'shape': ()}\n", nil), "want keys"},
		{"extra key", npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}\n", nil), `unexpected key "x"`},
		{"duplicate key", npyFile("{'descr': '<f4', 'descr': '<f4', 'shape': ()}\n", nil), "duplicate"},
		{"non-string key", npyFile("{1: 2}\n", nil), "not a string"},
		{"object dtype", npyFile(hdr("'|O'", "False", "(1,)"), make([]byte, 8)), "object arrays"},
		{"unicode dtype", npyFile(hdr("'<U3'", "False", "(1,)"), make([]byte, 12)), "unsupported dtype descr"},
		{"structured dtype", npyFile(hdr("[('a', '<f4')]", "False", "(1,)"), make([]byte, 4)), "structured dtypes"},
		{"descr not string", npyFile(hdr("3", "False", "(1,)"), nil), "not a string"},
		{"fortran not bool", npyFile(hdr("'<f4'", "0", "(1,)"), nil), "fortran_order"},
		{"shape not tuple", npyFile(hdr("'<f4'", "False", "[1]"), nil), "shape is not a tuple"},
		{"shape parenthesized int", npyFile(hdr("'<f4'", "False", "(1)"), nil), "shape is not a tuple"},
		{"shape element not int", npyFile(hdr("'<f4'", "False", "('a',)"), nil), "not an integer"},
		{"shape element float", npyFile(hdr("'<f4'", "False", "(1.5,)"), nil), "unsupported number"},
		{"negative dim", npyFile(hdr("'<f4'", "False", "(-1,)"), nil), "negative dimension"},
		{"dim out of range", npyFile(hdr("'<f4'", "False", "(99999999999999999999,)"), nil), "out of range"},
		{"huge shape", npyFile(hdr("'<f8'", "False", "(4294967296, 4294967296)"), nil), "overflows"},
		{"zero dim first", npyFile(hdr("'|u1'", "False", "(0, 4611686018427387904, 4611686018427387904)"), nil), "overflows"},
		{"zero dim last", npyFile(hdr("'|u1'", "False", "(4611686018427387904, 4611686018427387904, 0)"), nil), "overflows"},
		{"lying shape", npyFile(hdr("'<f8'", "False", "(1000000000,)"), make([]byte, 16)), "data truncated: got 16 of 8000000000 bytes"},
		{"truncated data", npyFile(hdr("'<f4'", "False", "(2, 2)"), make([]byte, 15)), "data truncated: got 15 of 16 bytes"},
		{"too many dims", npyFile(hdr("'|u1'", "False", "("+strings.Repeat("1, ", MaxDims+1)+")"), []byte{1}), "exceed the limit"},
		{"deep nesting", npyFile(strings.Repeat("(", 100)+strings.Repeat(")", 100), nil), "nested too deeply"},
		{"escape in string", npyFile(hdr(`'<f\x34'`, "False", "()"), nil), "escape"},
		{"unknown name", npyFile(hdr("'<f4'", "false", "()"), nil), `unsupported name "false"`},
		{"v2 truncated", npyFileV(2, hdr("'<f4'", "False", "(3,)"), make([]byte, 4)), "data truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.input))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.True(t, strings.HasPrefix(err.Error(), "npy: "), "error %q lacks the package prefix", err)
		})
	}
}

func TestReadAccepts(t *testing.T) {
	tests := []struct {
		name  string
		input []byte
		want  Array
	}{
		{"double quotes, no trailing comma", npyFile(`{"descr": "<i2", "fortran_order": False, "shape": (2,)}`, le(int16(1), int16(-1))),
			Array{DescrInt16, []int{2}, le(int16(1), int16(-1))}},
		{"key order", npyFile("{'shape': (1,), 'fortran_order': False, 'descr': '<f4'}\n", f32s(2)),
			Array{DescrFloat32, []int{1}, f32s(2)}},
		{"python 2 long", npyFile("{'descr': '|u1', 'fortran_order': False, 'shape': (2L,), }\n", []byte{1, 2}),
			Array{DescrUint8, []int{2}, []byte{1, 2}}},
		{"little-endian byte", npyFile("{'descr': '<u1', 'fortran_order': False, 'shape': (1,), }\n", []byte{9}),
			Array{DescrUint8, []int{1}, []byte{9}}},
		{"big-endian byte", npyFile("{'descr': '>i1', 'fortran_order': False, 'shape': (1,), }\n", []byte{9}),
			Array{DescrInt8, []int{1}, []byte{9}}},
		{"bool normalized", npyFile("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n", []byte{0, 2, 255}),
			Array{DescrBool, []int{3}, []byte{0, 1, 1}}},
		{"fortran 1-d", npyFile("{'descr': '|u1', 'fortran_order': True, 'shape': (3,), }\n", []byte{1, 2, 3}),
			Array{DescrUint8, []int{3}, []byte{1, 2, 3}}},
		{"fortran 2x3", npyFile("{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3), }\n", le(int16(0), int16(3), int16(1), int16(4), int16(2), int16(5))),
			Array{DescrInt16, []int{2, 3}, le(int16(0), int16(1), int16(2), int16(3), int16(4), int16(5))}},
		{"fortran big-endian", npyFile("{'descr': '>i2', 'fortran_order': True, 'shape': (2, 2), }\n", []byte{0, 1, 0, 3, 0, 2, 0, 4}),
			Array{DescrInt16, []int{2, 2}, le(int16(1), int16(2), int16(3), int16(4))}},
		{"version 3", npyFileV(3, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }\n", f32s(1)),
			Array{DescrFloat32, []int{}, f32s(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Read(bytes.NewReader(tt.input))
			require.NoError(t, err)
			assertSameArray(t, tt.want, got)
		})
	}
}

func TestReadConsumesExactlyOneArray(t *testing.T) {
	var buf bytes.Buffer
	a := Array{DescrUint8, []int{2}, []byte{1, 2}}
	b := Array{DescrInt16, []int{1}, le(int16(-3))}
	require.NoError(t, Write(&buf, a))
	require.NoError(t, Write(&buf, b))
	got, err := Read(&buf)
	require.NoError(t, err)
	assertSameArray(t, a, got)
	got, err = Read(&buf)
	require.NoError(t, err)
	assertSameArray(t, b, got)
}

func TestLargeArrayRoundTrip(t *testing.T) {
	// Larger than safeio.ReadFull's first chunk, to exercise buffer growth.
	data := make([]byte, 3<<20+5)
	for i := range data {
		data[i] = byte(i * 7)
	}
	a := Array{DescrUint8, []int{len(data)}, data}
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, a))
	got, err := Read(&buf)
	require.NoError(t, err)
	assertSameArray(t, a, got)
}

func TestReadVersion2LongHeader(t *testing.T) {
	header := "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }" + strings.Repeat(" ", 70000) + "\n"
	got, err := Read(bytes.NewReader(npyFileV(2, header, f32s(4))))
	require.NoError(t, err)
	assertSameArray(t, Array{DescrFloat32, []int{1}, f32s(4)}, got)
}

func TestFrameHeader(t *testing.T) {
	// Real headers never approach 64 KiB because of MaxDims, so the
	// version 2.0 fallback is exercised directly.
	tests := []struct {
		name       string
		dictLen    int
		wantMajor  byte
		prefixSize int
	}{
		{"short", 50, 1, 10},
		{"exactly aligned", 53, 1, 10},
		{"largest version 1.0", 65472 - 11, 1, 10},
		{"needs version 2.0", 65536, 2, 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dict := "{" + strings.Repeat(" ", tt.dictLen-2) + "}"
			pre, hdr := frameHeader(dict)
			require.Len(t, pre, tt.prefixSize)
			assert.Equal(t, tt.wantMajor, pre[6])
			assert.Zero(t, (len(pre)+len(hdr))%64)
			assert.True(t, strings.HasPrefix(string(hdr), dict))
			assert.Equal(t, byte('\n'), hdr[len(hdr)-1])
			if tt.wantMajor == 1 {
				assert.Equal(t, len(hdr), int(binary.LittleEndian.Uint16(pre[8:])))
			} else {
				assert.Equal(t, len(hdr), int(binary.LittleEndian.Uint32(pre[8:])))
			}
		})
	}
}

func TestItemSize(t *testing.T) {
	tests := []struct {
		descr string
		want  int
	}{
		{DescrFloat16, 2}, {DescrFloat32, 4}, {DescrFloat64, 8}, {DescrInt8, 1}, {DescrInt16, 2},
		{DescrInt32, 4}, {DescrInt64, 8}, {DescrUint8, 1}, {DescrUint16, 2}, {DescrUint32, 4},
		{DescrUint64, 8}, {">u8", 8}, {DescrBool, 1}, {">f8", 8},
	}
	for _, tt := range tests {
		got, err := ItemSize(tt.descr)
		require.NoError(t, err, tt.descr)
		assert.Equal(t, tt.want, got, tt.descr)
	}
	for _, bad := range []string{"", "<", "f4", "<f16", "<c8", "|O", "<M8"} {
		_, err := ItemSize(bad)
		assert.Error(t, err, bad)
	}
}

func TestReadErrorsAreShort(t *testing.T) {
	long := strings.Repeat("k", 500_000)
	for _, header := range []string{
		"{'" + long + "': 1, 'descr': '<f4', 'shape': ()}",
		npyHeader("'"+long+"'", "False", "()"),
		npyHeader("'<f4'", "False", "('"+long+"',)"),
	} {
		_, err := Read(bytes.NewReader(npyFileV(2, header, nil)))
		require.Error(t, err)
		assert.Less(t, len(err.Error()), 500, "error of %d bytes", len(err.Error()))
	}
}

func TestReadFileErrors(t *testing.T) {
	_, err := ReadFile(filepath.Join(t.TempDir(), "missing.npy"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = ReadFile(t.TempDir())
	assert.ErrorContains(t, err, "is a folder, not a regular file")

	// The file's size bounds what its header may declare: refused before
	// any data is read.
	path := filepath.Join(t.TempDir(), "lying.npy")
	require.NoError(t, os.WriteFile(path, npyFile(npyHeader("'<f8'", "False", "(1000000000,)"), make([]byte, 16)), 0o600))
	_, err = ReadFile(path)
	assert.ErrorContains(t, err, "npy: data truncated: shape [1000000000] of <f8 needs 8000000000 bytes, the file holds 16")

	// An exact file still reads.
	require.NoError(t, os.WriteFile(path, npyFile(npyHeader("'<f8'", "False", "(2,)"), make([]byte, 16)), 0o600))
	a, err := ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, []int{2}, a.Shape)
	require.NoError(t, os.WriteFile(path, npyFile(npyHeader("'<f8'", "False", "(2,)"), make([]byte, 15)), 0o600))
	_, err = ReadFile(path)
	assert.ErrorContains(t, err, "the file holds 15")

	assert.Error(t, WriteFile(filepath.Join(t.TempDir(), "no", "dir.npy"), Array{DescrUint8, []int{}, []byte{1}}))
}

// python is the interpreter with numpy used by the interop test.
const python = "/usr/bin/python3"

func TestNumpyLoadsGoWrittenFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping numpy interop in short mode")
	}
	if out, err := exec.Command(python, "-c", "import numpy").CombinedOutput(); err != nil {
		t.Skipf("numpy not importable with %s: %v\n%s", python, err, out)
	}
	dir := t.TempDir()
	for name, a := range fixtures() {
		require.NoError(t, WriteFile(filepath.Join(dir, name), a))
	}
	script := filepath.Join("testdata", "check_go_written.py")
	out, err := exec.Command(python, script, dir).CombinedOutput()
	require.NoError(t, err, "check_go_written.py failed:\n%s", out)
	assert.Contains(t, string(out), "OK")
}

func TestFixturesPresent(t *testing.T) {
	// Guard against a fixture being listed but not committed.
	for name := range fixtures() {
		_, err := os.Stat(filepath.Join("testdata", name))
		assert.NoError(t, err, name)
	}
}
