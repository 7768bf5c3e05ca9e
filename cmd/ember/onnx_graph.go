package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"

	"github.com/emberml/ember/graphviz"
	"github.com/emberml/ember/internal/atomicfile"
	"github.com/emberml/ember/onnx"
)

// onnxGraph writes an ONNX model's graph as Graphviz DOT.
func onnxGraph(args []string, stdout, stderr io.Writer) int {
	model, flagArgs := splitModelArg(args)
	fs := flag.NewFlagSet("ember onnx graph", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "DOT file to write (default: standard output)")
	if err := fs.Parse(flagArgs); err != nil {
		return 2
	}
	if model == "" && fs.NArg() == 1 {
		model = fs.Arg(0)
	} else if model == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: ember onnx graph MODEL.onnx [-o GRAPH.dot]   (render: dot -Tsvg GRAPH.dot -o GRAPH.svg)")
		return 2
	}
	m, err := onnx.Load(model)
	if err != nil {
		fmt.Fprintf(stderr, "ember onnx graph: %v\n", err)
		return 1
	}
	var b bytes.Buffer
	if err := graphviz.WriteONNX(&b, m); err != nil {
		fmt.Fprintf(stderr, "ember onnx graph: %v\n", err)
		return 1
	}
	if *out == "" {
		_, err = stdout.Write(b.Bytes())
	} else {
		err = atomicfile.WriteFile(*out, b.Bytes(), 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ember onnx graph: %v\n", err)
		return 1
	}
	if *out != "" {
		fmt.Fprintf(stdout, "wrote %s (%d nodes)\n", *out, len(m.Nodes()))
	}
	return 0
}
