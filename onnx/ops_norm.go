package onnx

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// Normalizations beyond BatchNormalization and LayerNormalization.

func normOps() opTable {
	return opTable{
		"InstanceNormalization":     {{since: 1, impl: opInstanceNorm}},
		"MeanVarianceNormalization": {{since: 9, impl: opMVN}},
		"LRN":                       {{since: 1, impl: opLRN}},
		// GroupNormalization-18 took one scale and bias per group; opset 21
		// made them per channel, as torch.nn.GroupNorm has them.
		"GroupNormalization": {{since: 18, until: 20, impl: groupNorm(true)}, {since: 21, impl: groupNorm(false)}},
	}
}

// spatialAxes returns axes 2..rank-1.
func spatialAxes(r int) []int {
	var axes []int
	for a := 2; a < r; a++ {
		axes = append(axes, a)
	}
	return axes
}

func opInstanceNorm(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	args, err := n.needFirst(in, 3)
	if err != nil {
		return nil, err
	}
	x, scale, bias := args[0], args[1], args[2]
	if x.Dim() < 3 {
		return nil, fmt.Errorf("onnx: %v: input %v needs spatial axes", n, x.Shape())
	}
	axes := spatialAxes(x.Dim())
	mean := x.Mean(axes, true)
	d := x.Sub(mean)
	inv := d.Mul(d).Mean(axes, true).AddScalar(n.attrFloat("epsilon", 1e-5)).Rsqrt()
	cs := channelShape(x.Shape()[1], x.Dim())
	return one(d.Mul(inv).Mul(scale.Reshape(cs...)).Add(bias.Reshape(cs...)))
}

func opMVN(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	axes := toInts(n.attrInts("axes"))
	if axes == nil {
		axes = []int{0, 2, 3}
	}
	for i, a := range axes {
		if axes[i], err = n.normAxis(a, x.Dim()); err != nil {
			return nil, err
		}
	}
	d := x.Sub(x.Mean(axes, true))
	std := d.Mul(d).Mean(axes, true).Sqrt()
	return one(d.Div(std.AddScalar(1e-9)))
}

// opLRN normalizes each element by the squares of its neighbours across
// channels: x / (bias + alpha/size * sum)^beta.
func opLRN(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	size := int(n.attrInt("size", 0))
	if size <= 0 || x.Dim() < 3 {
		return nil, fmt.Errorf("onnx: %v: size %d must be positive and input %v at least 3-d", n, size, x.Shape())
	}
	c := x.Shape()[1]
	// Channels beyond the edges are zeros: windows wider than the channel
	// axis add nothing, so clamp them (a huge size cannot allocate).
	before, after := min((size-1)/2, c), min(size-1-(size-1)/2, c)
	pads := make([]int, 2*(x.Dim()-1))
	pads[len(pads)-2], pads[len(pads)-1] = before, after
	sq := x.Mul(x).Pad(pads, tensor.PadConstant, 0)
	sum := sq.Narrow(1, 0, c)
	for j := 1; j <= before+after; j++ {
		sum = sum.Add(sq.Narrow(1, j, c))
	}
	alpha, beta, bias := n.attrFloat("alpha", 1e-4), n.attrFloat("beta", 0.75), n.attrFloat("bias", 1)
	return one(x.Div(sum.Affine(alpha/float64(size), bias).PowScalar(beta)))
}

// groupNorm returns GroupNormalization: x ([N, C, ...]) normalized over
// each group of C/num_groups consecutive channels, then scaled and
// shifted by scale and bias, given per group (perGroup, opset 18) or per
// channel (opset 21). The statistics are computed in float32 at least
// (stash_type 1, the default), in float64 for float64 input.
func groupNorm(perGroup bool) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		args, err := n.needFirst(in, 3)
		if err != nil {
			return nil, err
		}
		x, scale, bias := args[0], args[1], args[2]
		if err := n.wantFloat(x, 0); err != nil {
			return nil, err
		}
		if x.Dim() < 2 {
			return nil, fmt.Errorf("onnx: %v: input %v must be [N, C, ...]", n, x.Shape())
		}
		c := x.Shape()[1]
		groups := int(n.attrInt("num_groups", 0))
		if groups <= 0 || c%groups != 0 {
			return nil, fmt.Errorf("onnx: %v: num_groups %d must divide the %d channels", n, groups, c)
		}
		want := c
		if perGroup {
			want = groups
		}
		if scale.Numel() != want || bias.Numel() != want {
			return nil, fmt.Errorf("onnx: %v: scale %v and bias %v must hold %d values", n, scale.Shape(), bias.Shape(), want)
		}
		if st := n.attrInt("stash_type", 1); st != 1 {
			return nil, fmt.Errorf("onnx: %v: stash_type %d is not supported (1, float32, is)", n, st)
		}
		compute := tensor.Float32
		if x.DType() == tensor.Float64 {
			compute = tensor.Float64
		}
		w, b := scale.Reshape(-1).To(compute), bias.Reshape(-1).To(compute)
		if perGroup {
			// Each group's value applies to its C/groups channels.
			w = w.Reshape(groups, 1).Expand(groups, c/groups).Reshape(c)
			b = b.Reshape(groups, 1).Expand(groups, c/groups).Reshape(c)
		}
		y := tensor.GroupNorm(x.To(compute), groups, w, b, n.attrFloat("epsilon", 1e-5))
		return one(y.To(x.DType()))
	}
}
