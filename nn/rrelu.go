package nn

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// RReLU is the randomized leaky ReLU, as torch.nn.RReLU: x for x ≥ 0 and
// a·x elsewhere. In training mode every element draws its own slope a
// from U(Lower, Upper) (from the module's generator); in evaluation mode
// a is the fixed (Lower+Upper)/2.
type RReLU struct {
	Base
	Lower, Upper float64
	gen          *tensor.Generator
}

// NewRReLU returns an RReLU module drawing its training slopes from g.
// PyTorch's defaults are lower = 1/8 and upper = 1/3.
func NewRReLU(lower, upper float64, g *tensor.Generator) *RReLU {
	if !(lower <= upper) {
		panic(fmt.Sprintf("nn.NewRReLU: lower bound %g must not exceed upper bound %g", lower, upper))
	}
	checkGen("NewRReLU", g)
	return &RReLU{Lower: lower, Upper: upper, gen: g}
}

// Forward applies the randomized leaky ReLU to x.
func (r *RReLU) Forward(x *autograd.Var) *autograd.Var {
	if !x.DType().IsFloat() {
		panic(fmt.Sprintf("nn.RReLU.Forward: input must be floating point, got %s", x.DType()))
	}
	if !r.IsTraining() {
		return autograd.LeakyReLU(x, (r.Lower+r.Upper)/2)
	}
	slopes := r.gen.Uniform(x.Shape(), r.Lower, r.Upper, x.DType()).ToDeviceOf(x.Value()) // drawn on the host
	positive := x.Value().Ge(tensor.Zeros(nil, x.DType()))
	scale := tensor.Where(positive, tensor.Ones(nil, x.DType()), slopes)
	return x.Mul(autograd.New(scale))
}

// Generator returns the generator RReLU draws its training slopes from.
func (r *RReLU) Generator() *tensor.Generator { return r.gen }

// SetGenerator makes RReLU draw its training slopes from g from now
// on. (To resume a run, restoring the old generator's state with
// UnmarshalBinary works as well.) It panics if g is nil.
func (r *RReLU) SetGenerator(g *tensor.Generator) {
	checkGen("RReLU.SetGenerator", g)
	r.gen = g
}

// String describes the module as PyTorch prints it.
func (r *RReLU) String() string {
	return "RReLU(lower=" + pyFloat(r.Lower) + ", upper=" + pyFloat(r.Upper) + ")"
}
