package autograd

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// GradCheckOptions sets the finite-difference step and the tolerances, with
// PyTorch's gradcheck defaults when zero.
type GradCheckOptions struct {
	Eps  float64 // step, default 1e-6
	Atol float64 // absolute tolerance, default 1e-5
	Rtol float64 // relative tolerance, default 1e-3
}

func (o GradCheckOptions) withDefaults() GradCheckOptions {
	if o.Eps == 0 {
		o.Eps = 1e-6
	}
	if o.Atol == 0 {
		o.Atol = 1e-5
	}
	if o.Rtol == 0 {
		o.Rtol = 1e-3
	}
	return o
}

// GradCheck compares the gradients autograd computes for f with central
// finite differences in float64, over the whole Jacobian. Floating inputs
// are converted to Float64 and differentiated; other inputs are passed
// through unchanged. It returns nil when every entry agrees. Inputs on
// another device are differentiated there: the perturbed copies and the
// output seeds are built on the host and moved to the inputs' device.
func GradCheck(f func(in []*Var) *Var, inputs ...*tensor.Tensor) error {
	return GradCheckWith(GradCheckOptions{}, f, inputs...)
}

// GradCheckWith is GradCheck with explicit options.
func GradCheckWith(opt GradCheckOptions, f func(in []*Var) *Var, inputs ...*tensor.Tensor) error {
	opt = opt.withDefaults()
	xs := make([]*tensor.Tensor, len(inputs))
	for i, t := range inputs {
		if t.DType().IsFloat() {
			xs[i] = t.To(tensor.Float64).Clone()
		} else {
			xs[i] = t
		}
	}
	vars := func(ts []*tensor.Tensor, grad bool) []*Var {
		vs := make([]*Var, len(ts))
		for i, t := range ts {
			if grad && t.DType().IsFloat() {
				vs[i] = Param(t)
			} else {
				vs[i] = New(t)
			}
		}
		return vs
	}
	in := vars(xs, true)
	out := f(in)
	if out.DType() != tensor.Float64 {
		return fmt.Errorf("autograd.GradCheck: f returned %s; it must keep Float64 inputs in Float64", out.DType())
	}
	nOut := out.value.Numel()
	var diffIn []int
	for i, v := range in {
		if v.requiresGrad {
			diffIn = append(diffIn, i)
		}
	}
	if len(diffIn) == 0 {
		return fmt.Errorf("autograd.GradCheck: no floating-point input to differentiate")
	}
	// Analytic Jacobian, one row per output element.
	analytic := make([][][]float64, len(inputs)) // [input][out][elem]
	for _, i := range diffIn {
		analytic[i] = make([][]float64, nOut)
	}
	targets := make([]*Var, len(diffIn))
	for k, i := range diffIn {
		targets[k] = in[i]
	}
	if out.requiresGrad {
		for j := range nOut {
			oh := make([]float64, nOut)
			oh[j] = 1
			gs, err := Grad([]*Var{out}, targets, []*tensor.Tensor{tensor.FromSlice(oh).Reshape(out.Shape()...).ToDeviceOf(out.value)}, Options{RetainGraph: true})
			if err != nil {
				return err
			}
			for k, i := range diffIn {
				analytic[i][j] = gs[k].value.Float64s()
			}
		}
	} else {
		for _, i := range diffIn {
			for j := range nOut {
				analytic[i][j] = make([]float64, xs[i].Numel())
			}
		}
	}
	// Numerical Jacobian, one column per input element.
	for _, i := range diffIn {
		base := xs[i].Float64s()
		shape := xs[i].Shape()
		for e := range base {
			eval := func(delta float64) []float64 {
				p := append([]float64(nil), base...)
				p[e] += delta
				ts := append([]*tensor.Tensor(nil), xs...)
				ts[i] = tensor.FromSlice(p).Reshape(shape...).ToDeviceOf(xs[i])
				return f(vars(ts, false)).value.Float64s()
			}
			hi, lo := eval(opt.Eps), eval(-opt.Eps)
			for j := range nOut {
				num := (hi[j] - lo[j]) / (2 * opt.Eps)
				an := analytic[i][j][e]
				if math.Abs(num-an) > opt.Atol+opt.Rtol*math.Abs(num) || math.IsNaN(an) != math.IsNaN(num) {
					return fmt.Errorf("autograd.GradCheck: input %d element %d, output element %d: analytic %.8g, numerical %.8g", i, e, j, an, num)
				}
			}
		}
	}
	return nil
}

// GradGradCheck checks second derivatives: it differentiates f with
// CreateGraph, weights the first gradients by fixed values, and runs
// GradCheck on the result.
func GradGradCheck(f func(in []*Var) *Var, inputs ...*tensor.Tensor) error {
	g := func(in []*Var) *Var {
		out := f(in)
		var targets []*Var
		for _, v := range in {
			if v.requiresGrad {
				targets = append(targets, v)
			}
		}
		if len(targets) == 0 {
			// Finite-difference evaluations pass plain Vars; rebuild them as
			// parameters so the first gradient can be formed.
			for i, v := range in {
				if v.DType().IsFloat() {
					in[i] = Param(v.value)
				}
			}
			out = f(in)
			for _, v := range in {
				if v.requiresGrad {
					targets = append(targets, v)
				}
			}
		}
		w := tensor.Linspace(0.5, 1.5, out.value.Numel(), tensor.Float64).Reshape(out.Shape()...).ToDeviceOf(out.value)
		gs, err := Grad([]*Var{out}, targets, []*tensor.Tensor{w}, Options{CreateGraph: true})
		if err != nil {
			panic(err)
		}
		parts := make([]*Var, len(gs))
		for k, gv := range gs {
			parts[k] = gv.Reshape(-1)
		}
		return Concat(parts, 0)
	}
	return GradCheck(g, inputs...)
}
