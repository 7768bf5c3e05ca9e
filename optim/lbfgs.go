package optim

import (
	"errors"
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// LineSearch selects LBFGS's step-length rule.
type LineSearch int

const (
	// NoLineSearch takes the fixed step lr along the L-BFGS direction
	// (torch's line_search_fn=None).
	NoLineSearch LineSearch = iota
	// StrongWolfe searches for a step satisfying the strong Wolfe conditions
	// (c1 = 1e-4, c2 = 0.9) by bracketing and cubic interpolation, as
	// torch's line_search_fn="strong_wolfe".
	StrongWolfe
)

// LBFGSOptions are the hyperparameters of LBFGS, as torch.optim.LBFGS's.
// Zero LR, MaxIter, ToleranceGrad, ToleranceChange and HistorySize mean
// PyTorch's defaults (1, 20, 1e-7, 1e-9, 100); zero MaxEval means
// MaxIter·5/4.
type LBFGSOptions struct {
	// LR is the step length (the initial one with StrongWolfe).
	LR float64
	// MaxIter is the most iterations per StepClosure.
	MaxIter int
	// MaxEval is the most closure evaluations per StepClosure.
	MaxEval int
	// ToleranceGrad stops when the largest gradient entry is at most it.
	ToleranceGrad float64
	// ToleranceChange stops when the loss or the parameters change less.
	ToleranceChange float64
	// HistorySize is the number of curvature pairs kept.
	HistorySize int
	// LineSearch picks the step-length rule.
	LineSearch LineSearch
}

func (o *LBFGSOptions) withDefaults() {
	if o.LR == 0 {
		o.LR = 1
	}
	if o.MaxIter == 0 {
		o.MaxIter = 20
	}
	if o.MaxEval == 0 {
		o.MaxEval = o.MaxIter * 5 / 4
	}
	if o.ToleranceGrad == 0 {
		o.ToleranceGrad = 1e-7
	}
	if o.ToleranceChange == 0 {
		o.ToleranceChange = 1e-9
	}
	if o.HistorySize == 0 {
		o.HistorySize = 100
	}
}

// LBFGS is the limited-memory BFGS quasi-Newton method, as
// torch.optim.LBFGS (1.13, after minFunc): each StepClosure runs up to
// MaxIter iterations, each taking the two-loop-recursion direction from
// the last HistorySize curvature pairs and a fixed step or a strong Wolfe
// line search, re-evaluating the objective through the closure. The
// parameters are treated as one flat vector (all of them, one group); the
// direction and the history are kept in float64 whatever the parameters'
// dtype. The history persists across StepClosure calls, as torch's.
//
// LBFGS needs to re-evaluate the objective, so it has no plain Step: use
// StepClosure.
type LBFGS struct {
	params []*autograd.Var
	opt    LBFGSOptions

	funcEvals, nIter int
	d                []float64
	t                float64
	oldDirs, oldStps [][]float64
	ro               []float64
	hDiag            float64
	prevFlatGrad     []float64
	prevLoss         float64
}

// NewLBFGS returns an L-BFGS optimizer over params.
func NewLBFGS(params []*autograd.Var, opt LBFGSOptions) *LBFGS {
	const op = "optim.NewLBFGS"
	if len(params) == 0 {
		panic(op + ": empty parameter list")
	}
	opt.withDefaults()
	switch {
	case !(opt.LR > 0):
		panic(fmt.Sprintf("%s: invalid learning rate %v", op, opt.LR))
	case opt.MaxIter < 0 || opt.MaxEval < 0 || opt.HistorySize < 0:
		panic(fmt.Sprintf("%s: negative MaxIter (%d), MaxEval (%d) or HistorySize (%d)", op, opt.MaxIter, opt.MaxEval, opt.HistorySize))
	case opt.LineSearch != NoLineSearch && opt.LineSearch != StrongWolfe:
		panic(fmt.Sprintf("%s: unknown line search %d", op, opt.LineSearch))
	}
	for i, p := range params {
		if p == nil || !p.IsLeaf() || !p.RequiresGrad() || !p.DType().IsFloat() {
			panic(fmt.Sprintf("%s: parameter %d must be a floating-point leaf that requires a gradient (autograd.Param)", op, i))
		}
	}
	return &LBFGS{params: append([]*autograd.Var(nil), params...), opt: opt}
}

// Options returns the hyperparameters in use (defaults filled in).
func (l *LBFGS) Options() LBFGSOptions { return l.opt }

// LR returns the learning rate.
func (l *LBFGS) LR() float64 { return l.opt.LR }

// SetLR sets the learning rate.
func (l *LBFGS) SetLR(lr float64) {
	if !(lr > 0) {
		panic(fmt.Sprintf("optim.LBFGS.SetLR: invalid learning rate %v", lr))
	}
	l.opt.LR = lr
}

// FuncEvals returns the total number of closure evaluations so far.
func (l *LBFGS) FuncEvals() int { return l.funcEvals }

// Iterations returns the total number of iterations so far.
func (l *LBFGS) Iterations() int { return l.nIter }

// ZeroGrad clears every parameter's gradient.
func (l *LBFGS) ZeroGrad() {
	for _, p := range l.params {
		p.ZeroGrad()
	}
}

// flatGrad gathers the gradients into one float64 vector (zeros for a
// parameter without gradient).
func (l *LBFGS) flatGrad() ([]float64, error) {
	var out []float64
	for _, p := range l.params {
		g := p.Grad()
		if g == nil {
			out = append(out, make([]float64, p.Value().Numel())...)
			continue
		}
		if g.Numel() != p.Value().Numel() {
			return nil, fmt.Errorf("optim.LBFGS.StepClosure: gradient shape %v differs from parameter shape %v", g.Shape(), p.Shape())
		}
		out = append(out, g.Float64s()...)
	}
	return out, nil
}

// flatParams gathers the parameter values into one float64 vector.
func (l *LBFGS) flatParams() []float64 {
	var out []float64
	for _, p := range l.params {
		out = append(out, p.Value().Float64s()...)
	}
	return out
}

// setParams writes the flat vector x into the parameters.
func (l *LBFGS) setParams(x []float64) {
	off := 0
	for _, p := range l.params {
		w := p.Value()
		n := w.Numel()
		w.CopyFrom(tensor.FromSlice(x[off:off+n], w.Shape()...))
		off += n
	}
}

// addGrad moves the parameters by step·d.
func (l *LBFGS) addGrad(step float64, d []float64) {
	x := l.flatParams()
	for i := range x {
		x[i] += step * d[i]
	}
	l.setParams(x)
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func maxAbs(a []float64) float64 {
	m := 0.0
	for _, x := range a {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

// errNoClosure is returned by Step.
var errNoClosure = errors.New("optim.LBFGS.Step: L-BFGS re-evaluates the objective; call StepClosure")

// Step returns an error: L-BFGS needs a closure (see StepClosure).
func (l *LBFGS) Step() error { return errNoClosure }

// StepClosure runs one L-BFGS optimization step. closure must clear the
// gradients, compute the loss, run backward (so every parameter's Grad
// holds the loss's gradient) and return the loss; it is called several
// times. StepClosure returns the loss of the first evaluation, as torch's
// step, and the first error of the closure.
func (l *LBFGS) StepClosure(closure func() (float64, error)) (float64, error) {
	if closure == nil {
		return 0, errors.New("optim.LBFGS.StepClosure: nil closure")
	}
	o := l.opt
	eval := func() (float64, []float64, error) {
		f, err := closure()
		if err != nil {
			return 0, nil, err
		}
		g, err := l.flatGrad()
		return f, g, err
	}
	origLoss, flatGrad, err := eval()
	if err != nil {
		return 0, err
	}
	loss := origLoss
	currentEvals := 1
	l.funcEvals++
	if maxAbs(flatGrad) <= o.ToleranceGrad {
		return origLoss, nil
	}
	for nIter := 1; nIter <= o.MaxIter; nIter++ {
		l.nIter++
		if l.nIter == 1 {
			l.d = make([]float64, len(flatGrad))
			for i, g := range flatGrad {
				l.d[i] = -g
			}
			l.oldDirs, l.oldStps, l.ro = nil, nil, nil
			l.hDiag = 1
		} else {
			y := make([]float64, len(flatGrad))
			s := make([]float64, len(flatGrad))
			for i := range y {
				y[i] = flatGrad[i] - l.prevFlatGrad[i]
				s[i] = l.d[i] * l.t
			}
			ys := dot(y, s)
			if ys > 1e-10 {
				if len(l.oldDirs) == o.HistorySize {
					l.oldDirs, l.oldStps, l.ro = l.oldDirs[1:], l.oldStps[1:], l.ro[1:]
				}
				l.oldDirs = append(l.oldDirs, y)
				l.oldStps = append(l.oldStps, s)
				l.ro = append(l.ro, 1/ys)
				l.hDiag = ys / dot(y, y)
			}
			q := make([]float64, len(flatGrad))
			for i, g := range flatGrad {
				q[i] = -g
			}
			al := make([]float64, len(l.oldDirs))
			for i := len(l.oldDirs) - 1; i >= 0; i-- {
				al[i] = dot(l.oldStps[i], q) * l.ro[i]
				for j := range q {
					q[j] -= al[i] * l.oldDirs[i][j]
				}
			}
			for j := range q {
				q[j] *= l.hDiag
			}
			for i := range l.oldDirs {
				be := dot(l.oldDirs[i], q) * l.ro[i]
				for j := range q {
					q[j] += (al[i] - be) * l.oldStps[i][j]
				}
			}
			l.d = q
		}
		l.prevFlatGrad = append(l.prevFlatGrad[:0], flatGrad...)
		l.prevLoss = loss

		if l.nIter == 1 {
			sum := 0.0
			for _, g := range flatGrad {
				sum += math.Abs(g)
			}
			l.t = math.Min(1, 1/sum) * o.LR
		} else {
			l.t = o.LR
		}
		gtd := dot(flatGrad, l.d)
		if gtd > -o.ToleranceChange {
			break
		}
		lsEvals := 0
		optCond := false
		if o.LineSearch == StrongWolfe {
			x0 := l.flatParams()
			obj := func(t float64) (float64, []float64, error) {
				l.addGrad(t, l.d)
				f, g, err := eval()
				l.setParams(x0)
				return f, g, err
			}
			var t float64
			loss, flatGrad, t, lsEvals, err = strongWolfe(obj, l.t, l.d, loss, flatGrad, gtd, o.ToleranceChange)
			l.funcEvals += lsEvals
			if err != nil {
				return origLoss, err
			}
			l.t = t
			l.addGrad(l.t, l.d)
			optCond = maxAbs(flatGrad) <= o.ToleranceGrad
		} else {
			l.addGrad(l.t, l.d)
			if nIter != o.MaxIter {
				loss, flatGrad, err = eval()
				l.funcEvals++
				if err != nil {
					return origLoss, err
				}
				optCond = maxAbs(flatGrad) <= o.ToleranceGrad
				lsEvals = 1
			}
		}
		currentEvals += lsEvals
		if nIter == o.MaxIter || currentEvals >= o.MaxEval || optCond {
			break
		}
		if maxAbs(l.d)*math.Abs(l.t) <= o.ToleranceChange {
			break
		}
		if math.Abs(loss-l.prevLoss) < o.ToleranceChange {
			break
		}
	}
	return origLoss, nil
}

// cubicInterpolate returns the minimizer of the cubic through (x1, f1) and
// (x2, f2) with slopes g1 and g2, clamped to [lo, hi] (the points' span when
// bounds is nil), or the middle of the span if the cubic has no minimum.
func cubicInterpolate(x1, f1, g1, x2, f2, g2 float64, bounds *[2]float64) float64 {
	lo, hi := math.Min(x1, x2), math.Max(x1, x2)
	if bounds != nil {
		lo, hi = bounds[0], bounds[1]
	}
	d1 := g1 + g2 - 3*(f1-f2)/(x1-x2)
	d2sq := d1*d1 - g1*g2
	if d2sq >= 0 {
		d2 := math.Sqrt(d2sq)
		var minPos float64
		if x1 <= x2 {
			minPos = x2 - (x2-x1)*((g2+d2-d1)/(g2-g1+2*d2))
		} else {
			minPos = x1 - (x1-x2)*((g1+d2-d1)/(g1-g2+2*d2))
		}
		return math.Min(math.Max(minPos, lo), hi)
	}
	return (lo + hi) / 2
}

// strongWolfe searches along d from step t for a step satisfying the strong
// Wolfe conditions, as torch's _strong_wolfe (after minFunc's lswolfe). obj
// evaluates the loss and flat gradient at step t; f, g and gtd are the loss,
// gradient and directional derivative at step 0. It returns the loss and
// gradient at the chosen step, the step and the number of evaluations.
func strongWolfe(obj func(t float64) (float64, []float64, error), t float64, d []float64, f float64, g []float64,
	gtd, tolChange float64) (float64, []float64, float64, int, error) {
	const c1, c2, maxLS = 1e-4, 0.9, 25
	dNorm := maxAbs(d)
	fNew, gNew, err := obj(t)
	if err != nil {
		return 0, nil, 0, 1, err
	}
	evals := 1
	gtdNew := dot(gNew, d)
	tPrev, fPrev, gPrev, gtdPrev := 0.0, f, g, gtd
	done := false
	var bracket, bracketF, bracketGtd []float64
	var bracketG [][]float64
	lsIter := 0
	for lsIter < maxLS {
		if fNew > f+c1*t*gtd || (lsIter > 1 && fNew >= fPrev) {
			bracket, bracketF, bracketG, bracketGtd = []float64{tPrev, t}, []float64{fPrev, fNew}, [][]float64{gPrev, gNew}, []float64{gtdPrev, gtdNew}
			break
		}
		if math.Abs(gtdNew) <= -c2*gtd {
			bracket, bracketF, bracketG = []float64{t}, []float64{fNew}, [][]float64{gNew}
			done = true
			break
		}
		if gtdNew >= 0 {
			bracket, bracketF, bracketG, bracketGtd = []float64{tPrev, t}, []float64{fPrev, fNew}, [][]float64{gPrev, gNew}, []float64{gtdPrev, gtdNew}
			break
		}
		minStep := t + 0.01*(t-tPrev)
		maxStep := t * 10
		tmp := t
		t = cubicInterpolate(tPrev, fPrev, gtdPrev, t, fNew, gtdNew, &[2]float64{minStep, maxStep})
		tPrev, fPrev, gPrev, gtdPrev = tmp, fNew, gNew, gtdNew
		fNew, gNew, err = obj(t)
		evals++
		if err != nil {
			return 0, nil, 0, evals, err
		}
		gtdNew = dot(gNew, d)
		lsIter++
	}
	if lsIter == maxLS {
		// torch leaves bracket_gtd from before here; the zoom below never
		// runs in this case (ls_iter == max_ls), so it is not needed.
		bracket, bracketF, bracketG = []float64{0, t}, []float64{f, fNew}, [][]float64{g, gNew}
	}
	insufProgress := false
	lowPos, highPos := 0, 1
	if bracketF[0] > bracketF[len(bracketF)-1] {
		lowPos, highPos = 1, 0
	}
	for !done && lsIter < maxLS {
		if math.Abs(bracket[1]-bracket[0])*dNorm < tolChange {
			break
		}
		t = cubicInterpolate(bracket[0], bracketF[0], bracketGtd[0], bracket[1], bracketF[1], bracketGtd[1], nil)
		bMax, bMin := math.Max(bracket[0], bracket[1]), math.Min(bracket[0], bracket[1])
		eps := 0.1 * (bMax - bMin)
		if math.Min(bMax-t, t-bMin) < eps {
			if insufProgress || t >= bMax || t <= bMin {
				if math.Abs(t-bMax) < math.Abs(t-bMin) {
					t = bMax - eps
				} else {
					t = bMin + eps
				}
				insufProgress = false
			} else {
				insufProgress = true
			}
		} else {
			insufProgress = false
		}
		fNew, gNew, err = obj(t)
		evals++
		if err != nil {
			return 0, nil, 0, evals, err
		}
		gtdNew = dot(gNew, d)
		lsIter++
		if fNew > f+c1*t*gtd || fNew >= bracketF[lowPos] {
			bracket[highPos], bracketF[highPos], bracketG[highPos], bracketGtd[highPos] = t, fNew, gNew, gtdNew
			if bracketF[0] <= bracketF[1] {
				lowPos, highPos = 0, 1
			} else {
				lowPos, highPos = 1, 0
			}
		} else {
			if math.Abs(gtdNew) <= -c2*gtd {
				done = true
			} else if gtdNew*(bracket[highPos]-bracket[lowPos]) >= 0 {
				bracket[highPos], bracketF[highPos], bracketG[highPos], bracketGtd[highPos] = bracket[lowPos], bracketF[lowPos], bracketG[lowPos], bracketGtd[lowPos]
			}
			bracket[lowPos], bracketF[lowPos], bracketG[lowPos], bracketGtd[lowPos] = t, fNew, gNew, gtdNew
		}
	}
	return bracketF[lowPos], bracketG[lowPos], bracket[lowPos], evals, nil
}
