package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
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

	f.Fuzz(func(t *testing.T, b []byte) {
		tensors, metadata, err := Decode(b)
		if err != nil {
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
