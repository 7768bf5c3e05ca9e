package autograd

import (
	"errors"
	"fmt"

	"github.com/emberml/ember/tensor"
)

// Options tune a backward pass.
type Options struct {
	// RetainGraph keeps the recorded nodes (and the tensors they hold) so
	// that backward can run through the same graph again. Without it the
	// pass releases every intermediate as soon as it has used it.
	RetainGraph bool
	// CreateGraph records the backward computation itself, so the gradients
	// it produces can be differentiated again (higher-order gradients).
	// It implies RetainGraph.
	CreateGraph bool
}

// ErrGraphFreed is returned when backward reaches a node that an earlier
// pass without RetainGraph already released.
var ErrGraphFreed = errors.New("autograd: trying to backward through the graph a second time; its saved values were freed by the first pass (use Options.RetainGraph)")

// Backward computes the gradient of the scalar v with respect to every leaf
// that requires one, adding it to the leaves' Grad.
func (v *Var) Backward() error { return v.BackwardWith(nil, Options{}) }

// BackwardWith runs backward from v with gradient grad (nil means ones, which
// v being a one-element Var requires) and the given options.
func (v *Var) BackwardWith(grad *tensor.Tensor, opt Options) error {
	if v.noGrad {
		return errNoGradBackward("backward")
	}
	if !v.requiresGrad {
		return errors.New("autograd: backward on a Var that does not require a gradient (no input of its graph requires one)")
	}
	if grad == nil {
		if v.value.Numel() != 1 {
			return fmt.Errorf("autograd: backward needs an explicit gradient for a non-scalar output of shape %v", v.value.Shape())
		}
		grad = tensor.OnesLike(v.value)
	} else if !sameShape(grad.Shape(), v.value.Shape()) {
		return fmt.Errorf("autograd: gradient of shape %v given for an output of shape %v", grad.Shape(), v.value.Shape())
	} else if grad.DType() != v.DType() {
		grad = grad.To(v.DType())
	}
	_, err := run([]*Var{v}, []*Var{New(grad)}, nil, opt)
	return err
}

// Grad returns the gradients of outputs (weighted by gradOutputs; nil means
// ones for scalar outputs) with respect to inputs, like torch.autograd.grad.
// Leaves' Grad fields are left untouched. With CreateGraph the returned
// gradients are themselves differentiable.
func Grad(outputs, inputs []*Var, gradOutputs []*tensor.Tensor, opt Options) ([]*Var, error) {
	gouts := make([]*Var, len(outputs))
	for i, o := range outputs {
		if o.noGrad {
			return nil, fmt.Errorf("autograd.Grad: output %d: %w", i, errNoGradBackward("autograd.Grad"))
		}
		if !o.requiresGrad {
			return nil, fmt.Errorf("autograd.Grad: output %d does not require a gradient", i)
		}
		var g *tensor.Tensor
		if i < len(gradOutputs) {
			g = gradOutputs[i]
		}
		switch {
		case g == nil:
			if o.value.Numel() != 1 {
				return nil, fmt.Errorf("autograd.Grad: output %d has shape %v; give its gradient", i, o.value.Shape())
			}
			g = tensor.OnesLike(o.value)
		case !sameShape(g.Shape(), o.value.Shape()):
			return nil, fmt.Errorf("autograd.Grad: gradient %d has shape %v for an output of shape %v", i, g.Shape(), o.value.Shape())
		case g.DType() != o.DType():
			g = g.To(o.DType())
		}
		gouts[i] = New(g)
	}
	return run(outputs, gouts, inputs, opt)
}

// run is the backward engine. With targets nil it accumulates into leaves
// (and RetainGrad Vars); otherwise it returns the gradients of targets.
func run(outputs, gouts []*Var, targets []*Var, opt Options) ([]*Var, error) {
	if opt.CreateGraph {
		opt.RetainGraph = true
		for _, g := range gouts {
			g.requiresGrad = false
		}
	}
	order, err := topoOrder(outputs)
	if err != nil {
		return nil, err
	}
	grads := make(map[*Var]*Var, len(order))
	// owned holds the gradient sums this pass allocated itself. Until their
	// Var is processed nothing but grads refers to them, so later
	// contributions are added in place and a leaf may keep one without a
	// copy. A recorded (CreateGraph) pass owns nothing.
	owned := map[*tensor.Tensor]bool{}
	// exclusive holds gradients, views included, whose storage a backward
	// rule allocated and nothing outside the pass refers to; a dense view of
	// one that a later rule returns may be owned in turn.
	exclusive := map[*tensor.Tensor]bool{}
	inPlace := !opt.CreateGraph
	for i, o := range outputs {
		accumulate(grads, owned, inPlace, o, gouts[i])
	}
	want := map[*Var]bool{}
	for _, t := range targets {
		want[t] = true
	}
	for _, v := range order { // outputs first, leaves last
		g := grads[v]
		if g == nil {
			continue
		}
		// From here on g is handed out (to hooks, the leaf, the backward
		// rule), so the pass may no longer write to it.
		isOwned := owned[g.value]
		isExclusive := exclusive[g.value]
		delete(owned, g.value)
		delete(exclusive, g.value)
		hooked := v.hasHooks()
		hg, shared := v.runHooks(g)
		if hg != g {
			g = hg
			grads[v] = g
		}
		if v.node == nil || v.retainGrad || want[v] {
			if targets == nil {
				v.accumulateGrad(g, opt.CreateGraph, isOwned && shared && v.node == nil)
			}
			if v.node == nil {
				continue
			}
		}
		n := v.node
		if n.freed {
			return nil, ErrGraphFreed
		}
		for _, s := range n.saved {
			if s.t.Version() != s.version {
				return nil, fmt.Errorf("autograd: a tensor of shape %v saved by %s for backward was modified in place (version %d, expected %d); clone it before writing, or write before using it", s.t.Shape(), n.op, s.t.Version(), s.version)
			}
		}
		in, out := n.inputs, v
		w := v.watch
		if !opt.CreateGraph {
			// Detached copies, which carry the observer (not the anomaly
			// check, which the engine makes) when the node is observed.
			var bw *watch
			if w != nil {
				bw = w.inBackward
			}
			in = make([]*Var, len(n.inputs))
			for i, x := range n.inputs {
				if x != nil {
					in[i] = &Var{value: x.value, watch: bw}
				}
			}
			out = &Var{value: v.value, watch: bw}
			g = &Var{value: g.value, watch: bw}
		}
		var ig []*Var
		if w != nil && w.observer != nil {
			w.observer.BeginOp(n.op, true)
			ig = n.backward(g, in, out)
			w.observer.EndOp(OpEvent{Op: n.op, Backward: true, Inputs: n.inputs, Outputs: ig, Grad: g, Key: n.key})
		} else {
			ig = n.backward(g, in, out)
		}
		if len(ig) != len(n.inputs) {
			// A rule that drops or adds a gradient would leave an input
			// silently without one (or credit the wrong input); PyTorch
			// raises here too.
			return nil, fmt.Errorf("autograd: the backward rule of %s returned %s for its %d inputs; return exactly one per input, nil for an input that gets none", n.op, countOf(len(ig), "gradient"), len(n.inputs))
		}
		if w != nil && w.anomaly != nil {
			if err := checkGradients(n, ig); err != nil {
				return nil, err
			}
		}
		// gOwned: nothing outside this pass has seen g, so a gradient that
		// is a dense view of it may be handed on exclusively.
		gOwned := (isOwned || isExclusive) && !hooked && !want[v]
		for i, x := range n.inputs {
			if x == nil || !x.requiresGrad || ig[i] == nil {
				continue
			}
			gi := ig[i]
			if !sameShape(gi.value.Shape(), x.value.Shape()) {
				panic(fmt.Sprintf("autograd: %s produced a gradient of shape %v for an input of shape %v", n.op, gi.value.Shape(), x.value.Shape()))
			}
			if gi.DType() != x.DType() {
				// Mixed-dtype ops (float32 with float64, say) compute the
				// gradient in the promoted dtype; every input receives its
				// own dtype, as in PyTorch.
				gi = gi.To(x.DType())
			}
			if _, seen := grads[x]; !seen && targets == nil && !opt.RetainGraph && inPlace &&
				exclusiveGrad(gi, i, ig, g, gOwned, n, in, out) {
				if denseOwner(gi.value) {
					owned[gi.value] = true
				} else {
					exclusive[gi.value] = true
				}
			}
			accumulate(grads, owned, inPlace, x, gi)
		}
		if !want[v] {
			delete(grads, v) // release the gradient as soon as it is pushed back
		}
		if !opt.RetainGraph {
			n.backward, n.inputs, n.saved, n.freed = nil, nil, nil, true
		}
	}
	if targets == nil {
		return nil, nil
	}
	res := make([]*Var, len(targets))
	for i, t := range targets {
		g := grads[t]
		if g == nil {
			g = New(tensor.ZerosLike(t.value))
		}
		res[i] = g
	}
	return res, nil
}

// accumulate adds g to v's gradient in grads. Sums the pass allocates are
// recorded in owned; with inPlace, contributions to an owned sum are added
// into it instead of allocating another.
func accumulate(grads map[*Var]*Var, owned map[*tensor.Tensor]bool, inPlace bool, v, g *Var) {
	prev, ok := grads[v]
	if !ok {
		grads[v] = g
		return
	}
	if prev == g && g.gradSink {
		return // the op behind the placeholder already holds every piece
	}
	if inPlace && owned[prev.value] && prev.DType() == g.DType() && !prev.value.SharesStorage(g.value) {
		tensor.AddInto(prev.value, g.value)
		return
	}
	sum := prev.Add(g)
	if inPlace && tensor.FusedSupported(sum.value) {
		owned[sum.value] = true
	}
	grads[v] = sum
}

// exclusiveGrad reports whether the storage of gi, the gradient a backward
// rule returned for its input i, belongs to the pass alone: it is shared with
// nothing the rule was given or returned elsewhere (the incoming gradient g
// unless the pass owns g, the op's inputs, output and saved tensors, the
// other gradients), so the rule allocated it. When gi is moreover dense
// (denseOwner), later contributions may be added into it and a leaf may keep
// it without a copy. Rules recorded through Custom are never trusted.
func exclusiveGrad(gi *Var, i int, ig []*Var, g *Var, gOwned bool, n *node, in []*Var, out *Var) bool {
	t := gi.value
	if n.external || gi.gradSink || gi.node != nil {
		return false
	}
	if !gOwned && t.SharesStorage(g.value) {
		return false
	}
	if t.SharesStorage(out.value) {
		return false
	}
	for _, x := range in {
		if x != nil && t.SharesStorage(x.value) {
			return false
		}
	}
	for _, x := range n.inputs {
		if x != nil && t.SharesStorage(x.value) {
			return false
		}
	}
	for _, s := range n.saved {
		if t.SharesStorage(s.t) {
			return false
		}
	}
	for j, o := range ig {
		if j != i && o != nil && t.SharesStorage(o.value) {
			return false
		}
	}
	return true
}

// denseOwner reports whether t is a contiguous float tensor that fills its
// whole storage from the start.
func denseOwner(t *tensor.Tensor) bool {
	return tensor.FusedSupported(t) && t.Offset() == 0 && t.Buffer().Len() == t.Numel()
}

// hasHooks reports whether v has gradient hooks (which may keep the
// gradient tensor they are shown).
func (v *Var) hasHooks() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.hooks) > 0
}

// accumulateGrad adds g to v's stored gradient. Without keepGraph the
// stored gradient is a dense tensor that v owns: the gradient pushed back by
// an op is often a view or shared with other inputs (Add hands the same
// tensor to both operands, Expand a stride-0 view), and an optimizer that
// updates one Grad in place must not change another. So g is copied, unless
// adopt says that the backward pass allocated g itself and hands it to v
// alone (no hook that may keep g without seeing later writes saw it).
func (v *Var) accumulateGrad(g *Var, keepGraph, adopt bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if keepGraph {
		if v.grad == nil {
			v.grad = g
		} else {
			v.grad = v.grad.Add(g)
		}
		return
	}
	if v.grad == nil {
		if adopt {
			v.grad = New(g.value)
		} else {
			v.grad = New(g.value.Clone())
		}
		return
	}
	v.grad = New(v.grad.value.Add(g.value))
}

// topoOrder lists every Var reachable from outputs that requires a gradient,
// each after all Vars that consume it (reverse topological order), using an
// explicit stack so deep graphs do not overflow the goroutine stack.
func topoOrder(outputs []*Var) ([]*Var, error) {
	type frame struct {
		v    *Var
		next int
	}
	visited := map[*Var]bool{}
	var post []*Var
	for _, o := range outputs {
		if visited[o] {
			continue
		}
		visited[o] = true
		stack := []frame{{v: o}}
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			var ins []*Var
			if f.v.node != nil {
				if f.v.node.freed {
					return nil, ErrGraphFreed
				}
				ins = f.v.node.inputs
			}
			if f.next < len(ins) {
				x := ins[f.next]
				f.next++
				if x != nil && x.requiresGrad && !visited[x] {
					visited[x] = true
					stack = append(stack, frame{v: x})
				}
				continue
			}
			post = append(post, f.v)
			stack = stack[:len(stack)-1]
		}
	}
	// post lists inputs before their consumers; reverse it.
	for i, j := 0, len(post)-1; i < j; i, j = i+1, j-1 {
		post[i], post[j] = post[j], post[i]
	}
	return post, nil
}

func sameShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// countOf writes n and the noun, plural unless n is 1: "1 gradient", "3
// gradients".
func countOf(n int, noun string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
