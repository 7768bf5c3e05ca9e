package onnx

import (
	"fmt"
	"slices"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// Ops defined outside package autograd — autograd.Custom, autograd.Function,
// autograd.Annotate — may carry any name, a built-in op's included. Export
// therefore never reads such an op's name as a built-in op: it recognises
// the ops of this library by their autograd.OpKey (nn's recurrent layers
// and EmbeddingBag), and writes every other one
//
//   - through the mapping registered under its name in
//     ExportOptions.CustomOps, when there is one;
//   - else, for a Function, as the nodes of its forward, traced again on
//     the op's inputs (PyTorch's exporter inlines an autograd.Function the
//     same way); for an Annotate, as the primitives it wraps;
//   - else (a Custom op, whose value was computed outside the graph) not at
//     all: the export fails naming the op.

// CustomOpExport tells Export how to write a custom op as ONNX nodes.
type CustomOpExport struct {
	// Domain is the operator set of the nodes Emit writes with DomainNode,
	// and Version its version, added to the model's opset imports. Leave
	// both zero when Emit writes standard ONNX nodes only.
	Domain  string
	Version int
	// Emit writes the nodes computing the op's output from the graph values
	// named inputs (one per op input, in order; "" for an absent optional
	// input) and returns the name of the value holding the output. op
	// describes the recorded op: its inputs' shapes and dtypes, and the
	// attributes an Annotate gave it.
	Emit func(b *ExportBuilder, inputs []string, op autograd.NodeInfo) (string, error)
}

// ExportBuilder adds nodes and constants to the graph Export is writing; a
// CustomOpExport's Emit receives one.
type ExportBuilder struct {
	e      *exporter
	domain string
}

// Opset returns the default-domain opset the model is written at.
func (b *ExportBuilder) Opset() int { return b.e.opset }

// Node adds a node of the default ONNX domain with one output and returns
// the output's name.
func (b *ExportBuilder) Node(opType string, inputs []string, attrs ...ExportAttr) string {
	return b.e.node(opType, inputs, exAttrs(attrs)...)
}

// DomainNode adds a node of the CustomOpExport's Domain with one output
// and returns the output's name.
func (b *ExportBuilder) DomainNode(opType string, inputs []string, attrs ...ExportAttr) string {
	out := b.e.node(opType, inputs, exAttrs(attrs)...)
	b.e.graph.nodes[len(b.e.graph.nodes)-1].domain = b.domain
	return out
}

// Constant adds t as an initializer and returns its name.
func (b *ExportBuilder) Constant(t *tensor.Tensor) string {
	return b.e.init(b.e.fresh("const"), t)
}

// ExportAttr is a node attribute for ExportBuilder: make one with AttrInt,
// AttrFloat, AttrString, AttrInts, AttrFloats or AttrStrings.
type ExportAttr struct{ a exAttr }

// AttrInt returns an INT attribute.
func AttrInt(name string, v int64) ExportAttr {
	return ExportAttr{exAttr{name: name, kind: attrInt, i: v}}
}

// AttrFloat returns a FLOAT attribute (stored as float32, as ONNX does).
func AttrFloat(name string, v float32) ExportAttr {
	return ExportAttr{exAttr{name: name, kind: attrFloat, f: v}}
}

// AttrString returns a STRING attribute.
func AttrString(name, v string) ExportAttr {
	return ExportAttr{exAttr{name: name, kind: attrString, s: v}}
}

// AttrInts returns an INTS attribute.
func AttrInts(name string, v ...int64) ExportAttr {
	return ExportAttr{exAttr{name: name, kind: attrInts, ints: slices.Clone(v)}}
}

// AttrFloats returns a FLOATS attribute.
func AttrFloats(name string, v ...float32) ExportAttr {
	return ExportAttr{exAttr{name: name, kind: attrFloats, floats: slices.Clone(v)}}
}

// AttrStrings returns a STRINGS attribute.
func AttrStrings(name string, v ...string) ExportAttr {
	return ExportAttr{exAttr{name: name, kind: attrStrings, strs: slices.Clone(v)}}
}

func exAttrs(a []ExportAttr) []exAttr {
	out := make([]exAttr, len(a))
	for i, x := range a {
		out[i] = x.a
	}
	return out
}

// libraryOps are the composite ops of this library that Export translates
// itself, recognised by key.
var libraryOps = []*autograd.OpKey{nn.RNNOp, nn.LSTMOp, nn.GRUOp, nn.EmbeddingBagOp}

// builtin reports whether n is an op whose Op name Export may read as one
// of the ops it knows: recorded by autograd itself, or one of libraryOps.
func builtin(n autograd.NodeInfo) bool {
	return n.Key == nil || slices.Contains(libraryOps, n.Key)
}

// source returns the recorded op whose translation makes v: its composite
// when Export knows the composite or has a mapping for it, else the op that
// recorded v. A composite marked by a user's Annotate without a mapping is
// passed over, so its primitives are written.
func (e *exporter) source(v *autograd.Var) (autograd.NodeInfo, bool) {
	if c, ok := v.Composite(); ok {
		if builtin(c) {
			return c, true
		}
		if _, mapped := e.custom[c.Key.Name()]; mapped {
			return c, true
		}
	}
	return v.Node()
}

// inline returns the output of n's forward traced again on its inputs, for
// a Function without a mapping; the trace is made once per Var.
func (e *exporter) inline(v *autograd.Var, n autograd.NodeInfo) (out *autograd.Var, err error) {
	if out, ok := e.inlined[v]; ok {
		return out, nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("onnx.Export: tracing the forward of custom op %q panicked: %v", n.Op, r)
		}
	}()
	out = n.Forward(n.Inputs)
	if out == nil {
		return nil, fmt.Errorf("onnx.Export: the forward of custom op %q returned nil", n.Op)
	}
	if !slices.Equal(out.Shape(), v.Shape()) || out.DType() != v.DType() {
		return nil, fmt.Errorf("onnx.Export: the forward of custom op %q traced again gives %s %v, but the op's value is %s %v", n.Op, out.DType(), out.Shape(), v.DType(), v.Shape())
	}
	e.inlined[v] = out
	return out, nil
}

// visitCustom translates v, made by the custom op n (not builtin), and
// what it depends on.
func (e *exporter) visitCustom(v *autograd.Var, n autograd.NodeInfo) error {
	m, mapped := e.custom[n.Key.Name()]
	if !mapped && n.Forward != nil {
		inl, err := e.inline(v, n)
		if err != nil {
			return err
		}
		if err := e.visit(inl); err != nil {
			return err
		}
		e.names[v], e.consts[v] = e.names[inl], e.consts[inl]
		return nil
	}
	if mapped && m.Emit == nil {
		return e.customErr(n, "its ExportOptions.CustomOps entry has no Emit function")
	}
	in, allConst, err := e.visitInputs(n)
	if err != nil {
		return err
	}
	if allConst {
		// Its inputs are constants, so its traced value is the value.
		e.names[v] = e.constant(v.Value())
		e.consts[v] = true
		return nil
	}
	if !mapped {
		return e.customErr(n, "its value was computed outside the graph (autograd.Custom), so Export cannot see what it computes; define it with autograd.NewFunction, whose forward Export traces, or give its ONNX form in ExportOptions.CustomOps")
	}
	if m.Domain != "" && m.Domain != "ai.onnx" {
		if m.Version <= 0 {
			return e.customErr(n, fmt.Sprintf("its ExportOptions.CustomOps entry names domain %q without a version", m.Domain))
		}
		if old, ok := e.graph.domains[m.Domain]; ok && old != m.Version {
			return e.customErr(n, fmt.Sprintf("domain %q is imported at version %d by another custom op and %d by this one", m.Domain, old, m.Version))
		}
		e.graph.domains[m.Domain] = m.Version
	}
	name, err := m.Emit(&ExportBuilder{e: e, domain: m.Domain}, in, n)
	if err != nil {
		return e.customErr(n, err.Error())
	}
	if name == "" {
		return e.customErr(n, "its Emit function returned no output name")
	}
	e.names[v] = name
	return nil
}

func (e *exporter) customErr(n autograd.NodeInfo, why string) error {
	return fmt.Errorf("onnx.Export: custom op %q (op %d of the trace): %s", n.Op, e.step+1, why)
}
