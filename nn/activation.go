package nn

import (
	"fmt"

	"github.com/emberml/ember/autograd"
)

// ReLU applies max(x, 0) elementwise. The zero value is ready to use.
type ReLU struct{ Base }

// NewReLU returns a ReLU module.
func NewReLU() *ReLU { return &ReLU{} }

// Forward applies the activation.
func (*ReLU) Forward(x *autograd.Var) *autograd.Var { return x.Relu() }

// String returns "ReLU()".
func (*ReLU) String() string { return "ReLU()" }

// Tanh applies the hyperbolic tangent elementwise. The zero value is ready
// to use.
type Tanh struct{ Base }

// NewTanh returns a Tanh module.
func NewTanh() *Tanh { return &Tanh{} }

// Forward applies the activation.
func (*Tanh) Forward(x *autograd.Var) *autograd.Var { return x.Tanh() }

// String returns "Tanh()".
func (*Tanh) String() string { return "Tanh()" }

// Sigmoid applies 1/(1+e^-x) elementwise. The zero value is ready to use.
type Sigmoid struct{ Base }

// NewSigmoid returns a Sigmoid module.
func NewSigmoid() *Sigmoid { return &Sigmoid{} }

// Forward applies the activation.
func (*Sigmoid) Forward(x *autograd.Var) *autograd.Var { return x.Sigmoid() }

// String returns "Sigmoid()".
func (*Sigmoid) String() string { return "Sigmoid()" }

// Identity returns its input unchanged. The zero value is ready to use.
type Identity struct{ Base }

// Forward returns x.
func (*Identity) Forward(x *autograd.Var) *autograd.Var { return x }

// Flatten merges the axes StartDim..EndDim (negative values count from the
// end) into one, as torch.nn.Flatten. NewFlatten(1, -1) keeps the batch
// axis and flattens the rest, PyTorch's default.
type Flatten struct {
	Base
	StartDim, EndDim int
}

// NewFlatten returns a Flatten module over axes start..end.
func NewFlatten(start, end int) *Flatten { return &Flatten{StartDim: start, EndDim: end} }

// Forward flattens x.
func (f *Flatten) Forward(x *autograd.Var) *autograd.Var { return x.Flatten(f.StartDim, f.EndDim) }

// String describes the module as PyTorch prints it.
func (f *Flatten) String() string {
	return fmt.Sprintf("Flatten(start_dim=%d, end_dim=%d)", f.StartDim, f.EndDim)
}
