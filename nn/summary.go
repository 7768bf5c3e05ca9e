package nn

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// ownParams returns the parameters registered directly on the module.
func (b *Base) ownParams() []NamedParam { return b.params }

// summaryRow is one module in a Summary table.
type summaryRow struct {
	name, typ string
	depth     int
	module    Module
	out       []int
	called    bool
	params    int
}

// Summary describes model as a table, in the style of torchinfo: one row
// per module (the model, then its sub-modules depth first, indented), with
// its dotted name and type, the shape of its output in a forward pass on a
// zero input of shape inputShape, and the number of parameter elements it
// registers itself ("--" for none); then the total, trainable (requiring a
// gradient) and non-trainable parameter counts, each shared parameter
// counted once. The forward pass runs in evaluation mode (the training flag
// is restored after) and sees only sub-modules applied through Call
// (Sequential does); a module the pass does not reach shows "--" as its
// output shape. The input has the dtype and device of the model's first parameter
// (Float32 without parameters); for models that take token ids or several
// inputs, use SummaryOf.
func Summary(model Module, inputShape ...int) string {
	dt, dev := tensor.Float32, tensor.CPU
	if params := model.Parameters(); len(params) > 0 {
		dt, dev = params[0].DType(), params[0].Value().Device()
	}
	return summarize(model, []*tensor.Tensor{tensor.ZerosOn(dev, inputShape, dt)})
}

// SummaryOf is Summary with the forward pass run on the given example
// inputs instead of a float zero tensor, for models whose input is not
// floating point (token ids for an embedding, as models.GPT and
// models.GRUClassifier take) or must hold valid values. One input goes
// through Call; two go to the model's Forward2(a, b) method (as Bilinear
// has), with no row of their own for the model's output hook. The input
// line of the table lists every input's shape.
func SummaryOf(model Module, inputs ...*tensor.Tensor) string {
	if len(inputs) == 0 || len(inputs) > 2 {
		panic(fmt.Sprintf("nn.SummaryOf: want one or two example inputs, got %d", len(inputs)))
	}
	return summarize(model, inputs)
}

// summarize builds the Summary table of a forward pass on inputs.
func summarize(model Module, inputs []*tensor.Tensor) string {
	var rows []*summaryRow
	var walk func(name string, m Module, depth int)
	walk = func(name string, m Module, depth int) {
		r := &summaryRow{name: name, typ: moduleType(m), depth: depth, module: m}
		if b, ok := m.(interface{ ownParams() []NamedParam }); ok {
			for _, p := range b.ownParams() {
				r.params += p.Param.Value().Numel()
			}
		}
		rows = append(rows, r)
		if c, ok := m.(interface{ Children() []NamedModule }); ok {
			for _, ch := range c.Children() {
				child := ch.Name
				if name != "" {
					child = name + "." + ch.Name
				}
				walk(child, ch.Module, depth+1)
			}
		}
	}
	walk("", model, 0)

	var handles []*autograd.HookHandle
	for _, r := range rows {
		if b, ok := r.module.(interface {
			RegisterForwardHook(ForwardHook) *autograd.HookHandle
		}); ok {
			handles = append(handles, b.RegisterForwardHook(func(_ Module, _, out *autograd.Var) *autograd.Var {
				r.out, r.called = out.Shape(), true
				return nil
			}))
		}
	}
	params := model.Parameters()
	var two interface {
		Forward2(a, b *autograd.Var) *autograd.Var
	}
	if len(inputs) == 2 {
		var ok bool
		if two, ok = model.(interface {
			Forward2(a, b *autograd.Var) *autograd.Var
		}); !ok {
			panic(fmt.Sprintf("nn.SummaryOf: %s has no Forward2(a, b) method to take two inputs", moduleType(model)))
		}
	}
	training := model.IsTraining()
	func() {
		defer func() {
			for _, h := range handles {
				h.Remove()
			}
			model.Train(training)
		}()
		model.Train(false)
		var out *autograd.Var
		if two != nil {
			out = two.Forward2(autograd.New(inputs[0]), autograd.New(inputs[1]))
		} else {
			out = Call(model, autograd.New(inputs[0]))
		}
		rows[0].out, rows[0].called = out.Shape(), true
	}()

	total, trainable := 0, 0
	for _, p := range params {
		total += p.Value().Numel()
		if p.RequiresGrad() {
			trainable += p.Value().Numel()
		}
	}
	shapes := make([]string, len(inputs))
	for i, x := range inputs {
		shapes[i] = fmt.Sprint(x.Shape())
	}
	return formatSummary(rows, shapes, total, trainable)
}

// moduleType returns the name of m's type without package or pointer.
func moduleType(m Module) string {
	t := reflect.TypeOf(m)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" {
		return t.String()
	}
	return t.Name()
}

// formatSummary lays out the Summary table.
func formatSummary(rows []*summaryRow, inputShapes []string, total, trainable int) string {
	cells := make([][3]string, len(rows))
	w := [3]int{len("Layer (type)"), len("Output Shape"), len("Param #")}
	for i, r := range rows {
		label := r.typ
		if r.name != "" {
			label = r.name + " (" + r.typ + ")"
		}
		if r.depth > 0 {
			label = strings.Repeat("  ", r.depth-1) + "└─" + label
		}
		shape := "--"
		if r.called {
			shape = fmt.Sprint(r.out)
		}
		n := "--"
		if r.params > 0 {
			n = groupDigits(r.params)
		}
		cells[i] = [3]string{label, shape, n}
		for j, c := range cells[i] {
			w[j] = max(w[j], len([]rune(c)))
		}
	}
	width := w[0] + w[1] + w[2] + 6
	rule := strings.Repeat("=", width) + "\n"
	var b strings.Builder
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-len([]rune(s))) }
	line := func(c [3]string) {
		b.WriteString(pad(c[0], w[0]) + "   " + pad(c[1], w[1]) + "   " + strings.Repeat(" ", w[2]-len(c[2])) + c[2] + "\n")
	}
	b.WriteString(rule)
	line([3]string{"Layer (type)", "Output Shape", "Param #"})
	b.WriteString(rule)
	for _, c := range cells {
		line(c)
	}
	b.WriteString(rule)
	if len(inputShapes) == 1 {
		fmt.Fprintf(&b, "Input shape: %s\n", inputShapes[0])
	} else {
		fmt.Fprintf(&b, "Input shapes: %s\n", strings.Join(inputShapes, ", "))
	}
	fmt.Fprintf(&b, "Total params: %s\n", groupDigits(total))
	fmt.Fprintf(&b, "Trainable params: %s\n", groupDigits(trainable))
	fmt.Fprintf(&b, "Non-trainable params: %s\n", groupDigits(total-trainable))
	b.WriteString(rule)
	return b.String()
}

// groupDigits formats n with commas between groups of three digits.
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
