package tensor

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// SciMode chooses between fixed-point and scientific notation when printing
// floating-point tensors.
type SciMode uint8

// The notation choices. SciAuto (the zero value) picks scientific notation
// when the values' range needs it, as PyTorch does.
const (
	SciAuto SciMode = iota
	SciAlways
	SciNever
)

// PrintOptions controls how a tensor is printed; it mirrors PyTorch's
// torch.set_printoptions without any global state. Zero fields take the
// PyTorch defaults, so PrintOptions{} prints exactly as %v does.
type PrintOptions struct {
	// Precision is the number of digits after the decimal point for
	// floating-point values: 0 means the default 4, a negative value means
	// none.
	Precision int
	// Threshold is the element count above which the middle of every long
	// axis is elided with "...": 0 means the default 1000, a negative value
	// means never elide.
	Threshold int
	// EdgeItems is how many items are shown at each end of an elided axis
	// (0 means the default 3).
	EdgeItems int
	// LineWidth is the number of characters per line used to wrap long rows
	// and suffixes (0 means the default 80).
	LineWidth int
	// SciMode forces or forbids scientific notation for floats.
	SciMode SciMode
	// Suffixes are extra "key=value" items appended after the data and the
	// dtype, wrapped like PyTorch's (for example "requires_grad=True").
	Suffixes []string
}

func (o PrintOptions) resolved() PrintOptions {
	switch {
	case o.Precision == 0:
		o.Precision = 4
	case o.Precision < 0:
		o.Precision = 0
	}
	if o.Threshold == 0 {
		o.Threshold = 1000
	}
	if o.EdgeItems <= 0 {
		o.EdgeItems = 3
	}
	if o.LineWidth <= 0 {
		o.LineWidth = 80
	}
	return o
}

// String returns t as PyTorch's str() shows it, for example
//
//	tensor([[1., 2.],
//	        [3., 4.]])
func (t *Tensor) String() string {
	if t == nil {
		return "<nil>"
	}
	return PrintOptions{}.Sprint(t)
}

// Format implements fmt.Formatter:
//
//   - %v and %s print as String does, PyTorch's style: floats with a common
//     precision of 4 digits (integer-valued floats as "1."), scientific
//     notation when the range of magnitudes needs it, the middle of every
//     long axis elided with "..." once the tensor has more than 1000
//     elements, and a ", dtype=torch.float64" suffix for dtypes other than
//     float32, int64 and bool (and ", device='cuda:0'" off the CPU).
//   - A precision (%.2v) sets the number of float digits; %f forbids
//     scientific notation and %e forces it (%g is the automatic choice).
//   - %+v adds the shape, dtype and device as suffixes whatever they are,
//     for example "tensor([1., 2.], size=(2,), dtype=torch.float32,
//     device='cpu')".
//   - %#v prints a Go expression that rebuilds a CPU tensor with the same
//     values, for example "tensor.FromSlice([]float32{1, 2}, 2)" (all
//     elements, never elided).
//   - %q prints String quoted.
func (t *Tensor) Format(f fmt.State, verb rune) {
	if t == nil {
		fmt.Fprint(f, "<nil>")
		return
	}
	var o PrintOptions
	if p, ok := f.Precision(); ok {
		o.Precision = p
		if p == 0 {
			o.Precision = -1
		}
	}
	switch verb {
	case 'v', 's':
		if verb == 'v' && f.Flag('#') {
			fmt.Fprint(f, t.goSyntax())
			return
		}
		if f.Flag('+') {
			o.Suffixes = []string{"size=" + pyTuple(t.shape), "dtype=torch." + t.dtype.String(), "device='" + string(t.Device()) + "'"}
			fmt.Fprint(f, o.sprint(t, true))
			return
		}
	case 'f', 'F':
		o.SciMode = SciNever
	case 'e', 'E':
		o.SciMode = SciAlways
	case 'g', 'G':
	case 'q':
		fmt.Fprint(f, strconv.Quote(o.Sprint(t)))
		return
	default:
		fmt.Fprintf(f, "%%!%c(*tensor.Tensor=%s)", verb, o.Sprint(t))
		return
	}
	fmt.Fprint(f, o.Sprint(t))
}

// Sprint returns t printed with the options o.
func (o PrintOptions) Sprint(t *Tensor) string {
	if t == nil {
		return "<nil>"
	}
	return o.sprint(t, false)
}

// sprint builds "tensor(" + data + suffixes + ")". With explicit, the caller
// has put the size/dtype/device suffixes in o.Suffixes already.
func (o PrintOptions) sprint(t *Tensor, explicit bool) string {
	o = o.resolved()
	const prefix = "tensor("
	indent := len(prefix)
	var suffixes []string
	if !explicit && t.Device() != CPU {
		suffixes = append(suffixes, "device='"+string(t.Device())+"'")
	}
	var body string
	if t.Numel() == 0 {
		body = "[]"
		if !explicit {
			if t.Dim() != 1 {
				suffixes = append(suffixes, "size="+pyTuple(t.shape))
			}
			if t.dtype != Float32 {
				suffixes = append(suffixes, "dtype=torch."+t.dtype.String())
			}
		}
	} else {
		body = o.body(t, indent)
		if !explicit && t.dtype != Float32 && t.dtype != Int64 && t.dtype != Bool {
			suffixes = append(suffixes, "dtype=torch."+t.dtype.String())
		}
	}
	suffixes = append(suffixes, o.Suffixes...)
	return addSuffixes(prefix+body, suffixes, indent, o.LineWidth)
}

// addSuffixes appends ", suffix" items, starting a new line indented by
// indent when one would pass the line width (PyTorch's _add_suffixes).
func addSuffixes(s string, suffixes []string, indent, lineWidth int) string {
	var b strings.Builder
	b.WriteString(s)
	lastLine := len(s) - strings.LastIndexByte(s, '\n') + 1
	for _, suf := range suffixes {
		if lastLine+len(suf)+2 > lineWidth {
			b.WriteString(",\n")
			b.WriteString(strings.Repeat(" ", indent))
			b.WriteString(suf)
			lastLine = indent + len(suf)
		} else {
			b.WriteString(", ")
			b.WriteString(suf)
			lastLine += len(suf) + 2
		}
	}
	b.WriteByte(')')
	return b.String()
}

// pyTuple spells a shape as Python prints a tuple: (2, 3), (5,), ().
func pyTuple(shape []int) string {
	parts := make([]string, len(shape))
	for i, d := range shape {
		parts[i] = strconv.Itoa(d)
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// grid is the (possibly summarized) content of a tensor being printed: the
// shape of the kept elements, which axes were elided in the middle, and the
// formatted cells in row-major order.
type grid struct {
	o      PrintOptions
	shape  []int
	elided []bool
	cells  []string
	width  int // the formatter's width, which wraps rows
}

// body formats the non-empty tensor t as nested brackets.
func (o PrintOptions) body(t *Tensor, indent int) string {
	g := grid{o: o, shape: t.Shape(), elided: make([]bool, t.Dim())}
	src := t
	if o.Threshold > 0 && t.Numel() > o.Threshold {
		// Keep EdgeItems at each end of every long axis (get_summarized_data).
		e := o.EdgeItems
		for a, n := range t.shape {
			if n > 2*e {
				src = Concat([]*Tensor{src.Narrow(a, 0, e), src.Narrow(a, n-e, e)}, a)
				g.shape[a] = 2 * e
				g.elided[a] = true
			}
		}
	}
	g.cells, g.width = formatCells(src, o)
	var b strings.Builder
	g.write(&b, 0, 0, indent)
	return b.String()
}

// formatCells formats every element of t (already summarized), padded to a
// common width as PyTorch's _Formatter does.
func formatCells(t *Tensor, o PrintOptions) ([]string, int) {
	var cells []string
	switch {
	case t.dtype.IsFloat():
		vals := t.Float64s()
		f := newFloatFormatter(vals, o)
		cells = make([]string, len(vals))
		for i, v := range vals {
			cells[i] = f.format(v)
		}
		return padCells(cells, f.width), f.width
	case t.dtype == Bool:
		vals := t.Bools()
		cells = make([]string, len(vals))
		for i, v := range vals {
			cells[i] = "False"
			if v {
				cells[i] = "True"
			}
		}
	default:
		cells = intStrings(t)
	}
	width := 1
	for _, c := range cells {
		width = max(width, len(c))
	}
	return padCells(cells, width), width
}

// intStrings formats the elements of an integer tensor in decimal; Uint64
// reads as unsigned, since its values may exceed int64's range.
func intStrings(t *Tensor) []string {
	var cells []string
	if t.dtype == Uint64 {
		for _, v := range t.Uint64s() {
			cells = append(cells, strconv.FormatUint(v, 10))
		}
		return cells
	}
	for _, v := range t.Int64s() {
		cells = append(cells, strconv.FormatInt(v, 10))
	}
	return cells
}

func padCells(cells []string, width int) []string {
	for i, c := range cells {
		if len(c) < width {
			cells[i] = strings.Repeat(" ", width-len(c)) + c
		}
	}
	return cells
}

// floatFormatter is PyTorch's _Formatter for floating-point tensors.
type floatFormatter struct {
	prec    int
	intMode bool
	sci     bool
	width   int
}

func newFloatFormatter(vals []float64, o PrintOptions) floatFormatter {
	f := floatFormatter{prec: o.Precision, intMode: true, width: 1}
	lo, hi := math.Inf(1), 0.0
	found := false
	for _, v := range vals {
		if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		found = true
		a := math.Abs(v)
		lo, hi = min(lo, a), max(hi, a)
		if v != math.Ceil(v) {
			f.intMode = false
		}
	}
	if found {
		wide := hi/lo > 1000 || hi > 1e8
		if !f.intMode {
			wide = wide || lo < 1e-4
		}
		f.sci = wide
		for _, v := range vals {
			if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			var n int
			switch {
			case f.sci:
				n = len(pyFloat(v, 'e', f.prec))
			case f.intMode:
				n = len(pyFloat(v, 'f', 0)) + 1
			default:
				n = len(pyFloat(v, 'f', f.prec))
			}
			f.width = max(f.width, n)
		}
	}
	switch o.SciMode {
	case SciAlways:
		f.sci = true
	case SciNever:
		f.sci = false
	}
	return f
}

func (f floatFormatter) format(v float64) string {
	switch {
	case f.sci:
		return pyFloat(v, 'e', f.prec)
	case f.intMode:
		s := pyFloat(v, 'f', 0)
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			s += "."
		}
		return s
	default:
		return pyFloat(v, 'f', f.prec)
	}
}

// pyFloat formats v as Python's "{:.<prec><fmt>}" does (Go and Python agree
// on the digits; they differ in how they spell non-finite values).
func pyFloat(v float64, fmtc byte, prec int) string {
	switch {
	case math.IsNaN(v):
		return "nan"
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	}
	return strconv.FormatFloat(v, fmtc, prec, 64)
}

// write appends the sub-tensor of the grid at dimension dim starting at cell
// index start, as PyTorch's _tensor_str_with_formatter does.
func (g *grid) write(b *strings.Builder, dim, start, indent int) {
	if len(g.shape) == 0 {
		b.WriteString(g.cells[0])
		return
	}
	n := g.shape[dim]
	half := -1
	if g.elided[dim] {
		half = n / 2
	}
	if dim == len(g.shape)-1 {
		g.writeVector(b, start, n, half, indent)
		return
	}
	stride := 1
	for _, d := range g.shape[dim+1:] {
		stride *= d
	}
	sep := "," + strings.Repeat("\n", len(g.shape)-dim-1) + strings.Repeat(" ", indent+1)
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteString(sep)
		}
		if i == half {
			b.WriteString("...")
			b.WriteString(sep)
		}
		g.write(b, dim+1, start+i*stride, indent+1)
	}
	b.WriteByte(']')
}

// writeVector writes the innermost axis, wrapping to the line width
// (PyTorch's _vector_str). half is the position of the "..." item, or -1.
func (g *grid) writeVector(b *strings.Builder, start, n, half, indent int) {
	perLine := max(1, (g.o.LineWidth-indent)/(g.width+2))
	items := make([]string, 0, n+1)
	for i := range n {
		if i == half {
			items = append(items, " ...")
		}
		items = append(items, g.cells[start+i])
	}
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			if i%perLine == 0 {
				b.WriteString(",\n")
				b.WriteString(strings.Repeat(" ", indent+1))
			} else {
				b.WriteString(", ")
			}
		}
		b.WriteString(it)
	}
	b.WriteByte(']')
}

// goSyntax returns a Go expression rebuilding t on the CPU (for %#v).
func (t *Tensor) goSyntax() string {
	var b strings.Builder
	shape := make([]string, len(t.shape))
	for i, d := range t.shape {
		shape[i] = strconv.Itoa(d)
	}
	dims := ", " + strings.Join(shape, ", ")
	if len(shape) == 0 {
		dims = ", []int{}..."
	}
	switch t.dtype {
	case Float16, BFloat16:
		name := "Float16"
		if t.dtype == BFloat16 {
			name = "BFloat16"
		}
		fmt.Fprintf(&b, "tensor.FromHalfBits(tensor.%s, []uint16{", name)
		for i, h := range t.HalfBits() {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "0x%04x", h)
		}
		b.WriteString("}" + dims + ")")
		return b.String()
	}
	fmt.Fprintf(&b, "tensor.FromSlice([]%s{", t.dtype)
	switch t.dtype {
	case Float32, Float64:
		bits := 64
		if t.dtype == Float32 {
			bits = 32
		}
		for i, v := range t.Float64s() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(goFloat(v, bits))
		}
	case Bool:
		for i, v := range t.Bools() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.FormatBool(v))
		}
	default:
		b.WriteString(strings.Join(intStrings(t), ", "))
	}
	b.WriteString("}" + dims + ")")
	return b.String()
}

// goFloat spells v as a Go constant of the given bit size.
func goFloat(v float64, bits int) string {
	conv := func(s string) string {
		if bits == 32 {
			return "float32(" + s + ")"
		}
		return s
	}
	switch {
	case math.IsNaN(v):
		return conv("math.NaN()")
	case math.IsInf(v, 1):
		return conv("math.Inf(1)")
	case math.IsInf(v, -1):
		return conv("math.Inf(-1)")
	case v == 0 && math.Signbit(v):
		return conv("math.Copysign(0, -1)")
	}
	return strconv.FormatFloat(v, 'g', -1, bits)
}
