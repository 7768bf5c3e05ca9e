package main

import (
	"strconv"
	"strings"

	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// Printing outputs as NumPy prints arrays: nested brackets, one row per
// line, and arrays of more than printThreshold elements summarized with
// their first and last printEdge entries along every axis around "...".

// printThreshold is the element count above which arrays are summarized
// (numpy.set_printoptions' threshold).
const printThreshold = 1000

// printEdge is how many entries are kept at each end of a summarized axis
// (numpy.set_printoptions' edgeitems).
const printEdge = 3

// formatTensorValues formats t's values. Only the printed elements are
// read, so printing a large output costs no copy of it.
func formatTensorValues(t *tensor.Tensor) string {
	flat := t.Reshape(-1)
	dt := t.DType()
	return formatArray(t.Shape(), func(i int) string {
		x := flat.Narrow(0, i, 1)
		switch {
		case dt == tensor.Bool:
			if x.Bools()[0] {
				return "True"
			}
			return "False"
		case dt == tensor.Uint64 || dt == tensor.Uint32:
			return strconv.FormatUint(x.Uint64s()[0], 10)
		case dt.IsFloat():
			bits := 32
			if dt == tensor.Float64 {
				bits = 64
			}
			return strconv.FormatFloat(x.Float64s()[0], 'g', 6, bits)
		}
		return strconv.FormatInt(x.Int64s()[0], 10)
	})
}

// formatStringValues formats a string tensor's values, each quoted.
func formatStringValues(s onnx.Strings) string {
	return formatArray(s.Shape, func(i int) string {
		v := s.Data[i]
		if len(v) > 64 {
			return strconv.Quote(v[:64]) + "..."
		}
		return strconv.Quote(v)
	})
}

// formatArray formats the row-major array of shape whose i-th element
// elem formats.
func formatArray(shape []int, elem func(i int) string) string {
	if len(shape) == 0 {
		return elem(0)
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	var b strings.Builder
	writeAxis(&b, shape, 0, 0, n > printThreshold, elem)
	return b.String()
}

// writeAxis writes the sub-array of axis ax starting at flat index base.
func writeAxis(b *strings.Builder, shape []int, ax, base int, summarize bool, elem func(int) string) {
	stride := 1
	for _, d := range shape[ax+1:] {
		stride *= d
	}
	d := shape[ax]
	idx := make([]int, 0, d)
	skipAt := -1
	if summarize && d > 2*printEdge {
		for i := range printEdge {
			idx = append(idx, i)
		}
		skipAt = printEdge
		for i := d - printEdge; i < d; i++ {
			idx = append(idx, i)
		}
	} else {
		for i := range d {
			idx = append(idx, i)
		}
	}
	last := ax == len(shape)-1
	sep := ", "
	if !last {
		sep = "," + strings.Repeat("\n", len(shape)-ax-1) + strings.Repeat(" ", ax+1)
	}
	b.WriteByte('[')
	for k, i := range idx {
		if k > 0 {
			b.WriteString(sep)
		}
		if k == skipAt {
			b.WriteString("...")
			b.WriteString(sep)
		}
		if last {
			b.WriteString(elem(base + i))
		} else {
			writeAxis(b, shape, ax+1, base+i*stride, summarize, elem)
		}
	}
	b.WriteByte(']')
}
