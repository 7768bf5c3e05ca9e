package nn

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Linear applies y = x·Wᵀ + b to the last axis of its input, as
// torch.nn.Linear. Weight has shape [out, in] and Bias [out] (nil without
// bias).
type Linear struct {
	Base
	InFeatures, OutFeatures int
	Weight, Bias            *autograd.Var
}

// NewLinear returns a Linear layer from in to out features, with a bias
// when bias is true, initialized like PyTorch: weight and bias drawn from
// U(-1/sqrt(in), 1/sqrt(in)) using g (weight first, then bias). The
// parameters are Float32 unless a dtype is given.
func NewLinear(g *tensor.Generator, in, out int, bias bool, dt ...tensor.DType) *Linear {
	if in < 0 || out < 0 {
		panic(fmt.Sprintf("nn.NewLinear: feature counts must be non-negative, got in=%d out=%d", in, out))
	}
	d := pickDType(dt)
	l := &Linear{InFeatures: in, OutFeatures: out}
	l.Weight = l.RegisterParameter("weight", autograd.Param(defaultParam(g, "NewLinear", []int{out, in}, in, d)))
	if bias {
		l.Bias = l.RegisterParameter("bias", autograd.Param(defaultParam(g, "NewLinear", []int{out}, in, d)))
	}
	return l
}

// Forward maps x of shape [..., in] to [..., out].
func (l *Linear) Forward(x *autograd.Var) *autograd.Var {
	s := x.Shape()
	if len(s) == 0 || s[len(s)-1] != l.InFeatures {
		panic(fmt.Sprintf("nn.Linear.Forward: input shape %v must end in in_features=%d", s, l.InFeatures))
	}
	y := x.MatMul(l.Weight.T())
	if l.Bias != nil {
		y = y.Add(l.Bias)
	}
	return y
}

// String describes the layer as PyTorch prints it.
func (l *Linear) String() string {
	return fmt.Sprintf("Linear(in_features=%d, out_features=%d, bias=%s)", l.InFeatures, l.OutFeatures, pyBool(l.Bias != nil))
}

// pickDType returns the optional dtype argument, Float32 by default.
func pickDType(dt []tensor.DType) tensor.DType {
	switch len(dt) {
	case 0:
		return tensor.Float32
	case 1:
		return dt[0]
	}
	panic(fmt.Sprintf("nn: at most one dtype may be given, got %v", dt))
}
