package onnx

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/emberml/ember/tensor"
)

// transformerBlockModel is one pre-norm decoder block as a single ONNX
// graph: RMSNormalization, Q/K/V projections, RotaryEmbedding on Q and K,
// causal Attention (3-D, heads of 64), the output projection and residual,
// RMSNormalization and a Swish-gated feed-forward of width 4·hidden with
// its residual. Weights are seeded random values.
func transformerBlockModel(seq, hidden, heads int) []byte {
	gen := tensor.NewGenerator(7)
	weight := func(name string, dims ...int) []byte {
		d := make([]int64, len(dims))
		for i, v := range dims {
			d[i] = int64(v)
		}
		return mkFloatTensor(name, d, gen.Normal(dims, 0, 0.05).Float32s()...)
	}
	half := hidden / heads / 2
	cos, sin := make([]float32, seq*half), make([]float32, seq*half)
	for p := range seq {
		for i := range half {
			a := float64(p) * math.Pow(10000, -float64(2*i)/float64(2*half))
			cos[p*half+i], sin[p*half+i] = float32(math.Cos(a)), float32(math.Sin(a))
		}
	}
	pos := make([]int64, seq)
	for i := range pos {
		pos[i] = int64(i)
	}
	ones := make([]float32, hidden)
	for i := range ones {
		ones[i] = 1
	}
	h := int64(hidden)
	nodes := [][]byte{
		mkNode("RMSNormalization", []string{"x", "g1"}, []string{"n1"}),
		mkNode("MatMul", []string{"n1", "wq"}, []string{"q0"}),
		mkNode("MatMul", []string{"n1", "wk"}, []string{"k0"}),
		mkNode("MatMul", []string{"n1", "wv"}, []string{"v"}),
		mkNode("RotaryEmbedding", []string{"q0", "cos", "sin", "pos"}, []string{"q"}, mkAttrInt("num_heads", int64(heads))),
		mkNode("RotaryEmbedding", []string{"k0", "cos", "sin", "pos"}, []string{"k"}, mkAttrInt("num_heads", int64(heads))),
		mkNode("Attention", []string{"q", "k", "v"}, []string{"a"},
			mkAttrInt("is_causal", 1), mkAttrInt("q_num_heads", int64(heads)), mkAttrInt("kv_num_heads", int64(heads))),
		mkNode("MatMul", []string{"a", "wo"}, []string{"o"}),
		mkNode("Add", []string{"x", "o"}, []string{"r1"}),
		mkNode("RMSNormalization", []string{"r1", "g2"}, []string{"n2"}),
		mkNode("MatMul", []string{"n2", "w1"}, []string{"f1"}),
		mkNode("MatMul", []string{"n2", "w3"}, []string{"f3"}),
		mkNode("Swish", []string{"f1"}, []string{"s"}),
		mkNode("Mul", []string{"s", "f3"}, []string{"gated"}),
		mkNode("MatMul", []string{"gated", "w2"}, []string{"f2"}),
		mkNode("Add", []string{"r1", "f2"}, []string{"y"}),
	}
	inits := [][]byte{
		mkFloatTensor("g1", []int64{h}, ones...), mkFloatTensor("g2", []int64{h}, ones...),
		weight("wq", hidden, hidden), weight("wk", hidden, hidden), weight("wv", hidden, hidden), weight("wo", hidden, hidden),
		weight("w1", hidden, 4*hidden), weight("w3", hidden, 4*hidden), weight("w2", 4*hidden, hidden),
		mkFloatTensor("cos", []int64{int64(seq), int64(half)}, cos...), mkFloatTensor("sin", []int64{int64(seq), int64(half)}, sin...),
		mkInt64Tensor("pos", []int64{1, int64(seq)}, pos...),
	}
	return mkModel(24, graphParts{
		nodes: nodes, inits: inits,
		inputs:  [][]byte{mkValueInfo("x", dtFloat, 1, int64(seq), h)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, 1, int64(seq), h)},
	})
}

func TestTransformerBlockRuns(t *testing.T) {
	s := newSession(t, transformerBlockModel(8, 64, 2))
	x := tensor.NewGenerator(1).Randn([]int{1, 8, 64})
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	y := out["y"]
	if fmt.Sprint(y.Shape()) != "[1 8 64]" {
		t.Fatalf("shape %v", y.Shape())
	}
	for _, v := range y.Float64s() {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("non-finite output %v", v)
		}
	}
}

// BenchmarkTransformerBlock128 times one decoder block (hidden 512, 8
// heads of 64, feed-forward 2048) on 128 tokens, batch 1, with one and two
// intra-op threads: the comparison with ONNX Runtime runs the same
// graph there.
func BenchmarkTransformerBlock128(b *testing.B) {
	model := transformerBlockModel(128, 512, 8)
	x := tensor.NewGenerator(1).Randn([]int{1, 128, 512})
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			m, err := Read(bytes.NewReader(model))
			if err != nil {
				b.Fatal(err)
			}
			s, err := m.NewSession(SessionOptions{IntraOpThreads: threads})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
