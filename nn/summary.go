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
	// calls are the module's forward calls in the pass: input and output.
	calls [][2]*autograd.Var
	// flops and actBytes total the ops the module's calls ran (sub-modules
	// included): floating-point operations and bytes of their outputs.
	flops, actBytes int64
}

// Summary describes model as a table, in the style of torchinfo: one row
// per module (the model, then its sub-modules depth first, indented), with
// its dotted name and type, the shape of its output in a forward pass on a
// zero input of shape inputShape, the number of parameter elements it
// registers itself ("--" for none), the floating-point operations of its
// forward and the bytes of the intermediate values its forward makes (its
// activations, which training keeps for backward); then the total,
// trainable (requiring a gradient) and non-trainable parameter counts,
// each shared parameter counted once, the model's FLOPs, and the sizes of
// the input, the parameters and the activations.
//
// FLOPs and activations are counted on the ops autograd records, so a row
// includes its sub-modules, and the model's row is the whole forward. A
// matrix product of [.., M, K] by [.., K, N] counts 2·M·K·N per batch
// element, a convolution 2·(input channels per group)·(kernel area) per
// output element (the same per input element for a transposed one), a
// reduction, softmax or pooling one per input element, a normalization
// two per element, views, copies, gathers and dropout none, and any other
// op one per output element. Activations leave out the outputs of views
// (reshapes, transposes, ...), which may share their input's storage.
//
// The forward pass runs in evaluation mode (the training flag is restored
// after) with every parameter recording (frozen ones for the pass only),
// and sees only sub-modules applied through Call (Sequential does); a
// module the pass does not reach shows "--" in its output, FLOPs and
// activation columns. The input has the dtype and device of the model's first parameter
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
			handles = append(handles, b.RegisterForwardHook(func(_ Module, x, out *autograd.Var) *autograd.Var {
				r.out, r.called = out.Shape(), true
				r.calls = append(r.calls, [2]*autograd.Var{x, out})
				return nil
			}))
		}
	}
	params := model.Parameters()
	total, trainable := 0, 0
	for _, p := range params {
		total += p.Value().Numel()
		if p.RequiresGrad() {
			trainable += p.Value().Numel()
		}
	}
	// Every parameter records for the pass, so that ops are counted.
	for _, p := range params {
		if !p.RequiresGrad() && p.IsLeaf() {
			p.SetRequiresGrad(true)
			defer p.SetRequiresGrad(false)
		}
	}
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
			rows[0].calls = append(rows[0].calls, [2]*autograd.Var{nil, out})
		} else {
			x := autograd.New(inputs[0])
			out = Call(model, x)
			if len(rows[0].calls) == 0 {
				rows[0].calls = append(rows[0].calls, [2]*autograd.Var{x, out})
			}
		}
		rows[0].out, rows[0].called = out.Shape(), true
	}()
	for _, r := range rows {
		r.flops, r.actBytes = countOps(r.calls)
	}

	shapes := make([]string, len(inputs))
	var inBytes, paramBytes int64
	for i, x := range inputs {
		shapes[i] = fmt.Sprint(x.Shape())
		inBytes += int64(x.Numel() * x.DType().Size())
	}
	for _, p := range params {
		paramBytes += int64(p.Value().Numel() * p.DType().Size())
	}
	return formatSummary(rows, shapes, total, trainable, summarySizes{input: inBytes, params: paramBytes})
}

// countOps returns the FLOPs and output bytes of the ops recorded between
// each call's input and output (each op once).
func countOps(calls [][2]*autograd.Var) (flops, bytes int64) {
	seen := map[*autograd.Var]bool{}
	for _, c := range calls {
		stack := []*autograd.Var{c[1]}
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if v == nil || v == c[0] || seen[v] {
				continue
			}
			seen[v] = true
			n, ok := v.Node()
			if !ok {
				continue
			}
			flops += opFLOPs(n, v)
			if !viewOps[n.Op] {
				bytes += int64(v.Value().Numel() * v.Value().DType().Size())
			}
			stack = append(stack, n.Inputs...)
		}
	}
	return flops, bytes
}

// viewOps are the ops whose output may share its input's storage: their
// outputs are not counted as activations.
var viewOps = map[string]bool{
	"Reshape": true, "View": true, "Flatten": true, "Squeeze": true, "Unsqueeze": true,
	"Permute": true, "Transpose": true, "Expand": true,
}

// opFLOPs counts the floating-point operations of one recorded op (see
// Summary for the rules).
func opFLOPs(n autograd.NodeInfo, out *autograd.Var) int64 {
	outN := int64(out.Value().Numel())
	inN := int64(0)
	if len(n.Inputs) > 0 && n.Inputs[0] != nil {
		inN = int64(n.Inputs[0].Value().Numel())
	}
	switch n.Op {
	case "MatMul":
		a := n.Inputs[0].Shape()
		if len(a) == 0 {
			return outN
		}
		k := int64(a[len(a)-1])
		if len(a) == 1 { // a vector: K is its length
			k = int64(a[0])
		}
		return 2 * k * outN
	case "Conv2d":
		w := n.Inputs[1].Shape()
		f := 2 * outN * int64(w[1]*w[2]*w[3])
		if len(n.Inputs) > 2 && n.Inputs[2] != nil {
			f += outN
		}
		return f
	case "ConvTranspose2d":
		w := n.Inputs[1].Shape()
		f := 2 * inN * int64(w[1]*w[2]*w[3])
		if len(n.Inputs) > 2 && n.Inputs[2] != nil {
			f += outN
		}
		return f
	case "Reshape", "View", "Flatten", "Squeeze", "Unsqueeze", "Permute", "Transpose", "Expand",
		"Contiguous", "Concat", "Pad", "Repeat", "Roll", "Flip", "Gather", "IndexSelect", "Embedding",
		"Scatter", "ScatterScalar", "MaskedSelect", "MaskedScatter", "MaskedFill", "Unbind", "UnbindStack",
		"To", "Dropout", "Tril", "Triu", "Where":
		return 0
	case "Sum", "Prod", "Norm", "LogSumExp", "CumSum", "CumProd", "Softmax", "LogSoftmax",
		"MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "IndexAdd", "ScatterAdd":
		return inN
	case "BatchNorm", "LayerNorm", "GroupNorm":
		return 2 * outN
	}
	return outN
}

// summarySizes are the byte sizes in the table's footer.
type summarySizes struct{ input, params int64 }

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
func formatSummary(rows []*summaryRow, inputShapes []string, total, trainable int, sizes summarySizes) string {
	const cols = 5
	head := [cols]string{"Layer (type)", "Output Shape", "Param #", "FLOPs", "Activations"}
	cells := make([][cols]string, len(rows))
	var w [cols]int
	for j, h := range head {
		w[j] = len(h)
	}
	for i, r := range rows {
		label := r.typ
		if r.name != "" {
			label = r.name + " (" + r.typ + ")"
		}
		if r.depth > 0 {
			label = strings.Repeat("  ", r.depth-1) + "└─" + label
		}
		shape, flops, act := "--", "--", "--"
		if r.called {
			shape, flops, act = fmt.Sprint(r.out), groupDigits(int(r.flops)), formatBytes(r.actBytes)
		}
		n := "--"
		if r.params > 0 {
			n = groupDigits(r.params)
		}
		cells[i] = [cols]string{label, shape, n, flops, act}
		for j, c := range cells[i] {
			w[j] = max(w[j], len([]rune(c)))
		}
	}
	width := (cols - 1) * 3
	for _, x := range w {
		width += x
	}
	rule := strings.Repeat("=", width) + "\n"
	var b strings.Builder
	pad := func(s string, n int) string { return s + strings.Repeat(" ", n-len([]rune(s))) }
	line := func(c [cols]string) {
		b.WriteString(pad(c[0], w[0]) + "   " + pad(c[1], w[1]))
		for j := 2; j < cols; j++ {
			b.WriteString("   " + strings.Repeat(" ", w[j]-len([]rune(c[j]))) + c[j])
		}
		b.WriteString("\n")
	}
	b.WriteString(rule)
	line(head)
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
	fmt.Fprintf(&b, "Total FLOPs: %s\n", groupDigits(int(rows[0].flops)))
	b.WriteString(rule)
	fmt.Fprintf(&b, "Input size: %s\n", formatBytes(sizes.input))
	fmt.Fprintf(&b, "Params size: %s\n", formatBytes(sizes.params))
	fmt.Fprintf(&b, "Forward activations: %s\n", formatBytes(rows[0].actBytes))
	fmt.Fprintf(&b, "Estimated total size: %s\n", formatBytes(sizes.input+sizes.params+rows[0].actBytes))
	b.WriteString(rule)
	return b.String()
}

// formatBytes writes n bytes with a binary unit: 512 B, 1.5 KiB, 3.2 MiB.
func formatBytes(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	return fmt.Sprintf("%.1f %s", v, unit)
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
