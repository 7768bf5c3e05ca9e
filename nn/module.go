// Package nn builds neural networks. Compose layers (NewSequential of
// NewLinear, NewConv2d, NewReLU, ...) or write a Module of your own,
// compute a loss (NewCrossEntropyLoss, NewMSELoss, ...), and save and load
// weights as safetensors files that PyTorch reads and writes
// (SaveSafetensors, LoadSafetensors). The package Example builds, trains a
// step of and round-trips a small classifier; ExampleLoadStateDict,
// ExampleSummary and ExampleMetric show state dicts, model summaries and
// streaming metrics.
//
// It holds the Module interface and its embeddable Base, 67 layers
// (linear, convolution, pooling, normalization, recurrent, attention and
// transformer, embeddings, ...), activations, losses, weight initializers,
// metrics, hooks and state dicts; docs/catalogue.md in the repository
// lists them all with their PyTorch and Keras names, and package models
// holds whole architectures.
//
// Layers follow PyTorch's conventions: the same parameter names ("weight",
// "bias"), the same shapes and layouts, the same default initializations
// (drawn from an explicit *tensor.Generator: nn keeps no global random
// state), so a state dict saved by torch loads into the equivalent Ember
// model and gives the same outputs, and the other way round.
//
// A custom module embeds Base, registers its parameters, buffers and
// sub-modules in its constructor and implements Forward:
//
//	type MLP struct {
//		nn.Base
//		fc1, fc2 *nn.Linear
//	}
//
//	func NewMLP(g *tensor.Generator) *MLP {
//		m := &MLP{fc1: nn.NewLinear(g, 4, 8, true), fc2: nn.NewLinear(g, 8, 3, true)}
//		m.RegisterModule("fc1", m.fc1)
//		m.RegisterModule("fc2", m.fc2)
//		return m
//	}
//
//	func (m *MLP) Forward(x *autograd.Var) *autograd.Var {
//		return m.fc2.Forward(m.fc1.Forward(x).Tanh())
//	}
//
// # Losses
//
// Every loss takes what the model computed as *autograd.Var and its target
// as *tensor.Tensor, the data a loader yields: class indices, labels,
// probabilities or regression values alike (MSELoss, L1Loss, HuberLoss and
// KLDivLoss as well as CrossEntropyLoss, BCELoss and the margin losses).
// Predictions that are not targets stay Vars: the two embeddings of
// CosineEmbeddingLoss, the three of TripletMarginLoss, GaussianNLLLoss's
// variance. A target is not differentiated; this is the detach PyTorch code
// writes for computed targets (a teacher's output, a target network's
// value): pass v.Value(). To differentiate both sides, write the loss from
// Var operations, as a.Sub(b).Square().Mean(nil, false) for MSE.
//
// # Evaluation without a tape
//
// Parameters require gradients, so a forward pass through a model records
// the tape that backward needs. To evaluate without it, mark the input:
//
//	out := model.Forward(autograd.NoGrad(autograd.New(x)))
//
// Every op with a marked input records nothing and marks its output, so the
// pass allocates what it would with frozen parameters (Freeze), and another
// goroutine may run forward and backward passes through the same model
// meanwhile (an optimizer step, which writes the parameters, must still be
// ordered with the evaluation). The mark is not the evaluation mode of
// Dropout and BatchNorm: switch that with Train(false), which is module
// state, shared by every goroutine using the module.
package nn

import (
	"fmt"
	"strings"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// Module is a network layer or a composition of layers. Embed Base to get
// every method but Forward.
type Module interface {
	// Forward applies the module to x.
	Forward(x *autograd.Var) *autograd.Var
	// Parameters returns the trainable parameters of the module and its
	// sub-modules, each once even if it is registered under several names.
	Parameters() []*autograd.Var
	// NamedParameters returns every parameter with its dotted PyTorch-style
	// name ("0.weight", "features.3.bias"): the module's own in
	// registration order, then each sub-module's in registration order.
	NamedParameters() []NamedParam
	// NamedBuffers returns the non-trainable state (running statistics and
	// the like) with dotted names, ordered as NamedParameters.
	NamedBuffers() []NamedBuffer
	// Train switches the module and its sub-modules to training mode (true)
	// or evaluation mode (false).
	Train(on bool)
	// IsTraining reports whether the module is in training mode.
	IsTraining() bool
	// ZeroGrad clears the gradients of every parameter.
	ZeroGrad()
}

// NamedParam is a parameter with its dotted name.
type NamedParam struct {
	Name  string
	Param *autograd.Var
}

// NamedBuffer is a buffer with its dotted name.
type NamedBuffer struct {
	Name   string
	Buffer *tensor.Tensor
}

// NamedModule is a sub-module with its name inside its parent.
type NamedModule struct {
	Name   string
	Module Module
}

// Base implements the bookkeeping shared by every module: registration of
// parameters, buffers and sub-modules, their dotted names, the training
// flag and ZeroGrad. Embed it in a struct and implement Forward to make a
// Module. The zero value is a module in training mode with nothing
// registered, as a fresh torch.nn.Module.
type Base struct {
	params   []NamedParam
	buffers  []NamedBuffer
	children []NamedModule
	eval     bool
	hooks    *moduleHooks // forward hooks (hooks.go), created on first use; accessed atomically
}

// checkName panics unless name is a valid, unused attribute name.
func (b *Base) checkName(kind, name string) {
	if name == "" || strings.Contains(name, ".") {
		panic(fmt.Sprintf("nn.Register%s: name %q must be non-empty and contain no dot", kind, name))
	}
	for _, p := range b.params {
		if p.Name == name {
			panic(fmt.Sprintf("nn.Register%s: name %q is already a parameter", kind, name))
		}
	}
	for _, p := range b.buffers {
		if p.Name == name {
			panic(fmt.Sprintf("nn.Register%s: name %q is already a buffer", kind, name))
		}
	}
	for _, p := range b.children {
		if p.Name == name {
			panic(fmt.Sprintf("nn.Register%s: name %q is already a sub-module", kind, name))
		}
	}
}

// RegisterParameter adds p as a parameter called name and returns p. The
// name must be unique within the module and contain no dot. p normally
// requires a gradient (see autograd.Param).
func (b *Base) RegisterParameter(name string, p *autograd.Var) *autograd.Var {
	b.checkName("Parameter", name)
	if p == nil {
		panic(fmt.Sprintf("nn.RegisterParameter: parameter %q is nil", name))
	}
	b.params = append(b.params, NamedParam{Name: name, Param: p})
	return p
}

// RegisterBuffer adds t as non-trainable state called name (saved in state
// dicts, not returned by Parameters) and returns t.
func (b *Base) RegisterBuffer(name string, t *tensor.Tensor) *tensor.Tensor {
	b.checkName("Buffer", name)
	if t == nil {
		panic(fmt.Sprintf("nn.RegisterBuffer: buffer %q is nil", name))
	}
	b.buffers = append(b.buffers, NamedBuffer{Name: name, Buffer: t})
	return t
}

// RegisterModule adds m as a sub-module called name. Its parameters and
// buffers appear under the prefix "name.".
func (b *Base) RegisterModule(name string, m Module) {
	b.checkName("Module", name)
	if m == nil {
		panic(fmt.Sprintf("nn.RegisterModule: module %q is nil", name))
	}
	b.children = append(b.children, NamedModule{Name: name, Module: m})
}

// Children returns the direct sub-modules in registration order.
func (b *Base) Children() []NamedModule {
	return append([]NamedModule(nil), b.children...)
}

// NamedParameters implements Module. A parameter registered under several
// names (tied weights) appears under each of them.
func (b *Base) NamedParameters() []NamedParam {
	out := append([]NamedParam(nil), b.params...)
	for _, c := range b.children {
		for _, p := range c.Module.NamedParameters() {
			out = append(out, NamedParam{Name: c.Name + "." + p.Name, Param: p.Param})
		}
	}
	return out
}

// NamedBuffers implements Module.
func (b *Base) NamedBuffers() []NamedBuffer {
	out := append([]NamedBuffer(nil), b.buffers...)
	for _, c := range b.children {
		for _, p := range c.Module.NamedBuffers() {
			out = append(out, NamedBuffer{Name: c.Name + "." + p.Name, Buffer: p.Buffer})
		}
	}
	return out
}

// Parameters implements Module: the parameters of NamedParameters, each
// once, in order of first appearance.
func (b *Base) Parameters() []*autograd.Var {
	named := b.NamedParameters()
	seen := make(map[*autograd.Var]bool, len(named))
	out := make([]*autograd.Var, 0, len(named))
	for _, p := range named {
		if !seen[p.Param] {
			seen[p.Param] = true
			out = append(out, p.Param)
		}
	}
	return out
}

// Train implements Module.
func (b *Base) Train(on bool) {
	b.eval = !on
	for _, c := range b.children {
		c.Module.Train(on)
	}
}

// IsTraining implements Module.
func (b *Base) IsTraining() bool { return !b.eval }

// ZeroGrad implements Module.
func (b *Base) ZeroGrad() {
	for _, p := range b.NamedParameters() {
		p.Param.ZeroGrad()
	}
}
