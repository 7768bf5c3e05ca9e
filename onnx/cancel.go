package onnx

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// Cancellation inside long operators.
//
// Run checks its context between nodes, and a node that does a lot of
// arithmetic (a batched convolution, a large matrix product) is split into
// chunks along an axis whose slices are computed independently, with the
// context checked before each chunk, so a cancelled Run returns within
// about one chunk's time of its deadline. The split changes no result: each
// output element is computed by the same kernel from the same inputs.

// chunkWork is the multiply-add count of one chunk: about 2^28, tens of
// milliseconds on one core and a few on several, and more than any single
// convolution of a batch-1 ResNet-50, which therefore runs unsplit.
const chunkWork = 1 << 28

// chunkCount returns how many chunks units independent slices of work
// multiply-adds each make, at most per multiply-adds a chunk (chunkWork
// when per is 0).
func chunkCount(units int, work float64, per int64) int {
	if per <= 0 {
		per = chunkWork
	}
	if units <= 1 || work <= 0 {
		return 1
	}
	k := int(float64(units) * work / float64(per))
	return max(1, min(k, units))
}

// inChunks computes the result of slices [0, units) of an operator as
// concatenated chunks along axis: part(lo, hi) computes the slices lo..hi-1.
// It checks the run's context before each chunk. One chunk is part(0,
// units) itself.
func (n *node) inChunks(units int, work float64, axis int, part func(lo, hi int) *tensor.Tensor) (*tensor.Tensor, error) {
	k := chunkCount(units, work, n.chunkWork)
	if k == 1 || n.ctx == nil {
		return part(0, units), nil
	}
	outs := make([]*tensor.Tensor, 0, k)
	for i := range k {
		if err := n.ctx.Err(); err != nil {
			return nil, fmt.Errorf("onnx: run stopped in %v (chunk %d of %d): %w", n, i+1, k, err)
		}
		lo, hi := i*units/k, (i+1)*units/k
		if lo < hi {
			outs = append(outs, part(lo, hi))
		}
	}
	if err := n.ctx.Err(); err != nil {
		return nil, fmt.Errorf("onnx: run stopped in %v: %w", n, err)
	}
	return tensor.Concat(outs, axis), nil
}
