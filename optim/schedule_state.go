package optim

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/emberml/ember/tensor"
)

// maxStateCount bounds the step counts a scheduler state may hold, so that
// a corrupt file cannot overflow an int.
const maxStateCount = 1 << 53

// stateReader reads and checks the entries of a scheduler's state dict,
// keeping the first problem it finds.
type stateReader struct {
	sd   map[string]*tensor.Tensor
	used map[string]bool
	err  error
}

func (r *stateReader) fail(format string, a ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, a...)
	}
}

// floats returns the floats of key, which must hold n of them (any n when n
// is negative).
func (r *stateReader) floats(key string, n int) []float64 {
	t := r.sd[key]
	if t == nil {
		r.fail("missing key %q", key)
		return nil
	}
	if r.used == nil {
		r.used = map[string]bool{}
	}
	r.used[key] = true
	if !t.DType().IsFloat() || (n >= 0 && t.Numel() != n) {
		want := fmt.Sprint(n)
		if n < 0 {
			want = "any number of"
		}
		r.fail("%q must hold %s floats, got %s %v", key, want, t.DType(), t.Shape())
		return nil
	}
	return t.To(tensor.Float64).Float64s()
}

// scalar returns the one float of key.
func (r *stateReader) scalar(key string) float64 {
	v := r.floats(key, 1)
	if v == nil {
		return math.NaN()
	}
	return v[0]
}

// count returns the integer in [lo, maxStateCount] that key holds.
func (r *stateReader) count(key string, lo int) int {
	v := r.scalar(key)
	if r.err == nil && (v != math.Trunc(v) || v < float64(lo) || v > maxStateCount) {
		r.fail("%q is %v, want an integer >= %d", key, v, lo)
	}
	if r.err != nil {
		return 0
	}
	return int(v)
}

// done reports an error for keys that were not read.
func (r *stateReader) done() error {
	if r.err == nil && len(r.used) != len(r.sd) {
		var extra []string
		for k := range r.sd {
			if !r.used[k] {
				extra = append(extra, k)
			}
		}
		sort.Strings(extra)
		r.fail("unexpected keys %q", extra)
	}
	return r.err
}

// StateDict returns the scheduler's state as tensors: "last_epoch" (the
// number of StepMetric calls), "best", "num_bad_epochs",
// "cooldown_counter" and "last_lr" (empty before the first StepMetric).
// Hyperparameters are not included.
func (s *ReduceLROnPlateau) StateDict() map[string]*tensor.Tensor {
	return map[string]*tensor.Tensor{
		"last_epoch":       tensor.ScalarOf(float64(s.lastEpoch), tensor.Float64),
		"best":             tensor.ScalarOf(s.best, tensor.Float64),
		"num_bad_epochs":   tensor.ScalarOf(float64(s.numBad), tensor.Float64),
		"cooldown_counter": tensor.ScalarOf(float64(s.cooldownCt), tensor.Float64),
		"last_lr":          tensor.FromSlice(slices.Clone(s.lastLR), len(s.lastLR)),
	}
}

// LoadStateDict restores a state dict from StateDict of a ReduceLROnPlateau
// over as many parameter groups. It does not change the optimizer's
// learning rates (load the optimizer's state dict for those). On error the
// scheduler is unchanged.
func (s *ReduceLROnPlateau) LoadStateDict(sd map[string]*tensor.Tensor) error {
	r := &stateReader{sd: sd}
	epoch := r.count("last_epoch", 0)
	best := r.scalar("best")
	if r.err == nil && math.IsNaN(best) {
		r.fail(`"best" is NaN`)
	}
	numBad := r.count("num_bad_epochs", 0)
	cooldown := r.count("cooldown_counter", 0)
	lastLR := r.floats("last_lr", -1)
	if n := s.opt.NumGroups(); r.err == nil && len(lastLR) != 0 && len(lastLR) != n {
		r.fail(`"last_lr" has %d values for %d parameter groups`, len(lastLR), n)
	}
	if err := r.done(); err != nil {
		return fmt.Errorf("optim.ReduceLROnPlateau.LoadStateDict: %w", err)
	}
	s.lastEpoch, s.best, s.numBad, s.cooldownCt = epoch, best, numBad, cooldown
	s.lastLR = nil
	if len(lastLR) > 0 {
		s.lastLR = lastLR
	}
	return nil
}

// splitChildStates separates the keys "schedulers.<i>.<key>" of a composite
// scheduler's state dict into one state dict per child and returns the
// remaining keys.
func splitChildStates(sd map[string]*tensor.Tensor, children int) ([]map[string]*tensor.Tensor, map[string]*tensor.Tensor, error) {
	subs := make([]map[string]*tensor.Tensor, children)
	for i := range subs {
		subs[i] = map[string]*tensor.Tensor{}
	}
	rest := map[string]*tensor.Tensor{}
	for k, t := range sd {
		tail, ok := strings.CutPrefix(k, "schedulers.")
		if !ok {
			rest[k] = t
			continue
		}
		index, key, ok := strings.Cut(tail, ".")
		i, err := strconv.Atoi(index)
		if !ok || err != nil || i < 0 || i >= children {
			return nil, nil, fmt.Errorf("key %q names no scheduler of the %d", k, children)
		}
		subs[i][key] = t
	}
	return subs, rest, nil
}

// childStates returns the state dicts of children under the keys
// "schedulers.<i>.<key>".
func childStates[S interface {
	StateDict() map[string]*tensor.Tensor
}](sd map[string]*tensor.Tensor, children []S) {
	for i, c := range children {
		for k, t := range c.StateDict() {
			sd["schedulers."+strconv.Itoa(i)+"."+k] = t
		}
	}
}

// loadChildStates loads subs into children; if one fails, the children
// loaded before it get their previous state back.
func loadChildStates[S interface {
	StateDict() map[string]*tensor.Tensor
	LoadStateDict(map[string]*tensor.Tensor) error
}](children []S, subs []map[string]*tensor.Tensor) error {
	before := make([]map[string]*tensor.Tensor, len(children))
	for i, c := range children {
		before[i] = c.StateDict()
	}
	for i, c := range children {
		if err := c.LoadStateDict(subs[i]); err != nil {
			for j := range i {
				if rerr := children[j].LoadStateDict(before[j]); rerr != nil {
					panic(fmt.Sprintf("optim: restoring scheduler %d after a failed load: %v", j, rerr))
				}
			}
			return fmt.Errorf("scheduler %d: %w", i, err)
		}
	}
	return nil
}

// StateDict returns the state of SequentialLR and of its schedulers:
// "last_epoch", "last_lr" and each scheduler's entries under
// "schedulers.<i>.".
func (s *SequentialLR) StateDict() map[string]*tensor.Tensor {
	sd := map[string]*tensor.Tensor{
		"last_epoch": tensor.ScalarOf(float64(s.lastEpoch), tensor.Float64),
		"last_lr":    tensor.FromSlice(slices.Clone(s.lastLR), len(s.lastLR)),
	}
	childStates(sd, s.scheds)
	return sd
}

// LoadStateDict restores a state dict from StateDict of a SequentialLR over
// schedulers of the same kinds. It does not change the optimizer's learning
// rates. On error the scheduler and its schedulers are unchanged.
func (s *SequentialLR) LoadStateDict(sd map[string]*tensor.Tensor) error {
	errf := func(err error) error { return fmt.Errorf("optim.SequentialLR.LoadStateDict: %w", err) }
	subs, rest, err := splitChildStates(sd, len(s.scheds))
	if err != nil {
		return errf(err)
	}
	r := &stateReader{sd: rest}
	epoch := r.count("last_epoch", 0)
	lastLR := r.floats("last_lr", len(s.lastLR))
	if err := r.done(); err != nil {
		return errf(err)
	}
	if err := loadChildStates(s.scheds, subs); err != nil {
		return errf(err)
	}
	s.lastEpoch, s.lastLR = epoch, lastLR
	return nil
}

// StateDict returns the states of the chained schedulers, each under
// "schedulers.<i>.".
func (c *ChainedScheduler) StateDict() map[string]*tensor.Tensor {
	sd := map[string]*tensor.Tensor{}
	childStates(sd, c.scheds)
	return sd
}

// LoadStateDict restores a state dict from StateDict of a ChainedScheduler
// over schedulers of the same kinds. On error every scheduler is unchanged.
func (c *ChainedScheduler) LoadStateDict(sd map[string]*tensor.Tensor) error {
	subs, rest, err := splitChildStates(sd, len(c.scheds))
	if err == nil {
		err = (&stateReader{sd: rest}).done()
	}
	if err == nil {
		err = loadChildStates(c.scheds, subs)
	}
	if err != nil {
		return fmt.Errorf("optim.ChainedScheduler.LoadStateDict: %w", err)
	}
	return nil
}
