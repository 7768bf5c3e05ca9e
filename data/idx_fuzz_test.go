package data

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func FuzzReadIDX(f *testing.F) {
	seeds := [][]byte{
		idxFile(IDXUbyte, []uint32{2, 2}, []byte{0, 1, 128, 255}),
		idxFile(IDXSbyte, []uint32{3}, []byte{0x80, 0xff, 0x7f}),
		idxFile(IDXShort, []uint32{1}, idxBE(int16(-300))),
		idxFile(IDXInt, []uint32{1, 1}, idxBE(int32(-70000))),
		idxFile(IDXFloat, []uint32{2}, idxBE(float32(0.25), float32(math.NaN()))),
		idxFile(IDXDouble, nil, idxBE(0.1)),
		idxFile(IDXUbyte, []uint32{0, 3}, nil),
	}
	for _, s := range seeds {
		f.Add(s)
		f.Add(idxGzip(f, s))
	}
	// Hostile files of issue 26, small: a gzip stream expanding 1000 times,
	// a zero dimension beside an overflowing product, rank 65.
	f.Add(zeroBomb(f, IDXUbyte, []uint32{1 << 21}, 2))
	f.Add(idxFile(IDXUbyte, []uint32{0, 1 << 31, 1 << 31, 1 << 31}, nil))
	f.Add(idxFile(IDXUbyte, make([]uint32, 65), nil))
	for _, name := range []string{"idx_images-idx3-ubyte.gz", "idx_labels-idx1-ubyte", "idx_double.idx", "idx_short.idx"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}

	f.Fuzz(func(t *testing.T, b []byte) {
		// As a file of known size, with the default limits.
		if x, err := readIDX(bytes.NewReader(b), idxOptions(nil), int64(len(b))); err != nil && x != nil {
			t.Fatalf("non-nil result with error %v", err)
		}
		// As a stream, with the default limits.
		x, err := ReadIDX(bytes.NewReader(b))
		if err != nil {
			if x != nil {
				t.Fatalf("non-nil result with error %v", err)
			}
			return
		}
		floats, err := x.Float32s()
		if err != nil {
			t.Fatalf("Float32s of a decoded array failed: %v", err)
		}
		size, _ := idxElemSize(x.Type)
		if len(floats)*size != len(x.Data) {
			t.Fatalf("Float32s returned %d values for %d bytes of type 0x%02x", len(floats), len(x.Data), x.Type)
		}
		var buf bytes.Buffer
		if err := WriteIDX(&buf, x); err != nil {
			t.Fatalf("writing a decoded array failed: %v", err)
		}
		y, err := ReadIDX(&buf)
		if err != nil {
			t.Fatalf("reading a re-written array failed: %v", err)
		}
		if x.Type != y.Type || !slices.Equal(x.Dims, y.Dims) || !bytes.Equal(x.Data, y.Data) {
			t.Fatalf("round trip changed the array: %+v -> %+v", x, y)
		}
	})
}
