// Package graphviz draws Ember's graphs in Graphviz's DOT language: a
// model traced on example inputs (its modules as nested clusters, shapes
// on the edges), the autograd graph recorded behind a result (what
// backward walks), and an ONNX model. Render the text with Graphviz, e.g.
// "dot -Tsvg model.dot -o model.svg".
//
// ExampleWriteModule draws a small model and ExampleWriteAutograd the
// graph behind a loss.
package graphviz

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/tracegraph"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// WriteModule traces model on the example inputs and writes the graph of
// its forward pass: one box per op, parameters and inputs as ellipses,
// each module applied through nn.Call (as nn.Sequential applies its
// layers) as a cluster labelled with its name and type, and each edge
// labelled with the shape of the value it carries. The forward runs in
// evaluation mode, which is restored after. One input goes through
// nn.Call; two go to the model's Forward2(a, b) method.
func WriteModule(w io.Writer, model nn.Module, inputs ...*tensor.Tensor) error {
	g, err := tracegraph.TraceModule(model, inputs)
	if err != nil {
		return fmt.Errorf("graphviz.WriteModule: %w", err)
	}
	return writeGraph(w, tracegraph.ModuleType(model), g)
}

// WriteAutograd writes the graph autograd recorded behind out: every
// primitive op backward will walk, with leaves as ellipses (filled when
// they require a gradient) named from names when given, and edges
// labelled with shapes. Nothing is computed.
func WriteAutograd(w io.Writer, out *autograd.Var, names map[*autograd.Var]string) error {
	g := tracegraph.FromVars([]*autograd.Var{out}, tracegraph.Options{Names: names})
	return writeGraph(w, "autograd", g)
}

// writeGraph writes a traced graph.
func writeGraph(w io.Writer, name string, g *tracegraph.Graph) error {
	d := newDOT(w, name)
	// Members of each scope; -1 holds the nodes outside any.
	members := map[int][]int{}
	children := map[int][]int{}
	for s, sc := range g.Scopes {
		children[sc.Parent] = append(children[sc.Parent], s)
	}
	for i, n := range g.Nodes {
		members[n.Scope] = append(members[n.Scope], i)
	}
	// A scope is drawn when it or a scope inside it holds a node.
	used := make([]bool, len(g.Scopes))
	for s := range g.Scopes {
		if len(members[s]) > 0 {
			for p := s; p >= 0 && !used[p]; p = g.Scopes[p].Parent {
				used[p] = true
			}
		}
	}
	var cluster func(s int, indent string)
	node := func(i int, indent string) {
		n := g.Nodes[i]
		switch n.Kind {
		case tracegraph.Op:
			d.line(indent+"n%d [label=%s];", i, quote(n.Op))
		case tracegraph.Input:
			d.line(indent+"n%d [label=%s, shape=ellipse, style=filled, fillcolor=\"#cde4ff\"];", i, quote(n.Op+"\n"+shapeText(n.Shape)))
		case tracegraph.Param:
			d.line(indent+"n%d [label=%s, shape=ellipse, style=filled, fillcolor=\"#e8f5d8\"];", i, quote(n.Op+"\n"+shapeText(n.Shape)))
		default:
			d.line(indent+"n%d [label=%s, shape=ellipse];", i, quote(n.Op+"\n"+shapeText(n.Shape)))
		}
	}
	cluster = func(s int, indent string) {
		d.line(indent+"subgraph cluster_%d {", s)
		d.line(indent+"  label=%s; style=rounded; color=\"#888888\";", quote(g.Scopes[s].Label()))
		for _, i := range members[s] {
			node(i, indent+"  ")
		}
		for _, c := range children[s] {
			if used[c] {
				cluster(c, indent+"  ")
			}
		}
		d.line(indent + "}")
	}
	for _, i := range members[-1] {
		node(i, "  ")
	}
	for _, s := range children[-1] {
		if used[s] {
			cluster(s, "  ")
		}
	}
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			d.line("  n%d -> n%d [label=%s];", in, i, quote(shapeText(g.Nodes[in].Shape)))
		}
	}
	for k, o := range g.Outputs {
		d.line("  out%d [label=%s, shape=ellipse, style=filled, fillcolor=\"#ffe1c4\"];", k, quote(fmt.Sprintf("output_%d\n%s", k, shapeText(g.Nodes[o].Shape))))
		d.line("  n%d -> out%d;", o, k)
	}
	return d.close()
}

// WriteONNX writes the main graph of an ONNX model: one box per node (its
// op type, and its name when it has one), the graph's inputs, outputs and
// initializers as ellipses, and each edge labelled with the value's name
// and, where the model's shape inference knows it, its shape. Subgraphs of
// control-flow nodes are not drawn.
func WriteONNX(w io.Writer, m *onnx.Model) error {
	var shapes func(name string) ([]onnx.Dim, bool)
	if s, err := m.NewSession(onnx.SessionOptions{}); err == nil {
		shapes = s.ValueShape
	} else {
		shapes = func(string) ([]onnx.Dim, bool) { return nil, false }
	}
	d := newDOT(w, "onnx")
	producer := map[string]string{}
	for k, in := range m.Inputs {
		id := fmt.Sprintf("in%d", k)
		producer[in.Name] = id
		label := in.Name
		if in.HasShape {
			label += "\n" + dimsText(in.Shape)
		}
		d.line("  %s [label=%s, shape=ellipse, style=filled, fillcolor=\"#cde4ff\"];", id, quote(label))
	}
	for k, name := range m.InitializerNames() {
		id := fmt.Sprintf("init%d", k)
		producer[name] = id
		label := name
		if t := m.Initializer(name); t != nil {
			label += "\n" + shapeText(t.Shape())
		}
		d.line("  %s [label=%s, shape=ellipse, style=filled, fillcolor=\"#e8f5d8\"];", id, quote(label))
	}
	nodes := m.Nodes()
	for i, n := range nodes {
		op := n.OpType
		if n.Domain != "" && n.Domain != "ai.onnx" {
			op = n.Domain + "." + op
		}
		label := op
		if n.Name != "" && n.Name != op {
			label += "\n" + n.Name
		}
		d.line("  node%d [label=%s];", i, quote(label))
		for _, out := range n.Outputs {
			if out != "" {
				producer[out] = fmt.Sprintf("node%d", i)
			}
		}
	}
	edge := func(name, to string) {
		from, ok := producer[name]
		if !ok {
			// A value no node makes (an outer-scope name): draw it once.
			from = fmt.Sprintf("ext%d", len(producer))
			producer[name] = from
			d.line("  %s [label=%s, shape=ellipse, style=dashed];", from, quote(name))
		}
		label := name
		if dims, ok := shapes(name); ok {
			label += "\n" + dimsText(dims)
		}
		d.line("  %s -> %s [label=%s];", from, to, quote(label))
	}
	for i, n := range nodes {
		for _, in := range n.Inputs {
			if in != "" {
				edge(in, fmt.Sprintf("node%d", i))
			}
		}
	}
	for k, out := range m.Outputs {
		id := fmt.Sprintf("out%d", k)
		d.line("  %s [label=%s, shape=ellipse, style=filled, fillcolor=\"#ffe1c4\"];", id, quote(out.Name))
		edge(out.Name, id)
	}
	return d.close()
}

// dot accumulates a DOT digraph.
type dot struct {
	w   *bufio.Writer
	err error
}

// newDOT starts a digraph named name.
func newDOT(w io.Writer, name string) *dot {
	d := &dot{w: bufio.NewWriter(w)}
	d.line("digraph %s {", quote(name))
	d.line("  rankdir=TB;")
	d.line("  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=10];")
	d.line("  edge [fontname=\"Helvetica\", fontsize=8];")
	return d
}

// line writes one formatted line.
func (d *dot) line(format string, args ...any) {
	if d.err == nil {
		_, d.err = fmt.Fprintf(d.w, format+"\n", args...)
	}
}

// close ends the digraph and flushes.
func (d *dot) close() error {
	d.line("}")
	if d.err != nil {
		return d.err
	}
	return d.w.Flush()
}

// quote returns s as a DOT string: quotes and backslashes escaped, line
// breaks as \n.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// shapeText formats a shape as [2 3].
func shapeText(s []int) string { return fmt.Sprint(s) }

// dimsText formats ONNX dims as [N 3 224 224].
func dimsText(dims []onnx.Dim) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, " ") + "]"
}
