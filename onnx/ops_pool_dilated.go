package onnx

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// avgPoolDilated is AveragePool with dilations (opset 19), for any number
// of spatial axes: window j of output position o on an axis reads input
// position o·stride − padBegin + j·dilation. Positions outside the padded
// input (those ceil_mode adds past its end) never count; padding counts as
// zeros only with count_include_pad. It computes in float64 and returns
// x's dtype.
func avgPoolDilated(n *node, x *tensor.Tensor, p *spatial, ceil, includePad bool) (*tensor.Tensor, error) {
	xs := x.Shape()
	spatialIn := xs[2:]
	k := len(spatialIn)
	outSize := make([]int, k)
	for a := range k {
		ek := (p.kernel[a]-1)*p.dilation[a] + 1
		span := spatialIn[a] + p.padBegin[a] + p.padEnd[a] - ek
		if span < 0 {
			return nil, fmt.Errorf("onnx: %v: dilated kernel of extent %d is larger than the padded axis %d (%d)", n, ek, a, spatialIn[a]+p.padBegin[a]+p.padEnd[a])
		}
		o := span/p.stride[a] + 1
		if ceil && span%p.stride[a] != 0 {
			o++
			if (o-1)*p.stride[a] >= spatialIn[a]+p.padBegin[a] {
				o-- // the last window would start in the end padding
			}
		}
		outSize[a] = o
	}
	outShape := append([]int{xs[0], xs[1]}, outSize...)
	if err := n.checkShape(outShape, x.DType()); err != nil {
		return nil, err
	}
	planeIn, planeOut := prod(spatialIn), prod(outSize)
	in := x.Float64s()
	out := make([]float64, xs[0]*xs[1]*planeOut)
	oc := make([]int, k) // output coordinate
	wc := make([]int, k) // window coordinate
	for po := range planeOut {
		rem := po
		for a := k - 1; a >= 0; a-- {
			oc[a] = rem % outSize[a]
			rem /= outSize[a]
		}
		// Each output position reads the same input offsets in every plane.
		var offsets []int
		count := 0
		for i := range wc {
			wc[i] = 0
		}
		for done := false; !done; {
			inside, padded := true, true
			off := 0
			for a := range k {
				pos := oc[a]*p.stride[a] - p.padBegin[a] + wc[a]*p.dilation[a]
				if pos < -p.padBegin[a] || pos >= spatialIn[a]+p.padEnd[a] {
					padded = false
				}
				if pos < 0 || pos >= spatialIn[a] {
					inside = false
				}
				off = off*spatialIn[a] + pos
			}
			switch {
			case inside:
				offsets = append(offsets, off)
				count++
			case padded && includePad:
				count++
			}
			done = true
			for a := k - 1; a >= 0; a-- {
				wc[a]++
				if wc[a] < p.kernel[a] {
					done = false
					break
				}
				wc[a] = 0
			}
		}
		for plane := range xs[0] * xs[1] {
			var sum float64
			base := plane * planeIn
			for _, off := range offsets {
				sum += in[base+off]
			}
			if count > 0 {
				out[plane*planeOut+po] = sum / float64(count)
			}
		}
	}
	return tensor.FromSlice(out, outShape...).To(x.DType()), nil
}
