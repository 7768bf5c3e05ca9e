package onnx

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// Values worked out by hand from the ONNX operator specifications; the
// conformance test runs the official node tests of these operators too.

func quantNode(op string, attrs map[string]int64) *node {
	a := map[string]*attribute{}
	for k, v := range attrs {
		a[k] = &attribute{name: k, i: v}
	}
	return &node{opType: op, opset: 13, attrs: a, maxElements: maxElements}
}

func TestQuantizeLinear(t *testing.T) {
	f32 := func(v ...float32) *tensor.Tensor { return tensor.FromSlice(v) }
	tests := []struct {
		name  string
		attrs map[string]int64
		in    []*tensor.Tensor
		dtype tensor.DType
		want  []int64
	}{
		{"uint8 ties to even and saturation", nil,
			[]*tensor.Tensor{f32(0, 0.5, 1.5, 2.5, -0.5, 300, -300), tensor.Scalar(1), tensor.ScalarOf(128, tensor.Uint8)},
			tensor.Uint8, []int64{128, 128, 130, 130, 128, 255, 0}},
		{"int8 zero point", nil,
			[]*tensor.Tensor{f32(3, 5, -255, 1000), tensor.Scalar(2), tensor.ScalarOf(-1, tensor.Int8)},
			tensor.Int8, []int64{1, 1, -128, 127}},
		{"no zero point gives uint8", nil,
			[]*tensor.Tensor{f32(-1, 2, 254.5), tensor.Scalar(1)},
			tensor.Uint8, []int64{0, 2, 254}},
		{"per axis 0", map[string]int64{"axis": 0},
			[]*tensor.Tensor{tensor.FromSlice([]float32{1, 2, 4, 6}, 2, 2), f32(1, 2), tensor.FromSlice([]uint8{0, 10})},
			tensor.Uint8, []int64{1, 2, 12, 13}},
		{"int16 output dtype attribute", map[string]int64{"output_dtype": dtInt16},
			[]*tensor.Tensor{f32(-40000, 7), tensor.Scalar(1)},
			tensor.Int16, []int64{-32768, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := opQuantizeLinear(quantNode("QuantizeLinear", tt.attrs), tt.in)
			require.NoError(t, err)
			assert.Equal(t, tt.dtype, out[0].DType())
			assert.Equal(t, tt.want, out[0].Int64s())
		})
	}
}

func TestDequantizeLinear(t *testing.T) {
	out, err := opDequantizeLinear(quantNode("DequantizeLinear", nil), []*tensor.Tensor{
		tensor.FromSlice([]int8{-128, 0, 127}), tensor.Scalar(0.5), tensor.ScalarOf(-1, tensor.Int8),
	})
	require.NoError(t, err)
	assert.Equal(t, tensor.Float32, out[0].DType())
	assert.Equal(t, []float32{-63.5, 0.5, 64}, out[0].Float32s())

	out, err = opDequantizeLinear(quantNode("DequantizeLinear", map[string]int64{"axis": -1}), []*tensor.Tensor{
		tensor.FromSlice([]int32{10, -10, 10, -10}, 2, 2), tensor.FromSlice([]float32{1, 0.25}),
	})
	require.NoError(t, err)
	assert.Equal(t, []float32{10, -2.5, 10, -2.5}, out[0].Float32s())

	_, err = opDequantizeLinear(quantNode("DequantizeLinear", nil), []*tensor.Tensor{
		tensor.FromSlice([]int8{1}), tensor.Scalar(1), tensor.ScalarOf(0, tensor.Uint8),
	})
	assert.ErrorContains(t, err, "zero point of type uint8")

	_, err = opDequantizeLinear(quantNode("DequantizeLinear", map[string]int64{"block_size": 2, "axis": 0}), []*tensor.Tensor{
		tensor.FromSlice([]int8{1, 2}), tensor.Scalar(1),
	})
	assert.ErrorContains(t, err, "does not block [2] by 2 along axis 0")
}

// TestBlockedQuantization: opset 21's block_size gives each run of
// block_size indices along the axis its own scale and zero point (the last
// block of 5 columns by 2 is partial).
func TestBlockedQuantization(t *testing.T) {
	attrs := map[string]int64{"axis": 1, "block_size": 2}
	x := tensor.FromSlice([]int8{
		10, 12, -4, 6, 100,
		1, 2, 3, 4, 5,
	}, 2, 5)
	scale := tensor.FromSlice([]float32{0.5, 2, 0.25, 1, 1, 4}, 2, 3)
	zp := tensor.FromSlice([]int8{2, 0, -100, 1, 1, 5}, 2, 3)
	out, err := opDequantizeLinear(quantNode("DequantizeLinear", attrs), []*tensor.Tensor{x, scale, zp})
	require.NoError(t, err)
	assert.Equal(t, []float32{
		4, 5, -8, 12, 50,
		0, 1, 2, 3, 0,
	}, out[0].Float32s())

	back, err := opQuantizeLinear(quantNode("QuantizeLinear", attrs), []*tensor.Tensor{out[0], scale, zp})
	require.NoError(t, err)
	assert.Equal(t, x.Int8s(), back[0].Int8s(), "quantizing the dequantized values gives them back")

	_, err = opDequantizeLinear(quantNode("DequantizeLinear", attrs), []*tensor.Tensor{x, tensor.Zeros([]int{2, 2}), nil})
	assert.ErrorContains(t, err, "scale or zero point of shape [2 2] does not block [2 5] by 2 along axis 1")
}

func TestDynamicQuantizeLinear(t *testing.T) {
	out, err := opDynamicQuantizeLinear(quantNode("DynamicQuantizeLinear", nil), []*tensor.Tensor{
		tensor.FromSlice([]float32{-1, 0, 1, 3}),
	})
	require.NoError(t, err)
	require.Len(t, out, 3)
	scale := float32(4) / 255
	assert.Equal(t, []float32{scale}, out[1].Float32s())
	// zero point round(1/scale) = round(63.75) = 64
	assert.Equal(t, []uint8{64}, out[2].Uint8s())
	assert.Equal(t, []uint8{0, 64, 128, 255}, out[0].Uint8s())
	assert.Equal(t, 0, out[1].Dim())
}

func TestMatMulInteger(t *testing.T) {
	a := tensor.FromSlice([]uint8{1, 2, 3, 4}, 2, 2)
	b := tensor.FromSlice([]uint8{5, 6}, 2, 1)
	out, err := opMatMulInteger(quantNode("MatMulInteger", nil), []*tensor.Tensor{
		a, b, tensor.FromSlice([]uint8{1, 3}), tensor.ScalarOf(5, tensor.Uint8),
	})
	require.NoError(t, err)
	assert.Equal(t, tensor.Int32, out[0].DType())
	assert.Equal(t, []int32{1, 1}, out[0].Int32s()) // [[0 1] [0 1]] @ [[0] [1]]

	out, err = opMatMulInteger(quantNode("MatMulInteger", nil), []*tensor.Tensor{
		tensor.FromSlice([]int8{-128, 127}, 1, 2), tensor.FromSlice([]int8{-128, 127}, 2, 1),
	})
	require.NoError(t, err)
	assert.Equal(t, []int32{128*128 + 127*127}, out[0].Int32s())

	_, err = opMatMulInteger(quantNode("MatMulInteger", nil), []*tensor.Tensor{
		tensor.FromSlice([]float32{1}, 1, 1), b,
	})
	assert.ErrorContains(t, err, "want uint8 or int8")
}

func TestQLinearMatMulRequantizes(t *testing.T) {
	// acc = (10-0)*(3-1) = 20; 20 * (0.5*0.25/0.125) = 20; + zp 100 = 120.
	out, err := opQLinearMatMul(quantNode("QLinearMatMul", nil), []*tensor.Tensor{
		tensor.FromSlice([]uint8{10}, 1, 1), tensor.Scalar(0.5), tensor.ScalarOf(0, tensor.Uint8),
		tensor.FromSlice([]uint8{3}, 1, 1), tensor.Scalar(0.25), tensor.ScalarOf(1, tensor.Uint8),
		tensor.Scalar(0.125), tensor.ScalarOf(100, tensor.Int8),
	})
	require.NoError(t, err)
	assert.Equal(t, tensor.Int8, out[0].DType())
	assert.Equal(t, []int8{120}, out[0].Int8s())
}

func TestBitShift(t *testing.T) {
	x := tensor.FromSlice([]uint8{1, 0x81, 255, 16}, 4)
	s := tensor.FromSlice([]uint8{1, 1, 8, 9}, 4)
	tests := []struct {
		dir  string
		want []uint8
	}{
		{"LEFT", []uint8{2, 0x02, 0, 0}},
		{"RIGHT", []uint8{0, 0x40, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.dir, func(t *testing.T) {
			n := &node{opType: "BitShift", opset: 11, maxElements: maxElements, attrs: map[string]*attribute{"direction": {name: "direction", s: []byte(tt.dir)}}}
			out, err := opBitShift(n, []*tensor.Tensor{x, s})
			require.NoError(t, err)
			assert.Equal(t, tt.want, out[0].Uint8s())
		})
	}
	n := &node{opType: "BitShift", opset: 11, maxElements: maxElements, attrs: map[string]*attribute{"direction": {name: "direction", s: []byte("LEFT")}}}
	out, err := opBitShift(n, []*tensor.Tensor{x, tensor.ScalarOf(2, tensor.Uint8)})
	require.NoError(t, err)
	assert.Equal(t, []uint8{4, 4, 252, 64}, out[0].Uint8s(), "broadcast shift amount")
	_, err = opBitShift(n, []*tensor.Tensor{tensor.FromSlice([]int8{1}), tensor.FromSlice([]int8{1})})
	assert.ErrorContains(t, err, "unsigned")
}

// TestConvIntegerExactOnLargeSums checks ConvInteger against a direct
// integer loop where the sums reach millions (beyond float32's exact
// integers), with per-output-channel weight zero points and padding.
func TestConvIntegerExactOnLargeSums(t *testing.T) {
	const c, h, w, m, k = 64, 5, 5, 3, 3
	xs := make([]uint8, c*h*w)
	for i := range xs {
		xs[i] = uint8(255 - i%7)
	}
	ws := make([]int8, m*c*k*k)
	for i := range ws {
		ws[i] = int8(127 - i%5)
	}
	wzp := []int8{0, -128, 5}
	const xzp = 1
	n := quantNode("ConvInteger", nil)
	n.attrs["pads"] = &attribute{name: "pads", ints: []int64{1, 1, 1, 1}}
	out, err := opConvInteger(n, []*tensor.Tensor{
		tensor.FromSlice(xs, 1, c, h, w), tensor.FromSlice(ws, m, c, k, k),
		tensor.ScalarOf(xzp, tensor.Uint8), tensor.FromSlice(wzp),
	})
	require.NoError(t, err)
	got := out[0].Int32s()
	require.Equal(t, []int{1, m, h, w}, out[0].Shape())
	for o := range m {
		for y := range h {
			for x := range w {
				var s int32
				for ci := range c {
					for ky := range k {
						for kx := range k {
							iy, ix := y+ky-1, x+kx-1
							if iy < 0 || iy >= h || ix < 0 || ix >= w {
								continue // padding holds the zero point: contributes 0
							}
							xv := int32(xs[(ci*h+iy)*w+ix]) - xzp
							wv := int32(ws[((o*c+ci)*k+ky)*k+kx]) - int32(wzp[o])
							s += xv * wv
						}
					}
				}
				require.Equal(t, s, got[(o*h+y)*w+x], "output channel %d at (%d, %d)", o, y, x)
			}
		}
	}
	assert.Greater(t, got[h*w+2*w+2], int32(1<<24), "the test reaches sums float32 cannot hold")
}

func TestBitShiftUint16(t *testing.T) {
	n := &node{opType: "BitShift", opset: 11, maxElements: maxElements, attrs: map[string]*attribute{"direction": {name: "direction", s: []byte("LEFT")}}}
	out, err := opBitShift(n, []*tensor.Tensor{tensor.FromSlice([]uint16{1, 0x8001, 3}), tensor.FromSlice([]uint16{15, 1, 16})})
	require.NoError(t, err)
	assert.Equal(t, []uint16{0x8000, 2, 0}, out[0].Uint16s())
}
