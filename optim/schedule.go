package optim

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/emberml/ember/tensor"
)

// Scheduler adjusts an optimizer's learning rates, once per step (usually
// once per epoch or per batch, after the optimizer's Step). Every scheduler
// here follows torch.optim.lr_scheduler (1.13) exactly: creating one sets
// the learning rates of step 0 (PyTorch's initial step), and each Step moves
// to the next step. Where PyTorch computes a learning rate from the
// optimizer's current one (its recursive "chainable" form), so does the
// scheduler, so several schedulers can be chained on one optimizer.
//
// A scheduler's base learning rates are the optimizer's learning rates when
// it is created (PyTorch's initial_lr).
//
// A scheduler's position is state: StateDict and LoadStateDict save and
// restore it (as an optimizer's), so that a run resumed from a checkpoint
// continues the schedule exactly where it stopped. ReduceLROnPlateau, which
// steps on a metric rather than by Step, has the same two methods.
type Scheduler interface {
	// Step advances the schedule by one step and sets the learning rates.
	Step()
	// LastLR returns the learning rates the last step set, one per group.
	LastLR() []float64
	// StateDict returns the schedule's position (step counts, base and last
	// learning rates and whatever else the schedule carries from step to
	// step) as tensors. Hyperparameters are not included: they come from
	// the code that creates the scheduler.
	StateDict() map[string]*tensor.Tensor
	// LoadStateDict restores a state dict from StateDict of a scheduler of
	// the same kind over as many parameter groups; on error the scheduler
	// is unchanged. It does not set the optimizer's learning rates: load
	// the optimizer's state dict for those.
	LoadStateDict(sd map[string]*tensor.Tensor) error
}

// lrRule is implemented by each epoch-indexed schedule.
type lrRule interface {
	// chained returns the learning rates of step s.lastEpoch from the
	// current ones (PyTorch's get_lr).
	chained(s *lrSched) []float64
	// closed returns the learning rates of step s.lastEpoch from the base
	// learning rates alone (PyTorch's _get_closed_form_lr, or get_lr where
	// there is none).
	closed(s *lrSched) []float64
}

// lrSched is what the epoch-indexed schedulers share (PyTorch's
// _LRScheduler).
type lrSched struct {
	name      string
	opt       Optimizer
	baseLRs   []float64
	lastEpoch int
	lastLR    []float64
	rule      lrRule
}

// start records the base learning rates and performs the initial step.
func (s *lrSched) start(name string, opt Optimizer, rule lrRule) {
	if opt == nil {
		panic("optim.New" + name + ": nil optimizer")
	}
	s.name, s.opt, s.rule = name, opt, rule
	s.baseLRs = s.currentLRs()
	s.lastEpoch = -1
	s.Step()
}

func (s *lrSched) currentLRs() []float64 {
	lrs := make([]float64, s.opt.NumGroups())
	for i := range lrs {
		lrs[i] = s.opt.LR(i)
	}
	return lrs
}

func (s *lrSched) apply(lrs []float64) {
	for i, lr := range lrs {
		s.opt.SetGroupLR(i, lr)
	}
	s.lastLR = s.currentLRs()
}

// Step advances the schedule by one step.
func (s *lrSched) Step() {
	s.lastEpoch++
	s.apply(s.rule.chained(s))
}

// stepEpoch jumps to step epoch using the closed form.
func (s *lrSched) stepEpoch(epoch int) {
	s.lastEpoch = epoch
	s.apply(s.rule.closed(s))
}

func (s *lrSched) core() *lrSched { return s }

// LastLR returns the learning rates the last step set.
func (s *lrSched) LastLR() []float64 { return slices.Clone(s.lastLR) }

// LastEpoch returns the index of the last step (0 after creation).
func (s *lrSched) LastEpoch() int { return s.lastEpoch }

// scaled returns the current learning rates times f.
func (s *lrSched) scaled(f float64) []float64 {
	lrs := s.currentLRs()
	for i := range lrs {
		lrs[i] *= f
	}
	return lrs
}

// fromBase returns f(base) for each base learning rate.
func (s *lrSched) fromBase(f func(base float64) float64) []float64 {
	lrs := make([]float64, len(s.baseLRs))
	for i, b := range s.baseLRs {
		lrs[i] = f(b)
	}
	return lrs
}

// pyMod is Python's integer modulo (the sign of the divisor).
func pyMod(a, b int) int { return ((a % b) + b) % b }

// perGroup expands a list of per-group values (one value applies to all).
func perGroup(op, name string, opt Optimizer, v []float64) []float64 {
	n := opt.NumGroups()
	switch len(v) {
	case 1:
		out := make([]float64, n)
		for i := range out {
			out[i] = v[0]
		}
		return out
	case n:
		return slices.Clone(v)
	}
	panic(fmt.Sprintf("%s: %s has %d values for %d parameter groups (want 1 or %d)", op, name, len(v), n, n))
}

// StepLR multiplies the learning rates by Gamma every StepSize steps, as
// torch.optim.lr_scheduler.StepLR.
type StepLR struct {
	lrSched
	stepSize int
	gamma    float64
}

// NewStepLR returns a StepLR scheduler.
func NewStepLR(opt Optimizer, stepSize int, gamma float64) *StepLR {
	if stepSize <= 0 {
		panic(fmt.Sprintf("optim.NewStepLR: step size %d must be positive", stepSize))
	}
	s := &StepLR{stepSize: stepSize, gamma: gamma}
	s.start("StepLR", opt, s)
	return s
}

func (r *StepLR) chained(s *lrSched) []float64 {
	if s.lastEpoch == 0 || s.lastEpoch%r.stepSize != 0 {
		return s.currentLRs()
	}
	return s.scaled(r.gamma)
}

func (r *StepLR) closed(s *lrSched) []float64 {
	k := float64(s.lastEpoch / r.stepSize)
	return s.fromBase(func(b float64) float64 { return b * math.Pow(r.gamma, k) })
}

// MultiStepLR multiplies the learning rates by Gamma at each milestone step
// (a milestone listed twice multiplies by Gamma²), as
// torch.optim.lr_scheduler.MultiStepLR.
type MultiStepLR struct {
	lrSched
	milestones []int // sorted, with repeats
	gamma      float64
}

// NewMultiStepLR returns a MultiStepLR scheduler.
func NewMultiStepLR(opt Optimizer, milestones []int, gamma float64) *MultiStepLR {
	ms := slices.Clone(milestones)
	sort.Ints(ms)
	s := &MultiStepLR{milestones: ms, gamma: gamma}
	s.start("MultiStepLR", opt, s)
	return s
}

func (r *MultiStepLR) chained(s *lrSched) []float64 {
	n := 0
	for _, m := range r.milestones {
		if m == s.lastEpoch {
			n++
		}
	}
	if n == 0 {
		return s.currentLRs()
	}
	return s.scaled(math.Pow(r.gamma, float64(n)))
}

func (r *MultiStepLR) closed(s *lrSched) []float64 {
	// bisect_right: milestones <= lastEpoch.
	k := float64(sort.SearchInts(r.milestones, s.lastEpoch+1))
	return s.fromBase(func(b float64) float64 { return b * math.Pow(r.gamma, k) })
}

// ExponentialLR multiplies the learning rates by Gamma every step, as
// torch.optim.lr_scheduler.ExponentialLR.
type ExponentialLR struct {
	lrSched
	gamma float64
}

// NewExponentialLR returns an ExponentialLR scheduler.
func NewExponentialLR(opt Optimizer, gamma float64) *ExponentialLR {
	s := &ExponentialLR{gamma: gamma}
	s.start("ExponentialLR", opt, s)
	return s
}

func (r *ExponentialLR) chained(s *lrSched) []float64 {
	if s.lastEpoch == 0 {
		return s.currentLRs()
	}
	return s.scaled(r.gamma)
}

func (r *ExponentialLR) closed(s *lrSched) []float64 {
	e := float64(s.lastEpoch)
	return s.fromBase(func(b float64) float64 { return b * math.Pow(r.gamma, e) })
}

// CosineAnnealingLR anneals the learning rates from their base values to
// EtaMin along a half cosine over TMax steps, then back up, periodically,
// as torch.optim.lr_scheduler.CosineAnnealingLR (in its recursive form).
type CosineAnnealingLR struct {
	lrSched
	tMax   int
	etaMin float64
}

// NewCosineAnnealingLR returns a CosineAnnealingLR scheduler.
func NewCosineAnnealingLR(opt Optimizer, tMax int, etaMin float64) *CosineAnnealingLR {
	if tMax <= 0 {
		panic(fmt.Sprintf("optim.NewCosineAnnealingLR: T_max %d must be positive", tMax))
	}
	s := &CosineAnnealingLR{tMax: tMax, etaMin: etaMin}
	s.start("CosineAnnealingLR", opt, s)
	return s
}

func (r *CosineAnnealingLR) chained(s *lrSched) []float64 {
	e, t := s.lastEpoch, r.tMax
	lrs := s.currentLRs()
	switch {
	case e == 0:
	case pyMod(e-1-t, 2*t) == 0:
		for i := range lrs {
			lrs[i] = lrs[i] + (s.baseLRs[i]-r.etaMin)*(1-math.Cos(math.Pi/float64(t)))/2
		}
	default:
		f := (1 + math.Cos(math.Pi*float64(e)/float64(t))) / (1 + math.Cos(math.Pi*float64(e-1)/float64(t)))
		for i := range lrs {
			lrs[i] = f*(lrs[i]-r.etaMin) + r.etaMin
		}
	}
	return lrs
}

func (r *CosineAnnealingLR) closed(s *lrSched) []float64 {
	c := 1 + math.Cos(math.Pi*float64(s.lastEpoch)/float64(r.tMax))
	return s.fromBase(func(b float64) float64 { return r.etaMin + (b-r.etaMin)*c/2 })
}

// LinearLR scales the learning rates by a factor going linearly from
// StartFactor to EndFactor over TotalIters steps, as
// torch.optim.lr_scheduler.LinearLR (in its recursive form).
type LinearLR struct {
	lrSched
	start, end float64
	total      int
}

// NewLinearLR returns a LinearLR scheduler. Both factors must lie in [0, 1]
// and startFactor must be positive.
func NewLinearLR(opt Optimizer, startFactor, endFactor float64, totalIters int) *LinearLR {
	if !(startFactor > 0 && startFactor <= 1) || !(endFactor >= 0 && endFactor <= 1) || totalIters <= 0 {
		panic(fmt.Sprintf("optim.NewLinearLR: want 0 < start factor (%v) <= 1, 0 <= end factor (%v) <= 1 and positive total iterations (%d)", startFactor, endFactor, totalIters))
	}
	s := &LinearLR{start: startFactor, end: endFactor, total: totalIters}
	s.lrSched.start("LinearLR", opt, s)
	return s
}

// NewLinearWarmup returns a LinearLR that warms the learning rates up
// linearly from startFactor times their base values to the base values
// over steps steps, then holds them. To decay after the warm-up, create the
// decaying scheduler on the same optimizer and join the two with
// NewSequentialLR at milestone steps, which restarts the second from the
// base learning rates:
//
//	warm := optim.NewLinearWarmup(opt, 100, 0.01)
//	cosine := optim.NewCosineAnnealingLR(opt, 900, 0)
//	sched := optim.NewSequentialLR([]optim.Scheduler{warm, cosine}, []int{100})
//
// and step only sched. Save sched's StateDict (it holds both) with the
// optimizer's to resume the schedule.
func NewLinearWarmup(opt Optimizer, steps int, startFactor float64) *LinearLR {
	return NewLinearLR(opt, startFactor, 1, steps)
}

func (r *LinearLR) chained(s *lrSched) []float64 {
	e := s.lastEpoch
	switch {
	case e == 0:
		return s.scaled(r.start)
	case e > r.total:
		return s.currentLRs()
	}
	d := r.end - r.start
	return s.scaled(1 + d/(float64(r.total)*r.start+float64(e-1)*d))
}

func (r *LinearLR) closed(s *lrSched) []float64 {
	f := r.start + (r.end-r.start)*float64(min(r.total, s.lastEpoch))/float64(r.total)
	return s.fromBase(func(b float64) float64 { return b * f })
}

// ConstantLR scales the learning rates by Factor for the first TotalIters
// steps, as torch.optim.lr_scheduler.ConstantLR.
type ConstantLR struct {
	lrSched
	factor float64
	total  int
}

// NewConstantLR returns a ConstantLR scheduler; factor must lie in (0, 1].
func NewConstantLR(opt Optimizer, factor float64, totalIters int) *ConstantLR {
	if !(factor > 0 && factor <= 1) || totalIters < 0 {
		panic(fmt.Sprintf("optim.NewConstantLR: want 0 < factor (%v) <= 1 and total iterations (%d) >= 0", factor, totalIters))
	}
	s := &ConstantLR{factor: factor, total: totalIters}
	s.start("ConstantLR", opt, s)
	return s
}

func (r *ConstantLR) chained(s *lrSched) []float64 {
	switch e := s.lastEpoch; {
	case e == 0:
		return s.scaled(r.factor)
	case e != r.total:
		return s.currentLRs()
	}
	return s.scaled(1 / r.factor)
}

func (r *ConstantLR) closed(s *lrSched) []float64 {
	f := r.factor
	if s.lastEpoch >= r.total {
		f += 1 - r.factor
	}
	return s.fromBase(func(b float64) float64 { return b * f })
}

// PolynomialLR decays the learning rates as (1 - step/TotalIters)^Power
// times their base values, reaching 0 at TotalIters, as
// torch.optim.lr_scheduler.PolynomialLR (in its recursive form).
type PolynomialLR struct {
	lrSched
	total int
	power float64
}

// NewPolynomialLR returns a PolynomialLR scheduler.
func NewPolynomialLR(opt Optimizer, totalIters int, power float64) *PolynomialLR {
	if totalIters <= 0 {
		panic(fmt.Sprintf("optim.NewPolynomialLR: total iterations %d must be positive", totalIters))
	}
	s := &PolynomialLR{total: totalIters, power: power}
	s.start("PolynomialLR", opt, s)
	return s
}

func (r *PolynomialLR) chained(s *lrSched) []float64 {
	e := s.lastEpoch
	if e == 0 || e > r.total {
		return s.currentLRs()
	}
	t := float64(r.total)
	return s.scaled(math.Pow((1-float64(e)/t)/(1-float64(e-1)/t), r.power))
}

func (r *PolynomialLR) closed(s *lrSched) []float64 {
	f := math.Pow(1-float64(min(r.total, s.lastEpoch))/float64(r.total), r.power)
	return s.fromBase(func(b float64) float64 { return b * f })
}

// LambdaLR sets the learning rates to their base values times
// fn(step), as torch.optim.lr_scheduler.LambdaLR with one function for all
// groups.
type LambdaLR struct {
	lrSched
	fn func(epoch int) float64
}

// NewLambdaLR returns a LambdaLR scheduler.
func NewLambdaLR(opt Optimizer, fn func(epoch int) float64) *LambdaLR {
	if fn == nil {
		panic("optim.NewLambdaLR: nil function")
	}
	s := &LambdaLR{fn: fn}
	s.start("LambdaLR", opt, s)
	return s
}

func (r *LambdaLR) chained(s *lrSched) []float64 { return r.closed(s) }

func (r *LambdaLR) closed(s *lrSched) []float64 {
	f := r.fn(s.lastEpoch)
	return s.fromBase(func(b float64) float64 { return b * f })
}

// CosineAnnealingWarmRestarts anneals the learning rates along a half
// cosine from their base values to EtaMin over T_i steps, then restarts,
// with T_0 steps in the first period and each period TMult times longer
// than the previous, as torch.optim.lr_scheduler.CosineAnnealingWarmRestarts
// (stepped without an explicit epoch).
type CosineAnnealingWarmRestarts struct {
	lrSched
	t0, tMult int
	etaMin    float64
	tI        int
	tCur      float64
}

// NewCosineAnnealingWarmRestarts returns a CosineAnnealingWarmRestarts
// scheduler; t0 and tMult must be at least 1.
func NewCosineAnnealingWarmRestarts(opt Optimizer, t0, tMult int, etaMin float64) *CosineAnnealingWarmRestarts {
	if t0 <= 0 || tMult < 1 {
		panic(fmt.Sprintf("optim.NewCosineAnnealingWarmRestarts: want T_0 (%d) >= 1 and T_mult (%d) >= 1", t0, tMult))
	}
	s := &CosineAnnealingWarmRestarts{t0: t0, tMult: tMult, etaMin: etaMin, tI: t0}
	s.start("CosineAnnealingWarmRestarts", opt, s)
	return s
}

func (r *CosineAnnealingWarmRestarts) lrs(s *lrSched) []float64 {
	c := 1 + math.Cos(math.Pi*r.tCur/float64(r.tI))
	return s.fromBase(func(b float64) float64 { return r.etaMin + (b-r.etaMin)*c/2 })
}

func (r *CosineAnnealingWarmRestarts) chained(s *lrSched) []float64 {
	if s.lastEpoch == 0 {
		r.tI, r.tCur = r.t0, 0
		return r.lrs(s)
	}
	r.tCur++
	if r.tCur >= float64(r.tI) {
		r.tCur -= float64(r.tI)
		r.tI *= r.tMult
	}
	return r.lrs(s)
}

func (r *CosineAnnealingWarmRestarts) closed(s *lrSched) []float64 {
	e := s.lastEpoch
	switch {
	case e < r.t0:
		r.tI, r.tCur = r.t0, float64(e)
	case r.tMult == 1:
		r.tI, r.tCur = r.t0, float64(e%r.t0)
	default:
		m := float64(r.tMult)
		n := int(math.Log(float64(e)/float64(r.t0)*(m-1)+1) / math.Log(m))
		p := int(math.Pow(m, float64(n)))
		r.tCur = float64(e) - float64(r.t0)*float64(p-1)/(m-1)
		r.tI = r.t0 * p
	}
	return r.lrs(s)
}

// OneCycleOptions are the hyperparameters of OneCycleLR, as
// torch.optim.lr_scheduler.OneCycleLR's; DefaultOneCycleOptions returns
// PyTorch's defaults.
type OneCycleOptions struct {
	// MaxLR is the peak learning rate: one value for all groups or one per
	// group.
	MaxLR []float64
	// TotalSteps is the length of the cycle.
	TotalSteps int
	// PctStart is the fraction of the cycle spent increasing the rate.
	PctStart float64
	// Linear anneals linearly instead of along a cosine.
	Linear bool
	// DivFactor sets the initial rate MaxLR/DivFactor.
	DivFactor float64
	// FinalDivFactor sets the final rate initial/FinalDivFactor.
	FinalDivFactor float64
	// ThreePhase goes back down to the initial rate before annihilating
	// it, instead of annealing straight from the peak to the final rate.
	ThreePhase bool
}

// DefaultOneCycleOptions returns PyTorch's defaults for the given peak
// learning rate and cycle length (pct_start 0.3, cosine, div_factor 25,
// final_div_factor 1e4, two phases).
func DefaultOneCycleOptions(maxLR float64, totalSteps int) OneCycleOptions {
	return OneCycleOptions{MaxLR: []float64{maxLR}, TotalSteps: totalSteps, PctStart: 0.3, DivFactor: 25, FinalDivFactor: 1e4}
}

type cyclePhase struct {
	end        float64
	start, fin int // 0 initial, 1 max, 2 min learning rate
}

// OneCycleLR is the 1cycle policy: the learning rates rise from
// MaxLR/DivFactor to MaxLR over PctStart of the cycle, then anneal to
// MaxLR/DivFactor/FinalDivFactor, as torch.optim.lr_scheduler.OneCycleLR.
// Momentum cycling (cycle_momentum) is not done: the Optimizer interface
// has no momentum setter (this equals PyTorch with cycle_momentum=False).
// Stepping past TotalSteps panics.
type OneCycleLR struct {
	lrSched
	total  int
	linear bool
	phases []cyclePhase
	levels [][3]float64 // per group: initial, max, min
}

// NewOneCycleLR returns a OneCycleLR scheduler.
func NewOneCycleLR(opt Optimizer, o OneCycleOptions) *OneCycleLR {
	const op = "optim.NewOneCycleLR"
	if o.TotalSteps <= 0 {
		panic(fmt.Sprintf("%s: total steps %d must be positive", op, o.TotalSteps))
	}
	if !(o.PctStart >= 0 && o.PctStart <= 1) {
		panic(fmt.Sprintf("%s: pct_start %v must lie in [0, 1]", op, o.PctStart))
	}
	if opt == nil {
		panic(op + ": nil optimizer")
	}
	maxLRs := perGroup(op, "MaxLR", opt, o.MaxLR)
	s := &OneCycleLR{total: o.TotalSteps, linear: o.Linear}
	t := float64(o.TotalSteps)
	if o.ThreePhase {
		s.phases = []cyclePhase{{o.PctStart*t - 1, 0, 1}, {2*o.PctStart*t - 2, 1, 0}, {t - 1, 0, 2}}
	} else {
		s.phases = []cyclePhase{{o.PctStart*t - 1, 0, 1}, {t - 1, 1, 2}}
	}
	for i, m := range maxLRs {
		init := m / o.DivFactor
		s.levels = append(s.levels, [3]float64{init, m, init / o.FinalDivFactor})
		opt.SetGroupLR(i, init)
	}
	s.start("OneCycleLR", opt, s)
	return s
}

func (r *OneCycleLR) chained(s *lrSched) []float64 { return r.closed(s) }

func (r *OneCycleLR) closed(s *lrSched) []float64 {
	step := s.lastEpoch
	if step > r.total {
		panic(fmt.Sprintf("optim.OneCycleLR.Step: stepped %d times, past the %d total steps", step+1, r.total))
	}
	lrs := make([]float64, len(r.levels))
	for g, lv := range r.levels {
		start := 0.0
		for i, ph := range r.phases {
			if float64(step) <= ph.end || i == len(r.phases)-1 {
				pct := (float64(step) - start) / (ph.end - start)
				a, b := lv[ph.start], lv[ph.fin]
				if r.linear {
					lrs[g] = (b-a)*pct + a
				} else {
					lrs[g] = b + (a-b)/2.0*(math.Cos(math.Pi*pct)+1)
				}
				break
			}
			start = ph.end
		}
	}
	return lrs
}

// CyclicMode is a CyclicLR policy.
type CyclicMode int

// CyclicLR policies.
const (
	// Triangular cycles with a constant amplitude.
	Triangular CyclicMode = iota
	// Triangular2 halves the amplitude every cycle.
	Triangular2
	// ExpRange scales the amplitude by Gamma^step.
	ExpRange
)

// CyclicOptions are the hyperparameters of CyclicLR, as
// torch.optim.lr_scheduler.CyclicLR's (BaseLR and MaxLR: one value for all
// groups or one per group).
type CyclicOptions struct {
	BaseLR, MaxLR []float64
	// StepSizeUp and StepSizeDown are the lengths of the rising and falling
	// halves of a cycle (StepSizeDown 0: same as StepSizeUp).
	StepSizeUp, StepSizeDown int
	Mode                     CyclicMode
	// Gamma is ExpRange's per-step amplitude factor.
	Gamma float64
}

// CyclicLR cycles the learning rates between BaseLR and MaxLR, as
// torch.optim.lr_scheduler.CyclicLR with cycle_momentum=False (the
// Optimizer interface has no momentum setter). Creating it sets the
// learning rates to BaseLR.
type CyclicLR struct {
	lrSched
	maxLRs       []float64
	total, ratio float64
	mode         CyclicMode
	gamma        float64
}

// NewCyclicLR returns a CyclicLR scheduler.
func NewCyclicLR(opt Optimizer, o CyclicOptions) *CyclicLR {
	const op = "optim.NewCyclicLR"
	if opt == nil {
		panic(op + ": nil optimizer")
	}
	if o.StepSizeUp <= 0 || o.StepSizeDown < 0 || o.Mode < Triangular || o.Mode > ExpRange {
		panic(fmt.Sprintf("%s: want positive step sizes (up %d, down %d) and a known mode (%d)", op, o.StepSizeUp, o.StepSizeDown, o.Mode))
	}
	base := perGroup(op, "BaseLR", opt, o.BaseLR)
	down := o.StepSizeDown
	if down == 0 {
		down = o.StepSizeUp
	}
	s := &CyclicLR{maxLRs: perGroup(op, "MaxLR", opt, o.MaxLR), mode: o.Mode, gamma: o.Gamma}
	s.total = float64(o.StepSizeUp) + float64(down)
	s.ratio = float64(o.StepSizeUp) / s.total
	for i, b := range base {
		opt.SetGroupLR(i, b)
	}
	s.start("CyclicLR", opt, s)
	return s
}

func (r *CyclicLR) chained(s *lrSched) []float64 { return r.closed(s) }

func (r *CyclicLR) closed(s *lrSched) []float64 {
	e := float64(s.lastEpoch)
	cycle := math.Floor(1 + e/r.total)
	x := 1. + e/r.total - cycle
	var f float64
	if x <= r.ratio {
		f = x / r.ratio
	} else {
		f = (x - 1) / (r.ratio - 1)
	}
	var scale float64
	switch r.mode {
	case Triangular:
		scale = 1
	case Triangular2:
		scale = 1 / math.Pow(2, cycle-1)
	default:
		scale = math.Pow(r.gamma, e)
	}
	lrs := make([]float64, len(s.baseLRs))
	for i, b := range s.baseLRs {
		lrs[i] = b + (r.maxLRs[i]-b)*f*scale
	}
	return lrs
}

// ReduceLROnPlateauOptions are the hyperparameters of ReduceLROnPlateau,
// as torch.optim.lr_scheduler.ReduceLROnPlateau's;
// DefaultReduceLROnPlateauOptions returns PyTorch's defaults.
type ReduceLROnPlateauOptions struct {
	// Max: the metric should increase (mode "max"); else decrease ("min").
	Max bool
	// Factor multiplies the learning rates on a plateau (< 1).
	Factor float64
	// Patience is how many steps without improvement are tolerated.
	Patience int
	// Threshold is the least improvement that counts, relative to the best
	// value, or absolute with AbsThreshold.
	Threshold    float64
	AbsThreshold bool
	// Cooldown is how many steps to wait after a reduction before counting
	// bad steps again.
	Cooldown int
	// MinLR bounds the learning rates from below: one value for all groups
	// or one per group (nil: 0).
	MinLR []float64
	// Eps: reductions smaller than Eps are skipped.
	Eps float64
}

// DefaultReduceLROnPlateauOptions returns PyTorch's defaults: mode min,
// factor 0.1, patience 10, relative threshold 1e-4, no cooldown, min_lr 0,
// eps 1e-8.
func DefaultReduceLROnPlateauOptions() ReduceLROnPlateauOptions {
	return ReduceLROnPlateauOptions{Factor: 0.1, Patience: 10, Threshold: 1e-4, Eps: 1e-8}
}

// ReduceLROnPlateau multiplies the learning rates by Factor when a metric
// stops improving for more than Patience steps, as
// torch.optim.lr_scheduler.ReduceLROnPlateau. It is driven by StepMetric,
// not Step.
type ReduceLROnPlateau struct {
	opt        Optimizer
	o          ReduceLROnPlateauOptions
	minLRs     []float64
	best       float64
	numBad     int
	cooldownCt int
	lastEpoch  int
	lastLR     []float64
}

// NewReduceLROnPlateau returns a ReduceLROnPlateau scheduler. It does not
// change the learning rates.
func NewReduceLROnPlateau(opt Optimizer, o ReduceLROnPlateauOptions) *ReduceLROnPlateau {
	const op = "optim.NewReduceLROnPlateau"
	if opt == nil {
		panic(op + ": nil optimizer")
	}
	if !(o.Factor < 1) || o.Patience < 0 || o.Cooldown < 0 {
		panic(fmt.Sprintf("%s: want factor (%v) < 1, patience (%d) >= 0 and cooldown (%d) >= 0", op, o.Factor, o.Patience, o.Cooldown))
	}
	minLR := o.MinLR
	if minLR == nil {
		minLR = []float64{0}
	}
	s := &ReduceLROnPlateau{opt: opt, o: o, minLRs: perGroup(op, "MinLR", opt, minLR)}
	s.best = math.Inf(1)
	if o.Max {
		s.best = math.Inf(-1)
	}
	return s
}

func (s *ReduceLROnPlateau) better(a float64) bool {
	switch {
	case !s.o.Max && !s.o.AbsThreshold:
		return a < s.best*(1.-s.o.Threshold)
	case !s.o.Max:
		return a < s.best-s.o.Threshold
	case !s.o.AbsThreshold:
		return a > s.best*(s.o.Threshold+1.)
	}
	return a > s.best+s.o.Threshold
}

// StepMetric records one value of the monitored metric and reduces the
// learning rates if it has stopped improving.
func (s *ReduceLROnPlateau) StepMetric(v float64) {
	s.lastEpoch++
	if s.better(v) {
		s.best = v
		s.numBad = 0
	} else {
		s.numBad++
	}
	if s.cooldownCt > 0 {
		s.cooldownCt--
		s.numBad = 0
	}
	if s.numBad > s.o.Patience {
		for i := range s.opt.NumGroups() {
			old := s.opt.LR(i)
			lr := math.Max(old*s.o.Factor, s.minLRs[i])
			if old-lr > s.o.Eps {
				s.opt.SetGroupLR(i, lr)
			}
		}
		s.cooldownCt = s.o.Cooldown
		s.numBad = 0
	}
	s.lastLR = make([]float64, s.opt.NumGroups())
	for i := range s.lastLR {
		s.lastLR[i] = s.opt.LR(i)
	}
}

// LastLR returns the learning rates after the last StepMetric (nil before
// the first).
func (s *ReduceLROnPlateau) LastLR() []float64 { return slices.Clone(s.lastLR) }

// scheduled is implemented by the epoch-indexed schedulers of this package.
type scheduled interface {
	Scheduler
	core() *lrSched
	stepEpoch(epoch int)
}

// SequentialLR runs schedulers one after another, switching at the
// milestone steps, as torch.optim.lr_scheduler.SequentialLR: creating it
// resets the learning rates to the first scheduler's base learning rates
// and redoes that scheduler's initial step; at each milestone the next
// scheduler restarts at its step 0 (closed form). The schedulers must be
// this package's epoch-indexed schedulers over one optimizer; as in
// PyTorch, where they share the optimizer's initial_lr, all of them take
// the first scheduler's base learning rates (CyclicLR and OneCycleLR keep
// their own).
type SequentialLR struct {
	scheds     []scheduled
	milestones []int
	lastEpoch  int
	lastLR     []float64
}

// NewSequentialLR returns a SequentialLR over schedulers with
// len(schedulers)-1 increasing milestones.
func NewSequentialLR(schedulers []Scheduler, milestones []int) *SequentialLR {
	const op = "optim.NewSequentialLR"
	if len(schedulers) == 0 || len(milestones) != len(schedulers)-1 {
		panic(fmt.Sprintf("%s: want one more scheduler than milestones, got %d schedulers and %d milestones", op, len(schedulers), len(milestones)))
	}
	if !sort.IntsAreSorted(milestones) {
		panic(fmt.Sprintf("%s: milestones %v must be increasing", op, milestones))
	}
	s := &SequentialLR{milestones: slices.Clone(milestones)}
	for i, sc := range schedulers {
		q, ok := sc.(scheduled)
		if !ok {
			panic(fmt.Sprintf("%s: scheduler %d (%T) is not an epoch-indexed scheduler of package optim", op, i, sc))
		}
		if q.core().opt != s.first(q).core().opt {
			panic(fmt.Sprintf("%s: scheduler %d works on a different optimizer than scheduler 0", op, i))
		}
		s.scheds = append(s.scheds, q)
	}
	first := s.scheds[0].core()
	base := slices.Clone(first.baseLRs)
	for i, lr := range base {
		first.opt.SetGroupLR(i, lr)
	}
	for _, q := range s.scheds {
		c := q.core()
		switch c.rule.(type) {
		case *CyclicLR, *OneCycleLR:
		default:
			c.baseLRs = slices.Clone(base)
		}
		c.lastEpoch--
	}
	s.scheds[0].Step()
	s.lastLR = s.scheds[0].LastLR()
	return s
}

func (s *SequentialLR) first(q scheduled) scheduled {
	if len(s.scheds) == 0 {
		return q
	}
	return s.scheds[0]
}

// Step advances the active scheduler, switching at milestones.
func (s *SequentialLR) Step() {
	s.lastEpoch++
	idx := sort.SearchInts(s.milestones, s.lastEpoch+1)
	q := s.scheds[idx]
	if idx > 0 && s.milestones[idx-1] == s.lastEpoch {
		q.stepEpoch(0)
	} else {
		q.Step()
	}
	s.lastLR = q.LastLR()
}

// LastLR returns the learning rates the last step set.
func (s *SequentialLR) LastLR() []float64 { return slices.Clone(s.lastLR) }

// ChainedScheduler steps several schedulers together, each applying its
// rule to the learning rates the previous one set, as
// torch.optim.lr_scheduler.ChainedScheduler. The schedulers keep the base
// learning rates they were created with (the optimizer's rates at that
// moment; PyTorch uses the first scheduler's initial_lr for all, which
// differs only for schedulers whose rule reads the base rates).
type ChainedScheduler struct {
	scheds []Scheduler
}

// NewChainedScheduler returns a ChainedScheduler over schedulers (already
// created, in order, on one optimizer).
func NewChainedScheduler(schedulers ...Scheduler) *ChainedScheduler {
	if len(schedulers) == 0 {
		panic("optim.NewChainedScheduler: no schedulers")
	}
	return &ChainedScheduler{scheds: slices.Clone(schedulers)}
}

// Step steps every scheduler in order.
func (c *ChainedScheduler) Step() {
	for _, s := range c.scheds {
		s.Step()
	}
}

// LastLR returns the learning rates the last scheduler set.
func (c *ChainedScheduler) LastLR() []float64 { return c.scheds[len(c.scheds)-1].LastLR() }

// StateDict returns the scheduler's state as tensors: "last_epoch",
// "base_lrs" and "last_lr" (and "T_cur", "T_i" for
// CosineAnnealingWarmRestarts). Hyperparameters are not included.
func (s *lrSched) StateDict() map[string]*tensor.Tensor {
	sd := map[string]*tensor.Tensor{
		"last_epoch": tensor.ScalarOf(float64(s.lastEpoch), tensor.Float64),
		"base_lrs":   tensor.FromSlice(slices.Clone(s.baseLRs), len(s.baseLRs)),
		"last_lr":    tensor.FromSlice(slices.Clone(s.lastLR), len(s.lastLR)),
	}
	if r, ok := s.rule.(*CosineAnnealingWarmRestarts); ok {
		sd["T_cur"] = tensor.ScalarOf(r.tCur, tensor.Float64)
		sd["T_i"] = tensor.ScalarOf(float64(r.tI), tensor.Float64)
	}
	return sd
}

// LoadStateDict restores a state dict from StateDict of a scheduler of the
// same kind over as many parameter groups. It does not change the
// optimizer's learning rates (load the optimizer's state dict for those).
// On error the scheduler is unchanged.
func (s *lrSched) LoadStateDict(sd map[string]*tensor.Tensor) error {
	n := len(s.baseLRs)
	r := &stateReader{sd: sd}
	epoch := r.count("last_epoch", -1)
	baseLRs := r.floats("base_lrs", n)
	lastLR := r.floats("last_lr", n)
	wr, isWR := s.rule.(*CosineAnnealingWarmRestarts)
	var tI int
	var tCur float64
	if isWR {
		tI, tCur = r.count("T_i", 1), r.scalar("T_cur")
		if r.err == nil && !(tCur >= 0 && tCur < float64(tI)) {
			r.fail(`"T_cur" %v is not in [0, T_i=%d)`, tCur, tI)
		}
	}
	if err := r.done(); err != nil {
		return fmt.Errorf("optim.%s.LoadStateDict: %w", s.name, err)
	}
	if isWR {
		wr.tI, wr.tCur = tI, tCur
	}
	s.lastEpoch, s.baseLRs, s.lastLR = epoch, baseLRs, lastLR
	return nil
}
