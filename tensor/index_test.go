package tensor_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func idxI64(v ...int64) *tensor.Tensor { return tensor.FromSlice(v) }

// idxPanicMsg runs f and returns its panic message ("" if it did not panic).
func idxPanicMsg(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

func TestIndexPanics(t *testing.T) {
	x := tensor.Arange(0, 12, 1, tensor.Float32).Reshape(3, 4)
	m := tensor.FromSlice([]bool{true, false, true, false})
	cases := []struct {
		name string
		f    func()
		want string
	}{
		{"IndexSelect/too_big", func() { x.IndexSelect(1, idxI64(0, 4)) }, "tensor.IndexSelect: index 4 is out of range for an axis of size 4 (axis 1 of shape [3 4])"},
		{"IndexSelect/negative", func() { x.IndexSelect(0, idxI64(-1)) }, "index -1 is out of range for an axis of size 3"},
		{"IndexSelect/float_index", func() { x.IndexSelect(0, tensor.FromSlice([]float32{0})) }, "index tensor has dtype float32"},
		{"IndexSelect/2d_index", func() { x.IndexSelect(0, idxI64(0, 1).Reshape(1, 2)) }, "index must be 0-d or 1-d"},
		{"IndexSelect/bad_axis", func() { x.IndexSelect(2, idxI64(0)) }, "axis 2 out of range"},
		{"Gather/rank", func() { x.Gather(1, idxI64(0)) }, "tensor.Gather: index shape [1] has rank 1, tensor shape [3 4] has rank 2"},
		{"Gather/too_large", func() { x.Gather(1, tensor.Zeros([]int{4, 1}, tensor.Int64)) }, "larger than tensor shape [3 4] on axis 0"},
		{"Gather/out_of_range", func() { x.Gather(0, tensor.Full([]int{1, 1}, 3, tensor.Int64)) }, "index 3 is out of range"},
		{"Scatter/dtype", func() {
			x.Scatter(0, tensor.Zeros([]int{1, 1}, tensor.Int64), tensor.Zeros([]int{1, 1}, tensor.Float64))
		}, "source dtype float64 differs from tensor dtype float32"},
		{"Scatter/small_src", func() { x.Scatter(0, tensor.Zeros([]int{2, 2}, tensor.Int64), tensor.Zeros([]int{2, 1})) }, "larger than source shape [2 1]"},
		{"ScatterAdd/out_of_range", func() { x.ScatterAdd(1, tensor.Full([]int{1, 1}, 9, tensor.Int64), tensor.Zeros([]int{1, 1})) }, "tensor.ScatterAdd: index 9 is out of range for an axis of size 4"},
		{"IndexAdd/src_shape", func() { x.IndexAdd(0, idxI64(0, 1), tensor.Zeros([]int{2, 3})) }, "source shape [2 3], want [2 4]"},
		{"MaskedFill/not_bool", func() { x.MaskedFill(tensor.Ones([]int{4}), 1) }, "mask has dtype float32; want bool"},
		{"MaskedFill/mask_too_big", func() { x.MaskedFill(tensor.Zeros([]int{2, 3, 4}, tensor.Bool), 1) }, "does not broadcast to tensor shape [3 4]"},
		{"MaskedSelect/incompatible", func() { x.MaskedSelect(tensor.Zeros([]int{3}, tensor.Bool)) }, "not broadcastable"},
		{"MaskedScatter/small_src", func() { x.MaskedScatter(m, tensor.Zeros([]int{5})) }, "mask selects 6 elements but source shape [5] has only 5"},
		{"Split/size0", func() { x.Split(0, 0) }, "size must be positive"},
		{"SplitSizes/sum", func() { x.SplitSizes([]int{1, 1}, 0) }, "add up to 2, axis 0 of shape [3 4] has 3"},
		{"Chunk/zero", func() { x.Chunk(0, 1) }, "number of chunks must be positive"},
		{"Pad/odd", func() { x.Pad([]int{1}, tensor.PadConstant, 0) }, "(before, after) pair"},
		{"Pad/too_many", func() { x.Pad([]int{1, 1, 1, 1, 1, 1}, tensor.PadConstant, 0) }, "up to 2 trailing axes"},
		{"Pad/reflect_big", func() { x.Pad([]int{4, 0}, tensor.PadReflect, 0) }, "reflect padding (4, 0) must be smaller than the axis size 4"},
		{"Pad/negative_size", func() { x.Pad([]int{-3, -2}, tensor.PadConstant, 0) }, "negative size on axis 1"},
		{"Repeat/few", func() { x.Repeat(2) }, "1 repetitions [2] for a 2-d tensor"},
		{"Roll/lengths", func() { x.Roll([]int{1, 2}, []int{0}) }, "2 shifts [1 2] for 1 axes [0]"},
		{"Roll/flat_two", func() { x.Roll([]int{1, 2}, nil) }, "exactly one shift"},
		{"Tril/1d", func() { idxI64(1, 2).Tril(0) }, "at least 2 dimensions"},
		{"OneHot/negative", func() { tensor.OneHot(idxI64(0, -1), 3) }, "class values must be non-negative"},
		{"OneHot/too_big", func() { tensor.OneHot(idxI64(0, 3), 3) }, "index 3 is out of range for an axis of size 3"},
		{"OneHot/float", func() { tensor.OneHot(tensor.Ones([]int{2}), 3) }, "dtype float32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			msg := idxPanicMsg(c.f)
			require.NotEmpty(t, msg, "did not panic")
			assert.Contains(t, msg, c.want)
		})
	}
}

func TestIndexInPlace(t *testing.T) {
	x := tensor.Zeros([]int{2, 3})
	v0 := x.Version()
	idx := tensor.FromSlice([]int64{2, 0}, 2, 1)
	src := tensor.FromSlice([]float32{5, 7}, 2, 1)
	require.Same(t, x, x.ScatterInPlace(1, idx, src))
	assert.Equal(t, []float32{0, 0, 5, 7, 0, 0}, x.Float32s())
	assert.Greater(t, x.Version(), v0)

	require.Same(t, x, x.ScatterAddInPlace(1, idx, src))
	assert.Equal(t, []float32{0, 0, 10, 14, 0, 0}, x.Float32s())
	require.Same(t, x, x.ScatterScalarInPlace(1, idx, -1))
	assert.Equal(t, []float32{0, 0, -1, -1, 0, 0}, x.Float32s())
	require.Same(t, x, x.IndexAddInPlace(0, idxI64(1, 1), tensor.Ones([]int{2, 3})))
	assert.Equal(t, []float32{0, 0, -1, 1, 2, 2}, x.Float32s())
	require.Same(t, x, x.MaskedScatterInPlace(x.Gt(tensor.Scalar(0)), tensor.FromSlice([]float32{8, 9, 10})))
	assert.Equal(t, []float32{0, 0, -1, 8, 9, 10}, x.Float32s())

	// A bad index is caught before anything is written.
	before := x.Float32s()
	bad := tensor.FromSlice([]int64{0, 3}, 2, 1)
	require.NotEmpty(t, idxPanicMsg(func() { x.ScatterInPlace(1, bad, src) }))
	assert.Equal(t, before, x.Float32s())

	// Writing through a strided view of a larger tensor.
	big := tensor.Zeros([]int{3, 4}, tensor.Int64)
	view := big.T() // [4 3], non-contiguous
	view.IndexAddInPlace(0, idxI64(3, 0, 3), tensor.Ones([]int{3, 3}, tensor.Int64))
	assert.Equal(t, []int64{1, 0, 0, 2, 1, 0, 0, 2, 1, 0, 0, 2}, big.Int64s())
}

func TestIndexAliasing(t *testing.T) {
	// src and the destination share storage: the result is as if src were
	// copied first.
	x := tensor.Arange(0, 6, 1, tensor.Float64).Reshape(2, 3)
	want := x.Clone().Scatter(1, tensor.FromSlice([]int64{2, 1, 0, 0, 2, 1}, 2, 3), x.Clone())
	x.ScatterInPlace(1, tensor.FromSlice([]int64{2, 1, 0, 0, 2, 1}, 2, 3), x)
	assert.Equal(t, want.Float64s(), x.Float64s())
	assert.Equal(t, []float64{2, 1, 0, 3, 5, 4}, x.Float64s())
}

func TestSplitChunkAreViews(t *testing.T) {
	x := tensor.Arange(0, 10, 1, tensor.Float32).Reshape(2, 5)
	parts := x.Split(2, 1)
	require.Len(t, parts, 3)
	assert.Equal(t, []int{2, 1}, parts[2].Shape())
	for _, p := range parts {
		assert.True(t, p.SharesStorage(x))
	}
	parts[1].Fill(-1)
	assert.Equal(t, []float32{0, 1, -1, -1, 4, 5, 6, -1, -1, 9}, x.Float32s())

	chunks := x.Chunk(3, 0) // two rows: ceil(2/3) = 1 per chunk, 2 chunks
	require.Len(t, chunks, 2)
	empty := tensor.Zeros([]int{0, 2}).Chunk(3, 0)
	require.Len(t, empty, 3)
	assert.Equal(t, []int{0, 2}, empty[2].Shape())
	assert.Len(t, tensor.Zeros([]int{0, 2}).Split(0, 0), 1)
}

func TestIndexDTypes(t *testing.T) {
	b := tensor.FromSlice([]bool{true, false, false, true}, 2, 2)
	assert.Equal(t, []bool{false, true, false, true}, b.Gather(1, tensor.FromSlice([]int64{1, 0, 0, 1}, 2, 2)).Bools())
	assert.Equal(t, []bool{true, true, false, true}, b.ScatterAdd(0, tensor.FromSlice([]int64{0, 0}, 1, 2), b.Narrow(0, 1, 1)).Bools())

	i32 := tensor.FromSlice([]int32{1, 2, 3, 4, 5, 6}, 3, 2)
	got := i32.IndexSelect(0, tensor.FromSlice([]int32{2, 0}))
	assert.Equal(t, tensor.Int32, got.DType())
	assert.Equal(t, []int32{5, 6, 1, 2}, got.Int32s())

	h := tensor.FromHalfBits(tensor.Float16, []uint16{0x3c00, 0x4000, 0x4200}, 3) // 1, 2, 3
	hs := h.IndexSelect(0, idxI64(2, 2, 0))
	assert.Equal(t, tensor.Float16, hs.DType())
	assert.Equal(t, []uint16{0x4200, 0x4200, 0x3c00}, hs.HalfBits())
	assert.Contains(t, idxPanicMsg(func() { h.Reshape(3, 1).ScatterAdd(0, tensor.Zeros([]int{1, 1}, tensor.Int64), h.Reshape(3, 1)) }), "convert to Float32 first")

	oh := tensor.OneHot(tensor.FromSlice([]int32{1, 0}), -1)
	assert.Equal(t, tensor.Int64, oh.DType())
	assert.Equal(t, []int64{0, 1, 1, 0}, oh.Int64s())

	f := tensor.FromSlice([]float32{1, 2, 3}).MaskedFill(tensor.FromSlice([]bool{false, true, false}), 9)
	assert.Equal(t, []float32{1, 9, 3}, f.Float32s())
}

func TestIndexEmpty(t *testing.T) {
	x := tensor.Arange(0, 6, 1, tensor.Float32).Reshape(2, 3)
	assert.Equal(t, []int{2, 0}, x.IndexSelect(1, tensor.Zeros([]int{0}, tensor.Int64)).Shape())
	assert.Equal(t, []int{0, 3}, x.Gather(0, tensor.Zeros([]int{0, 3}, tensor.Int64)).Shape())
	assert.Equal(t, []int{0}, x.MaskedSelect(tensor.Zeros([]int{3}, tensor.Bool)).Shape())
	assert.Equal(t, x.Float32s(), x.Scatter(0, tensor.Zeros([]int{0, 3}, tensor.Int64), x).Float32s())
	assert.Equal(t, []int{0, 3}, x.Repeat(0, 1).Shape())
	assert.Equal(t, []int{2, 3}, x.Roll([]int{0}, []int{1}).Shape())
}

// TestIndexSelectLarge compares an embedding-sized IndexSelect and
// IndexAdd with direct loops, on a strided table.
func TestIndexSelectLarge(t *testing.T) {
	const vocab, dim, n = 300, 7, 1000
	g := tensor.NewGenerator(5)
	w := g.Randn([]int{dim, vocab}, tensor.Float64).T() // [vocab dim], strided
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64((i * 31) % vocab)
	}
	out := w.IndexSelect(0, tensor.FromSlice(ids))
	wv, ov := w.Float64s(), out.Float64s()
	for i, id := range ids {
		require.Equal(t, wv[int(id)*dim:int(id)*dim+dim], ov[i*dim:i*dim+dim])
	}
	acc := tensor.Zeros([]int{vocab, dim}, tensor.Float64).IndexAdd(0, tensor.FromSlice(ids), out)
	want := make([]float64, vocab*dim)
	for i, id := range ids {
		for j := range dim {
			want[int(id)*dim+j] += ov[i*dim+j]
		}
	}
	assert.InDeltaSlice(t, want, acc.Float64s(), 1e-12)
}

func TestPadIndex(t *testing.T) {
	cases := []struct {
		mode          tensor.PadMode
		n, bef, after int
		want          []int64
	}{
		{tensor.PadReflect, 4, 2, 2, []int64{2, 1, 0, 1, 2, 3, 2, 1}},
		{tensor.PadReplicate, 4, 2, 2, []int64{0, 0, 0, 1, 2, 3, 3, 3}},
		{tensor.PadCircular, 4, 2, 2, []int64{2, 3, 0, 1, 2, 3, 0, 1}},
		{tensor.PadCircular, 2, 3, 0, []int64{1, 0, 1, 0, 1}},
		{tensor.PadReflect, 5, -1, 2, []int64{1, 2, 3, 4, 3, 2}},
		{tensor.PadReplicate, 5, 1, -2, []int64{0, 0, 1, 2}},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, tensor.PadIndex(c.mode, c.n, c.bef, c.after).Int64s(), "%s %d (%d, %d)", c.mode, c.n, c.bef, c.after)
	}
	assert.Contains(t, idxPanicMsg(func() { tensor.PadIndex(tensor.PadConstant, 3, 1, 1) }), "not constant")
	for _, name := range []string{"constant", "reflect", "replicate", "circular"} {
		m, err := tensor.ParsePadMode(name)
		require.NoError(t, err)
		assert.Equal(t, name, m.String())
	}
	_, err := tensor.ParsePadMode("wrap")
	assert.Error(t, err)
}
