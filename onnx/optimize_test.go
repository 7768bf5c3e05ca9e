package onnx

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// vals returns n deterministic floats in [lo, lo+span).
func vals(n int, seed, lo, span float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		f := math.Mod(math.Sin(float64(i)*12.9898+seed)*43758.5453, 1)
		v[i] = float32(lo + span*math.Abs(f))
	}
	return v
}

// bnInits returns the four BatchNormalization initializers of c channels
// named prefix_{scale,bias,mean,var}.
func bnInits(prefix string, c int64, seed float64) [][]byte {
	return [][]byte{
		mkFloatTensor(prefix+"_scale", []int64{c}, vals(int(c), seed, 0.5, 1.5)...),
		mkFloatTensor(prefix+"_bias", []int64{c}, vals(int(c), seed+1, -1, 2)...),
		mkFloatTensor(prefix+"_mean", []int64{c}, vals(int(c), seed+2, -0.5, 1)...),
		mkFloatTensor(prefix+"_var", []int64{c}, vals(int(c), seed+3, 0.2, 2)...),
	}
}

// TestOptimizeConvBNRelu runs small Conv+BN+Relu graphs with and without
// the load-time optimizations and checks that the outputs agree to float
// rounding and that exactly the expected nodes were rewritten away.
func TestOptimizeConvBNRelu(t *testing.T) {
	pads := mkAttrInts("pads", 1, 1, 1, 1)
	eps := mkAttrFloat("epsilon", 1e-3)
	convInits := [][]byte{
		mkFloatTensor("W", []int64{4, 3, 3, 3}, vals(108, 1, -1, 2)...),
		mkFloatTensor("B", []int64{4}, vals(4, 2, -1, 2)...),
		mkFloatTensor("W2", []int64{4, 2, 1, 1}, vals(8, 3, -1, 2)...),
	}
	inits := append(append(convInits, bnInits("bn1", 4, 10)...), bnInits("bn2", 4, 20)...)
	bn1 := []string{"c", "bn1_scale", "bn1_bias", "bn1_mean", "bn1_var"}
	cases := []struct {
		name    string
		nodes   [][]byte
		outputs []string
		// want is the node count of the optimized plan; the unoptimized
		// one keeps every node.
		want int
	}{
		{
			// Identity, Conv+BN+Relu, Dropout, grouped bias-less Conv+BN.
			name: "chain",
			nodes: [][]byte{
				mkNode("Identity", []string{"x"}, []string{"id"}),
				mkNode("Conv", []string{"id", "W", "B"}, []string{"c"}, pads),
				mkNode("BatchNormalization", bn1, []string{"bn"}, eps),
				mkNode("Relu", []string{"bn"}, []string{"r"}),
				mkNode("Dropout", []string{"r"}, []string{"d"}),
				mkNode("Conv", []string{"d", "W2"}, []string{"c2"}, mkAttrInt("group", 2)),
				mkNode("BatchNormalization", []string{"c2", "bn2_scale", "bn2_bias", "bn2_mean", "bn2_var"}, []string{"y"}),
			},
			outputs: []string{"y"},
			want:    2,
		},
		{
			// The Conv output is also a graph output: nothing is folded.
			name: "conv-output-observed",
			nodes: [][]byte{
				mkNode("Conv", []string{"x", "W", "B"}, []string{"c"}, pads),
				mkNode("BatchNormalization", bn1, []string{"bn"}, eps),
				mkNode("Relu", []string{"bn"}, []string{"y"}),
			},
			outputs: []string{"y", "c"},
			want:    3,
		},
		{
			// The BN output feeds Relu and another node: BN folds, Relu
			// stays separate.
			name: "bn-output-shared",
			nodes: [][]byte{
				mkNode("Conv", []string{"x", "W", "B"}, []string{"c"}, pads),
				mkNode("BatchNormalization", bn1, []string{"bn"}, eps),
				mkNode("Relu", []string{"bn"}, []string{"r"}),
				mkNode("Add", []string{"r", "bn"}, []string{"y"}),
			},
			outputs: []string{"y"},
			want:    3,
		},
	}
	x := tensor.FromSlice(vals(108, 5, -2, 4), 1, 3, 6, 6)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outs := make([][]byte, len(tc.outputs))
			for i, o := range tc.outputs {
				outs[i] = mkValueInfo(o, dtFloat, 1, 4, 6, 6)
			}
			b := mkModel(15, graphParts{nodes: tc.nodes, inits: inits, inputs: [][]byte{mkValueInfo("x", dtFloat, 1, 3, 6, 6)}, outputs: outs})
			m, err := Read(bytes.NewReader(b))
			require.NoError(t, err)
			plain, err := m.NewSession(SessionOptions{DisableOptimizations: true})
			require.NoError(t, err)
			opt, err := m.NewSession(SessionOptions{})
			require.NoError(t, err)
			require.Len(t, plain.plan.nodes, len(tc.nodes))
			require.Len(t, opt.plan.nodes, tc.want)
			want, err := plain.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
			require.NoError(t, err)
			got, err := opt.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
			require.NoError(t, err)
			for _, o := range tc.outputs {
				require.Equal(t, want[o].Shape(), got[o].Shape(), o)
				wv, gv := want[o].Float32s(), got[o].Float32s()
				nonzero := 0
				for i := range wv {
					require.InDelta(t, wv[i], gv[i], 1e-5*(1+math.Abs(float64(wv[i]))), "%s[%d]", o, i)
					if wv[i] != 0 {
						nonzero++
					}
				}
				require.Positive(t, nonzero, "%s should not be all zero", o)
			}
		})
	}
}

// TestPackConvWeights checks that 2-d Convs with constant float32 weights
// run on weights packed at load time and give exactly the unoptimized
// results, while a Conv whose weight is a graph input and a 1-d Conv keep
// the plain path.
func TestPackConvWeights(t *testing.T) {
	inits := [][]byte{
		mkFloatTensor("W", []int64{5, 3, 3, 3}, vals(135, 1, -1, 2)...),
		mkFloatTensor("B", []int64{5}, vals(5, 2, -1, 2)...),
		mkFloatTensor("W1", []int64{4, 3, 3}, vals(36, 3, -1, 2)...),
	}
	nodes := [][]byte{
		mkNode("Conv", []string{"x", "W", "B"}, []string{"c"}, mkAttrInts("pads", 1, 0, 1, 2), mkAttrInts("strides", 2, 1)),
		mkNode("Relu", []string{"c"}, []string{"y"}),
		mkNode("Conv", []string{"x", "w"}, []string{"z"}, mkAttrInts("pads", 1, 1, 1, 1)),
		mkNode("Conv", []string{"x1", "W1"}, []string{"v"}),
	}
	b := mkModel(15, graphParts{nodes: nodes, inits: inits,
		inputs:  [][]byte{mkValueInfo("x", dtFloat, 1, 3, 7, 6), mkValueInfo("w", dtFloat, 2, 3, 3, 3), mkValueInfo("x1", dtFloat, 2, 3, 9)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, 1, 5, 4, 6), mkValueInfo("z", dtFloat, 1, 2, 7, 6), mkValueInfo("v", dtFloat, 2, 4, 7)}})
	m, err := Read(bytes.NewReader(b))
	require.NoError(t, err)
	plain, err := m.NewSession(SessionOptions{DisableOptimizations: true})
	require.NoError(t, err)
	opt, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	require.Len(t, opt.plan.nodes, 3)
	feeds := map[string]*tensor.Tensor{
		"x":  tensor.FromSlice(vals(126, 5, -2, 4), 1, 3, 7, 6),
		"w":  tensor.FromSlice(vals(54, 6, -1, 2), 2, 3, 3, 3),
		"x1": tensor.FromSlice(vals(54, 7, -2, 4), 2, 3, 9),
	}
	want, err := plain.Run(context.Background(), feeds)
	require.NoError(t, err)
	got, err := opt.Run(context.Background(), feeds)
	require.NoError(t, err)
	for _, o := range []string{"y", "z", "v"} {
		require.Equal(t, want[o].Shape(), got[o].Shape(), o)
		require.Equal(t, want[o].Float32s(), got[o].Float32s(), o)
	}
}

// TestOptimizeConvAddRelu checks the residual fusion: Conv followed by an
// Add with another value (and a Relu) becomes one node that gives the
// unoptimized results to float rounding, including when the other value is
// computed after the Conv, when it broadcasts (the fused node then adds it
// after the convolution) and when the weight is not a constant; the
// inferred shapes follow the broadcast.
func TestOptimizeConvAddRelu(t *testing.T) {
	pads := mkAttrInts("pads", 1, 1, 1, 1)
	inits := [][]byte{
		mkFloatTensor("W", []int64{3, 3, 3, 3}, vals(81, 1, -1, 2)...),
		mkFloatTensor("B", []int64{3}, vals(3, 2, -1, 2)...),
		mkFloatTensor("W2", []int64{3, 3, 1, 1}, vals(9, 3, -1, 2)...),
		mkFloatTensor("S", []int64{1, 3, 1, 1}, vals(3, 4, -1, 2)...),
	}
	nodes := [][]byte{
		// y = relu(conv(x) + conv2(x)), conv2 listed after conv.
		mkNode("Conv", []string{"x", "W", "B"}, []string{"c"}, pads),
		mkNode("Conv", []string{"x", "W2"}, []string{"d"}),
		mkNode("Add", []string{"d", "c"}, []string{"a"}),
		mkNode("Relu", []string{"a"}, []string{"y"}),
		// z = conv(y) + S (broadcast), no Relu.
		mkNode("Conv", []string{"y", "W", "B"}, []string{"e"}, pads),
		mkNode("Add", []string{"e", "S"}, []string{"z"}),
		// v = relu(conv(y; w fed) + r), r of batch 2 (the output grows).
		mkNode("Conv", []string{"y", "w"}, []string{"f"}, pads),
		mkNode("Add", []string{"f", "r"}, []string{"g"}),
		mkNode("Relu", []string{"g"}, []string{"v"}),
	}
	b := mkModel(15, graphParts{nodes: nodes, inits: inits,
		inputs:  [][]byte{mkValueInfo("x", dtFloat, 1, 3, 5, 6), mkValueInfo("w", dtFloat, 3, 3, 3, 3), mkValueInfo("r", dtFloat, 2, 3, 5, 6)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, 1, 3, 5, 6), mkValueInfo("z", dtFloat, 1, 3, 5, 6), mkValueInfo("v", dtFloat, 2, 3, 5, 6)}})
	m, err := Read(bytes.NewReader(b))
	require.NoError(t, err)
	plain, err := m.NewSession(SessionOptions{DisableOptimizations: true})
	require.NoError(t, err)
	opt, err := m.NewSession(SessionOptions{})
	require.NoError(t, err)
	// y's Conv+Add+Relu, conv2 (its Add partner), z's Conv+Add, v's
	// Conv+Add+Relu.
	require.Len(t, opt.plan.nodes, 4)
	dims, ok := opt.ValueShape("v")
	require.True(t, ok)
	require.Equal(t, []Dim{{Value: 2}, {Value: 3}, {Value: 5}, {Value: 6}}, dims)
	feeds := map[string]*tensor.Tensor{
		"x": tensor.FromSlice(vals(90, 5, -2, 4), 1, 3, 5, 6),
		"w": tensor.FromSlice(vals(81, 6, -1, 2), 3, 3, 3, 3),
		"r": tensor.FromSlice(vals(180, 7, -2, 4), 2, 3, 5, 6),
	}
	want, err := plain.Run(context.Background(), feeds)
	require.NoError(t, err)
	got, err := opt.Run(context.Background(), feeds)
	require.NoError(t, err)
	for _, o := range []string{"y", "z", "v"} {
		require.Equal(t, want[o].Shape(), got[o].Shape(), o)
		wv, gv := want[o].Float32s(), got[o].Float32s()
		zeros := 0
		for i := range wv {
			require.InDelta(t, wv[i], gv[i], 1e-5*(1+math.Abs(float64(wv[i]))), "%s[%d]", o, i)
			if wv[i] == 0 {
				zeros++
			}
		}
		require.Less(t, zeros, len(wv), "%s should not be all zero", o)
	}
}
