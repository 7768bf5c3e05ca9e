package onnx

import (
	"fmt"
	"math"
	"path/filepath"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/atomicfile"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// This file maps the ops Export's main dispatch leaves to it: the 3-d
// convolutions and poolings (composites of 2-d ops in package autograd,
// written as single 3-d ONNX nodes), Flip, CumSum, MaskedFill and
// EmbeddingBag.

// more translates the ops export.go's dispatch does not know; anything else
// fails with an error naming the op.
func (e *exporter) more(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	switch n.Op {
	case "Conv3d", "ConvTranspose3d":
		return e.conv3d(v, n, in)
	case "MaxPool3d", "AvgPool3d":
		return e.pool3d(v, n, in)
	case "Flip":
		return e.flip(n, in[0]), nil
	case "CumSum":
		axis, ok := n.Attrs["axis"].(int)
		if !ok {
			return "", e.unsupported(v, n, "the axis was not recorded")
		}
		ax := e.init(e.fresh("const"), tensor.FromSlice([]int64{int64(normAxis(axis, v.Dim()))}).Reshape())
		return e.node("CumSum", []string{in[0], ax}), nil
	case "MaskedFill":
		mask, ok := n.Attrs["mask"].(*tensor.Tensor)
		if !ok {
			return "", e.unsupported(v, n, "the mask was not recorded")
		}
		if !e.isInputTensor(mask) {
			e.warnf("onnx.Export: op %d (MaskedFill, output shape %v) uses a mask computed outside the graph; it is written as a constant", e.step, v.Shape())
		}
		return e.node("Where", []string{e.constant(mask), e.scalar(nFloat(n, "value"), v.DType()), in[0]}), nil
	case "EmbeddingBag":
		return e.embeddingBag(v, n, in)
	}
	return e.last(v, n, in)
}

// ones3 returns a with zeros replaced by 1.
func ones3(a [3]int) []int { return []int{max(a[0], 1), max(a[1], 1), max(a[2], 1)} }

// pads3 returns ONNX pads (begins then ends) for symmetric padding p.
func pads3(p [3]int) []int { return []int{p[0], p[1], p[2], p[0], p[1], p[2]} }

func (e *exporter) conv3d(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	ins := in
	if n.Inputs[2] == nil {
		ins = in[:2]
	}
	k := n.Inputs[1].Shape()[2:]
	switch o := n.Attrs["options"].(type) {
	case tensor.Conv3dOptions:
		return e.node("Conv", ins, attrIs("kernel_shape", k), attrIs("strides", ones3(o.Stride)),
			attrIs("pads", pads3(o.Padding)), attrIs("dilations", ones3(o.Dilation)), attrI("group", max(o.Groups, 1))), nil
	case tensor.ConvTranspose3dOptions:
		return e.node("ConvTranspose", ins, attrIs("kernel_shape", k), attrIs("strides", ones3(o.Stride)),
			attrIs("pads", pads3(o.Padding)), attrIs("output_padding", o.OutputPadding[:]),
			attrIs("dilations", ones3(o.Dilation)), attrI("group", max(o.Groups, 1))), nil
	}
	return "", e.unsupported(v, n, "missing convolution options")
}

func (e *exporter) pool3d(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	o, ok := n.Attrs["options"].(tensor.Pool3dOptions)
	if !ok {
		return "", e.unsupported(v, n, "missing pooling options")
	}
	stride := o.Stride
	for i := range stride {
		if stride[i] == 0 {
			stride[i] = o.Kernel[i]
		}
	}
	ceil := 0
	if o.CeilMode {
		ceil = 1
	}
	attrs := []exAttr{attrIs("kernel_shape", o.Kernel[:]), attrIs("strides", stride[:]),
		attrIs("pads", pads3(o.Padding)), attrI("ceil_mode", ceil)}
	if n.Op == "MaxPool3d" {
		return e.node("MaxPool", in, append(attrs, attrIs("dilations", ones3(o.Dilation)))...), nil
	}
	cip := 0
	if o.CountIncludePad {
		cip = 1
	}
	return e.node("AveragePool", in, append(attrs, attrI("count_include_pad", cip))...), nil
}

// flip writes Flip as PyTorch's exporter does: a Slice with step -1 from
// the last element to before the first along each axis.
func (e *exporter) flip(n autograd.NodeInfo, x string) string {
	axes := nInts(n, "axes")
	rank := n.Inputs[0].Dim()
	if len(axes) == 0 {
		return e.node("Identity", []string{x})
	}
	norm := make([]int, len(axes))
	starts := make([]int64, len(axes))
	ends := make([]int64, len(axes))
	steps := make([]int64, len(axes))
	for i, a := range axes {
		norm[i] = normAxis(a, rank)
		starts[i], ends[i], steps[i] = -1, math.MinInt64, -1
	}
	c := func(d []int64) string { return e.init(e.fresh("const"), tensor.FromSlice(d, len(d))) }
	return e.node("Slice", []string{x, c(starts), c(ends), e.ints(norm...), c(steps)})
}

// embeddingBag writes the 2-d ids form of nn.EmbeddingBag: Gather of the
// weight rows, then ReduceSum, ReduceMean or ReduceMax over the bag axis.
// A padding index is masked out (sum and mean; the mean divides by the
// count of other ids, at least 1).
func (e *exporter) embeddingBag(v *autograd.Var, n autograd.NodeInfo, in []string) (string, error) {
	if _, ok := n.Attrs["maxNorm"]; ok {
		return "", e.unsupported(v, n, "max_norm renormalises the weight in place during the forward pass, which ONNX cannot express")
	}
	if _, ok := n.Attrs["offsets"]; ok {
		return e.embeddingBagOffsets(v, n, in[0])
	}
	if _, ok := n.Attrs["perSampleWeights"]; ok {
		return "", e.unsupported(v, n, "per-sample weights are exported only with 1-d ids and offsets")
	}
	ids, ok := n.Attrs["ids"].(*tensor.Tensor)
	if !ok || ids.Dim() != 2 {
		return "", e.unsupported(v, n, "only the 2-d ids form (no offsets, no per-sample weights) is exported")
	}
	mode, _ := n.Attrs["mode"].(string)
	pad, hasPad := n.Attrs["paddingIdx"].(int)
	dt := v.DType()
	idsName := e.constant(ids)
	if ids.DType() != tensor.Int64 {
		idsName = e.node("Cast", []string{idsName}, attrI("to", int(dtypeToONNX(tensor.Int64))))
	}
	rows := e.node("Gather", []string{in[0], idsName}, attrI("axis", 0))
	axis := e.ints(1)
	reduce := func(op, x string) string {
		if e.opset >= 18 || op == "ReduceSum" {
			return e.node(op, []string{x, axis}, attrI("keepdims", 0))
		}
		return e.node(op, []string{x}, attrIs("axes", []int{1}), attrI("keepdims", 0))
	}
	if !hasPad {
		switch mode {
		case "sum":
			return reduce("ReduceSum", rows), nil
		case "mean":
			return reduce("ReduceMean", rows), nil
		case "max":
			return reduce("ReduceMax", rows), nil
		}
		return "", e.unsupported(v, n, fmt.Sprintf("mode %q", mode))
	}
	keep := e.node("Cast", []string{e.node("Not", []string{e.node("Equal", []string{idsName, e.ints(pad)})})}, attrI("to", int(dtypeToONNX(dt))))
	sum := reduce("ReduceSum", e.node("Mul", []string{rows, e.node("Unsqueeze", []string{keep, e.ints(2)})}))
	switch mode {
	case "sum":
		return sum, nil
	case "mean":
		cnt := e.node("Max", []string{e.node("ReduceSum", []string{keep, axis}, attrI("keepdims", 1)), e.scalar(1, dt)})
		return e.node("Div", []string{sum, cnt}), nil
	}
	return "", e.unsupported(v, n, fmt.Sprintf("mode %q with a padding index", mode))
}

// DefaultExternalDataThreshold is the initializer size, in bytes, above
// which ExportFile writes external data when
// ExportOptions.ExternalDataThreshold is zero: protobuf's 2 GiB limit.
const DefaultExternalDataThreshold = 2 << 30

func externalThreshold(opts ExportOptions) int64 {
	if opts.ExternalDataThreshold > 0 {
		return opts.ExternalDataThreshold
	}
	return DefaultExternalDataThreshold
}

// initBytes returns the total size of the initializers' data.
func (e *exporter) initBytes() int64 {
	var n int64
	for _, in := range e.graph.inits {
		n += int64(in.t.Numel()) * int64(in.t.DType().Size())
	}
	return n
}

// ExportFile is Export writing to the file at path. When the initializers
// take more than opts.ExternalDataThreshold bytes (2 GiB by default) their
// data is written to a second file beside it, named opts.ExternalDataName
// or the model's file name plus ".data", and the model refers to it by
// ONNX external-data entries (location, offset, length); the written model
// is then checked by loading it back with Load (unless opts.SkipCheck).
func ExportFile(path string, model nn.Module, exampleInputs []*tensor.Tensor, opts ExportOptions) error {
	if len(exampleInputs) != 1 {
		return fmt.Errorf("onnx.ExportFile: nn.Module.Forward takes one input, got %d example inputs", len(exampleInputs))
	}
	was := model.IsTraining()
	model.Train(false)
	defer model.Train(was)
	fn := func(in []*autograd.Var) []*autograd.Var { return []*autograd.Var{model.Forward(in[0])} }
	dataName := opts.ExternalDataName
	if dataName == "" {
		dataName = filepath.Base(path) + ".data"
	}
	if filepath.Base(dataName) != dataName {
		return fmt.Errorf("onnx.ExportFile: external data name %q must be a file name without folders", dataName)
	}
	b, data, err := exportModel(fn, model.NamedParameters(), model.NamedBuffers(), exampleInputs, opts, dataName)
	if err != nil {
		return err
	}
	if data != nil {
		if err := atomicfile.WriteFile(filepath.Join(filepath.Dir(path), dataName), data, 0o644); err != nil {
			return fmt.Errorf("onnx.ExportFile: %w", err)
		}
	}
	if err := atomicfile.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("onnx.ExportFile: %w", err)
	}
	if data != nil && !opts.SkipCheck {
		m, err := Load(path)
		if err != nil {
			return fmt.Errorf("onnx.ExportFile: the exported model does not parse: %w", err)
		}
		if _, err := m.NewSession(SessionOptions{}); err != nil {
			return fmt.Errorf("onnx.ExportFile: the exported model does not load: %w", err)
		}
	}
	return nil
}

// embeddingBagOffsets writes the 1-d ids form of nn.EmbeddingBag, whose
// bags are given by offsets: the bag of each position i is the number of
// bag starts at or before i, less one (computed by comparing a Range of
// positions with the offsets, so empty bags and repeated offsets are
// exact); a [bags, L] one-hot of those bag numbers, masked by the padding
// index and (with IncludeLastOffset) by the last offset, then reduces the
// looked-up rows: MatMul for sum (after scaling by the per-sample weights)
// and mean (divided by the bag's count, at least 1), a ReduceMax over the
// rows outside the bag set to -inf for max (0 for an empty bag). The
// offsets and per-sample weights must be example inputs or buffers, since
// constants computed in Go would not follow other ids.
func (e *exporter) embeddingBagOffsets(v *autograd.Var, n autograd.NodeInfo, w string) (string, error) {
	ids, _ := n.Attrs["ids"].(*tensor.Tensor)
	offsets, _ := n.Attrs["offsets"].(*tensor.Tensor)
	psw, hasPSW := n.Attrs["perSampleWeights"].(*tensor.Tensor)
	if ids == nil || offsets == nil || ids.Dim() != 1 {
		return "", e.unsupported(v, n, "offsets need 1-d ids")
	}
	for _, c := range []struct {
		what string
		t    *tensor.Tensor
	}{{"offsets", offsets}, {"per-sample weights", psw}} {
		if c.t != nil && !e.known(c.t) {
			return "", e.unsupported(v, n, fmt.Sprintf("its %s (%s %v) are neither an example input nor a buffer; they would be written as a constant that does not follow the ids, so pass them as an input", c.what, c.t.DType(), c.t.Shape()))
		}
	}
	mode, _ := n.Attrs["mode"].(string)
	if mode != "sum" && mode != "mean" && mode != "max" {
		return "", e.unsupported(v, n, fmt.Sprintf("mode %q", mode))
	}
	dt := v.DType()
	i64 := int(dtypeToONNX(tensor.Int64))
	toInt64 := func(name string, t *tensor.Tensor) string {
		if t.DType() != tensor.Int64 {
			return e.node("Cast", []string{name}, attrI("to", i64))
		}
		return name
	}
	idsName := toInt64(e.constant(ids), ids)
	offs := toInt64(e.constant(offsets), offsets)
	zero, one := e.scalar(0, tensor.Int64), e.scalar(1, tensor.Int64)
	length := e.node("Gather", []string{e.node("Shape", []string{idsName}), zero}, attrI("axis", 0))
	pos := e.node("Range", []string{zero, length, one})
	starts := offs
	last, _ := n.Attrs["includeLastOffset"].(bool)
	if last {
		starts = e.node("Slice", []string{offs, e.ints(0), e.ints(-1), e.ints(0)})
	}
	bags := e.node("Gather", []string{e.node("Shape", []string{starts}), zero}, attrI("axis", 0))
	// bag[i] = #{starts ≤ i} − 1, as [1, L].
	le := e.node("LessOrEqual", []string{e.node("Unsqueeze", []string{starts, e.ints(0)}), e.node("Unsqueeze", []string{pos, e.ints(1)})})
	count := e.node("ReduceSum", []string{e.node("Cast", []string{le}, attrI("to", i64)), e.ints(1)}, attrI("keepdims", 0))
	bag := e.node("Unsqueeze", []string{e.node("Sub", []string{count, one}), e.ints(0)})
	// member[b, i]: position i belongs to bag b and is kept.
	member := e.node("Equal", []string{e.node("Unsqueeze", []string{e.node("Range", []string{zero, bags, one}), e.ints(1)}), bag})
	var keep []string
	if pad, ok := n.Attrs["paddingIdx"].(int); ok {
		keep = append(keep, e.node("Not", []string{e.node("Equal", []string{idsName, e.ints(pad)})}))
	}
	if last {
		end := e.node("Slice", []string{offs, e.ints(-1), e.ints(math.MaxInt64), e.ints(0)})
		keep = append(keep, e.node("Less", []string{pos, end}))
	}
	for _, k := range keep {
		member = e.node("And", []string{member, e.node("Unsqueeze", []string{k, e.ints(0)})})
	}
	rows := e.node("Gather", []string{w, idsName}, attrI("axis", 0))
	oneHot := e.node("Cast", []string{member}, attrI("to", int(dtypeToONNX(dt))))
	switch mode {
	case "sum":
		if hasPSW {
			rows = e.node("Mul", []string{rows, e.node("Unsqueeze", []string{e.constant(psw), e.ints(1)})})
		}
		return e.node("MatMul", []string{oneHot, rows}), nil
	case "mean":
		sum := e.node("MatMul", []string{oneHot, rows})
		cnt := e.node("Max", []string{e.node("ReduceSum", []string{oneHot, e.ints(1)}, attrI("keepdims", 1)), e.scalar(1, dt)})
		return e.node("Div", []string{sum, cnt}), nil
	}
	inBag := e.node("Unsqueeze", []string{member, e.ints(2)})
	masked := e.node("Where", []string{inBag, e.node("Unsqueeze", []string{rows, e.ints(0)}), e.scalar(math.Inf(-1), dt)})
	var mx string
	if e.opset >= 18 {
		mx = e.node("ReduceMax", []string{masked, e.ints(1)}, attrI("keepdims", 0))
	} else {
		mx = e.node("ReduceMax", []string{masked}, attrIs("axes", []int{1}), attrI("keepdims", 0))
	}
	nonEmpty := e.node("Greater", []string{e.node("ReduceSum", []string{oneHot, e.ints(1)}, attrI("keepdims", 1)), e.scalar(0, dt)})
	return e.node("Where", []string{nonEmpty, mx, e.scalar(0, dt)}), nil
}
