package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

// Golden values for Uint8, Int8, Int16 and Uint16 from
// internal/golden/gen/gen_dtypes_small.py. The fixture stores narrow
// tensors as int64; their real dtypes are in the attrs in_dtypes and
// out_dtypes.

// smallDTypes decodes a list-of-dtype-names attribute.
func smallDTypes(t *testing.T, c golden.Case, attr string) []tensor.DType {
	raw, ok := c.Attrs[attr].([]any)
	require.True(t, ok, "%s: attr %s", c.Name, attr)
	var dts []tensor.DType
	for _, r := range raw {
		s, ok := r.(string)
		require.True(t, ok, "%s: attr %s holds %v", c.Name, attr, r)
		dt, err := tensor.ParseDType(s)
		require.NoError(t, err)
		dts = append(dts, dt)
	}
	return dts
}

// smallOp runs the case's op on its inputs.
func smallOp(t *testing.T, c golden.Case, in []*tensor.Tensor, out tensor.DType) *tensor.Tensor {
	switch c.Op {
	case "cast":
		return in[0].To(out)
	case "add":
		return in[0].Add(in[1])
	case "sub":
		return in[0].Sub(in[1])
	case "mul":
		return in[0].Mul(in[1])
	case "floordiv":
		return in[0].FloorDiv(in[1])
	case "div":
		return in[0].Div(in[1])
	case "maximum":
		return in[0].Maximum(in[1])
	case "minimum":
		return in[0].Minimum(in[1])
	case "eq":
		return in[0].Eq(in[1])
	case "lt":
		return in[0].Lt(in[1])
	case "ge":
		return in[0].Ge(in[1])
	case "neg":
		return in[0].Neg()
	case "abs":
		return in[0].Abs()
	case "sign":
		return in[0].Sign()
	case "square":
		return in[0].Square()
	case "addscalar":
		return in[0].AddScalar(c.Float("s"))
	case "mulscalar":
		return in[0].MulScalar(c.Float("s"))
	case "clamp":
		return in[0].Clamp(c.Float("lo"), c.Float("hi"))
	case "pow":
		return in[0].PowScalar(c.Float("e"))
	case "where":
		return tensor.Where(in[0], in[1], in[2])
	case "sum":
		return in[0].Sum([]int{c.Int("axis")}, false)
	case "prod":
		return in[0].Prod([]int{c.Int("axis")}, false)
	case "max":
		return in[0].Max([]int{c.Int("axis")}, false)
	case "min":
		return in[0].Min([]int{c.Int("axis")}, false)
	case "argmax":
		return in[0].ArgMax(c.Int("axis"), false)
	case "cumsum":
		return in[0].CumSum(c.Int("axis"))
	case "gather":
		return in[0].Gather(c.Int("axis"), in[1])
	case "cat":
		return tensor.Concat(in, c.Int("axis"))
	case "transpose":
		return in[0].T().Contiguous()
	case "matmul":
		return in[0].MatMul(in[1])
	}
	t.Fatalf("%s: unknown op %q", c.Name, c.Op)
	return nil
}

func TestSmallIntDTypesGolden(t *testing.T) {
	cases := golden.Load(t, "testdata/golden_dtypes_small.json")
	require.NotEmpty(t, cases)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			inDT, outDT := smallDTypes(t, c, "in_dtypes"), smallDTypes(t, c, "out_dtypes")
			in := make([]*tensor.Tensor, len(c.Inputs))
			for i, g := range c.Inputs {
				in[i] = goldtensor.ToTensor(g).To(inDT[i])
			}
			got := smallOp(t, c, in, outDT[0])
			require.Equal(t, outDT[0], got.DType(), "result dtype")
			if !outDT[0].IsFloat() {
				got = got.To(tensor.Int64) // exact comparison of integers
				if c.Outputs[0].DType == golden.Bool {
					got = got.To(tensor.Bool)
				}
			}
			goldtensor.Check(t, c.Name, c.Outputs[0], got, 1e-6, 0)
		})
	}
}

func TestSmallIntDTypesBasics(t *testing.T) {
	tests := []struct {
		dt   tensor.DType
		name string
		size int
	}{
		{tensor.Uint8, "uint8", 1},
		{tensor.Int8, "int8", 1},
		{tensor.Int16, "int16", 2},
		{tensor.Uint16, "uint16", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.name, tt.dt.String())
			assert.Equal(t, tt.size, tt.dt.Size())
			assert.True(t, tt.dt.IsInt())
			assert.False(t, tt.dt.IsFloat())
			got, err := tensor.ParseDType(tt.name)
			require.NoError(t, err)
			assert.Equal(t, tt.dt, got)
			z := tensor.Full([]int{2, 3}, 7, tt.dt)
			assert.Equal(t, tt.dt, z.DType())
			assert.Equal(t, []float64{7, 7, 7, 7, 7, 7}, z.Float64s())
		})
	}
	// The older dtypes keep their values (they are stored in files).
	assert.Equal(t, tensor.DType(6), tensor.BFloat16)
	assert.Equal(t, tensor.DType(7), tensor.Uint8)
}

func TestSmallIntAccessorsAndViews(t *testing.T) {
	u := tensor.FromSlice([]uint8{1, 2, 3, 250, 251, 252}, 2, 3)
	assert.Equal(t, tensor.Uint8, u.DType())
	assert.Equal(t, []uint8{1, 250, 2, 251, 3, 252}, u.T().Uint8s())
	assert.Equal(t, []int8{1, 2, 3, -6, -5, -4}, u.Int8s())
	assert.Equal(t, []int16{1, 2, 3, 250, 251, 252}, u.Int16s())
	w := tensor.FromSlice([]uint16{0, 65535, 40000}, 3)
	assert.Equal(t, tensor.Uint16, w.DType())
	assert.Equal(t, []uint16{0, 65535, 40000}, w.Uint16s())
	assert.Equal(t, []int16{0, -1, -25536}, w.Int16s())
	assert.Equal(t, []uint16{40000, 65535, 0}, w.Flip(0).Uint16s())
	s := tensor.FromSlice([]int8{-1, 2, -3, 4}, 2, 2)
	// In-place strided write, masked select and scatter on a narrow dtype.
	dst := tensor.Zeros([]int{2, 2}, tensor.Int8)
	dst.T().CopyFrom(s)
	assert.Equal(t, []int8{-1, -3, 2, 4}, dst.Int8s())
	assert.Equal(t, []int8{2, 4}, s.MaskedSelect(s.Gt(tensor.ScalarOf(0, tensor.Int8))).Int8s())
	idx := tensor.FromSlice([]int64{1, 0}, 1, 2)
	sc := tensor.Zeros([]int{2, 2}, tensor.Uint8).ScatterAdd(0, idx, tensor.FromSlice([]uint8{200, 100}, 1, 2))
	assert.Equal(t, []uint8{0, 100, 200, 0}, sc.Uint8s())
}
