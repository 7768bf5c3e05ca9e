package nn

import (
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// ForwardPreHook runs before a module's Forward when the module is applied
// with Call. It returns the input to use, or nil to keep x.
type ForwardPreHook func(m Module, x *autograd.Var) *autograd.Var

// ForwardHook runs after a module's Forward when the module is applied with
// Call. It returns the output to use, or nil to keep out.
type ForwardHook func(m Module, x, out *autograd.Var) *autograd.Var

// moduleHooks holds a module's forward hooks.
type moduleHooks struct {
	mu   sync.Mutex
	pre  []*ForwardPreHook
	post []*ForwardHook
}

// hooked is implemented by every module that embeds Base.
type hooked interface {
	forwardHooks() ([]*ForwardPreHook, []*ForwardHook)
}

// forwardHooks returns snapshots of the registered hooks. The slices are
// never written in place (registration appends to a clipped slice, removal
// deletes from a clone), so the caller may range over them unlocked.
func (b *Base) forwardHooks() ([]*ForwardPreHook, []*ForwardHook) {
	hs := b.loadHooks()
	if hs == nil {
		return nil, nil
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.pre, hs.post
}

// hookSet returns the module's hook set, creating it on first use; the
// atomic pointer lets registration race with Call safely.
func (b *Base) hookSet() *moduleHooks {
	if hs := b.loadHooks(); hs != nil {
		return hs
	}
	atomic.CompareAndSwapPointer(b.hooksAddr(), nil, unsafe.Pointer(&moduleHooks{}))
	return b.loadHooks()
}

// loadHooks reads b.hooks atomically. The field is a plain pointer rather
// than an atomic.Pointer because the latter may not be copied, and vet
// would then flag every module type with value receivers that embeds Base.
func (b *Base) loadHooks() *moduleHooks {
	return (*moduleHooks)(atomic.LoadPointer(b.hooksAddr()))
}

// hooksAddr returns b.hooks's address for the atomic operations.
func (b *Base) hooksAddr() *unsafe.Pointer {
	return (*unsafe.Pointer)(unsafe.Pointer(&b.hooks))
}

// RegisterForwardPreHook adds a hook that Call runs before the module's
// Forward (after hooks registered earlier), as torch's
// register_forward_pre_hook. Remove the hook with the returned handle.
// Registration is not safe concurrently with Call on the same module.
func (b *Base) RegisterForwardPreHook(hook ForwardPreHook) *autograd.HookHandle {
	if hook == nil {
		panic("nn.RegisterForwardPreHook: nil hook")
	}
	hs := b.hookSet()
	h := &hook
	hs.mu.Lock()
	hs.pre = append(slices.Clip(hs.pre), h)
	hs.mu.Unlock()
	return autograd.NewHookHandle(func() {
		hs.mu.Lock()
		defer hs.mu.Unlock()
		if i := slices.Index(hs.pre, h); i >= 0 {
			hs.pre = slices.Delete(slices.Clone(hs.pre), i, i+1)
		}
	})
}

// RegisterForwardHook adds a hook that Call runs after the module's Forward
// (after hooks registered earlier), as torch's register_forward_hook. Remove
// the hook with the returned handle. Registering and removing hooks may race
// with Call on the same module: a Call sees the hooks registered when it
// starts.
func (b *Base) RegisterForwardHook(hook ForwardHook) *autograd.HookHandle {
	if hook == nil {
		panic("nn.RegisterForwardHook: nil hook")
	}
	hs := b.hookSet()
	h := &hook
	hs.mu.Lock()
	hs.post = append(slices.Clip(hs.post), h)
	hs.mu.Unlock()
	return autograd.NewHookHandle(func() {
		hs.mu.Lock()
		defer hs.mu.Unlock()
		if i := slices.Index(hs.post, h); i >= 0 {
			hs.post = slices.Delete(slices.Clone(hs.post), i, i+1)
		}
	})
}

// Call applies m to x running its forward hooks: the pre-hooks, m.Forward,
// then the forward hooks, as calling a torch module does. Calling
// m.Forward directly skips the hooks (as torch's module.forward(x) does),
// so containers call their children through Call; custom modules should
// too, to make hooks and Summary see their sub-modules.
func Call(m Module, x *autograd.Var) *autograd.Var {
	hm, ok := m.(hooked)
	if !ok {
		return m.Forward(x)
	}
	pre, post := hm.forwardHooks()
	for _, h := range pre {
		if nx := (*h)(m, x); nx != nil {
			x = nx
		}
	}
	out := m.Forward(x)
	for _, h := range post {
		if no := (*h)(m, x, out); no != nil {
			out = no
		}
	}
	return out
}

// RegisterGradHooks registers hook on the gradient of every parameter of m
// that requires one (see autograd.Var.RegisterHook): backward calls it with
// the parameter's dotted name and gradient before accumulating it, and the
// tensor it returns (nil: keep) replaces the gradient. The returned handle
// removes all of them.
func RegisterGradHooks(m Module, hook func(name string, grad *tensor.Tensor) *tensor.Tensor) *autograd.HookHandle {
	if hook == nil {
		panic("nn.RegisterGradHooks: nil hook")
	}
	var handles []*autograd.HookHandle
	seen := map[*autograd.Var]bool{}
	for _, p := range m.NamedParameters() {
		if seen[p.Param] || !p.Param.RequiresGrad() {
			continue
		}
		seen[p.Param] = true
		name := p.Name
		handles = append(handles, p.Param.RegisterHook(func(g *tensor.Tensor) *tensor.Tensor { return hook(name, g) }))
	}
	return autograd.NewHookHandle(func() {
		for _, h := range handles {
			h.Remove()
		}
	})
}
