package onnx

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/emberml/ember/tensor"
)

// fuzzSeeds adds the test models and a few conformance models as seeds.
func fuzzSeeds(f *testing.F) {
	f.Add(mlpModel())
	f.Add(stringModel()) // string_data in an initializer, Constant value_strings
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})
	for _, c := range []string{"node/test_conv_with_strides_padding", "node/test_reshape_extended_dims", "node/test_slice_neg_steps", "simple/test_gradient_of_add"} {
		if b, err := os.ReadFile(filepath.Join(conformanceRoot, c, "model.onnx")); err == nil {
			f.Add(b)
		}
	}
}

// FuzzParse feeds arbitrary bytes to Read: it must return a model or an
// error, never panic.
func FuzzParse(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Read(bytes.NewReader(b))
		if err == nil && m == nil {
			t.Fatal("nil model without error")
		}
	})
}

// FuzzNewSession prepares and, when its inputs are small and static, runs
// whatever parses, with a small element limit.
func FuzzNewSession(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		s, err := m.NewSession(SessionOptions{MaxElements: 1 << 16})
		if err != nil {
			return
		}
		inputs := map[string]*tensor.Tensor{}
		for _, in := range m.Inputs {
			dt, err := in.DType()
			if err != nil || !in.HasShape {
				return
			}
			shape := make([]int, len(in.Shape))
			total := 1
			for i, d := range in.Shape {
				if d.Value < 0 || d.Value > 64 {
					return
				}
				shape[i] = int(d.Value)
				total *= shape[i]
			}
			if total > 4096 {
				return
			}
			inputs[in.Name] = tensor.Zeros(shape, dt)
		}
		// Loops may run forever by design; the context bounds them.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, _ = s.Run(ctx, inputs)
	})
}
