package nn

import (
	"math"
	"slices"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// ForwardBatchNorm returns relu(bn(c(x)) + residual): a convolution, the
// batch norm after it, an optional residual (nil: none) and an optional
// activation module (nil: none), as a residual network's blocks chain
// them. Each module runs through Call, as separate calls would, except in
// inference: when bn is in evaluation mode with running statistics,
// nothing is recorded (autograd.NeedsGrad), every tensor is float32 on the CPU, the
// activation is a ReLU and no module has forward hooks, bn is folded into
// the convolution (its scale γ/√(σ²+ε) into the cached packed weight, its
// shift into the bias) and the residual and ReLU are applied as the
// convolution writes its output, so the result matches the separate
// calls to float32 rounding without their passes over memory. The folded
// weight replaces the plain one in c's cache and is repacked when c's
// weight or bias, or bn's parameters, statistics or Eps change (in-place
// writes through HostData slices must call tensor.MarkWritten).
func (c *Conv2d) ForwardBatchNorm(x *autograd.Var, bn *BatchNorm, residual *autograd.Var, relu Module) *autograd.Var {
	if fold, ok := c.foldable(x, bn, residual, relu); ok {
		p := c.packs.lookup(c.Weight.Value(), fold, func() (*tensor.PackedConv2dWeight, *tensor.Tensor) {
			return c.packFolded(bn)
		})
		var r *tensor.Tensor
		if residual != nil {
			r = residual.Value()
		}
		return autograd.UnrecordedOp("Conv2dBatchNorm", func() *tensor.Tensor {
			return tensor.Conv2dPacked(x.Value(), p.packed, p.shift, c.Options, r, relu != nil)
		}, x, c.Weight, residual)
	}
	y := Call(bn, Call(c, x))
	if residual != nil {
		y = y.Add(residual)
	}
	if relu != nil {
		y = Call(relu, y)
	}
	return y
}

// bnFoldKey identifies what a folded pack was made from besides the
// convolution's weight: bn's eps and its tensors and their versions, and
// the convolution's bias. Its zero value stands for no fold.
type bnFoldKey struct {
	bn                           *BatchNorm
	eps                          float64
	gamma, beta, mean, vr, bias  *tensor.Tensor
	gammaV, betaV, meanV, vrV, b uint64
}

// version returns t's storage version, 0 for a nil t.
func version(t *tensor.Tensor) uint64 {
	if t == nil {
		return 0
	}
	return t.Version()
}

// varValue returns v's tensor, nil for a nil v.
func varValue(v *autograd.Var) *tensor.Tensor {
	if v == nil {
		return nil
	}
	return v.Value()
}

// foldable reports whether ForwardBatchNorm may fold bn into c for these
// arguments, and the cache key of the fold.
func (c *Conv2d) foldable(x *autograd.Var, bn *BatchNorm, residual *autograd.Var, relu Module) (bnFoldKey, bool) {
	if r, isReLU := relu.(*ReLU); relu != nil && (!isReLU || HasForwardHooks(r)) {
		return bnFoldKey{}, false
	}
	s := x.Shape()
	if bn.IsTraining() || bn.RunningMean == nil || bn.RunningVar == nil || HasForwardHooks(c) || HasForwardHooks(bn) ||
		c.PaddingMode != tensor.PadConstant || len(s) != 4 || s[1] != c.InChannels ||
		bn.NumFeatures != c.OutChannels || !slices.Contains(bn.spatialDims, 2) {
		return bnFoldKey{}, false
	}
	vars := []*autograd.Var{x, c.Weight, c.Bias, bn.Weight, bn.Bias, residual}
	if autograd.NeedsGrad(vars...) {
		return bnFoldKey{}, false
	}
	for _, v := range vars {
		if v != nil && !cpuFloat32(v.Value()) {
			return bnFoldKey{}, false
		}
	}
	if !cpuFloat32(bn.RunningMean) || !cpuFloat32(bn.RunningVar) {
		return bnFoldKey{}, false
	}
	k := bnFoldKey{bn: bn, eps: bn.Eps, gamma: varValue(bn.Weight), beta: varValue(bn.Bias),
		mean: bn.RunningMean, vr: bn.RunningVar, bias: varValue(c.Bias)}
	k.gammaV, k.betaV, k.meanV, k.vrV, k.b = version(k.gamma), version(k.beta), version(k.mean), version(k.vr), version(k.bias)
	return k, true
}

// cpuFloat32 reports whether t is a float32 tensor on the CPU.
func cpuFloat32(t *tensor.Tensor) bool {
	return t.DType() == tensor.Float32 && t.Device() == tensor.CPU
}

// HasForwardHooks reports whether Call would run forward hooks around m
// (not counting its submodules'): a model that fuses a module's work into
// another's must call it instead where it does.
func HasForwardHooks(m Module) bool {
	h, ok := m.(hooked)
	if !ok {
		return false
	}
	pre, post := h.forwardHooks()
	return len(pre)+len(post) > 0
}

// packFolded packs c's weight scaled by bn's γ/√(σ²+ε) per output channel
// and returns it with the bias that completes the batch norm,
// β + (b - μ)·scale (b: c's bias, or 0), computed in float64 and rounded
// once.
func (c *Conv2d) packFolded(bn *BatchNorm) (*tensor.PackedConv2dWeight, *tensor.Tensor) {
	n := c.OutChannels
	mean, vr := bn.RunningMean.Float64s(), bn.RunningVar.Float64s()
	gamma, beta, bias := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range gamma {
		gamma[i] = 1
	}
	if bn.Weight != nil {
		gamma = bn.Weight.Value().Float64s()
	}
	if bn.Bias != nil {
		beta = bn.Bias.Value().Float64s()
	}
	if c.Bias != nil {
		bias = c.Bias.Value().Float64s()
	}
	scale, shift := make([]float32, n), make([]float32, n)
	for i := range n {
		s := gamma[i] / math.Sqrt(vr[i]+bn.Eps)
		scale[i] = float32(s)
		shift[i] = float32(beta[i] + (bias[i]-mean[i])*s)
	}
	w := c.Weight.Value()
	return tensor.PackScaledConv2dWeight(w, tensor.FromSlice(scale, n), max(c.Options.Groups, 1)), tensor.FromSlice(shift, n)
}
