package train

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Mode says whether a monitored value improves by going down (a loss) or
// up (an accuracy).
type Mode int

const (
	// Min: lower is better.
	Min Mode = iota
	// Max: higher is better.
	Max
)

// String returns "min" or "max".
func (m Mode) String() string {
	switch m {
	case Min:
		return "min"
	case Max:
		return "max"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// EarlyStopping watches one value per epoch (say the validation loss) and
// says when it has stopped improving, as Keras's and Lightning's
// EarlyStopping do: a value improves on the best so far when it is better
// by more than MinDelta; after Patience epochs in a row without
// improvement, ShouldStop turns true. A NaN never improves.
//
// Its state (best value, epochs without improvement) round-trips through
// StateDict, so a resumed run stops when the uninterrupted one would have.
type EarlyStopping struct {
	mode     Mode
	patience int
	minDelta float64

	best      float64
	bestEpoch int // index among the observed values of the best one
	seen      int // values observed
	bad       int // values in a row since the best that did not improve
}

// NewEarlyStopping returns an EarlyStopping that stops after patience
// values without an improvement larger than minDelta. It panics if mode
// is not Min or Max, patience is negative, or minDelta is negative or NaN.
func NewEarlyStopping(mode Mode, patience int, minDelta float64) *EarlyStopping {
	if mode != Min && mode != Max {
		panic(fmt.Sprintf("train.NewEarlyStopping: mode %v; use train.Min or train.Max", mode))
	}
	if patience < 0 || !(minDelta >= 0) {
		panic(fmt.Sprintf("train.NewEarlyStopping: patience %d, minDelta %v; both must be non-negative", patience, minDelta))
	}
	return &EarlyStopping{mode: mode, patience: patience, minDelta: minDelta, bestEpoch: -1}
}

// Observe records the next value and reports whether it is a new best
// (the moment to save the best model).
func (e *EarlyStopping) Observe(value float64) (improved bool) {
	e.seen++
	switch {
	case math.IsNaN(value):
	case e.bestEpoch < 0:
		improved = true
	case e.mode == Min:
		improved = value < e.best-e.minDelta
	default:
		improved = value > e.best+e.minDelta
	}
	if improved {
		e.best, e.bestEpoch, e.bad = value, e.seen-1, 0
	} else {
		e.bad++
	}
	return improved
}

// ShouldStop reports whether the last Patience values (and at least one)
// brought no improvement.
func (e *EarlyStopping) ShouldStop() bool { return e.bad >= max(e.patience, 1) }

// Best returns the best value observed and its index among the values
// (0 for the first Observe); ok is false before any non-NaN value.
func (e *EarlyStopping) Best() (value float64, index int, ok bool) {
	if e.bestEpoch < 0 {
		return 0, -1, false
	}
	return e.best, e.bestEpoch, true
}

// Stale returns the number of values observed since the best one.
func (e *EarlyStopping) Stale() int { return e.bad }

// StateDict returns the watcher's state as Float64 and Int64 scalars:
// "best", "best_index", "seen", "stale".
func (e *EarlyStopping) StateDict() map[string]*tensor.Tensor {
	i64 := func(v int) *tensor.Tensor { return tensor.FromSlice([]int64{int64(v)}, []int{}...) }
	return map[string]*tensor.Tensor{
		"best":       tensor.FromSlice([]float64{e.best}, []int{}...),
		"best_index": i64(e.bestEpoch),
		"seen":       i64(e.seen),
		"stale":      i64(e.bad),
	}
}

// LoadStateDict restores a state that StateDict returned. It returns an
// error, changing nothing, for a missing key, a tensor of another dtype or
// size, or inconsistent counts.
func (e *EarlyStopping) LoadStateDict(sd map[string]*tensor.Tensor) error {
	get := func(key string, dt tensor.DType) (*tensor.Tensor, error) {
		t, ok := sd[key]
		if !ok || t == nil {
			return nil, fmt.Errorf("train.EarlyStopping.LoadStateDict: missing %q", key)
		}
		if t.Numel() != 1 || t.DType() != dt {
			return nil, fmt.Errorf("train.EarlyStopping.LoadStateDict: %q is a %v tensor of shape %v, want one %v", key, t.DType(), t.Shape(), dt)
		}
		return t, nil
	}
	best, err := get("best", tensor.Float64)
	if err != nil {
		return err
	}
	var n [3]int64
	for i, key := range []string{"best_index", "seen", "stale"} {
		t, err := get(key, tensor.Int64)
		if err != nil {
			return err
		}
		n[i] = t.Int64s()[0]
	}
	bestIndex, seen, stale := n[0], n[1], n[2]
	if seen < 0 || bestIndex < -1 || bestIndex >= seen || stale < 0 || stale > seen {
		return fmt.Errorf("train.EarlyStopping.LoadStateDict: inconsistent counts: best index %d, seen %d, stale %d", bestIndex, seen, stale)
	}
	e.best, e.bestEpoch, e.seen, e.bad = best.Float64s()[0], int(bestIndex), int(seen), int(stale)
	return nil
}
