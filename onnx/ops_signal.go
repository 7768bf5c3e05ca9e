package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Window functions and discrete Fourier transforms (direct O(n²) sums in
// float64, fine for the short signals ONNX test data and feature
// extraction use).

func signalOps() opTable {
	return opTable{
		"DFT":             {{since: 17, impl: opDFT}},
		"STFT":            {{since: 17, impl: opSTFT}},
		"HannWindow":      {{since: 17, impl: window(0.5, 0.5, 0)}},
		"HammingWindow":   {{since: 17, impl: window(25.0/46, 21.0/46, 0)}},
		"BlackmanWindow":  {{since: 17, impl: window(0.42, 0.5, 0.08)}},
		"MelWeightMatrix": {{since: 17, impl: opMelWeightMatrix}},
	}
}

// opMelWeightMatrix builds the [dft_length/2+1, num_mel_bins] matrix that
// maps a one-sided magnitude spectrum to mel bands: triangles whose edges
// are num_mel_bins+2 points evenly spaced on the mel scale
// (2595 log10(1 + hz/700)) between the edge frequencies, each point rounded
// down to a spectrum bin. The mel step divides the range by the number of
// points, num_mel_bins+2, as ONNX's reference implementation does.
func opMelWeightMatrix(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var args [5]float64
	for i := range args {
		t, err := n.need(in, i)
		if err != nil {
			return nil, err
		}
		if t.Numel() != 1 {
			return nil, fmt.Errorf("onnx: %v: input %d of shape %v must be a scalar", n, i, t.Shape())
		}
		args[i] = t.Reshape(-1).At(0)
	}
	bands, dftLen, rate, lowHz, highHz := int(args[0]), int(args[1]), args[2], args[3], args[4]
	if bands <= 0 || dftLen <= 0 || rate <= 0 {
		return nil, fmt.Errorf("onnx: %v: num_mel_bins %d, dft_length %d and sample_rate %v must be positive", n, bands, dftLen, rate)
	}
	if !(lowHz >= 0 && lowHz <= highHz && highHz <= rate/2) {
		return nil, fmt.Errorf("onnx: %v: edges %v to %v Hz must satisfy 0 <= lower <= upper <= sample_rate/2 = %v", n, lowHz, highHz, rate/2)
	}
	bins := dftLen/2 + 1
	if err := n.checkShape([]int{bins, bands}, tensor.Float64); err != nil {
		return nil, err
	}
	dt, err := n.dtypeAttr("output_datatype", tensor.Float32)
	if err != nil {
		return nil, err
	}
	mel := func(hz float64) float64 { return 2595 * math.Log10(1+hz/700) }
	lowMel, highMel := mel(lowHz), mel(highHz)
	step := (highMel - lowMel) / float64(bands+2)
	edge := make([]int, bands+2)
	for i := range edge {
		hz := 700 * (math.Pow(10, (float64(i)*step+lowMel)/2595) - 1)
		// Never past the last bin, whatever the rounding of the mel scale.
		edge[i] = min(int(math.Floor(float64(dftLen+1)*hz/rate)), bins-1)
	}
	w := make([]float64, bins*bands)
	for b := range bands {
		lo, mid, hi := edge[b], edge[b+1], edge[b+2]
		if mid == lo {
			w[mid*bands+b] = 1
		} else {
			for j := lo; j <= mid; j++ {
				w[j*bands+b] = float64(j-lo) / float64(mid-lo)
			}
		}
		for j := mid; j < hi; j++ {
			w[j*bands+b] = float64(hi-j) / float64(hi-mid)
		}
	}
	return one(tensor.FromSlice(w, bins, bands).To(dt))
}

// window returns a generalized cosine window a0 - a1 cos(2πn/N) +
// a2 cos(4πn/N), with N the size (periodic) or size-1 (symmetric).
func window(a0, a1, a2 float64) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		st, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		size := int(st.Reshape(-1).At(0))
		if size < 0 || int64(size) > n.maxElements {
			return nil, fmt.Errorf("onnx: %v: bad window size %d", n, size)
		}
		dt, err := n.dtypeAttr("output_datatype", tensor.Float32)
		if err != nil {
			return nil, err
		}
		den := float64(size)
		if n.attrInt("periodic", 1) == 0 {
			den = float64(size - 1)
		}
		v := make([]float64, size)
		for i := range v {
			x := 2 * math.Pi * float64(i) / den
			v[i] = a0 - a1*math.Cos(x) + a2*math.Cos(2*x)
		}
		return one(tensor.FromSlice(v).To(dt))
	}
}

// complexLanes returns x ([..., n, 1] real or [..., n, 2] complex) with the
// signal axis moved last as real and imaginary parts, lane by lane.
func complexLanes(x *tensor.Tensor, axis int) (re, im []float64, lanes, n int, shape []int, err error) {
	s := x.Shape()
	if len(s) < 2 || (s[len(s)-1] != 1 && s[len(s)-1] != 2) {
		return nil, nil, 0, 0, nil, fmt.Errorf("last axis of %v must be 1 (real) or 2 (complex)", s)
	}
	moved := x.Transpose(axis, len(s)-2).Contiguous()
	shape = moved.Shape()
	n = shape[len(shape)-2]
	c := shape[len(shape)-1]
	v := moved.Float64s()
	lanes = len(v) / max(1, n*c)
	re, im = make([]float64, lanes*n), make([]float64, lanes*n)
	for i := range lanes * n {
		re[i] = v[i*c]
		if c == 2 {
			im[i] = v[i*c+1]
		}
	}
	return re, im, lanes, n, shape, nil
}

// dft returns bins 0..m-1 of the length-size DFT of re+i·im (zero-padded
// or truncated to size), inverse scaling by 1/size.
func dft(re, im []float64, size, m int, inverse bool) (ore, oim []float64) {
	ore, oim = make([]float64, m), make([]float64, m)
	sign := -1.0
	if inverse {
		sign = 1
	}
	for k := range m {
		var sr, si float64
		for t := range min(size, len(re)) {
			a := sign * 2 * math.Pi * float64(k*t%size) / float64(size)
			c, s := math.Cos(a), math.Sin(a)
			sr += re[t]*c - im[t]*s
			si += re[t]*s + im[t]*c
		}
		if inverse {
			sr, si = sr/float64(size), si/float64(size)
		}
		ore[k], oim[k] = sr, si
	}
	return ore, oim
}

func opDFT(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	axis := int(n.attrInt("axis", 1))
	if t := arg(in, 2); t != nil && n.opset >= 20 {
		axis = int(t.Reshape(-1).At(0))
	}
	if axis, err = n.normAxis(axis, x.Dim()-1); err != nil {
		return nil, err
	}
	re, im, lanes, size, shape, err := complexLanes(x, axis)
	if err != nil {
		return nil, fmt.Errorf("onnx: %v: %w", n, err)
	}
	length := size
	inverse, onesided := n.attrInt("inverse", 0) == 1, n.attrInt("onesided", 0) == 1
	if inverse && onesided {
		length = 2 * (size - 1) // a one-sided spectrum of a real signal
	}
	if t := arg(in, 1); t != nil && t.Numel() > 0 {
		length = int(t.Reshape(-1).At(0))
	}
	if inverse && onesided {
		return inverseOnesided(n, x, re, im, lanes, size, length, shape, axis)
	}
	m := length
	if onesided {
		m = length/2 + 1
	}
	if length <= 0 || int64(lanes)*int64(m)*2 > n.maxElements || int64(m)*int64(length) > n.maxElements {
		return nil, fmt.Errorf("onnx: %v: DFT length %d out of range", n, length)
	}
	out := make([]float64, 0, lanes*m*2)
	for l := range lanes {
		r, i := dft(re[l*size:(l+1)*size], im[l*size:(l+1)*size], length, m, inverse)
		for k := range m {
			out = append(out, r[k], i[k])
		}
	}
	shape[len(shape)-2], shape[len(shape)-1] = m, 2
	y := tensor.FromSlice(out, shape...).Transpose(axis, len(shape)-2)
	return one(y.Contiguous().To(x.DType()))
}

// inverseOnesided is DFT with inverse and onesided set (opset 20's
// irfft): the input holds bins 0..length/2 of a real signal's spectrum;
// the other bins are their complex conjugates, and the output is the
// length real samples ([..., length, 1]).
func inverseOnesided(n *node, x *tensor.Tensor, re, im []float64, lanes, size, length int, shape []int, axis int) ([]*tensor.Tensor, error) {
	if length <= 0 || int64(lanes)*int64(length) > n.maxElements || int64(length)*int64(length) > n.maxElements {
		return nil, fmt.Errorf("onnx: %v: DFT length %d out of range", n, length)
	}
	bins := length/2 + 1
	fullRe, fullIm := make([]float64, length), make([]float64, length)
	out := make([]float64, 0, lanes*length)
	for l := range lanes {
		lr, li := re[l*size:(l+1)*size], im[l*size:(l+1)*size]
		for k := range length {
			j, sign := k, 1.0
			if k >= bins {
				j, sign = length-k, -1
			}
			fullRe[k], fullIm[k] = 0, 0
			if j < size {
				fullRe[k], fullIm[k] = lr[j], sign*li[j]
			}
		}
		r, _ := dft(fullRe, fullIm, length, length, true)
		out = append(out, r...)
	}
	shape[len(shape)-2], shape[len(shape)-1] = length, 1
	y := tensor.FromSlice(out, shape...).Transpose(axis, len(shape)-2)
	return one(y.Contiguous().To(x.DType()))
}

func opSTFT(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	st, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	step := int(st.Reshape(-1).At(0))
	win := arg(in, 2)
	frameLen := 0
	if t := arg(in, 3); t != nil {
		frameLen = int(t.Reshape(-1).At(0))
	} else if win != nil {
		frameLen = win.Numel()
	}
	if x.Dim() != 3 || step <= 0 || frameLen <= 0 || frameLen > x.Shape()[1] {
		return nil, fmt.Errorf("onnx: %v: signal %v, frame_step %d and frame_length %d do not fit", n, x.Shape(), step, frameLen)
	}
	var w []float64
	if win != nil {
		if w = win.Float64s(); len(w) != frameLen {
			return nil, fmt.Errorf("onnx: %v: window of %d for frames of %d", n, len(w), frameLen)
		}
	}
	re, im, lanes, size, _, err := complexLanes(x, 1)
	if err != nil {
		return nil, fmt.Errorf("onnx: %v: %w", n, err)
	}
	frames := (size-frameLen)/step + 1
	m := frameLen
	if n.attrInt("onesided", 1) == 1 {
		m = frameLen/2 + 1
	}
	if int64(lanes)*int64(frames)*int64(m)*2 > n.maxElements {
		return nil, fmt.Errorf("onnx: %v: output too large", n)
	}
	out := make([]float64, 0, lanes*frames*m*2)
	fr, fi := make([]float64, frameLen), make([]float64, frameLen)
	for l := range lanes {
		for f := range frames {
			for t := range frameLen {
				fr[t], fi[t] = re[l*size+f*step+t], im[l*size+f*step+t]
				if w != nil {
					fr[t], fi[t] = fr[t]*w[t], fi[t]*w[t]
				}
			}
			r, i := dft(fr, fi, frameLen, m, false)
			for k := range m {
				out = append(out, r[k], i[k])
			}
		}
	}
	return one(tensor.FromSlice(out, lanes, frames, m, 2).To(x.DType()))
}
