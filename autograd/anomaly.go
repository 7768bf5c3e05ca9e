package autograd

import (
	"fmt"
	"math"
	"runtime"
	"strings"

	"github.com/emberml/ember/tensor"
)

// Anomaly detection (PyTorch's torch.autograd.detect_anomaly) is a mark on
// the data, as NoGrad is: DetectAnomaly marks an input, every op computed
// from it keeps the Go stack that created it, and backward checks every
// gradient a marked node produces for NaN and Inf, failing with an
// *AnomalyError that names the op, where it was created and its inputs'
// shapes. Computations from unmarked inputs, in this goroutine or another,
// are not checked and cost nothing more.

// AnomalyOptions tune anomaly detection.
type AnomalyOptions struct {
	// CheckForward also checks the value of every op computed from the
	// marked input as soon as it is computed; an op whose value holds NaN
	// or Inf then panics with an *AnomalyError (an op has no error to
	// return), which a caller may recover. Without it only backward
	// checks, and returns the error.
	CheckForward bool
}

// DetectAnomaly returns a leaf Var sharing v's value that is marked for
// anomaly detection: every op computed from it records the Go stack that
// created it (its creation site), and Backward checks each gradient a
// marked op's rule produces, returning an *AnomalyError for the first one
// that holds NaN or Inf:
//
//	loss := lossFn(model.Forward(autograd.DetectAnomaly(x, autograd.AnomalyOptions{})), y)
//	if err := loss.Backward(); err != nil {
//		// err names the op, the line that created it and its inputs' shapes
//	}
//
// The mark is on the data, as NoGrad's is, and the copy keeps v's no-grad
// mark and observer (Observe). Recording a creation site costs about a
// microsecond per op and checking a gradient reads it once, so mark inputs
// while debugging only; other computations, even through the same
// parameters, are unaffected. A leaf that requires a gradient may be
// marked, and its gradient then accumulates on the returned Var; a Var
// made by a recorded op cannot (mark the inputs it was computed from).
func DetectAnomaly(v *Var, opt AnomalyOptions) *Var {
	var o OpObserver
	if v.watch != nil {
		o = v.watch.observer
	}
	return v.marked("DetectAnomaly", newWatch(o, &opt))
}

// DetectsAnomaly reports whether v is marked for anomaly detection: made by
// DetectAnomaly or computed by an op with a marked input.
func (v *Var) DetectsAnomaly() bool { return v.watch != nil && v.watch.anomaly != nil }

// AnomalyError reports a NaN or Inf found by anomaly detection.
type AnomalyError struct {
	// Op is the name of the op whose value (in forward) or gradient (in
	// backward) holds the NaN or Inf.
	Op string
	// Backward tells whether a gradient of the op's backward rule is
	// faulty; Input is then the index of the input that gradient is for.
	Backward bool
	Input    int
	// Shape is the faulty tensor's shape, NaNs and Infs how many of its
	// elements are NaN and ±Inf, and First the index (in row-major order)
	// of the first faulty element.
	Shape      []int
	NaNs, Infs int
	First      int
	// InputShapes are the shapes of the op's inputs (nil for an absent
	// optional input).
	InputShapes [][]int
	// Site is the creation site of the op: the Go call stack from the
	// function that called into this package down to the first caller
	// outside the runtime and testing packages, innermost first.
	Site []runtime.Frame
}

// Error describes the anomaly on several lines: the op, the faulty tensor,
// the inputs' shapes and the creation site.
func (e *AnomalyError) Error() string {
	var b strings.Builder
	what := "value"
	if e.Backward {
		what = fmt.Sprintf("gradient for input %d", e.Input)
		fmt.Fprintf(&b, "autograd: anomaly detected: the backward of %s returned a %s", e.Op, what)
	} else {
		fmt.Fprintf(&b, "autograd: anomaly detected: the %s of %s", what, e.Op)
	}
	fmt.Fprintf(&b, " of shape %v with %s and %s (first at index %d); the op's inputs have shapes %s",
		e.Shape, countOf(e.NaNs, "NaN"), countOf(e.Infs, "Inf"), e.First, shapesString(e.InputShapes))
	if len(e.Site) == 0 {
		b.WriteString("; its creation site is unknown")
		return b.String()
	}
	fmt.Fprintf(&b, "; %s was created at:", e.Op)
	for _, f := range e.Site {
		fmt.Fprintf(&b, "\n\t%s\n\t\t%s:%d", f.Function, f.File, f.Line)
	}
	return b.String()
}

func shapesString(shapes [][]int) string {
	parts := make([]string, len(shapes))
	for i, s := range shapes {
		if s == nil {
			parts[i] = "(none)"
		} else {
			parts[i] = fmt.Sprint(s)
		}
	}
	return strings.Join(parts, ", ")
}

// maxSiteFrames bounds the creation site kept per op.
const maxSiteFrames = 32

// callSite is a captured call stack: the program counters of its frames.
type callSite struct{ pcs []uintptr }

// captureSite returns the current call stack (this package's frames
// included; siteFrames drops them).
func captureSite() *callSite {
	var pcs [maxSiteFrames + 8]uintptr
	n := runtime.Callers(2, pcs[:])
	return &callSite{pcs: append([]uintptr(nil), pcs[:n]...)}
}

// siteFrames turns a captured stack into the creation site: it drops the
// frames of this package (its tests excepted) above the caller, and the
// runtime and testing frames below the caller's.
func siteFrames(site *callSite) []runtime.Frame {
	if site == nil || len(site.pcs) == 0 {
		return nil
	}
	pcs := site.pcs
	const self = "github.com/emberml/ember/autograd."
	frames := runtime.CallersFrames(pcs)
	var out []runtime.Frame
	for {
		f, more := frames.Next()
		inPackage := strings.HasPrefix(f.Function, self) && !strings.HasSuffix(f.File, "_test.go")
		switch {
		case inPackage && len(out) == 0:
			// still inside autograd, above the caller
		case strings.HasPrefix(f.Function, "runtime.") || strings.HasPrefix(f.Function, "testing."):
			if len(out) > 0 {
				return out
			}
		default:
			out = append(out, f)
			if len(out) == maxSiteFrames {
				return out
			}
		}
		if !more {
			return out
		}
	}
}

// nonFinite counts the NaN and ±Inf elements of t and finds the first
// one; integer and boolean tensors have none.
func nonFinite(t *tensor.Tensor) (nans, infs, first int) {
	first = -1
	note := func(i int, x float64) {
		switch {
		case math.IsNaN(x):
			nans++
		case math.IsInf(x, 0):
			infs++
		default:
			return
		}
		if first < 0 {
			first = i
		}
	}
	switch {
	case !t.DType().IsFloat():
	case t.DType() == tensor.Float64:
		for i, x := range t.Float64s() {
			note(i, x)
		}
	default:
		for i, x := range t.Float32s() {
			note(i, float64(x))
		}
	}
	return nans, infs, first
}

// anomalyIn returns the *AnomalyError for t, the value or gradient of the
// op, or nil when t is finite.
func anomalyIn(t *tensor.Tensor, op string, inputs []*Var, site *callSite) *AnomalyError {
	nans, infs, first := nonFinite(t)
	if nans == 0 && infs == 0 {
		return nil
	}
	shapes := make([][]int, len(inputs))
	for i, in := range inputs {
		if in != nil {
			shapes[i] = in.Shape()
		}
	}
	return &AnomalyError{Op: op, Shape: t.Shape(), NaNs: nans, Infs: infs, First: first, InputShapes: shapes, Site: siteFrames(site)}
}

// checkForward panics with an *AnomalyError when v, the value the op just
// computed from inputs, holds NaN or Inf. The creation site is the
// current stack.
func checkForward(op string, v *Var, inputs []*Var) {
	if e := anomalyIn(v.value, op, inputs, captureSite()); e != nil {
		panic(e)
	}
}

// checkGradients returns an *AnomalyError for the first gradient in ig
// (the rule of node n's output v) that holds NaN or Inf.
func checkGradients(n *node, ig []*Var) error {
	for i, x := range n.inputs {
		if x == nil || !x.requiresGrad || ig[i] == nil {
			continue
		}
		if e := anomalyIn(ig[i].value, n.op, n.inputs, n.site); e != nil {
			e.Backward, e.Input = true, i
			return e
		}
	}
	return nil
}
