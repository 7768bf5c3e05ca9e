package profiler

import (
	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// allocated returns the bytes of the tensors an op made: its forward
// output, or the gradients its backward rule returned, leaving out those
// that share storage with what the op was given (views, a gradient passed
// on as it came). Temporaries the op freed before returning are not seen.
func allocated(e autograd.OpEvent) int64 {
	var n int64
	for i, out := range e.Outputs {
		if out == nil || sharesWithGiven(out.Value(), e) || sharesWithEarlier(out.Value(), e.Outputs[:i]) {
			continue
		}
		t := out.Value()
		n += int64(t.Numel()) * int64(t.DType().Size())
	}
	return n
}

func sharesWithGiven(t *tensor.Tensor, e autograd.OpEvent) bool {
	if e.Grad != nil && t.SharesStorage(e.Grad.Value()) {
		return true
	}
	for _, in := range e.Inputs {
		if in != nil && t.SharesStorage(in.Value()) {
			return true
		}
	}
	return false
}

func sharesWithEarlier(t *tensor.Tensor, earlier []*autograd.Var) bool {
	for _, o := range earlier {
		if o != nil && t.SharesStorage(o.Value()) {
			return true
		}
	}
	return false
}

// flops returns the floating-point operations (a multiply and an add
// count two) of the products and convolutions among autograd's ops and
// nn's inference kernels, from their input and output shapes; 0 for
// other ops.
func flops(op string, in [][]int, out []int) int64 {
	numel := func(s []int) int64 {
		n := int64(1)
		for _, d := range s {
			n *= int64(d)
		}
		return n
	}
	// perOutput returns the multiply-adds per element of a convolution's
	// result: the weight's elements per output channel.
	perChannel := func(w []int) int64 {
		if len(w) == 0 || w[0] == 0 {
			return 0
		}
		return numel(w) / int64(w[0])
	}
	switch op {
	case "MatMul":
		// [.., m, k] @ [.., k, n]: k multiply-adds per output element (a
		// 1-d left operand is [k]).
		if len(in) == 2 && len(in[0]) > 0 {
			return 2 * numel(out) * int64(in[0][len(in[0])-1])
		}
	case "Conv2d", "ConvForward", "Conv2dBatchNorm":
		// x [N, C, H, W], w [O, C/groups, KH, KW], out [N, O, OH, OW]
		// (Conv2dBatchNorm: nn's inference kernel with a batch norm folded
		// in, inputs x, w and the residual).
		if len(in) >= 2 {
			return 2 * numel(out) * perChannel(in[1])
		}
	case "ConvBackwardInput":
		// The input gradient of a convolution: every element of gy (the
		// convolution's output) meets C/groups·KH·KW weights.
		if len(in) == 2 {
			return 2 * numel(in[0]) * perChannel(in[1])
		}
	case "ConvBackwardWeight":
		// The weight gradient [O, C/groups, KH, KW] from x and gy: every
		// element of gy meets C/groups·KH·KW inputs.
		if len(in) == 2 {
			return 2 * numel(in[1]) * perChannel(out)
		}
	case "GRUSequence":
		// gi [T, N, 3·H], h0 [N, H], whh [3·H, H]: one [N, H]·[H, 3·H]
		// product per step (the gates' elementwise work is not counted).
		if len(in) >= 3 && len(in[0]) == 3 && len(in[2]) == 2 {
			return 2 * int64(in[0][0]) * int64(in[0][1]) * numel(in[2])
		}
	case "ConvTranspose2d":
		// x [N, Cin, H, W], w [Cin, Cout/groups, KH, KW]: every input
		// element meets Cout/groups·KH·KW weights.
		if len(in) >= 2 {
			return 2 * numel(in[0]) * perChannel(in[1])
		}
	}
	return 0
}
