package onnx

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
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

// hostileSeeds adds the model files of the hostile probes (hostile_test.go).
func hostileSeeds(f *testing.F) {
	for _, p := range hostileProbes() {
		if p.unix && runtime.GOOS == "windows" {
			continue
		}
		b, err := os.ReadFile(p.build(f, f.TempDir()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzNewSession prepares and, when its inputs are small and static, runs
// whatever parses, with the default limits (so a fuzzed model may allocate
// up to DefaultMaxBytes, and no more: half the machine's memory per fuzz
// worker, so fuzz with -parallel 1).
func FuzzNewSession(f *testing.F) {
	fuzzSeeds(f)
	hostileSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		s, err := m.NewSession(SessionOptions{})
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

// FuzzLoad loads fuzzed model bytes from a folder holding a regular
// weights.bin, a link out of the folder (link.bin, and a folder link etc)
// and, where the system has them, a FIFO (fifo.bin), with the default
// limits: Load must return, and no initializer may hold the bytes of the
// file outside.
func FuzzLoad(f *testing.F) {
	fuzzSeeds(f)
	hostileSeeds(f)
	secret := []byte("outside-the-model-folder")
	f.Fuzz(func(t *testing.T, b []byte) {
		top := t.TempDir()
		dir := filepath.Join(top, "model")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		outside := filepath.Join(top, "secret.bin")
		for _, w := range []struct {
			path string
			data []byte
		}{{outside, secret}, {filepath.Join(dir, "weights.bin"), make([]byte, 64)}, {filepath.Join(dir, "model.onnx"), b}} {
			if err := os.WriteFile(w.path, w.data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		_ = os.Symlink(outside, filepath.Join(dir, "link.bin"))
		_ = os.Symlink(top, filepath.Join(dir, "etc"))
		_ = mkfifo(filepath.Join(dir, "fifo.bin"))
		m, err := Load(filepath.Join(dir, "model.onnx"))
		if err != nil {
			return
		}
		for _, name := range m.InitializerNames() {
			if x := m.Initializer(name); x != nil && bytes.Contains(x.LittleEndianBytes(), secret[:8]) {
				t.Fatalf("initializer %q holds the bytes of a file outside the model's folder", name)
			}
		}
	})
}

// FuzzReadTensor feeds arbitrary bytes to ReadTensor.
func FuzzReadTensor(f *testing.F) {
	f.Add(mkFloatTensor("x", []int64{2}, 1, 2))
	f.Add(mkInt64Tensor("i", []int64{0, 1 << 40, 1 << 40}))
	f.Add(extTensor("W", dtFloat, []int64{4}, "weights.bin"))
	f.Add(mkTensor("q", dtInt4, []int64{3}, []byte{0xe3, 0x07}))        // packed 4-bit
	f.Add(mkTensor("f8", dtFloat8E5M2, []int64{2}, []byte{0x7c, 0x7b})) // Inf, max
	f.Add(mkTensor("u2", dtUint2, []int64{5}, []byte{0xe4, 0x01}))      // packed 2-bit
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ReadTensor(bytes.NewReader(b))
		if err == nil && x == nil {
			t.Fatal("nil tensor without error")
		}
	})
}
