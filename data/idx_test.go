package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// idxBE encodes values as consecutive big-endian bytes. Each value must be a
// fixed-size type accepted by binary.Write.
func idxBE(values ...any) []byte {
	var buf bytes.Buffer
	for _, v := range values {
		if err := binary.Write(&buf, binary.BigEndian, v); err != nil {
			panic(err)
		}
	}
	return buf.Bytes()
}

// idxFile assembles a raw idx file from its parts.
func idxFile(typ byte, dims []uint32, data []byte) []byte {
	b := []byte{0, 0, typ, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, data...)
}

// idxGzip compresses b with gzip.
func idxGzip(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestReadIDXTypes(t *testing.T) {
	tests := []struct {
		name   string
		input  []byte
		want   IDX
		floats []float32
	}{
		{"ubyte", idxFile(IDXUbyte, []uint32{2, 2}, []byte{0, 1, 128, 255}),
			IDX{IDXUbyte, []int{2, 2}, []byte{0, 1, 128, 255}}, []float32{0, 1, 128, 255}},
		{"sbyte", idxFile(IDXSbyte, []uint32{3}, []byte{0x80, 0xff, 0x7f}),
			IDX{IDXSbyte, []int{3}, []byte{0x80, 0xff, 0x7f}}, []float32{-128, -1, 127}},
		{"short", idxFile(IDXShort, []uint32{3}, idxBE(int16(-300), int16(0), int16(32767))),
			IDX{IDXShort, []int{3}, idxBE(int16(-300), int16(0), int16(32767))}, []float32{-300, 0, 32767}},
		{"int", idxFile(IDXInt, []uint32{1, 2}, idxBE(int32(-70000), int32(1<<24))),
			IDX{IDXInt, []int{1, 2}, idxBE(int32(-70000), int32(1<<24))}, []float32{-70000, 1 << 24}},
		{"float", idxFile(IDXFloat, []uint32{2}, idxBE(float32(0.25), float32(-1e30))),
			IDX{IDXFloat, []int{2}, idxBE(float32(0.25), float32(-1e30))}, []float32{0.25, -1e30}},
		{"double", idxFile(IDXDouble, []uint32{2}, idxBE(-0.5, 0.1)),
			IDX{IDXDouble, []int{2}, idxBE(-0.5, 0.1)}, []float32{-0.5, 0.1}},
		{"scalar", idxFile(IDXUbyte, nil, []byte{9}),
			IDX{IDXUbyte, []int{}, []byte{9}}, []float32{9}},
		{"empty", idxFile(IDXFloat, []uint32{0, 5}, nil),
			IDX{IDXFloat, []int{0, 5}, []byte{}}, []float32{}},
	}
	for _, tt := range tests {
		for _, compressed := range []bool{false, true} {
			name := tt.name
			input := tt.input
			if compressed {
				name += "/gzip"
				input = idxGzip(t, input)
			}
			t.Run(name, func(t *testing.T) {
				got, err := ReadIDX(bytes.NewReader(input))
				require.NoError(t, err)
				assert.Equal(t, tt.want, *got)
				floats, err := got.Float32s()
				require.NoError(t, err)
				assert.Equal(t, tt.floats, floats)
			})
		}
	}
}

func TestReadIDXFixtures(t *testing.T) {
	images, err := ReadIDXFile(filepath.Join("testdata", "idx_images-idx3-ubyte.gz"))
	require.NoError(t, err)
	assert.Equal(t, IDXUbyte, images.Type)
	assert.Equal(t, []int{3, 4, 4}, images.Dims)
	pixels, err := images.Uint8s()
	require.NoError(t, err)
	require.Len(t, pixels, 48)
	for i, p := range pixels {
		assert.Equal(t, uint8(i*5%256), p, "pixel %d", i)
	}

	labels, err := ReadIDXFile(filepath.Join("testdata", "idx_labels-idx1-ubyte"))
	require.NoError(t, err)
	assert.Equal(t, []int{3}, labels.Dims)
	l, err := labels.Uint8s()
	require.NoError(t, err)
	assert.Equal(t, []uint8{7, 2, 1}, l)

	double, err := ReadIDXFile(filepath.Join("testdata", "idx_double.idx"))
	require.NoError(t, err)
	assert.Equal(t, []int{2, 2}, double.Dims)
	f, err := double.Float32s()
	require.NoError(t, err)
	assert.Equal(t, []float32{1.5, -2.25, 0.1, 1e10}, f)
	_, err = double.Uint8s()
	assert.ErrorContains(t, err, "unsigned byte")

	short, err := ReadIDXFile(filepath.Join("testdata", "idx_short.idx"))
	require.NoError(t, err)
	f, err = short.Float32s()
	require.NoError(t, err)
	assert.Equal(t, []float32{-32768, -1, 0, 32767}, f)
}

func TestReadIDXErrors(t *testing.T) {
	corruptGzip := idxGzip(t, idxFile(IDXUbyte, []uint32{4}, []byte{1, 2, 3, 4}))
	corruptGzip[len(corruptGzip)-6] ^= 0xff // flip a CRC byte
	tests := []struct {
		name    string
		input   []byte
		wantErr string
	}{
		{"empty", nil, "reading magic number: unexpected end of file"},
		{"short magic", []byte{0, 0, 8}, "unexpected end of file"},
		{"bad magic", []byte{1, 0, 8, 1, 0, 0, 0, 1, 5}, "bad magic"},
		{"npy file", []byte("\x93NUMPY\x01\x00"), "bad magic"},
		{"unknown type", idxFile(0x0A, []uint32{1}, []byte{1}), "unknown element type 0x0a"},
		{"truncated dims", []byte{0, 0, 8, 2, 0, 0, 0, 1, 0, 0}, "reading 2 dimensions: unexpected end of file"},
		{"truncated data", idxFile(IDXInt, []uint32{2}, make([]byte, 7)), "data truncated: dimensions [2] need 8 bytes, got 7"},
		{"lying header", idxFile(IDXDouble, []uint32{60000, 28, 28}, make([]byte, 100)), "need 376320000 bytes, got 100"},
		{"gzip lying header", idxGzip(t, idxFile(IDXUbyte, []uint32{0xffff, 16}, make([]byte, 10))), "got 10"},
		{"gzip header beyond MaxBytes", idxGzip(t, idxFile(IDXUbyte, []uint32{0xffffffff, 16}, make([]byte, 10))), "more than the limit of 2147483648 bytes"},
		{"zero hides overflow", idxFile(IDXUbyte, []uint32{0, 0xffffffff, 0xffffffff, 0xffffffff}, nil), "overflows"},
		{"rank above 64", idxFile(IDXUbyte, make([]uint32, 65), nil), "65 dimensions exceed the limit of 64"},
		{"gzip truncated data", idxGzip(t, idxFile(IDXUbyte, []uint32{5}, []byte{1, 2})), "data truncated"},
		{"gzip trailing data", idxGzip(t, append(idxFile(IDXUbyte, []uint32{1}, []byte{1}), 0)), "unexpected data after the array"},
		{"gzip bad checksum", corruptGzip, "checksum"},
		{"gzip cut short", idxGzip(t, idxFile(IDXUbyte, []uint32{1}, []byte{1}))[:12], "unexpected end of file"},
		{"gzip bad header", []byte{0x1f, 0x8b, 0, 0}, "opening gzip stream"},
		{"gzip of garbage", idxGzip(t, []byte("hello")), "bad magic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := ReadIDX(bytes.NewReader(tt.input))
			require.Error(t, err)
			assert.Nil(t, x)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestReadIDXOverflow(t *testing.T) {
	if math.MaxInt == math.MaxInt32 {
		t.Skip("dimensions overflow differently on 32-bit platforms")
	}
	// 64 dimensions of 2^32-1 overflow any 64-bit size.
	dims := make([]uint32, 64)
	for i := range dims {
		dims[i] = math.MaxUint32
	}
	_, err := ReadIDX(bytes.NewReader(idxFile(IDXUbyte, dims, nil)))
	assert.ErrorContains(t, err, "overflows")
}

func TestReadIDXStopsAtEnd(t *testing.T) {
	// Uncompressed input is not consumed past the array.
	first := idxFile(IDXUbyte, []uint32{2}, []byte{1, 2})
	second := idxFile(IDXSbyte, []uint32{1}, []byte{3})
	r := bytes.NewReader(append(first, second...))
	a, err := ReadIDX(r)
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2}, a.Data)
	b, err := ReadIDX(r)
	require.NoError(t, err)
	assert.Equal(t, IDXSbyte, b.Type)
}

type idxErrReader struct{}

func (idxErrReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestReadIDXReaderError(t *testing.T) {
	r := bytes.NewReader(idxFile(IDXUbyte, []uint32{4}, nil))
	_, err := ReadIDX(io.MultiReader(r, idxErrReader{}))
	assert.ErrorContains(t, err, "disk on fire")
}

func TestWriteIDXRoundTrip(t *testing.T) {
	tests := []IDX{
		{IDXUbyte, []int{2, 3}, []byte{1, 2, 3, 4, 5, 6}},
		{IDXSbyte, []int{1}, []byte{0xff}},
		{IDXShort, []int{2}, idxBE(int16(1), int16(-1))},
		{IDXInt, []int{1, 1, 1}, idxBE(int32(123456))},
		{IDXFloat, []int{0}, []byte{}},
		{IDXDouble, []int{}, idxBE(math.E)},
	}
	for _, want := range tests {
		var buf bytes.Buffer
		require.NoError(t, WriteIDX(&buf, &want))
		got, err := ReadIDX(&buf)
		require.NoError(t, err)
		assert.Equal(t, want, *got)
	}
}

// writeGzipIDX writes x gzip-compressed to a new file and returns its path.
func writeGzipIDX(t *testing.T, x *IDX) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "big-idx3-ubyte.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	zw := gzip.NewWriter(f)
	require.NoError(t, WriteIDX(zw, x))
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return path
}

func TestWriteIDXLarge(t *testing.T) {
	// Larger than the reader's first chunk, through gzip and a file. The
	// bytes are pseudo-random, so they compress no more than real data.
	data := make([]byte, 3<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	want := &IDX{IDXUbyte, []int{3, 1 << 20}, data}
	got, err := ReadIDXFile(writeGzipIDX(t, want))
	require.NoError(t, err)
	assert.Equal(t, want.Dims, got.Dims)
	assert.True(t, bytes.Equal(want.Data, got.Data))
}

func TestReadIDXGzipRatio(t *testing.T) {
	// 3 MiB cycling through 251 values compress about 250 times: beyond
	// the default ratio, within a raised one.
	data := make([]byte, 3<<20)
	for i := range data {
		data[i] = byte(i % 251)
	}
	want := &IDX{IDXUbyte, []int{3, 1 << 20}, data}
	path := writeGzipIDX(t, want)
	_, err := ReadIDXFile(path)
	require.ErrorContains(t, err, "need 3145728 bytes, more than 64 times the")
	require.ErrorContains(t, err, "IDXOptions.MaxGzipRatio")

	got, err := ReadIDXFile(path, IDXOptions{MaxGzipRatio: 1000})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want.Data, got.Data))

	// A stream of unknown size is cut off as it expands.
	compressed, err := os.ReadFile(path)
	require.NoError(t, err)
	_, err = ReadIDX(bytes.NewReader(compressed))
	require.ErrorContains(t, err, "gzip stream expands more than 64 times")
	got, err = ReadIDX(bytes.NewReader(compressed), IDXOptions{MaxGzipRatio: 1000})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want.Data, got.Data))

	// The largest ratio turns the check off without overflowing.
	got, err = ReadIDX(bytes.NewReader(compressed), IDXOptions{MaxGzipRatio: math.MaxInt64})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want.Data, got.Data))
	got, err = ReadIDXFile(path, IDXOptions{MaxGzipRatio: math.MaxInt64, MaxBytes: math.MaxInt64})
	require.NoError(t, err)
	assert.True(t, bytes.Equal(want.Data, got.Data))
}

func TestReadIDXMaxBytes(t *testing.T) {
	file := idxFile(IDXInt, []uint32{4, 4}, make([]byte, 64))
	_, err := ReadIDX(bytes.NewReader(file), IDXOptions{MaxBytes: 63})
	require.ErrorContains(t, err, "dimensions [4 4] need 64 bytes, more than the limit of 63 bytes (IDXOptions.MaxBytes)")
	x, err := ReadIDX(bytes.NewReader(file), IDXOptions{MaxBytes: 64})
	require.NoError(t, err)
	assert.Len(t, x.Data, 64)

	// A file's size bounds what its header may declare.
	path := filepath.Join(t.TempDir(), "lying-idx1-ubyte")
	require.NoError(t, os.WriteFile(path, idxFile(IDXUbyte, []uint32{1 << 30}, make([]byte, 10)), 0o600))
	_, err = ReadIDXFile(path)
	require.ErrorContains(t, err, "need 1073741824 bytes, more than the file's size, 18 bytes")
}

func TestIDXInvalidValues(t *testing.T) {
	tests := []struct {
		name    string
		x       *IDX
		wantErr string
	}{
		{"nil", nil, "nil IDX"},
		{"unknown type", &IDX{0x42, []int{1}, []byte{1}}, "unknown element type"},
		{"negative dim", &IDX{IDXUbyte, []int{-1}, nil}, "negative dimension"},
		{"dim too large", &IDX{IDXUbyte, []int{1 << 40}, nil}, "32 bits"},
		{"too many dims", &IDX{IDXUbyte, make([]int, 256), nil}, "limit of 255"},
		{"data mismatch", &IDX{IDXShort, []int{2}, make([]byte, 3)}, "need 4 bytes, data has 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.ErrorContains(t, WriteIDX(&bytes.Buffer{}, tt.x), tt.wantErr)
			_, err := tt.x.Float32s()
			assert.ErrorContains(t, err, tt.wantErr)
			_, err = tt.x.Uint8s()
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestUint8sCopies(t *testing.T) {
	x := &IDX{IDXUbyte, []int{2}, []byte{1, 2}}
	u, err := x.Uint8s()
	require.NoError(t, err)
	u[0] = 99
	assert.Equal(t, byte(1), x.Data[0])
}

func TestReadIDXFileErrors(t *testing.T) {
	_, err := ReadIDXFile(filepath.Join(t.TempDir(), "missing"))
	assert.Error(t, err)

	path := filepath.Join(t.TempDir(), "bad")
	require.NoError(t, os.WriteFile(path, []byte{1, 2, 3, 4}, 0o644))
	_, err = ReadIDXFile(path)
	assert.ErrorContains(t, err, path)
	assert.ErrorContains(t, err, "bad magic")
}
