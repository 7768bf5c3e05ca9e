// Package optim updates model parameters from their gradients. Make an
// optimizer over a model's parameters (NewSGD, NewAdamW, ...), and in each
// training step call ZeroGrad, run backward, then Step; a scheduler
// (NewStepLR, NewCosineAnnealingLR, NewLinearWarmup, ...) changes the
// learning rate as training goes, and ClipGradNorm clips gradients. The
// package Example trains a small model; ExampleSGD_AddParamGroup shows
// parameter groups and ExampleSequentialLR_StateDict a warm-up schedule
// that resumes from its state dict.
//
// Optimizers: SGD (with momentum, dampening, Nesterov, weight decay), Adam and AdamW
// (with AMSGrad), Adagrad, RMSprop (centered), Rprop, Adamax, NAdam, RAdam,
// Adadelta and Lion, each with PyTorch's exact update formulas (torch 1.13's
// single-tensor implementations; Lion follows its paper), ASGD, SparseAdam
// and LBFGS (with a strong Wolfe line search; it takes a closure) as torch
// 1.13's, LAMB and LARS after their papers and Adafactor as Hugging Face
// implements it, parameter groups
// with their own hyperparameters, and state dicts so a training run can
// resume. The 15 learning-rate schedulers (the Scheduler interface) match
// torch's lr_scheduler sequences and save their position in state dicts,
// and ClipGradNorm / ClipGradValue clip gradients.
//
// An optimizer works on *autograd.Var parameters (nn's Module.Parameters()
// returns them): Step reads each parameter's Grad and updates its value in
// place; parameters without a gradient are skipped.
//
// State dicts are flat maps of tensors, so nn.SaveTensors and
// nn.LoadTensors write and read them as safetensors files:
//
//	"state.<i>.<name>"           per-parameter state (i counts the
//	                              parameters across groups, in order)
//	"param_groups.<g>.<hyper>"   hyperparameters as scalar tensors
//	"param_groups.<g>.params"    the Int64 indices of the group's parameters
package optim

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Optimizer updates parameters from their gradients.
type Optimizer interface {
	// Step applies one update to every parameter that has a gradient.
	Step() error
	// ZeroGrad clears the gradients of every parameter.
	ZeroGrad()
	// NumGroups returns the number of parameter groups.
	NumGroups() int
	// LR returns the learning rate of a parameter group.
	LR(group int) float64
	// SetLR sets the learning rate of every parameter group.
	SetLR(lr float64)
	// SetGroupLR sets the learning rate of one parameter group.
	SetGroupLR(group int, lr float64)
	// StateDict returns the optimizer's state and hyperparameters as
	// tensors (copies), ready for nn.SaveTensors.
	StateDict() map[string]*tensor.Tensor
	// LoadStateDict restores a state dict from an optimizer over
	// parameters of the same shapes, grouped the same way, replacing the
	// hyperparameters and per-parameter state. On error the optimizer is
	// unchanged.
	LoadStateDict(sd map[string]*tensor.Tensor) error
}

// Group is a set of parameters sharing the hyperparameters Options.
type Group[O any] struct {
	Params  []*autograd.Var
	Options O
}

// field is one hyperparameter: a float or a bool (or a pair, for betas).
type field struct {
	name string
	f    *float64
	b    *bool
	pair *[2]float64
}

// options is implemented by the pointer to each optimizer's options struct.
type options interface {
	fields() []field
	lrPtr() *float64
	validate(op string)
	withDefaults()
}

// core holds what every optimizer shares: the parameter groups and the
// per-parameter state, stored by name.
type core[O any, P interface {
	*O
	options
}] struct {
	name string   // "SGD", "Adam", ...
	keys []string // per-parameter state names the optimizer uses
	// required lists the state names a parameter with any state must have.
	required []string
	// scalars lists the per-parameter state names, besides "step", that
	// hold one float rather than a tensor of the parameter's shape.
	scalars []string
	groups  []*Group[O]
	state   map[*autograd.Var]map[string]*tensor.Tensor
	// stateShape, if set, gives the shape a per-parameter state tensor must
	// have (nil: the parameter's shape), for state that is not shaped like
	// its parameter (Adafactor's factored moments).
	stateShape func(key string, param []int) []int
}

func newCore[O any, P interface {
	*O
	options
}](name string, keys, required []string) core[O, P] {
	return core[O, P]{name: name, keys: keys, required: required, state: map[*autograd.Var]map[string]*tensor.Tensor{}}
}

// addGroup validates and appends a parameter group.
func (c *core[O, P]) addGroup(params []*autograd.Var, opt O) {
	op := "optim.New" + c.name
	if len(c.groups) > 0 {
		op = "optim." + c.name + ".AddParamGroup"
	}
	if len(params) == 0 {
		panic(op + ": empty parameter list")
	}
	P(&opt).withDefaults()
	P(&opt).validate(op)
	for i, p := range params {
		if p == nil {
			panic(fmt.Sprintf("%s: parameter %d is nil", op, i))
		}
		if !p.IsLeaf() || !p.RequiresGrad() {
			panic(fmt.Sprintf("%s: parameter %d (%v) must be a leaf that requires a gradient (autograd.Param)", op, i, p))
		}
		if !p.DType().IsFloat() {
			panic(fmt.Sprintf("%s: parameter %d has dtype %s; optimizers need floating point", op, i, p.DType()))
		}
		for _, g := range c.groups {
			if slices.Contains(g.Params, p) {
				panic(fmt.Sprintf("%s: parameter %d is already in another group", op, i))
			}
		}
		if slices.Contains(params[:i], p) {
			panic(fmt.Sprintf("%s: parameter %d appears twice", op, i))
		}
	}
	c.groups = append(c.groups, &Group[O]{Params: slices.Clone(params), Options: opt})
}

// ZeroGrad clears every parameter's gradient.
func (c *core[O, P]) ZeroGrad() {
	for _, g := range c.groups {
		for _, p := range g.Params {
			p.ZeroGrad()
		}
	}
}

// NumGroups returns the number of parameter groups.
func (c *core[O, P]) NumGroups() int { return len(c.groups) }

// groupList returns the parameter groups (a copy of the slice).
func (c *core[O, P]) groupList() []*Group[O] { return slices.Clone(c.groups) }

func (c *core[O, P]) group(op string, i int) *Group[O] {
	if i < 0 || i >= len(c.groups) {
		panic(fmt.Sprintf("optim.%s.%s: group %d out of range for %d groups", c.name, op, i, len(c.groups)))
	}
	return c.groups[i]
}

// LR returns the learning rate of group i.
func (c *core[O, P]) LR(i int) float64 { return *P(&c.group("LR", i).Options).lrPtr() }

// SetLR sets the learning rate of every group.
func (c *core[O, P]) SetLR(lr float64) {
	for i := range c.groups {
		c.SetGroupLR(i, lr)
	}
}

// SetGroupLR sets the learning rate of group i.
func (c *core[O, P]) SetGroupLR(i int, lr float64) {
	if lr < 0 || lr != lr {
		panic(fmt.Sprintf("optim.%s.SetGroupLR: invalid learning rate %v", c.name, lr))
	}
	*P(&c.group("SetGroupLR", i).Options).lrPtr() = lr
}

// gradOf returns p's gradient checked against p, or nil if it has none.
func (c *core[O, P]) gradOf(p *autograd.Var) (*tensor.Tensor, error) {
	g := p.Grad()
	if g == nil {
		return nil, nil
	}
	if !slices.Equal(g.Shape(), p.Shape()) {
		return nil, fmt.Errorf("optim.%s.Step: gradient shape %v differs from parameter shape %v", c.name, g.Shape(), p.Shape())
	}
	if g.DType() != p.DType() {
		g = g.To(p.DType())
	}
	return g, nil
}

// StateDict returns copies of the hyperparameters and the state.
func (c *core[O, P]) StateDict() map[string]*tensor.Tensor {
	sd := map[string]*tensor.Tensor{}
	idx := 0
	for gi, g := range c.groups {
		prefix := "param_groups." + strconv.Itoa(gi) + "."
		for _, f := range P(&g.Options).fields() {
			switch {
			case f.f != nil:
				sd[prefix+f.name] = tensor.ScalarOf(*f.f, tensor.Float64)
			case f.b != nil:
				sd[prefix+f.name] = tensor.FromSlice([]bool{*f.b}, []int{}...)
			default:
				sd[prefix+f.name] = tensor.FromSlice(f.pair[:], 2)
			}
		}
		ids := make([]int64, len(g.Params))
		for i, p := range g.Params {
			ids[i] = int64(idx)
			for k, v := range c.state[p] {
				sd["state."+strconv.Itoa(idx)+"."+k] = v.Clone()
			}
			idx++
		}
		sd[prefix+"params"] = tensor.FromSlice(ids, len(ids))
	}
	return sd
}

// LoadStateDict restores hyperparameters and state; see Optimizer.
func (c *core[O, P]) LoadStateDict(sd map[string]*tensor.Tensor) error {
	errf := func(format string, a ...any) error {
		return fmt.Errorf("optim."+c.name+".LoadStateDict: "+format, a...)
	}
	var params []*autograd.Var
	for _, g := range c.groups {
		params = append(params, g.Params...)
	}
	used := map[string]bool{}
	get := func(key string) (*tensor.Tensor, error) {
		t, ok := sd[key]
		if !ok || t == nil {
			return nil, errf("missing key %q", key)
		}
		used[key] = true
		return t, nil
	}
	// Hyperparameters and group layout.
	newOpts := make([]O, len(c.groups))
	idx := 0
	for gi, g := range c.groups {
		prefix := "param_groups." + strconv.Itoa(gi) + "."
		ids, err := get(prefix + "params")
		if err != nil {
			return err
		}
		if ids.DType() != tensor.Int64 || ids.Dim() != 1 || ids.Numel() != len(g.Params) {
			return errf("group %d has %d parameters here but %q is %s %v", gi, len(g.Params), prefix+"params", ids.DType(), ids.Shape())
		}
		for i, id := range ids.Int64s() {
			if id != int64(idx+i) {
				return errf("%q lists parameter %d at position %d, want %d", prefix+"params", id, i, idx+i)
			}
		}
		idx += len(g.Params)
		opt := g.Options
		for _, f := range P(&opt).fields() {
			t, err := get(prefix + f.name)
			if err != nil {
				return err
			}
			switch {
			case f.f != nil:
				if !t.DType().IsFloat() || t.Numel() != 1 {
					return errf("%q must be a float scalar, got %s %v", prefix+f.name, t.DType(), t.Shape())
				}
				*f.f = t.Item()
			case f.b != nil:
				if t.DType() != tensor.Bool || t.Numel() != 1 {
					return errf("%q must be a bool scalar, got %s %v", prefix+f.name, t.DType(), t.Shape())
				}
				*f.b = t.Bools()[0]
			default:
				if !t.DType().IsFloat() || t.Numel() != 2 {
					return errf("%q must hold two floats, got %s %v", prefix+f.name, t.DType(), t.Shape())
				}
				copy(f.pair[:], t.Float64s())
			}
		}
		if err := catchPanic(func() { P(&opt).validate("optim." + c.name + ".LoadStateDict") }); err != nil {
			return err
		}
		newOpts[gi] = opt
	}
	if _, ok := sd["param_groups."+strconv.Itoa(len(c.groups))+".params"]; ok {
		return errf("state dict has more than the optimizer's %d parameter groups", len(c.groups))
	}
	// Per-parameter state.
	newState := map[*autograd.Var]map[string]*tensor.Tensor{}
	for i, p := range params {
		prefix := "state." + strconv.Itoa(i) + "."
		for _, k := range c.keys {
			t, ok := sd[prefix+k]
			if !ok {
				continue
			}
			used[prefix+k] = true
			if t == nil {
				return errf("%q is nil", prefix+k)
			}
			if k == "step" || slices.Contains(c.scalars, k) {
				if t.Numel() != 1 || !t.DType().IsFloat() {
					return errf("%q must be a float scalar, got %s %v", prefix+k, t.DType(), t.Shape())
				}
				t = tensor.ScalarOf(t.Item(), tensor.Float64)
			} else {
				want := p.Shape()
				if c.stateShape != nil {
					if sh := c.stateShape(k, p.Shape()); sh != nil {
						want = sh
					}
				}
				if !slices.Equal(t.Shape(), want) {
					if c.stateShape != nil {
						return errf("%q has shape %v, want %v for parameter %d of shape %v", prefix+k, t.Shape(), want, i, p.Shape())
					}
					return errf("%q has shape %v, parameter %d has shape %v", prefix+k, t.Shape(), i, p.Shape())
				}
				if !t.DType().IsFloat() {
					return errf("%q has dtype %s, want floating point", prefix+k, t.DType())
				}
				t = t.To(p.DType()).Clone()
				if t.Device() != p.Value().Device() {
					moved, err := t.ToDevice(p.Value().Device())
					if err != nil {
						return errf("%q: %v", prefix+k, err)
					}
					t = moved
				}
			}
			if newState[p] == nil {
				newState[p] = map[string]*tensor.Tensor{}
			}
			newState[p][k] = t
		}
	}
	for i, p := range params {
		st := newState[p]
		if st == nil {
			continue
		}
		for _, k := range c.required {
			if st[k] == nil {
				return errf("parameter %d has state but lacks %q", i, "state."+strconv.Itoa(i)+"."+k)
			}
		}
	}
	var unexpected []string
	for k := range maps.Keys(sd) {
		if !used[k] {
			unexpected = append(unexpected, strconv.Quote(k))
		}
	}
	if len(unexpected) > 0 {
		sort.Strings(unexpected)
		return errf("unexpected keys %s", strings.Join(unexpected, ", "))
	}
	for gi, g := range c.groups {
		g.Options = newOpts[gi]
	}
	c.state = newState
	return nil
}

// catchPanic runs f and turns a panic with a string into an error.
func catchPanic(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}
