package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

const idxGoldenPath = "testdata/golden_index.json"

// idxLayouts are the ways the golden tests lay out every input: as is, as a
// strided slice of a larger buffer, and with reversed axis order in memory.
var idxLayouts = []string{"contiguous", "sliced", "transposed"}

// idxRelayout returns a tensor with x's values in the named layout.
func idxRelayout(x *tensor.Tensor, how string) *tensor.Tensor {
	if x.Dim() == 0 || how == "contiguous" {
		return x
	}
	switch how {
	case "sliced":
		shape := x.Shape()
		n := shape[len(shape)-1]
		shape[len(shape)-1] = 2*n + 1
		big := tensor.Zeros(shape, x.DType())
		v := big.Slice(-1, 1, 2*n+1, 2)
		v.CopyFrom(x)
		return v
	case "transposed":
		axes := make([]int, x.Dim())
		for i := range axes {
			axes[i] = x.Dim() - 1 - i
		}
		return x.Permute(axes...).Contiguous().Permute(axes...)
	}
	panic("unknown layout " + how)
}

// idxTol returns the comparison tolerance for a dtype.
func idxTol(dt string) (rtol, atol float64) {
	switch dt {
	case golden.Float32:
		return 1e-6, 1e-6
	case golden.Float64:
		return 1e-12, 1e-12
	}
	return 0, 0
}

// idxApplyTensor runs the tensor op of case c on inputs and returns its
// outputs.
func idxApplyTensor(c golden.Case, in []*tensor.Tensor) []*tensor.Tensor {
	one := func(t *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{t} }
	switch c.Op {
	case "index_select":
		return one(in[0].IndexSelect(c.Int("axis"), in[1]))
	case "gather":
		return one(in[0].Gather(c.Int("axis"), in[1]))
	case "scatter":
		return one(in[0].Scatter(c.Int("axis"), in[2], in[1]))
	case "scatter_value":
		return one(in[0].ScatterScalar(c.Int("axis"), in[1], c.Float("value")))
	case "scatter_add":
		return one(in[0].ScatterAdd(c.Int("axis"), in[2], in[1]))
	case "index_add":
		return one(in[0].IndexAdd(c.Int("axis"), in[2], in[1]))
	case "masked_fill":
		return one(in[0].MaskedFill(in[1], c.Float("value")))
	case "masked_select":
		return one(in[0].MaskedSelect(in[1]))
	case "masked_scatter":
		return one(in[0].MaskedScatter(in[1], in[2]))
	case "split":
		return in[0].Split(c.Int("size"), c.Int("axis"))
	case "split_sizes":
		return in[0].SplitSizes(c.Ints("sizes"), c.Int("axis"))
	case "chunk":
		return in[0].Chunk(c.Int("n"), c.Int("axis"))
	case "pad":
		mode, err := tensor.ParsePadMode(c.String("mode"))
		if err != nil {
			panic(err)
		}
		return one(in[0].Pad(c.Ints("pads"), mode, c.Float("value")))
	case "repeat":
		return one(in[0].Repeat(c.Ints("reps")...))
	case "tile":
		return one(in[0].Tile(c.Ints("reps")...))
	case "roll":
		return one(in[0].Roll(c.Ints("shifts"), c.Ints("axes")))
	case "tril":
		return one(in[0].Tril(c.Int("k")))
	case "triu":
		return one(in[0].Triu(c.Int("k")))
	case "one_hot":
		return one(tensor.OneHot(in[0], c.Int("num_classes")))
	}
	panic("unknown op " + c.Op)
}

// idxViewOps return views rather than new tensors.
var idxViewOps = map[string]bool{"split": true, "split_sizes": true, "chunk": true}

func TestIndexGolden(t *testing.T) {
	cases := golden.Load(t, idxGoldenPath)
	require.NotEmpty(t, cases)
	for _, c := range cases {
		for _, how := range idxLayouts {
			t.Run(c.Name+"/"+how, func(t *testing.T) {
				in := make([]*tensor.Tensor, len(c.Inputs))
				for i, g := range c.Inputs {
					in[i] = idxRelayout(goldtensor.ToTensor(g), how)
				}
				before := make([][]float64, len(in))
				for i, x := range in {
					before[i] = x.Float64s()
				}
				outs := idxApplyTensor(c, in)
				require.Len(t, outs, len(c.Outputs))
				for k, want := range c.Outputs {
					got := outs[k]
					require.Equal(t, want.DType, got.DType().String(), "output %d dtype", k)
					if !idxViewOps[c.Op] {
						require.True(t, got.IsContiguous(), "output %d is not contiguous", k)
					}
					rtol, atol := idxTol(want.DType)
					goldtensor.Check(t, c.Name, want, got, rtol, atol)
				}
				for i, x := range in {
					require.Equal(t, before[i], x.Float64s(), "input %d was modified", i)
				}
			})
		}
	}
}
