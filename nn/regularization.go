package nn

import (
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// checkPenaltyParams panics unless params is non-empty and free of nils.
func checkPenaltyParams(op string, params []*autograd.Var) {
	if len(params) == 0 {
		panic("nn." + op + ": no parameters")
	}
	for i, p := range params {
		if p == nil {
			panic(fmt.Sprintf("nn.%s: parameter %d is nil", op, i))
		}
	}
}

// L1Penalty returns Σ|p| over every element of every parameter, a scalar
// to add (times a coefficient) to a loss for L1 regularization (lasso).
func L1Penalty(params []*autograd.Var) *autograd.Var {
	checkPenaltyParams("L1Penalty", params)
	var s *autograd.Var
	for _, p := range params {
		t := p.Abs().Sum(nil, false)
		if s == nil {
			s = t
		} else {
			s = s.Add(t)
		}
	}
	return s
}

// L2Penalty returns Σp² over every element of every parameter (the squared
// L2 norm, without the ½ some texts use), a scalar to add (times a
// coefficient) to a loss for L2 regularization (ridge). λ·L2Penalty/2 has
// the gradient λ·p that SGD's WeightDecay adds.
func L2Penalty(params []*autograd.Var) *autograd.Var {
	checkPenaltyParams("L2Penalty", params)
	var s *autograd.Var
	for _, p := range params {
		t := p.Square().Sum(nil, false)
		if s == nil {
			s = t
		} else {
			s = s.Add(t)
		}
	}
	return s
}

// ElasticNetPenalty returns alpha·(l1Ratio·Σ|p| + (1-l1Ratio)/2·Σp²), the
// elastic-net penalty as scikit-learn's ElasticNet writes it. It panics
// unless l1Ratio is in [0, 1].
func ElasticNetPenalty(params []*autograd.Var, alpha, l1Ratio float64) *autograd.Var {
	if !(l1Ratio >= 0 && l1Ratio <= 1) {
		panic(fmt.Sprintf("nn.ElasticNetPenalty: l1Ratio %v must be in [0, 1]", l1Ratio))
	}
	checkPenaltyParams("ElasticNetPenalty", params)
	return L1Penalty(params).MulScalar(alpha * l1Ratio).Add(L2Penalty(params).MulScalar(alpha * (1 - l1Ratio) / 2))
}

// MaxNorm applies a max-norm constraint in place: every slice of t along
// its first dimension (every row of a Linear weight, every output filter of
// a convolution) whose L2 norm exceeds maxNorm is rescaled by
// maxNorm/(norm + 1e-7), as torch.renorm(t, 2, 0, maxNorm) computes; the
// others are left alone. Call it on parameter values after each optimizer
// step. It returns t and panics for a 0-D t or a negative maxNorm.
func MaxNorm(t *tensor.Tensor, maxNorm float64) *tensor.Tensor {
	if t.Dim() == 0 {
		panic("nn.MaxNorm: need at least one dimension, got a scalar")
	}
	if !(maxNorm >= 0) {
		panic(fmt.Sprintf("nn.MaxNorm: invalid max norm %v", maxNorm))
	}
	axes := make([]int, 0, t.Dim()-1)
	for d := 1; d < t.Dim(); d++ {
		axes = append(axes, d)
	}
	norm := t.To(tensor.Float64).Norm(2, axes, true).Float64s()
	scale := make([]float64, len(norm))
	for i, n := range norm {
		scale[i] = 1
		if n > maxNorm {
			scale[i] = maxNorm / (n + 1e-7)
		}
	}
	shape := make([]int, t.Dim())
	for i := range shape {
		shape[i] = 1
	}
	shape[0] = len(scale)
	return t.CopyFrom(t.Mul(tensor.FromSlice(scale, shape...).To(t.DType()).ToDeviceOf(t)))
}

// paramHost is implemented by modules embedding Base.
type paramHost interface {
	RegisterParameter(name string, p *autograd.Var) *autograd.Var
	RegisterBuffer(name string, t *tensor.Tensor) *tensor.Tensor
	RegisterForwardPreHook(hook ForwardPreHook) *autograd.HookHandle
	removeParam(name string) *autograd.Var
	removeBuffer(name string)
}

// removeParam unregisters the module's own parameter name and returns it,
// or nil if there is none.
func (b *Base) removeParam(name string) *autograd.Var {
	for i, p := range b.params {
		if p.Name == name {
			b.params = slices.Delete(b.params, i, i+1)
			return p.Param
		}
	}
	return nil
}

// removeBuffer unregisters the module's own buffer name, if any.
func (b *Base) removeBuffer(name string) {
	b.buffers = slices.DeleteFunc(b.buffers, func(nb NamedBuffer) bool { return nb.Name == name })
}

// setParamField stores w in every exported *autograd.Var field of the
// struct m points to that holds old, and returns how many it set.
func setParamField(m Module, old, w *autograd.Var) int {
	rv := reflect.ValueOf(m)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return 0
	}
	s := rv.Elem()
	varType := reflect.TypeOf(old)
	n := 0
	for i := range s.NumField() {
		f := s.Field(i)
		if f.Type() == varType && f.CanSet() && f.Interface().(*autograd.Var) == old {
			f.Set(reflect.ValueOf(w))
			n++
		}
	}
	return n
}

// reparametrize prepares m for replacing its parameter name: it returns
// m's hook and registration interface and the parameter, and checks that an
// exported field of m holds it (the field Forward reads).
func reparametrize(op string, m Module, name string) (paramHost, *autograd.Var) {
	host, ok := m.(paramHost)
	if !ok {
		panic(fmt.Sprintf("nn.%s: %T does not embed nn.Base", op, m))
	}
	var p *autograd.Var
	for _, np := range m.NamedParameters() {
		if np.Name == name {
			p = np.Param
		}
	}
	if p == nil {
		panic(fmt.Sprintf("nn.%s: %T has no parameter %q of its own", op, m, name))
	}
	if setParamField(m, p, p) == 0 {
		panic(fmt.Sprintf("nn.%s: no exported *autograd.Var field of %T holds parameter %q", op, m, name))
	}
	return host, p
}

// normExcept returns the L2 norm of v over every axis but dim (every axis
// when dim < 0), keeping dimensions.
func normExcept(v *autograd.Var, dim int) *autograd.Var {
	var axes []int
	for d := range v.Dim() {
		if d != dim {
			axes = append(axes, d)
		}
	}
	if dim < 0 {
		return v.Norm(2, nil, false)
	}
	return v.Norm(2, axes, true)
}

// WeightNorm is the weight normalization of one parameter of a module,
// installed by ApplyWeightNorm.
type WeightNorm struct {
	// G is the magnitude parameter ("<name>_g").
	G *autograd.Var
	// V is the direction parameter ("<name>_v").
	V *autograd.Var

	m      Module
	host   paramHost
	name   string
	dim    int
	weight *autograd.Var // what the module's field holds
	hook   *autograd.HookHandle
}

// WeightNormOf returns g·v/‖v‖, the norm taken over every axis but dim (over
// all axes when dim < 0): the weight that weight normalization computes.
func WeightNormOf(v, g *autograd.Var, dim int) *autograd.Var {
	if dim >= v.Dim() {
		panic(fmt.Sprintf("nn.WeightNormOf: dim %d out of range for shape %v", dim, v.Shape()))
	}
	return v.Mul(g.Div(normExcept(v, dim)))
}

// ApplyWeightNorm reparametrizes the parameter name of m (Salimans and
// Kingma 2016), as torch.nn.utils.weight_norm: the parameter is replaced by
// "<name>_g" (its norm over every axis but dim, keeping dimensions; a
// scalar when dim < 0) and "<name>_v" (its value), registered on m in that
// order, and before each forward run through Call the field of m that held
// the parameter is set to g·v/‖v‖. torch's default dim is 0. The parameter
// must be m's own and held in an exported *autograd.Var field (Linear's
// Weight, Conv2d's Weight...).
func ApplyWeightNorm(m Module, name string, dim int) *WeightNorm {
	host, p := reparametrize("ApplyWeightNorm", m, name)
	if dim >= p.Dim() {
		panic(fmt.Sprintf("nn.ApplyWeightNorm: dim %d out of range for %q of shape %v", dim, name, p.Shape()))
	}
	v := autograd.Param(p.Value().Clone())
	g := autograd.Param(normExcept(autograd.New(p.Value()), dim).Value().Clone())
	host.removeParam(name)
	host.RegisterParameter(name+"_g", g)
	host.RegisterParameter(name+"_v", v)
	w := &WeightNorm{G: g, V: v, m: m, host: host, name: name, dim: dim, weight: p}
	w.hook = host.RegisterForwardPreHook(func(Module, *autograd.Var) *autograd.Var {
		w.recompute()
		return nil
	})
	w.recompute()
	return w
}

// recompute stores g·v/‖v‖ in the module's field.
func (w *WeightNorm) recompute() {
	nw := WeightNormOf(w.V, w.G, w.dim)
	setParamField(w.m, w.weight, nw)
	w.weight = nw
}

// Remove undoes ApplyWeightNorm: the module gets back a single parameter
// name holding the current g·v/‖v‖.
func (w *WeightNorm) Remove() {
	w.hook.Remove()
	p := autograd.Param(WeightNormOf(w.V, w.G, w.dim).Value().Clone())
	w.host.removeParam(w.name + "_g")
	w.host.removeParam(w.name + "_v")
	w.host.RegisterParameter(w.name, p)
	setParamField(w.m, w.weight, p)
	w.weight = p
}

// SpectralNorm is the spectral normalization of one parameter of a module,
// installed by ApplySpectralNorm.
type SpectralNorm struct {
	// Orig is the unnormalized parameter ("<name>_orig").
	Orig *autograd.Var
	// U and V are the power iteration's left and right singular vector
	// estimates (buffers "<name>_u" and "<name>_v"), updated in place.
	U, V *tensor.Tensor

	m      Module
	host   paramHost
	name   string
	dim    int
	iters  int
	eps    float64
	weight *autograd.Var
	hook   *autograd.HookHandle
}

// ApplySpectralNorm reparametrizes the parameter name of m (Miyato et al.
// 2018), as torch.nn.utils.spectral_norm (1.13): the parameter becomes
// "<name>_orig" and two buffers "<name>_u" and "<name>_v" (random unit
// vectors from g) are registered; before each forward run through Call, in
// training mode, nPowerIterations steps of power iteration
//
//	v = normalize(Wᵀu), u = normalize(W v)
//
// refine u and v (normalize divides by max(‖x‖, eps)), where W is the
// parameter with dim moved first and flattened to a matrix; then the
// module's field is set to W_orig/σ with σ = uᵀ W v, u and v held constant
// for the gradient. In evaluation mode u and v are used as they are. torch
// uses nPowerIterations 1, eps 1e-12 and dim 0 (1 for transposed
// convolutions).
func ApplySpectralNorm(g *tensor.Generator, m Module, name string, nPowerIterations int, eps float64, dim int) *SpectralNorm {
	checkGen("ApplySpectralNorm", g)
	host, p := reparametrize("ApplySpectralNorm", m, name)
	if dim < 0 || dim >= p.Dim() {
		panic(fmt.Sprintf("nn.ApplySpectralNorm: dim %d out of range for %q of shape %v", dim, name, p.Shape()))
	}
	if nPowerIterations < 0 || !(eps > 0) {
		panic(fmt.Sprintf("nn.ApplySpectralNorm: need nPowerIterations >= 0 and eps > 0, got %d and %v", nPowerIterations, eps))
	}
	s := &SpectralNorm{m: m, host: host, name: name, dim: dim, iters: nPowerIterations, eps: eps, weight: p}
	h := p.Shape()[dim]
	w := p.Value().Numel() / max(h, 1)
	s.U = normalizeVec(g.Normal([]int{h}, 0, 1, p.DType()), eps)
	s.V = normalizeVec(g.Normal([]int{w}, 0, 1, p.DType()), eps)
	s.Orig = autograd.Param(p.Value().Clone())
	host.removeParam(name)
	host.RegisterParameter(name+"_orig", s.Orig)
	host.RegisterBuffer(name+"_u", s.U)
	host.RegisterBuffer(name+"_v", s.V)
	s.hook = host.RegisterForwardPreHook(func(mod Module, _ *autograd.Var) *autograd.Var {
		s.recompute(mod.IsTraining())
		return nil
	})
	s.recompute(false)
	return s
}

// normalizeVec returns x/max(‖x‖, eps).
func normalizeVec(x *tensor.Tensor, eps float64) *tensor.Tensor {
	n := math.Max(x.To(tensor.Float64).Norm(2, nil, false).Item(), eps)
	return x.DivScalar(n)
}

// matrix returns t with dim moved first, flattened to [shape[dim], rest].
func (s *SpectralNorm) matrix(v *autograd.Var) *autograd.Var {
	if s.dim != 0 {
		perm := []int{s.dim}
		for d := range v.Dim() {
			if d != s.dim {
				perm = append(perm, d)
			}
		}
		v = v.Permute(perm...)
	}
	return v.Reshape(v.Shape()[0], -1)
}

// recompute runs the power iteration (when iterate) and stores W_orig/σ in
// the module's field.
func (s *SpectralNorm) recompute(iterate bool) {
	wm := s.matrix(s.Orig)
	if iterate {
		w := wm.Value()
		u, v := s.U, s.V
		for range s.iters {
			v = normalizeVec(w.T().MatMul(u.Reshape(-1, 1)).Reshape(-1), s.eps)
			u = normalizeVec(w.MatMul(v.Reshape(-1, 1)).Reshape(-1), s.eps)
		}
		s.U.CopyFrom(u)
		s.V.CopyFrom(v)
	}
	outer := s.U.Clone().Reshape(-1, 1).Mul(s.V.Clone().Reshape(1, -1))
	sigma := wm.Mul(autograd.New(outer)).Sum(nil, false)
	nw := s.Orig.Div(sigma)
	setParamField(s.m, s.weight, nw)
	s.weight = nw
}

// Sigma returns the current estimate uᵀ W v of the largest singular value
// of the unnormalized parameter.
func (s *SpectralNorm) Sigma() float64 {
	wm := s.matrix(autograd.New(s.Orig.Value())).Value()
	return s.U.Reshape(1, -1).MatMul(wm).MatMul(s.V.Reshape(-1, 1)).Item()
}

// Remove undoes ApplySpectralNorm: the module gets back a single parameter
// name holding the current W_orig/σ, and the buffers are dropped.
func (s *SpectralNorm) Remove() {
	s.hook.Remove()
	s.recompute(false)
	p := autograd.Param(s.weight.Value().Clone())
	s.host.removeParam(s.name + "_orig")
	s.host.removeBuffer(s.name + "_u")
	s.host.removeBuffer(s.name + "_v")
	s.host.RegisterParameter(s.name, p)
	setParamField(s.m, s.weight, p)
	s.weight = p
}
