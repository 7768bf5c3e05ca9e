package onnx

import (
	"bytes"
	"context"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ifModel: y = If(c) then x*2 (reading outer x) else Neg(x).
func ifModel(elseOp string) []byte {
	return mkModel(13, graphParts{
		nodes: [][]byte{
			mkNode("Add", []string{"x", "x"}, []string{"twice"}),
			mkNode("If", []string{"c"}, []string{"y"},
				mkAttrGraph("then_branch", graphParts{
					nodes:   [][]byte{mkNode("Identity", []string{"twice"}, []string{"t_out"})},
					outputs: [][]byte{mkValueInfo("t_out", dtFloat)},
				}),
				mkAttrGraph("else_branch", graphParts{
					nodes:   [][]byte{mkNode(elseOp, []string{"x"}, []string{"e_out"})},
					outputs: [][]byte{mkValueInfo("e_out", dtFloat)},
				})),
		},
		inputs:  [][]byte{mkValueInfo("c", dtBool), mkValueInfo("x", dtFloat, 2)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, 2)},
	})
}

func TestIfCapturesOuterValues(t *testing.T) {
	s := newSession(t, ifModel("Neg"))
	x := tensor.FromSlice([]float32{1.5, -2})
	for _, tc := range []struct {
		cond bool
		want []float32
	}{{true, []float32{3, -4}}, {false, []float32{-1.5, 2}}} {
		out, err := s.Run(context.Background(), map[string]*tensor.Tensor{
			"c": tensor.FromSlice([]bool{tc.cond}, []int{}...), "x": x,
		})
		require.NoError(t, err)
		assert.Equal(t, tc.want, out["y"].Float32s())
	}
}

func TestUnsupportedInsideSubgraph(t *testing.T) {
	m, err := Read(bytes.NewReader(ifModel("NoSuchOp")))
	require.NoError(t, err)
	_, err = m.NewSession(SessionOptions{})
	var ue *UnsupportedError
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, []string{"NoSuchOp (opset 13)"}, ue.Ops)
}

// TestLoopSumsAndScans: Loop M=4 times: acc += i (outer-captured step added
// too), scanning acc each iteration.
func TestLoopSumsAndScans(t *testing.T) {
	model := mkModel(13, graphParts{
		nodes: [][]byte{
			mkNode("Loop", []string{"M", "", "acc0"}, []string{"acc", "trace"},
				mkAttrGraph("body", graphParts{
					nodes: [][]byte{
						mkNode("Add", []string{"acc_in", "i"}, []string{"s"}),
						mkNode("Add", []string{"s", "step"}, []string{"acc_out"}),
						mkNode("Identity", []string{"cond_in"}, []string{"cond_out"}),
						mkNode("Identity", []string{"acc_out"}, []string{"scan"}),
					},
					inputs:  [][]byte{mkValueInfo("i", dtInt64), mkValueInfo("cond_in", dtBool), mkValueInfo("acc_in", dtInt64)},
					outputs: [][]byte{mkValueInfo("cond_out", dtBool), mkValueInfo("acc_out", dtInt64), mkValueInfo("scan", dtInt64)},
				})),
		},
		inits:   [][]byte{mkInt64Tensor("M", nil, 4), mkInt64Tensor("step", nil, 10)},
		inputs:  [][]byte{mkValueInfo("acc0", dtInt64)},
		outputs: [][]byte{mkValueInfo("acc", dtInt64), mkValueInfo("trace", dtInt64)},
	})
	s := newSession(t, model)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"acc0": tensor.FromSlice([]int64{0}, []int{}...)})
	require.NoError(t, err)
	// acc: 0+0+10=10, 10+1+10=21, 21+2+10=33, 33+3+10=46
	assert.Equal(t, []int64{46}, out["acc"].Int64s())
	assert.Equal(t, []int64{10, 21, 33, 46}, out["trace"].Int64s())
	assert.Equal(t, []int{4}, out["trace"].Shape())
}

// TestSequencesInsideTheGraph builds a sequence, inserts, reads back and
// concatenates; a sequence graph output is refused at Run.
func TestSequencesInsideTheGraph(t *testing.T) {
	model := mkModel(13, graphParts{
		nodes: [][]byte{
			mkNode("SequenceConstruct", []string{"x", "x"}, []string{"s"}),
			mkNode("Neg", []string{"x"}, []string{"nx"}),
			mkNode("SequenceInsert", []string{"s", "nx", "pos"}, []string{"s2"}),
			mkNode("SequenceLength", []string{"s2"}, []string{"len"}),
			mkNode("ConcatFromSequence", []string{"s2"}, []string{"y"}, mkAttrInt("axis", 0)),
		},
		inits:   [][]byte{mkInt64Tensor("pos", nil, 1)},
		inputs:  [][]byte{mkValueInfo("x", dtFloat, 2)},
		outputs: [][]byte{mkValueInfo("y", dtFloat, 6), mkValueInfo("len", dtInt64)},
	})
	s := newSession(t, model)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.FromSlice([]float32{1, 2})})
	require.NoError(t, err)
	assert.Equal(t, []float32{1, 2, -1, -2, 1, 2}, out["y"].Float32s())
	assert.Equal(t, []int64{3}, out["len"].Int64s())

	seqOut := mkModel(13, graphParts{
		nodes:   [][]byte{mkNode("SequenceConstruct", []string{"x"}, []string{"s"})},
		inputs:  [][]byte{mkValueInfo("x", dtFloat, 2)},
		outputs: [][]byte{mkValueInfo("s", dtFloat)},
	})
	s = newSession(t, seqOut)
	_, err = s.Run(context.Background(), map[string]*tensor.Tensor{"x": tensor.FromSlice([]float32{1, 2})})
	require.ErrorContains(t, err, "is a sequence")
}

// TestScan8 runs opset 8's batched Scan: s += x_t, y_t = s, with per-entry
// sequence lengths (entry 0 stops after 2 of 3 steps and its y is padded
// with zeros) and a reversed scan input.
func TestScan8(t *testing.T) {
	for _, tc := range []struct {
		name  string
		attrs [][]byte
		wantS []float32
		wantY []float32
	}{
		{"forward", nil, []float32{3, 60}, []float32{1, 3, 0, 10, 30, 60}},
		{"reverse", [][]byte{mkAttrInts("directions", 1)}, []float32{3, 60}, []float32{2, 3, 0, 30, 50, 60}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attrs := append([][]byte{mkAttrInt("num_scan_inputs", 1), mkAttrGraph("body", graphParts{
				nodes: [][]byte{
					mkNode("Add", []string{"s_in", "x_in"}, []string{"s_out"}),
					mkNode("Identity", []string{"s_out"}, []string{"y_out"}),
				},
				inputs:  [][]byte{mkValueInfo("s_in", dtFloat, 1), mkValueInfo("x_in", dtFloat, 1)},
				outputs: [][]byte{mkValueInfo("s_out", dtFloat, 1), mkValueInfo("y_out", dtFloat, 1)},
			})}, tc.attrs...)
			s := newSession(t, mkModel(8, graphParts{
				nodes:   [][]byte{mkNode("Scan", []string{"lens", "s0", "x"}, []string{"s", "y"}, attrs...)},
				inputs:  [][]byte{mkValueInfo("lens", dtInt64, 2), mkValueInfo("s0", dtFloat, 2, 1), mkValueInfo("x", dtFloat, 2, 3, 1)},
				outputs: [][]byte{mkValueInfoAnyShape("s", dtFloat), mkValueInfoAnyShape("y", dtFloat)},
			}))
			out, err := s.Run(context.Background(), map[string]*tensor.Tensor{
				"lens": tensor.FromSlice([]int64{2, 3}),
				"s0":   tensor.Zeros([]int{2, 1}),
				"x":    tensor.FromSlice([]float32{1, 2, 100, 10, 20, 30}, 2, 3, 1),
			})
			require.NoError(t, err)
			assert.Equal(t, []int{2, 1}, out["s"].Shape())
			assert.Equal(t, tc.wantS, out["s"].Float32s())
			assert.Equal(t, []int{2, 3, 1}, out["y"].Shape())
			assert.Equal(t, tc.wantY, out["y"].Float32s())
		})
	}
}
