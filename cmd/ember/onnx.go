package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// runONNX implements "ember onnx inspect MODEL" and
// "ember onnx run MODEL -i NAME=FILE.npy ... -o OUTDIR".
func runONNX(args []string, stdout, stderr io.Writer) int {
	usage := func() {
		fmt.Fprintln(stderr, "usage: ember onnx inspect [-max-bytes N] MODEL.onnx")
		fmt.Fprintln(stderr, "       ember onnx run MODEL.onnx -i NAME=FILE.npy [-i ...] [-o OUTDIR] [-timeout D] [-max-bytes N]")
		fmt.Fprintln(stderr, "       (one -i may be a bare FILE.npy: it feeds the first input not named otherwise;")
		fmt.Fprintln(stderr, "        without -o each output's values are printed, summarized like NumPy's;")
		fmt.Fprintln(stderr, "        a sequence output is written as NAME_0.npy, NAME_1.npy, ...)")
		fmt.Fprintln(stderr, "       ember onnx export -model NAME [-weights FILE.safetensors] -input-shape 1,3,224,224 -o FILE.onnx")
		fmt.Fprintln(stderr, "       ember onnx graph MODEL.onnx [-o GRAPH.dot]   (Graphviz DOT of the graph)")
	}
	if len(args) == 0 {
		usage()
		return 2
	}
	switch args[0] {
	case "inspect":
		return onnxInspect(args[1:], stdout, stderr)
	case "run":
		return onnxRun(args[1:], stdout, stderr)
	case "export":
		return onnxExport(args[1:], stdout, stderr)
	case "graph":
		return onnxGraph(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		usage()
		return 0
	}
	fmt.Fprintf(stderr, "ember onnx: unknown subcommand %q\n", args[0])
	usage()
	return 2
}

// splitModelArg returns the model path (the first argument if it is not a
// flag, else the first argument after the flags) and the flag arguments.
func splitModelArg(args []string) (model string, flags []string) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0], args[1:]
	}
	return "", args
}

func onnxInspect(args []string, stdout, stderr io.Writer) int {
	model, rest := splitModelArg(args)
	fs := flag.NewFlagSet("ember onnx inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ember onnx inspect [-max-bytes N] MODEL.onnx")
		fmt.Fprintln(stderr, "prints a model's opsets, inputs, outputs, operators and parameter count, and whether Ember can run it")
		fs.PrintDefaults()
	}
	maxBytes := fs.Int64("max-bytes", 0, "memory budget in bytes for the model's tensors (0: half the physical memory)")
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if model == "" && fs.NArg() == 1 {
		model = fs.Arg(0)
	} else if fs.NArg() > 0 || model == "" {
		fs.Usage()
		return 2
	}
	m, err := onnx.LoadContext(context.Background(), model, onnx.LoadOptions{MaxBytes: *maxBytes})
	if err != nil {
		fmt.Fprintln(stderr, "ember onnx inspect:", err)
		return 1
	}
	fmt.Fprintf(stdout, "model: %s\n", model)
	fmt.Fprintf(stdout, "ir_version: %d\n", m.IRVersion)
	if m.ProducerName != "" {
		fmt.Fprintf(stdout, "producer: %s %s\n", m.ProducerName, m.ProducerVersion)
	}
	domains := make([]string, 0, len(m.Opsets))
	for d := range m.Opsets {
		domains = append(domains, d)
	}
	sort.Strings(domains)
	fmt.Fprintln(stdout, "opsets:")
	for _, d := range domains {
		name := d
		if name == "" {
			name = "ai.onnx"
		}
		fmt.Fprintf(stdout, "  %s %d\n", name, m.Opsets[d])
	}
	printValues := func(title string, vs []onnx.ValueInfo) {
		fmt.Fprintf(stdout, "%s:\n", title)
		for _, v := range vs {
			fmt.Fprintf(stdout, "  %s: %s\n", v.Name, describeValue(v))
		}
	}
	printValues("inputs", m.Inputs)
	printValues("outputs", m.Outputs)
	counts := m.OpCounts()
	ops := make([]string, 0, len(counts))
	total := 0
	for op, c := range counts {
		ops = append(ops, op)
		total += c
	}
	sort.Strings(ops)
	fmt.Fprintf(stdout, "nodes: %d\n", total)
	for _, op := range ops {
		fmt.Fprintf(stdout, "  %-24s %d\n", op, counts[op])
	}
	tensors, elements := m.Parameters()
	fmt.Fprintf(stdout, "parameters: %d elements in %d initializers\n", elements, tensors)
	if _, err := m.NewSession(onnx.SessionOptions{MaxBytes: *maxBytes}); err != nil {
		fmt.Fprintf(stdout, "runnable: no (%v)\n", err)
	} else {
		fmt.Fprintln(stdout, "runnable: yes")
	}
	return 0
}

// describeValue formats a value's type and shape, e.g. "FLOAT [N, 3, 224, 224]".
func describeValue(v onnx.ValueInfo) string {
	if v.Kind != "tensor" {
		if v.Kind == "" {
			return "(no type)"
		}
		if v.Elem != nil && (v.Kind == "sequence" || v.Kind == "optional") {
			return v.Kind + " of " + describeValue(*v.Elem)
		}
		return v.Kind
	}
	if !v.HasShape {
		return v.ElemType + " (shape unknown)"
	}
	dims := make([]string, len(v.Shape))
	for i, d := range v.Shape {
		dims[i] = d.String()
	}
	return v.ElemType + " [" + strings.Join(dims, ", ") + "]"
}

// inputFlags collects repeated -i values.
type inputFlags []string

// String joins the values (flag.Value).
func (f *inputFlags) String() string { return strings.Join(*f, ",") }

// Set appends one value (flag.Value).
func (f *inputFlags) Set(v string) error { *f = append(*f, v); return nil }

func onnxRun(args []string, stdout, stderr io.Writer) int {
	model, rest := splitModelArg(args)
	fs := flag.NewFlagSet("ember onnx run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var ins inputFlags
	fs.Var(&ins, "i", "input as NAME=FILE.npy (repeatable; one may be a bare FILE.npy)")
	outDir := fs.String("o", "", "folder to write each output to as <name>.npy (none: print the values)")
	timeout := fs.Duration("timeout", 0, "stop the run after this long (0: no limit)")
	maxBytes := fs.Int64("max-bytes", 0, "memory budget in bytes for the model's tensors and each run (0: half the physical memory)")
	if err := fs.Parse(rest); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if model == "" && fs.NArg() > 0 {
		model = fs.Arg(0)
	}
	if model == "" {
		fmt.Fprintln(stderr, "usage: ember onnx run MODEL.onnx -i NAME=FILE.npy [-i ...] [-o OUTDIR]")
		return 2
	}
	ctx := context.Background()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	m, err := onnx.LoadContext(ctx, model, onnx.LoadOptions{MaxBytes: *maxBytes})
	if err != nil {
		fmt.Fprintln(stderr, "ember onnx run:", err)
		return 1
	}
	inputs, err := readInputs(m, ins)
	if err != nil {
		fmt.Fprintln(stderr, "ember onnx run:", err)
		return 1
	}
	sess, err := m.NewSession(onnx.SessionOptions{MaxBytes: *maxBytes})
	if err != nil {
		fmt.Fprintln(stderr, "ember onnx run:", err)
		return 1
	}
	outs, err := sess.RunValues(ctx, inputs)
	if err != nil {
		fmt.Fprintln(stderr, "ember onnx run:", err)
		return 1
	}
	if *outDir != "" {
		if err := os.MkdirAll(*outDir, 0o755); err != nil {
			fmt.Fprintln(stderr, "ember onnx run:", err)
			return 1
		}
	}
	for _, o := range m.Outputs {
		if err := writeOutput(stdout, *outDir, o.Name, outs[o.Name]); err != nil {
			fmt.Fprintln(stderr, "ember onnx run:", err)
			return 1
		}
	}
	return 0
}

// writeOutput prints one output's dtype and shape and, with a folder,
// saves it there as <name>.npy (a string tensor as NumPy's '<U' dtype);
// without a folder it prints the values, summarized as NumPy prints large
// arrays. A sequence prints and saves each element as <name>_<i>; an
// optional its value, or "empty optional".
func writeOutput(stdout io.Writer, dir, name string, v any) error {
	switch v := v.(type) {
	case *tensor.Tensor:
		line := fmt.Sprintf("%s: %s %v", name, v.DType(), v.Shape())
		if dir != "" {
			path := filepath.Join(dir, outputFileName(name))
			if err := tensor.SaveNpy(path, v); err != nil {
				return err
			}
			line += " -> " + path
		} else {
			line += "\n" + formatTensorValues(v)
		}
		_, err := fmt.Fprintln(stdout, line)
		return err
	case onnx.Strings:
		line := fmt.Sprintf("%s: string %v", name, v.Shape)
		if dir != "" {
			path := filepath.Join(dir, outputFileName(name))
			if err := saveNpyStrings(path, v); err != nil {
				return err
			}
			line += " -> " + path
		} else {
			line += "\n" + formatStringValues(v)
		}
		_, err := fmt.Fprintln(stdout, line)
		return err
	case onnx.Sequence:
		if _, err := fmt.Fprintf(stdout, "%s: sequence of %d\n", name, len(v)); err != nil {
			return err
		}
		for i, t := range v {
			if err := writeOutput(stdout, dir, fmt.Sprintf("%s_%d", name, i), t); err != nil {
				return err
			}
		}
		return nil
	case onnx.Optional:
		if v.Value == nil {
			_, err := fmt.Fprintf(stdout, "%s: empty optional\n", name)
			return err
		}
		return writeOutput(stdout, dir, name, v.Value)
	}
	return fmt.Errorf("output %q has no value", name)
}

// readInputs loads the -i arguments. NAME=FILE feeds NAME; at most one bare
// FILE feeds the first model input no NAME=FILE names. Inputs the model
// declares STRING are read as NumPy string arrays.
func readInputs(m *onnx.Model, specs []string) (map[string]any, error) {
	declared := map[string]onnx.ValueInfo{}
	for _, in := range m.Inputs {
		declared[in.Name] = in
	}
	inputs := map[string]any{}
	bare := ""
	for _, s := range specs {
		name, file, ok := strings.Cut(s, "=")
		if !ok {
			if bare != "" {
				return nil, fmt.Errorf("only one -i may be a bare path (got %q and %q)", bare, s)
			}
			bare = s
			continue
		}
		t, err := loadInput(declared[name], file)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", name, err)
		}
		inputs[name] = t
	}
	if bare != "" {
		for _, in := range m.Inputs {
			if _, fed := inputs[in.Name]; !fed {
				t, err := loadInput(in, bare)
				if err != nil {
					return nil, fmt.Errorf("input %q: %w", in.Name, err)
				}
				inputs[in.Name] = t
				bare = ""
				break
			}
		}
		if bare != "" {
			return nil, fmt.Errorf("bare input %q: every model input is already fed", bare)
		}
	}
	return inputs, nil
}

// outputFileName turns an output name into a file name inside the output
// folder: characters other than letters, digits, '.', '-' and '_' become
// '_', so names like "a/b" or ".." cannot leave the folder.
func outputFileName(name string) string {
	b := []byte(name)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			b[i] = '_'
		}
	}
	s := strings.Trim(string(b), ".")
	if s == "" {
		s = "output"
	}
	return s + ".npy"
}
