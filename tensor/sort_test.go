package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/internal/golden/goldtensor"
	"github.com/emberml/ember/tensor"
)

// TestSortGolden checks Sort and TopK against torch.sort(stable=True) and
// torch.topk, on contiguous, sliced and transposed layouts of each input.
func TestSortGolden(t *testing.T) {
	for _, c := range golden.Load(t, "testdata/golden_sort.json") {
		for _, how := range idxLayouts {
			x := idxRelayout(goldtensor.ToTensor(c.Inputs[0]), how)
			var v, i *tensor.Tensor
			switch c.Op {
			case "sort":
				v, i = x.Sort(c.Int("axis"), c.Bool("descending"))
			case "topk":
				v, i = x.TopK(c.Int("k"), c.Int("axis"), c.Bool("largest"))
			default:
				t.Fatalf("%s: unknown op %s", c.Name, c.Op)
			}
			name := c.Name + "/" + how
			require.Equal(t, x.DType(), v.DType(), name)
			require.Equal(t, tensor.Int64, i.DType(), name)
			goldtensor.Check(t, name+"/values", c.Outputs[0], v, 0, 0)
			goldtensor.Check(t, name+"/indices", c.Outputs[1], i, 0, 0)
		}
	}
}

func TestSortEdges(t *testing.T) {
	// 0-d tensors, empty axes and half-precision inputs.
	s := tensor.ScalarOf(4, tensor.Float32)
	v, i := s.TopK(1, 0, true)
	assert.Equal(t, 0, v.Dim())
	assert.Equal(t, int64(0), i.Int64s()[0])

	e := tensor.Zeros([]int{2, 0})
	v, i = e.Sort(1, false)
	assert.Equal(t, []int{2, 0}, v.Shape())
	assert.Equal(t, []int{2, 0}, i.Shape())

	h := tensor.FromSlice([]float32{1, 3, 2}).To(tensor.Float16)
	v, i = h.TopK(2, 0, true)
	assert.Equal(t, tensor.Float16, v.DType())
	assert.Equal(t, []float32{3, 2}, v.Float32s())
	assert.Equal(t, []int64{1, 2}, i.Int64s())

	b := tensor.FromSlice([]bool{false, true, true})
	assert.Equal(t, []int64{1, 2, 0}, b.ArgSort(0, true).Int64s())

	inf := tensor.FromSlice([]float64{math.Inf(-1), math.NaN(), math.Inf(1)})
	assert.Equal(t, []int64{1, 2, 0}, inf.ArgSort(0, true).Int64s())
}

func TestSortPanics(t *testing.T) {
	x := tensor.Zeros([]int{2, 3})
	assert.PanicsWithValue(t, "tensor.TopK: k=4 out of range for axis 1 of shape [2 3]", func() { x.TopK(4, 1, true) })
	assert.Panics(t, func() { x.TopK(-1, 1, true) })
	assert.Panics(t, func() { x.Sort(2, false) })
}
