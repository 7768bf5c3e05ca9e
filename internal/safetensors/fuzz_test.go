package safetensors

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func FuzzDecode(f *testing.F) {
	seeds := []struct {
		tensors  map[string]Tensor
		metadata map[string]string
	}{
		{nil, nil},
		{fixtureTensors(), fixtureMetadata},
		{map[string]Tensor{"x": {"U8", []int{2}, []byte{1, 2}}, "y": {"F32", []int{0}, nil}}, nil},
		{map[string]Tensor{"s": {"BOOL", []int{}, []byte{1}}}, map[string]string{"a": "b"}},
	}
	for _, s := range seeds {
		var buf bytes.Buffer
		if err := Encode(&buf, s.tensors, s.metadata); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	if b, err := os.ReadFile(filepath.Join("testdata", "torch_written.safetensors")); err == nil {
		f.Add(b)
	}
	f.Add(file(`{"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}`, []byte{1}))
	// Hostile headers of issue 26: a zero dimension beside an overflowing
	// product, rank 65, a header length beyond the limit, null metadata.
	f.Add(file(`{"x":{"dtype":"U8","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}}`, nil))
	f.Add(file(`{"x":{"dtype":"U8","shape":[`+strings.Repeat("1,", 64)+`1],"data_offsets":[0,1]}}`, []byte{1}))
	f.Add(binary.LittleEndian.AppendUint64(nil, 100_000_000))
	f.Add(file(`{"__metadata__":null}`, nil))

	f.Fuzz(func(t *testing.T, b []byte) {
		tensors, metadata, err := Decode(b)
		if err != nil {
			if len(err.Error()) > 1000 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		var buf bytes.Buffer
		if err := Encode(&buf, tensors, metadata); err != nil {
			t.Fatalf("re-encoding a decoded file failed: %v", err)
		}
		tensors2, metadata2, err := Decode(buf.Bytes())
		if err != nil {
			t.Fatalf("decoding a re-encoded file failed: %v", err)
		}
		if len(metadata) != len(metadata2) {
			t.Fatalf("metadata changed: %v -> %v", metadata, metadata2)
		}
		for k, v := range metadata {
			if v2, ok := metadata2[k]; !ok || v != v2 {
				t.Fatalf("metadata %q changed: %q -> %q", k, v, v2)
			}
		}
		if len(tensors) != len(tensors2) {
			t.Fatalf("tensor count changed: %d -> %d", len(tensors), len(tensors2))
		}
		for name, a := range tensors {
			c, ok := tensors2[name]
			if !ok {
				t.Fatalf("tensor %q lost in round trip", name)
			}
			if a.DType != c.DType || !slices.Equal(a.Shape, c.Shape) || !bytes.Equal(a.Data, c.Data) {
				t.Fatalf("tensor %q changed: %v %v %x -> %v %v %x", name, a.DType, a.Shape, a.Data, c.DType, c.Shape, c.Data)
			}
		}
	})
}
