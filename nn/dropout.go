package nn

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Dropout zeroes each element with probability P during training and scales
// the survivors by 1/(1-P), as torch.nn.Dropout; in evaluation mode it
// returns its input. The masks come from the module's generator, so a seed
// makes a training run reproducible.
type Dropout struct {
	Base
	P   float64
	gen *tensor.Generator
}

// NewDropout returns a Dropout module with drop probability p in [0, 1]
// drawing its masks from g.
func NewDropout(p float64, g *tensor.Generator) *Dropout {
	if p < 0 || p > 1 || p != p {
		panic(fmt.Sprintf("nn.NewDropout: probability %v is not in [0, 1]", p))
	}
	checkGen("NewDropout", g)
	return &Dropout{P: p, gen: g}
}

// Forward applies dropout in training mode and is the identity otherwise.
func (d *Dropout) Forward(x *autograd.Var) *autograd.Var {
	return autograd.Dropout(x, d.P, d.IsTraining(), d.gen)
}

// Generator returns the generator Dropout draws its dropout masks from.
func (d *Dropout) Generator() *tensor.Generator { return d.gen }

// SetGenerator makes Dropout draw its dropout masks from g from now
// on. (To resume a run, restoring the old generator's state with
// UnmarshalBinary works as well.) It panics if g is nil.
func (d *Dropout) SetGenerator(g *tensor.Generator) {
	checkGen("Dropout.SetGenerator", g)
	d.gen = g
}

// String describes the module as PyTorch prints it.
func (d *Dropout) String() string { return fmt.Sprintf("Dropout(p=%g)", d.P) }
