package npy

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func FuzzRead(f *testing.F) {
	for name, a := range fixtures() {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
		var buf bytes.Buffer
		if err := Write(&buf, a); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add(npyFile("{'descr': '>i2', 'fortran_order': True, 'shape': (2, 2), }\n", []byte{0, 1, 0, 3, 0, 2, 0, 4}))
	f.Add(npyFileV(3, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }\n", []byte{7}))

	// Hostile headers of issue 26: a zero dimension beside an overflowing
	// product, a header declaring more than the file holds, rank 65.
	f.Add(npyFile(npyHeader("'|u1'", "False", "(0, 4611686018427387904, 4611686018427387904)"), nil))
	f.Add(npyFile(npyHeader("'<f8'", "False", "(1000000000,)"), make([]byte, 16)))
	f.Add(npyFile(npyHeader("'|u1'", "False", "("+strings.Repeat("1, ", MaxDims+1)+")"), []byte{1}))

	f.Fuzz(func(t *testing.T, b []byte) {
		// As a file of known size.
		if _, err := read(bytes.NewReader(b), int64(len(b))); err != nil && len(err.Error()) > 1000 {
			t.Fatalf("error of %d bytes", len(err.Error()))
		}
		a, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, a); err != nil {
			t.Fatalf("writing a decoded array failed: %v", err)
		}
		c, err := Read(&buf)
		if err != nil {
			t.Fatalf("reading a re-written array failed: %v", err)
		}
		if a.Descr != c.Descr || !slices.Equal(a.Shape, c.Shape) || !bytes.Equal(a.Data, c.Data) {
			t.Fatalf("round trip changed the array: %v %v %x -> %v %v %x", a.Descr, a.Shape, a.Data, c.Descr, c.Shape, c.Data)
		}
	})
}
