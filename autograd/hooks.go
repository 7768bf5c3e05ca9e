package autograd

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor"
)

// GradHook inspects or replaces the gradient of a Var during backward. It
// receives the gradient of the backward pass's outputs with respect to the
// Var and returns the gradient to use in its place, or nil to keep it. The
// returned tensor must have the Var's shape. It must not modify grad in
// place.
type GradHook func(grad *tensor.Tensor) *tensor.Tensor

// hookEntry is one registered hook; its address identifies it for removal.
type hookEntry struct {
	fn GradHook
}

// HookHandle removes a registered hook.
type HookHandle struct {
	remove func()
}

// Remove unregisters the hook. Removing twice, or through the zero
// HookHandle, does nothing.
func (h *HookHandle) Remove() {
	if h != nil && h.remove != nil {
		h.remove()
		h.remove = nil
	}
}

// NewHookHandle returns a handle whose Remove calls remove once. Packages
// above autograd (nn's module hooks) use it so every hook has the same
// handle type.
func NewHookHandle(remove func()) *HookHandle { return &HookHandle{remove: remove} }

// RegisterHook adds a hook called each time backward computes the gradient
// with respect to v (once per backward pass, with the gradient summed over
// all of v's uses), before it is accumulated into Grad (for leaves and
// RetainGrad Vars) or passed on to v's inputs, as torch.Tensor.register_hook.
// Hooks run in registration order, each seeing the previous one's result.
// A replaced gradient is a constant for higher-order gradients
// (Options.CreateGraph). It panics if v does not require a gradient.
func (v *Var) RegisterHook(hook GradHook) *HookHandle {
	if hook == nil {
		panic("autograd.Var.RegisterHook: nil hook")
	}
	if !v.requiresGrad {
		panic(fmt.Sprintf("autograd.Var.RegisterHook: %v does not require a gradient, so backward never computes one", v))
	}
	e := &hookEntry{fn: hook}
	v.mu.Lock()
	v.hooks = append(v.hooks, e)
	v.mu.Unlock()
	return &HookHandle{remove: func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		if i := slices.Index(v.hooks, e); i >= 0 {
			v.hooks = slices.Delete(slices.Clone(v.hooks), i, i+1)
		}
	}}
}

// runHooks passes g through v's hooks and returns the gradient to use.
func (v *Var) runHooks(g *Var) *Var {
	v.mu.Lock()
	hooks := v.hooks
	v.mu.Unlock()
	for _, h := range hooks {
		out := h.fn(g.value)
		if out == nil || out == g.value {
			continue
		}
		if !sameShape(out.Shape(), v.value.Shape()) {
			panic(fmt.Sprintf("autograd: a gradient hook returned shape %v for a Var of shape %v", out.Shape(), v.value.Shape()))
		}
		if out.DType() != v.DType() {
			out = out.To(v.DType())
		}
		g = New(out)
	}
	return g
}
