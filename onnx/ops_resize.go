package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Resize and Upsample. Each resized axis is interpolated separately by an
// [out, in] weight matrix (nearest: one-hot rows; linear: two taps; cubic:
// four taps with edge replication), applied as a matrix product in float64.

func resizeOps() opTable {
	return opTable{
		"Resize":   {{since: 10, impl: opResize}},
		"Upsample": {{since: 9, impl: opUpsample}},
	}
}

// resizeAxis holds one axis's resize parameters.
type resizeAxis struct {
	in, out    int
	scale      float64
	roiStart   float64
	roiEnd     float64
	hasROI     bool
	extrapolat float64
}

// sourceCoord maps output index o to the input coordinate.
func sourceCoord(mode string, a resizeAxis, o int) float64 {
	x := float64(o)
	in, out := float64(a.in), float64(a.out)
	switch mode {
	case "asymmetric":
		return x / a.scale
	case "align_corners":
		if a.out == 1 {
			return 0
		}
		// The reference divides by the unrounded output length in*scale.
		return x * (in - 1) / (in*a.scale - 1)
	case "tf_half_pixel_for_nn":
		return (x + 0.5) / a.scale
	case "pytorch_half_pixel":
		if a.out == 1 {
			return 0
		}
		return (x+0.5)/a.scale - 0.5
	case "tf_crop_and_resize":
		if a.out == 1 {
			return 0.5 * (a.roiStart + a.roiEnd) * (in - 1)
		}
		return a.roiStart*(in-1) + x*(a.roiEnd-a.roiStart)*(in-1)/(out-1)
	case "half_pixel_symmetric":
		adj := out / (a.scale * in)
		return in*(1-adj)/2 + (x+0.5)/a.scale - 0.5
	default: // half_pixel
		return (x+0.5)/a.scale - 0.5
	}
}

// nearestIndex rounds coordinate x as nearest_mode says.
func nearestIndex(mode string, x float64) int {
	switch mode {
	case "floor":
		return int(math.Floor(x))
	case "ceil":
		return int(math.Ceil(x))
	case "round_prefer_ceil":
		return int(math.Floor(x + 0.5))
	default: // round_prefer_floor
		if x-math.Floor(x) == 0.5 {
			return int(math.Floor(x))
		}
		return int(math.Round(x))
	}
}

// cubicCoeffs returns the four cubic convolution weights for fraction t.
func cubicCoeffs(a, t float64) [4]float64 {
	f := func(x float64) float64 {
		x = math.Abs(x)
		switch {
		case x <= 1:
			return ((a+2)*x-(a+3))*x*x + 1
		case x < 2:
			return ((a*x-5*a)*x+8*a)*x - 4*a
		}
		return 0
	}
	return [4]float64{f(t + 1), f(t), f(1 - t), f(2 - t)}
}

// weights builds the [out, in] interpolation matrix and the extrapolation
// bias of one axis.
func (n *node) resizeWeights(a resizeAxis, mode, coordMode, nearestMode string) (w []float64, bias []float64, err error) {
	w = make([]float64, a.out*a.in)
	bias = make([]float64, a.out)
	clampIdx := func(i int) int { return min(max(i, 0), a.in-1) }
	cubicA := n.attrFloat("cubic_coeff_a", -0.75)
	exclude := n.attrInt("exclude_outside", 0) == 1
	for o := range a.out {
		x := sourceCoord(coordMode, a, o)
		row := w[o*a.in : (o+1)*a.in]
		if coordMode == "tf_crop_and_resize" && (x < 0 || x > float64(a.in-1)) {
			bias[o] = a.extrapolat
			continue
		}
		if antialias := n.attrInt("antialias", 0) == 1; antialias && a.scale < 1 && (mode == "linear" || mode == "cubic") {
			antialiasRow(row, x, a.scale, mode == "cubic", cubicA, exclude)
			continue
		}
		switch mode {
		case "nearest":
			row[clampIdx(nearestIndex(nearestMode, x))] = 1
		case "linear":
			x = min(max(x, 0), float64(a.in-1))
			i0 := int(math.Floor(x))
			t := x - float64(i0)
			row[clampIdx(i0)] += 1 - t
			row[clampIdx(i0+1)] += t
		case "cubic":
			i0 := int(math.Floor(x))
			c := cubicCoeffs(cubicA, x-float64(i0))
			total := 0.0
			for j := range 4 {
				i := i0 - 1 + j
				if exclude && (i < 0 || i >= a.in) {
					continue
				}
				row[clampIdx(i)] += c[j]
				total += c[j]
			}
			if exclude && total != 0 {
				for i := range row {
					row[i] /= total
				}
			}
		default:
			return nil, nil, fmt.Errorf("onnx: %v: unknown mode %q", n, mode)
		}
	}
	return w, bias, nil
}

// antialiasRow fills one row of a downsampling axis's weights with
// antialias (opset 18): the linear (triangle) or cubic kernel stretched by
// 1/scale so that it covers every input sample the output stands for,
// evaluated at scale·(i − x) for the taps around coordinate x and
// normalized to sum to 1. Taps past the edges repeat the edge sample, or
// with exclude_outside are dropped before normalizing.
func antialiasRow(row []float64, x, scale float64, cubic bool, cubicA float64, exclude bool) {
	support := 1.0
	if cubic {
		support = 2
	}
	first := int(math.Floor(-support/scale)) + 1 // first tap, relative to floor(x)
	taps := 2 - 2*first                          // symmetric about x
	base := int(math.Floor(x))
	ratio := x - float64(base)
	kernel := func(d float64) float64 {
		d = math.Abs(d)
		if !cubic {
			return max(0, 1-d)
		}
		switch {
		case d <= 1:
			return ((cubicA+2)*d-(cubicA+3))*d*d + 1
		case d < 2:
			return ((cubicA*d-5*cubicA)*d+8*cubicA)*d - 4*cubicA
		}
		return 0
	}
	in := len(row)
	weights := make([]float64, taps)
	var total float64
	for j := range taps {
		i := base + first + j
		if exclude && (i < 0 || i >= in) {
			continue
		}
		weights[j] = kernel(scale * (float64(first+j) - ratio))
		total += weights[j]
	}
	if total == 0 {
		return
	}
	for j, w := range weights {
		i := min(max(base+first+j, 0), in-1)
		row[i] += w / total
	}
}

// resize interpolates x to the given per-axis parameters.
func (n *node) resize(x *tensor.Tensor, axes []resizeAxis, mode, coordMode, nearestMode string) (*tensor.Tensor, error) {
	out := make([]int, len(axes))
	widest := make([]int, len(axes)) // bounds every intermediate
	for i, a := range axes {
		out[i] = a.out
		widest[i] = max(a.in, a.out)
		if err := n.checkShape([]int{a.out, a.in}, x.DType()); err != nil {
			return nil, err
		}
	}
	if err := n.checkShape(out, x.DType()); err != nil {
		return nil, err
	}
	if err := n.checkShape(widest, x.DType()); err != nil {
		return nil, err
	}
	dt := x.DType()
	y := x.To(tensor.Float64)
	r := x.Dim()
	for ax, a := range axes {
		if a.in == a.out && a.scale == 1 && !a.hasROI {
			continue
		}
		w, bias, err := n.resizeWeights(a, mode, coordMode, nearestMode)
		if err != nil {
			return nil, err
		}
		wt := tensor.FromSlice(w, a.out, a.in).T()
		moved := y.Transpose(ax, r-1)
		z := moved.MatMul(wt).Add(tensor.FromSlice(bias))
		y = z.Transpose(ax, r-1)
	}
	if dt.IsFloat() {
		return y.To(dt), nil
	}
	return y.Round().To(dt), nil
}

func opResize(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	present := func(i int) *tensor.Tensor {
		if t := arg(in, i); t != nil && t.Numel() > 0 {
			return t
		}
		return nil
	}
	var roi, scales, sizes *tensor.Tensor
	coordMode := n.attrString("coordinate_transformation_mode", "half_pixel")
	nearestMode := n.attrString("nearest_mode", "round_prefer_floor")
	if n.opset < 11 {
		scales = present(1)
		coordMode, nearestMode = "asymmetric", "floor"
	} else {
		roi, scales, sizes = present(1), present(2), present(3)
	}
	r := x.Dim()
	axesList := toInts(n.attrInts("axes"))
	if axesList == nil {
		for i := range r {
			axesList = append(axesList, i)
		}
	}
	for i, a := range axesList {
		if axesList[i], err = n.normAxis(a, r); err != nil {
			return nil, err
		}
	}
	xs := x.Shape()
	axes := make([]resizeAxis, r)
	for i := range axes {
		axes[i] = resizeAxis{in: xs[i], out: xs[i], scale: 1, roiStart: 0, roiEnd: 1, extrapolat: n.attrFloat("extrapolation_value", 0)}
	}
	if roi != nil && coordMode == "tf_crop_and_resize" {
		v := roi.Float64s()
		if len(v) != 2*len(axesList) {
			return nil, fmt.Errorf("onnx: %v: roi has %d values for %d axes", n, len(v), len(axesList))
		}
		for j, a := range axesList {
			axes[a].roiStart, axes[a].roiEnd, axes[a].hasROI = v[j], v[len(axesList)+j], true
		}
	}
	switch {
	case sizes != nil:
		sz := ints(sizes)
		if len(sz) != len(axesList) {
			return nil, fmt.Errorf("onnx: %v: %d sizes for %d axes", n, len(sz), len(axesList))
		}
		policy := n.attrString("keep_aspect_ratio_policy", "stretch")
		if policy != "stretch" {
			s := math.Inf(1)
			if policy == "not_smaller" {
				s = math.Inf(-1)
			}
			for j, a := range axesList {
				f := float64(sz[j]) / float64(xs[a])
				if policy == "not_larger" {
					s = min(s, f)
				} else {
					s = max(s, f)
				}
			}
			for j, a := range axesList {
				sz[j] = int(math.Round(s * float64(xs[a])))
				axes[a].scale = s
			}
		}
		for j, a := range axesList {
			if sz[j] < 0 {
				return nil, fmt.Errorf("onnx: %v: negative size %v", n, sz)
			}
			axes[a].out = sz[j]
			if policy == "stretch" {
				axes[a].scale = float64(sz[j]) / float64(xs[a])
			}
		}
	case scales != nil:
		sc := scales.Float64s()
		if len(sc) != len(axesList) {
			return nil, fmt.Errorf("onnx: %v: %d scales for %d axes", n, len(sc), len(axesList))
		}
		for j, a := range axesList {
			if !(sc[j] > 0) {
				return nil, fmt.Errorf("onnx: %v: scales %v must be positive", n, sc)
			}
			axes[a].scale = sc[j]
			span := 1.0
			if axes[a].hasROI {
				span = axes[a].roiEnd - axes[a].roiStart
			}
			axes[a].out = int(math.Floor(float64(xs[a]) * span * sc[j]))
		}
	default:
		return nil, fmt.Errorf("onnx: %v: one of scales or sizes is required", n)
	}
	y, err := n.resize(x, axes, n.attrString("mode", "nearest"), coordMode, nearestMode)
	if err != nil {
		return nil, err
	}
	return one(y)
}

// opUpsample is the deprecated Upsample (opset 9): asymmetric coordinates,
// floor rounding for nearest.
func opUpsample(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	st, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	sc := st.Float64s()
	xs := x.Shape()
	if len(sc) != len(xs) {
		return nil, fmt.Errorf("onnx: %v: %d scales for rank %d", n, len(sc), len(xs))
	}
	axes := make([]resizeAxis, len(xs))
	for i := range axes {
		if !(sc[i] > 0) {
			return nil, fmt.Errorf("onnx: %v: scales %v must be positive", n, sc)
		}
		axes[i] = resizeAxis{in: xs[i], out: int(math.Floor(float64(xs[i]) * sc[i])), scale: sc[i], roiEnd: 1}
	}
	mode := n.attrString("mode", "nearest")
	y, err := n.resize(x, axes, mode, "asymmetric", "floor")
	if err != nil {
		return nil, err
	}
	return one(y)
}
