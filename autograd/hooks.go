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

// HookOptions tune a gradient hook.
type HookOptions struct {
	// SharesGrad declares that the hook accepts that the tensor it is
	// shown may become the leaf's Grad without a copy (when every hook of
	// the leaf sets it, none replaces the gradient, and backward allocated
	// the tensor for this leaf alone), so that whatever the hook keeps of
	// it sees later in-place writes to Grad by the caller. Backward itself
	// never writes to a tensor a hook was shown. A hook that keeps
	// nothing, or only reads what it keeps before Grad is next written
	// (DataParallel flattening its gradient buckets), sets it to spare the
	// copy. Otherwise backward copies the gradient into a leaf's Grad, so
	// a kept tensor never changes.
	SharesGrad bool
}

// hookEntry is one registered hook; its address identifies it for removal.
type hookEntry struct {
	fn  GradHook
	opt HookOptions
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
	return v.RegisterHookWith(hook, HookOptions{})
}

// RegisterHookWith is RegisterHook with options.
func (v *Var) RegisterHookWith(hook GradHook, opt HookOptions) *HookHandle {
	if hook == nil {
		panic("autograd.Var.RegisterHook: nil hook")
	}
	if !v.requiresGrad {
		panic(fmt.Sprintf("autograd.Var.RegisterHook: %v does not require a gradient, so backward never computes one", v))
	}
	e := &hookEntry{fn: hook, opt: opt}
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
// shared reports whether every hook (none included) was registered with
// SharesGrad and none replaced g, so that a leaf may keep g without a copy.
func (v *Var) runHooks(g *Var) (out *Var, shared bool) {
	v.mu.Lock()
	hooks := v.hooks
	v.mu.Unlock()
	shared = true
	for _, h := range hooks {
		shared = shared && h.opt.SharesGrad
		r := h.fn(g.value)
		if r == nil || r == g.value {
			continue
		}
		// The hook made r and may keep it.
		shared = false
		if !sameShape(r.Shape(), v.value.Shape()) {
			panic(fmt.Sprintf("autograd: a gradient hook returned shape %v for a Var of shape %v", r.Shape(), v.value.Shape()))
		}
		if r.DType() != v.DType() {
			r = r.To(v.DType())
		}
		g = New(r)
	}
	return g, shared
}
