package onnx

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// cancelAfter is a context that reports Canceled from its (k+1)-th call of
// Err on, so a test can stop an operator after exactly k chunks.
type cancelAfter struct {
	context.Context
	k, calls atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.calls.Add(1) > c.k.Load() {
		return context.Canceled
	}
	return nil
}

func newCancelAfter(k int64) *cancelAfter {
	c := &cancelAfter{Context: context.Background()}
	c.k.Store(k)
	return c
}

func TestChunkCount(t *testing.T) {
	assert.Equal(t, 1, chunkCount(8, 10, 100))   // 80 multiply-adds
	assert.Equal(t, 4, chunkCount(8, 50, 100))   // 400
	assert.Equal(t, 8, chunkCount(8, 1000, 100)) // never more than units
	assert.Equal(t, 1, chunkCount(1, 1e12, 100))
	assert.Equal(t, 1, chunkCount(8, 1<<20, 0)) // the default chunk: 2^23 < 2^28
	assert.Equal(t, 2, chunkCount(8, 1<<26, 0))
}

func TestLongKernelsStopBetweenChunks(t *testing.T) {
	x := tensor.NewGenerator(1).Randn([]int{8, 3, 10, 10}, tensor.Float32)
	w := tensor.NewGenerator(2).Randn([]int{4, 3, 3, 3}, tensor.Float32)
	wt := tensor.NewGenerator(7).Randn([]int{3, 2, 3, 3}, tensor.Float32)
	a := tensor.NewGenerator(3).Randn([]int{16, 12}, tensor.Float32)
	b := tensor.NewGenerator(4).Randn([]int{12, 5}, tensor.Float32)
	a3 := tensor.NewGenerator(5).Randn([]int{6, 4, 12}, tensor.Float32)
	b3 := tensor.NewGenerator(6).Randn([]int{6, 12, 5}, tensor.Float32)
	cases := []struct {
		name string
		op   opImpl
		in   []*tensor.Tensor
		want *tensor.Tensor
	}{
		{"Conv", opConvFor(t), []*tensor.Tensor{x, w}, tensor.Conv2d(x, w, nil, tensor.Conv2dOptions{})},
		{"MatMul", opMatMul, []*tensor.Tensor{a, b}, a.MatMul(b)},
		{"MatMul batched", opMatMul, []*tensor.Tensor{a3, b3}, a3.MatMul(b3)},
		{"Gemm", opGemm, []*tensor.Tensor{a, b}, a.MatMul(b)},
		{"ConvTranspose", opConvTranspose, []*tensor.Tensor{x, wt}, tensor.ConvTranspose2d(x, wt, nil, tensor.ConvTranspose2dOptions{})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := &node{opType: c.name, opset: 13, maxElements: maxElements, chunkWork: 1, attrs: map[string]*attribute{}}
			// Chunked to the end: the same values as one call.
			n.ctx = newCancelAfter(1 << 30)
			out, err := c.op(n, c.in)
			require.NoError(t, err)
			assert.Equal(t, c.want.Shape(), out[0].Shape())
			assert.Equal(t, c.want.Float32s(), out[0].Float32s())
			// Cancelled after two chunks: the context's error.
			ctx := newCancelAfter(2)
			n.ctx = ctx
			_, err = c.op(n, c.in)
			require.ErrorIs(t, err, context.Canceled)
			assert.Equal(t, int64(3), ctx.calls.Load(), "stops at the third check")
		})
	}
}

// opConvFor returns the Conv implementation of the registry.
func opConvFor(t *testing.T) opImpl {
	v := registry.lookup("", "Conv", 13)
	require.NotNil(t, v)
	return v.impl
}
