package npy

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
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

	f.Fuzz(func(t *testing.T, b []byte) {
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
