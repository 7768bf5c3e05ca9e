package autograd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

type ixV = autograd.Var

// TestIndexGradCheck checks every differentiable indexing op against finite
// differences, first and second order. The inputs are made non-contiguous
// inside f (transposed or sliced views), since GradCheck hands f contiguous
// copies. Second-order checks square the op's output so that the gradient
// depends on the input and the backward ops are differentiated in turn.
func TestIndexGradCheck(t *testing.T) {
	g := tensor.NewGenerator(7)
	a := g.Randn([]int{5, 4}, tensor.Float64)
	b := g.Randn([]int{4, 6}, tensor.Float64)
	c := g.Randn([]int{2, 3, 4}, tensor.Float64)
	i64 := func(v []int64, shape ...int) *tensor.Tensor { return tensor.FromSlice(v, shape...) }
	cat := func(vs []*ixV) *ixV { return autograd.Concat(vs, 0) }
	flat := func(vs []*ixV) []*ixV {
		out := make([]*ixV, len(vs))
		for i, v := range vs {
			out[i] = v.Reshape(-1).MulScalar(float64(i + 1))
		}
		return out
	}
	mask := i64([]int64{1, 0, 0, 1, 1}, 5).Gt(tensor.ScalarOf(0, tensor.Int64)) // broadcast over a.T()'s rows
	mask2 := tensor.FromSlice([]bool{true, false, true, true, false, false, true, false, true, true, false, true}, 3, 4)

	cases := map[string]func(in []*ixV) *ixV{
		"IndexSelect/axis1_transposed": func(in []*ixV) *ixV { return in[0].T().IndexSelect(1, i64([]int64{4, 0, 4, 2})) },
		"IndexSelect/axis0_sliced": func(in []*ixV) *ixV {
			return in[0].Slice(1, 0, 4, 2).IndexSelect(0, tensor.FromSlice([]int32{3, 3, 1}))
		},
		"IndexSelect/scalar_index": func(in []*ixV) *ixV { return in[2].IndexSelect(-1, i64([]int64{2}).Reshape()) },
		"IndexAdd": func(in []*ixV) *ixV {
			return in[0].T().IndexAdd(1, i64([]int64{1, 4, 1}), in[1].Slice(1, 0, 6, 2))
		},
		"Gather/transposed": func(in []*ixV) *ixV {
			return in[0].T().Gather(1, i64([]int64{0, 4, 4, 1, 2, 2, 3, 0}, 4, 2))
		},
		"Gather/axis0": func(in []*ixV) *ixV {
			return in[2].Permute(2, 0, 1).Gather(0, i64([]int64{3, 0, 1, 1, 2, 0, 2, 3, 3, 0, 1, 2}, 2, 2, 3))
		},
		"Scatter/big_src": func(in []*ixV) *ixV {
			idx := i64([]int64{2, 0, 4, 1, 3, 0, 0, 2}, 4, 2) // distinct per row
			return in[0].T().Scatter(1, idx, in[1].Slice(1, 1, 6, 2))
		},
		"ScatterScalar": func(in []*ixV) *ixV {
			return in[0].T().ScatterScalar(0, i64([]int64{3, 0, 1, 2, 1}, 1, 5), 0.5)
		},
		"ScatterAdd/repeats": func(in []*ixV) *ixV {
			idx := i64([]int64{2, 2, 4, 1, 1, 1, 0, 4}, 4, 2)
			return in[0].T().ScatterAdd(1, idx, in[1].Slice(1, 0, 6, 2))
		},
		"MaskedFill/bcast": func(in []*ixV) *ixV { return in[0].T().MaskedFill(mask, -3) },
		"MaskedSelect/bcast_input": func(in []*ixV) *ixV {
			return in[1].Select(1, 2).MaskedSelect(mask2)
		},
		"MaskedSelect/transposed": func(in []*ixV) *ixV { return in[0].T().MaskedSelect(mask) },
		"MaskedScatter": func(in []*ixV) *ixV {
			return in[0].T().MaskedScatter(mask, in[1].T())
		},
		"Split": func(in []*ixV) *ixV { return cat(flat(in[0].T().Split(3, 1))) },
		"SplitSizes": func(in []*ixV) *ixV {
			return cat(flat(in[2].Transpose(0, 2).SplitSizes([]int{1, 0, 3}, 0)))
		},
		"Chunk": func(in []*ixV) *ixV { return cat(flat(in[1].Slice(1, 0, 6, 1).T().Chunk(4, 0))) },
		"Pad/constant": func(in []*ixV) *ixV {
			return in[2].Transpose(1, 2).Pad([]int{1, -1, 2, 0}, tensor.PadConstant, 0.25)
		},
		"Pad/reflect": func(in []*ixV) *ixV {
			return in[2].Transpose(1, 2).Pad([]int{2, 1, 1, 3}, tensor.PadReflect, 0)
		},
		"Pad/reflect_crop": func(in []*ixV) *ixV {
			return in[0].T().Pad([]int{-1, 3}, tensor.PadReflect, 0)
		},
		"Pad/replicate": func(in []*ixV) *ixV {
			return in[2].Transpose(0, 2).Pad([]int{3, 1, 0, 2}, tensor.PadReplicate, 0)
		},
		"Pad/circular": func(in []*ixV) *ixV {
			return in[0].T().Pad([]int{2, 6, 1, 0}, tensor.PadCircular, 0)
		},
		"Repeat":         func(in []*ixV) *ixV { return in[0].T().Repeat(2, 1, 3) },
		"Tile":           func(in []*ixV) *ixV { return in[2].Transpose(0, 1).Tile(2, 1) },
		"Roll/axes":      func(in []*ixV) *ixV { return in[2].Transpose(0, 2).Roll([]int{-1, 5}, []int{0, 2}) },
		"Roll/flattened": func(in []*ixV) *ixV { return in[0].T().Roll([]int{7}, nil) },
		"Tril":           func(in []*ixV) *ixV { return in[2].Transpose(1, 2).Tril(-1) },
		"Triu":           func(in []*ixV) *ixV { return in[0].T().Triu(1) },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, autograd.GradCheck(f, a, b, c))
			sq := func(in []*ixV) *ixV { return f(in).Square() }
			require.NoError(t, autograd.GradGradCheck(sq, a, b, c))
		})
	}
}

// TestEmbeddingGrad checks the gradient of a large embedding lookup (many
// repeated ids into a big table) against a direct per-id accumulation.
func TestEmbeddingGrad(t *testing.T) {
	const vocab, dim, n = 5000, 8, 4000
	g := tensor.NewGenerator(3)
	w := autograd.Param(g.Randn([]int{vocab, dim}, tensor.Float32))
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64((i * 7919) % 97) // 97 distinct ids, each repeated
	}
	up := g.Randn([]int{n, dim}, tensor.Float32)
	out := w.IndexSelect(0, tensor.FromSlice(ids))
	require.Equal(t, []int{n, dim}, out.Shape())
	require.NoError(t, out.BackwardWith(up, autograd.Options{}))

	want := make([]float64, vocab*dim)
	upv := up.Float32s()
	for i, id := range ids {
		for j := range dim {
			want[int(id)*dim+j] += float64(upv[i*dim+j])
		}
	}
	got := w.Grad().Float64s()
	require.Len(t, got, len(want))
	for i := range want {
		if !assert.InDelta(t, want[i], got[i], 1e-4, "grad[%d]", i) {
			break
		}
	}
}

// TestIndexGradVersionCheck: an index tensor changed in place after the
// forward pass makes backward fail instead of producing a wrong gradient.
func TestIndexGradVersionCheck(t *testing.T) {
	w := autograd.Param(tensor.Ones([]int{4, 2}, tensor.Float64))
	idx := tensor.FromSlice([]int64{0, 3})
	out := w.IndexSelect(0, idx).Sum(nil, false)
	idx.Fill(1)
	err := out.Backward()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "modified in place")
}

// TestIndexNoGradNoTape: ops on Vars that need no gradient record nothing.
func TestIndexNoGradNoTape(t *testing.T) {
	x := autograd.New(tensor.Ones([]int{3, 3}))
	for _, v := range []*ixV{
		x.IndexSelect(0, tensor.FromSlice([]int64{1})),
		x.Pad([]int{1, 1}, tensor.PadReflect, 0),
		x.Tril(0),
		x.Split(2, 0)[1],
	} {
		assert.False(t, v.RequiresGrad())
		assert.True(t, v.IsLeaf())
	}
}

func BenchmarkEmbeddingBackward(b *testing.B) {
	const vocab, dim, n = 50000, 64, 8192
	g := tensor.NewGenerator(1)
	w := autograd.Param(g.Randn([]int{vocab, dim}, tensor.Float32))
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = int64((i * 7919) % vocab)
	}
	idx := tensor.FromSlice(ids)
	up := g.Randn([]int{n, dim}, tensor.Float32)
	b.ResetTimer()
	for range b.N {
		w.ZeroGrad()
		out := w.IndexSelect(0, idx)
		if err := out.BackwardWith(up, autograd.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
