package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

const ixgGoldenPath = "../tensor/testdata/golden_index.json"

// ixgStrided returns x's values as a non-contiguous view (every other
// element of a larger buffer along the last axis).
func ixgStrided(x *tensor.Tensor) *tensor.Tensor {
	if x.Dim() == 0 {
		return x
	}
	shape := x.Shape()
	n := shape[len(shape)-1]
	shape[len(shape)-1] = 2 * n
	big := tensor.Zeros(shape, x.DType())
	v := big.Slice(-1, 0, 2*n, 2)
	v.CopyFrom(x)
	return v
}

// ixgApply runs the autograd op of case c. in holds a Var per input; the
// index and mask inputs are read from their values.
func ixgApply(c golden.Case, in []*autograd.Var) []*autograd.Var {
	one := func(v *autograd.Var) []*autograd.Var { return []*autograd.Var{v} }
	val := func(i int) *tensor.Tensor { return in[i].Value() }
	switch c.Op {
	case "index_select":
		return one(in[0].IndexSelect(c.Int("axis"), val(1)))
	case "gather":
		return one(in[0].Gather(c.Int("axis"), val(1)))
	case "scatter":
		return one(in[0].Scatter(c.Int("axis"), val(2), in[1]))
	case "scatter_value":
		return one(in[0].ScatterScalar(c.Int("axis"), val(1), c.Float("value")))
	case "scatter_add":
		return one(in[0].ScatterAdd(c.Int("axis"), val(2), in[1]))
	case "index_add":
		return one(in[0].IndexAdd(c.Int("axis"), val(2), in[1]))
	case "masked_fill":
		return one(in[0].MaskedFill(val(1), c.Float("value")))
	case "masked_select":
		return one(in[0].MaskedSelect(val(1)))
	case "masked_scatter":
		return one(in[0].MaskedScatter(val(1), in[2]))
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
	}
	return nil
}

// TestIndexGoldenGrads checks values and gradients of every differentiable
// golden case against PyTorch, with contiguous and strided inputs.
func TestIndexGoldenGrads(t *testing.T) {
	cases := golden.Load(t, ixgGoldenPath)
	ran := 0
	for _, c := range cases {
		if len(c.Grads) == 0 {
			continue
		}
		for _, strided := range []bool{false, true} {
			name := c.Name + "/contiguous"
			if strided {
				name = c.Name + "/strided"
			}
			t.Run(name, func(t *testing.T) {
				in := make([]*autograd.Var, len(c.Inputs))
				var params []*autograd.Var
				var paramIdx []int
				for i, g := range c.Inputs {
					x := goldtensor.ToTensor(g)
					if strided {
						x = ixgStrided(x)
					}
					if x.DType().IsFloat() {
						in[i] = autograd.Param(x)
						params = append(params, in[i])
						paramIdx = append(paramIdx, i)
					} else {
						in[i] = autograd.New(x)
					}
				}
				outs := ixgApply(c, in)
				require.NotNil(t, outs, "op %s has no autograd form", c.Op)
				require.Len(t, outs, len(c.Outputs))
				var diffOuts []*autograd.Var
				var gouts []*tensor.Tensor
				for k, want := range c.Outputs {
					rtol, atol := 1e-12, 1e-12
					if want.DType == golden.Float32 {
						rtol, atol = 1e-6, 1e-6
					}
					golden.AllClose(t, "output", want, outs[k].Shape(), outs[k].Value().Float64s(), rtol, atol)
					if outs[k].RequiresGrad() {
						diffOuts = append(diffOuts, outs[k])
						gouts = append(gouts, goldtensor.ToTensor(c.GradOutputs[k]))
					}
				}
				require.NotEmpty(t, diffOuts)
				grads, err := autograd.Grad(diffOuts, params, gouts, autograd.Options{})
				require.NoError(t, err)
				for k, i := range paramIdx {
					want := c.Grads[i]
					require.NotNil(t, want)
					rtol, atol := 1e-12, 1e-12
					if want.DType == golden.Float32 {
						rtol, atol = 1e-5, 1e-6
					}
					golden.AllClose(t, "grad", *want, grads[k].Shape(), grads[k].Value().Float64s(), rtol, atol)
				}
			})
			ran++
		}
	}
	require.Greater(t, ran, 50)
}
