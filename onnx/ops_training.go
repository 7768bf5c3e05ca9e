package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Optimizer update operators of the ai.onnx.preview.training domain:
// Adagrad, Momentum and Adam, each updating n tensors at once.

const trainingDomain = "ai.onnx.preview.training"

func trainingOps() opTable {
	return opTable{
		trainingDomain + ".Adagrad":  {{since: 1, impl: opAdagrad}},
		trainingDomain + ".Momentum": {{since: 1, impl: opMomentum}},
		trainingDomain + ".Adam":     {{since: 1, impl: opAdam}},
	}
}

// optimizerArgs splits the inputs R, T, then groups tensors each of n
// elements.
func (n *node) optimizerArgs(in []*tensor.Tensor, groups int) (r float64, t int64, parts [][]*tensor.Tensor, err error) {
	rest := in[:n.numIn]
	if len(rest) < 2 || (len(rest)-2)%groups != 0 {
		return 0, 0, nil, fmt.Errorf("onnx: %v: want R, T and %d groups of tensors, got %d inputs", n, groups, len(rest))
	}
	for i, x := range rest {
		if x == nil {
			return 0, 0, nil, fmt.Errorf("onnx: %v: input %d is absent", n, i)
		}
	}
	r, t = rest[0].Reshape(-1).At(0), int64(rest[1].Reshape(-1).At(0))
	k := (len(rest) - 2) / groups
	for g := range groups {
		parts = append(parts, rest[2+g*k:2+(g+1)*k])
	}
	return r, t, parts, nil
}

func opAdagrad(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	r, t, parts, err := n.optimizerArgs(in, 3)
	if err != nil {
		return nil, err
	}
	decay, eps, norm := n.attrFloat("decay_factor", 0), n.attrFloat("epsilon", 1e-6), n.attrFloat("norm_coefficient", 0)
	rate := r / (1 + float64(t)*decay)
	xs, hs := []*tensor.Tensor{}, []*tensor.Tensor{}
	for i, x := range parts[0] {
		g := x.MulScalar(norm).Add(parts[1][i])
		h := parts[2][i].Add(g.Mul(g))
		xs = append(xs, x.Sub(g.Div(h.Sqrt().AddScalar(eps)).MulScalar(rate)))
		hs = append(hs, h)
	}
	return append(xs, hs...), nil
}

func opMomentum(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	r, t, parts, err := n.optimizerArgs(in, 3)
	if err != nil {
		return nil, err
	}
	alpha, beta, norm := n.attrFloat("alpha", 0), n.attrFloat("beta", 0), n.attrFloat("norm_coefficient", 0)
	mode := n.attrString("mode", "standard")
	if mode != "standard" && mode != "nesterov" {
		return nil, fmt.Errorf("onnx: %v: unknown mode %q", n, mode)
	}
	if t == 0 {
		beta = 1
	}
	xs, vs := []*tensor.Tensor{}, []*tensor.Tensor{}
	for i, x := range parts[0] {
		g := x.MulScalar(norm).Add(parts[1][i])
		v := parts[2][i].MulScalar(alpha).Add(g.MulScalar(beta))
		step := v
		if mode == "nesterov" {
			step = g.Add(v.MulScalar(alpha))
		}
		xs = append(xs, x.Sub(step.MulScalar(r)))
		vs = append(vs, v)
	}
	return append(xs, vs...), nil
}

func opAdam(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	r, t, parts, err := n.optimizerArgs(in, 4)
	if err != nil {
		return nil, err
	}
	alpha, beta := n.attrFloat("alpha", 0.9), n.attrFloat("beta", 0.999)
	eps, norm, post := n.attrFloat("epsilon", 1e-6), n.attrFloat("norm_coefficient", 0), n.attrFloat("norm_coefficient_post", 0)
	rate := r
	if t > 0 {
		rate = r * math.Sqrt(1-math.Pow(beta, float64(t))) / (1 - math.Pow(alpha, float64(t)))
	}
	xs, vs, hs := []*tensor.Tensor{}, []*tensor.Tensor{}, []*tensor.Tensor{}
	for i, x := range parts[0] {
		g := x.MulScalar(norm).Add(parts[1][i])
		v := parts[2][i].MulScalar(alpha).Add(g.MulScalar(1 - alpha))
		h := parts[3][i].MulScalar(beta).Add(g.Mul(g).MulScalar(1 - beta))
		xn := x.Sub(v.Div(h.Sqrt().AddScalar(eps)).MulScalar(rate)).MulScalar(1 - post)
		xs, vs, hs = append(xs, xn), append(vs, v), append(hs, h)
	}
	return append(append(xs, vs...), hs...), nil
}
