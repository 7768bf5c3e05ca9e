package autograd

import (
	"errors"
	"fmt"

	"github.com/emberml/ember/tensor"
)

// No-grad evaluation. PyTorch switches recording off for a block of code
// (torch.no_grad, torch.inference_mode) with a thread-local flag. Ember has
// no such switch, which would be process-wide or tied to a goroutine: the
// mark travels with the data instead. A Var made by NoGrad is marked, every
// op with a marked input records nothing (even when its other inputs, a
// model's parameters, require a gradient), keeps nothing for backward and
// marks its output, so a whole forward pass started from a marked input runs
// untaped while another goroutine trains the same parameters.

// NoGrad returns a leaf Var sharing v's value that is marked for no-grad
// evaluation, PyTorch's torch.no_grad for one computation: every op with a
// marked input records nothing, saves nothing for backward and marks its
// result, so
//
//	out := model.Forward(autograd.NoGrad(x))
//
// evaluates the model without a tape, allocating what a model with frozen
// parameters would. The mark is on the data, not on the goroutine or the
// process: other computations, in this goroutine or another, record as
// usual, even through the same parameters.
//
// Evaluation only reads the parameters, so it may run beside another
// goroutine's forward and backward passes. An optimizer step writes the
// parameters in place: order it with the evaluations (a sync.RWMutex, or
// evaluate between steps) as for any memory shared between goroutines.
//
// A result of a marked computation does not require a gradient, and
// Backward on it returns an error. Detach returns an unmarked copy; a
// marked Var cannot be made to require a gradient. The copy keeps v's
// observer and anomaly-detection marks (Observe, DetectAnomaly).
func NoGrad(v *Var) *Var { return &Var{value: v.value, noGrad: true, watch: v.watch} }

// IsNoGrad reports whether v is marked for no-grad evaluation: made by
// NoGrad or computed by an op with a marked input.
func (v *Var) IsNoGrad() bool { return v.noGrad }

// NeedsGrad reports whether an op on inputs records a node for backward:
// some input requires a gradient and none is marked no-grad. Nil inputs (an
// absent bias) are skipped. Code that picks a faster path when nothing will
// be differentiated (a fused inference kernel, intermediates it need not
// keep) asks this, the rule every op of this package follows.
func NeedsGrad(inputs ...*Var) bool {
	need, _ := tracking(inputs)
	return need
}

// Unrecorded wraps out, a value computed from inputs outside the tape (by a
// tensor kernel that has no gradient rule, such as an inference-only fused
// kernel), as a Var that records nothing. It carries the no-grad mark when
// an input does, so the evaluation it is part of stays untaped, and the
// first observation mark of its inputs (Observe, DetectAnomaly). It panics
// when NeedsGrad(inputs...) holds, since the gradient would then be lost
// without a word: use Custom to give such a value a gradient rule.
func Unrecorded(out *tensor.Tensor, inputs ...*Var) *Var {
	need, noGrad := tracking(inputs)
	if need {
		panic(fmt.Sprintf("autograd.Unrecorded: an input requires a gradient, which a value of shape %v computed outside the tape would drop; record it with Custom", out.Shape()))
	}
	return &Var{value: out, noGrad: noGrad, watch: watchOf(inputs)}
}

// tracking is the one rule deciding whether an op records: record is true
// when some input requires a gradient and none is marked no-grad; noGrad is
// true when an input is marked, and the op's output must then be marked.
func tracking(inputs []*Var) (record, noGrad bool) {
	for _, in := range inputs {
		if in == nil {
			continue
		}
		if in.noGrad {
			return false, true
		}
		if in.requiresGrad {
			record = true
		}
	}
	return record, false
}

// ErrNoGrad is returned (wrapped) by Backward and Grad on a Var computed in
// no-grad evaluation: nothing was recorded, so there is nothing to
// differentiate (PyTorch: "element 0 of tensors does not require grad and
// does not have a grad_fn").
var ErrNoGrad = errors.New("autograd: the Var was computed in no-grad evaluation (an input was marked by autograd.NoGrad), so no graph was recorded")

// errNoGradBackward wraps ErrNoGrad with what was attempted.
func errNoGradBackward(what string) error {
	return fmt.Errorf("%w; %s needs a forward pass on unmarked inputs", ErrNoGrad, what)
}
