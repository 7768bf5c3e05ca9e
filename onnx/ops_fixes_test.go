package onnx

import (
	"context"
	"math"
	"testing"

	"github.com/emberml/ember/tensor"
	"github.com/stretchr/testify/require"
)

func TestReduceMaxMinEmptyAndHalf(t *testing.T) {
	empty := tensor.Zeros([]int{2, 0, 3})
	axes := tensor.FromSlice([]int64{1})
	out, err := reduce(18, extreme(true))(testNode("ReduceMax", 20, 1, nil, nil), []*tensor.Tensor{empty, axes})
	require.NoError(t, err)
	require.Equal(t, []int{2, 1, 3}, out[0].Shape())
	for _, v := range out[0].Float64s() {
		require.True(t, math.IsInf(v, -1))
	}
	ints := tensor.Zeros([]int{0, 2}, tensor.Int32)
	out, err = reduce(18, extreme(false))(testNode("ReduceMin", 20, 1, map[string]int64{"keepdims": 0}, nil), []*tensor.Tensor{ints, tensor.FromSlice([]int64{0})})
	require.NoError(t, err)
	require.Equal(t, []int64{math.MaxInt32, math.MaxInt32}, out[0].Int64s())

	half := tensor.FromSlice([]float32{1, 5, -2, 3}, 2, 2).To(tensor.Float16)
	out, err = reduce(18, extreme(true))(testNode("ReduceMax", 18, 1, nil, nil), []*tensor.Tensor{half, tensor.FromSlice([]int64{1})})
	require.NoError(t, err)
	require.Equal(t, tensor.Float16, out[0].DType())
	require.Equal(t, []float64{5, 3}, out[0].Float64s())
}

func TestScatterElementsReductions(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2, 3, 4}, 1, 4)
	idx := tensor.FromSlice([]int64{1, 1, -1}, 1, 3)
	src := tensor.FromSlice([]float32{5, 0.5, 2}, 1, 3)
	for red, want := range map[string][]float64{
		"mul": {1, 5, 3, 8},
		"max": {1, 5, 3, 4},
		"min": {1, 0.5, 3, 2},
	} {
		n := testNode("ScatterElements", 18, 1, map[string]int64{"axis": 1}, nil)
		n.attrs["reduction"] = &attribute{name: "reduction", s: []byte(red)}
		out, err := opScatterElements(n, []*tensor.Tensor{x, idx, src})
		require.NoError(t, err, red)
		require.Equal(t, want, out[0].Float64s(), red)
	}
	require.Equal(t, []float64{1, 2, 3, 4}, x.Float64s(), "the input is not modified")
}

func TestHalfPrecisionKeepsItsDType(t *testing.T) {
	h := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2).To(tensor.Float16)
	for _, op := range []string{"MatMul", "Div", "Softmax", "LogSoftmax"} {
		n := testNode(op, 23, 1, nil, nil)
		n.maxElements = 1 << 20
		in := []*tensor.Tensor{h, h}
		if op == "Softmax" || op == "LogSoftmax" {
			in = in[:1]
		}
		out, err := registry.lookup("", op, 23).impl(n, in)
		require.NoError(t, err, op)
		require.Equal(t, tensor.Float16, out[0].DType(), op)
	}
	out, err := registry.lookup("", "MatMul", 23).impl(&node{opType: "MatMul", maxElements: 1 << 20}, []*tensor.Tensor{h, h})
	require.NoError(t, err)
	require.Equal(t, []float64{7, 10, 15, 22}, out[0].Float64s())
	out, err = registry.lookup("", "Softmax", 23).impl(testNode("Softmax", 23, 1, nil, nil), []*tensor.Tensor{h})
	require.NoError(t, err)
	e := 1 / (1 + math.Exp(-1))
	require.InDeltaSlice(t, []float64{1 - e, e, 1 - e, e}, out[0].Float64s(), 1e-3)
}

func TestAveragePoolDilated(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5}, 1, 1, 5)
	n := testNode("AveragePool", 19, 1, nil, nil)
	n.maxElements = 1 << 20
	n.attrs["kernel_shape"] = &attribute{name: "kernel_shape", ints: []int64{2}}
	n.attrs["dilations"] = &attribute{name: "dilations", ints: []int64{2}}
	out, err := opAveragePool(n, []*tensor.Tensor{x})
	require.NoError(t, err)
	require.Equal(t, []int{1, 1, 3}, out[0].Shape())
	require.Equal(t, []float64{2, 3, 4}, out[0].Float64s(), "windows (1,3), (2,4), (3,5)")
	// One pad on each side: the first window is (pad, 2); without
	// count_include_pad it averages 2 alone, with it (0+2)/2.
	n.attrs["pads"] = &attribute{name: "pads", ints: []int64{1, 1}}
	out, err = opAveragePool(n, []*tensor.Tensor{x})
	require.NoError(t, err)
	require.Equal(t, []float64{2, 2, 3, 4, 4}, out[0].Float64s())
	n.attrs["count_include_pad"] = &attribute{name: "count_include_pad", i: 1}
	out, err = opAveragePool(n, []*tensor.Tensor{x})
	require.NoError(t, err)
	require.Equal(t, []float64{1, 2, 3, 4, 2}, out[0].Float64s())
}

func TestGridSampleVolumetric(t *testing.T) {
	// A 2×2×2 volume holding its flat index; the grid's centre (0, 0, 0)
	// with align_corners averages all eight, a corner picks one.
	x := tensor.FromSlice([]float32{0, 1, 2, 3, 4, 5, 6, 7}, 1, 1, 2, 2, 2)
	grid := tensor.FromSlice([]float32{0, 0, 0, 1, -1, 1}, 1, 1, 1, 2, 3)
	n := testNode("GridSample", 20, 1, map[string]int64{"align_corners": 1}, nil)
	n.maxElements = 1 << 20
	out, err := opGridSample(n, []*tensor.Tensor{x, grid})
	require.NoError(t, err)
	require.Equal(t, []int{1, 1, 1, 1, 2}, out[0].Shape())
	// (x=1, y=-1, z=1) is W index 1, H index 0, D index 1: 4+0+1 = 5.
	require.InDeltaSlice(t, []float64{3.5, 5}, out[0].Float64s(), 1e-6)
	n.attrs["mode"] = &attribute{name: "mode", s: []byte("cubic")}
	_, err = opGridSample(n, []*tensor.Tensor{x, grid})
	require.ErrorContains(t, err, "volumetric")
}

func TestResizeAntialiasLinear(t *testing.T) {
	// Halving [1 2 3 4] with antialias stretches the triangle to four
	// taps weighted 1/8, 3/8, 3/8, 1/8 (edges repeated).
	x := tensor.FromSlice([]float32{1, 2, 3, 4}, 1, 4)
	n := testNode("Resize", 18, 1, map[string]int64{"antialias": 1}, nil)
	n.maxElements = 1 << 20
	n.attrs["mode"] = &attribute{name: "mode", s: []byte("linear")}
	out, err := opResize(n, []*tensor.Tensor{x, nil, tensor.FromSlice([]float32{1, 0.5})})
	require.NoError(t, err)
	require.InDeltaSlice(t, []float64{13.0 / 8, 27.0 / 8}, out[0].Float64s(), 1e-6)
}

func TestConvHalfPrecision(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2, 3}, 1, 1, 3).To(tensor.Float16)
	w := tensor.FromSlice([]float32{1, 1}, 1, 1, 2).To(tensor.Float16)
	n := testNode("Conv", 22, 1, nil, nil)
	n.maxElements = 1 << 20
	out, err := opConv(n, []*tensor.Tensor{x, w})
	require.NoError(t, err)
	require.Equal(t, tensor.Float16, out[0].DType())
	require.Equal(t, []float64{3, 5}, out[0].Float64s())
}

func TestDFTInverseOnesided(t *testing.T) {
	// The one-sided spectrum of [1 2 3 4] is 10, -2+2i, -2.
	x := tensor.FromSlice([]float32{10, 0, -2, 2, -2, 0}, 1, 3, 2)
	n := testNode("DFT", 17, 1, map[string]int64{"inverse": 1, "onesided": 1}, nil)
	n.maxElements = 1 << 20
	out, err := opDFT(n, []*tensor.Tensor{x})
	require.NoError(t, err)
	require.Equal(t, []int{1, 4, 1}, out[0].Shape())
	require.InDeltaSlice(t, []float64{1, 2, 3, 4}, out[0].Float64s(), 1e-5)
}

func TestConvIntegerPerChannelZeroPointShape(t *testing.T) {
	n := testNode("ConvInteger", 10, 1, nil, nil)
	dims := func(v ...int) []Dim {
		var d []Dim
		for _, x := range v {
			d = append(d, static(x))
		}
		return d
	}
	out, err := convShape(n, [][]Dim{dims(1, 1, 3, 3), dims(2, 1, 2, 2), dims(), dims(2)}, nil)
	require.NoError(t, err, "the fourth input is w_zero_point, not a residual")
	require.Equal(t, dims(1, 2, 2, 2), out[0])
}

func TestCeluAndEluHalfPrecision(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		x := tensor.FromSlice([]float32{-1, 2}, 2).To(dt)
		for _, op := range []string{"Celu", "Elu"} {
			out, err := registry.lookup("", op, 22).impl(testNode(op, 22, 1, nil, nil), []*tensor.Tensor{x})
			require.NoError(t, err, op)
			require.Equal(t, dt, out[0].DType(), op)
			require.InDeltaSlice(t, []float64{math.Expm1(-1), 2}, out[0].Float64s(), 1e-2, op)
		}
	}
}

func TestHalfLiftedOpsKeepTheirDType(t *testing.T) {
	x4 := tensor.FromSlice([]float32{0.5, -0.25, 0.75, 0.125, 1, -2, 3, 4}, 1, 2, 2, 2)
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		x := x4.To(dt)
		for _, op := range halfLiftedOps {
			n := testNode(op, 22, 2, nil, nil)
			n.maxElements = 1 << 20
			n.attrs["kernel_shape"] = &attribute{name: "kernel_shape", ints: []int64{1, 1}}
			in := []*tensor.Tensor{x}
			switch op {
			case "PRelu", "Pow":
				in = append(in, tensor.FromSlice([]float32{2}, 1).To(dt))
			case "LayerNormalization", "InstanceNormalization":
				in = append(in, tensor.FromSlice([]float32{1, 1}, 2).To(dt), tensor.FromSlice([]float32{0, 0}, 2).To(dt))
			case "ConvTranspose":
				in = append(in, tensor.FromSlice([]float32{1, 1}, 2, 1, 1, 1).To(dt))
			case "CumSum":
				in = append(in, tensor.FromSlice([]int64{1}))
			}
			ref := make([]*tensor.Tensor, len(in))
			for i, t := range in {
				ref[i] = t
				if t.DType() == dt {
					ref[i] = t.To(tensor.Float32)
				}
			}
			impl := registry.lookup("", op, 22).impl
			out, err := impl(n, in)
			require.NoError(t, err, "%s %s", op, dt)
			want, err := impl(n, ref)
			require.NoError(t, err, op)
			if want[0].DType() == tensor.Float32 {
				require.Equal(t, dt, out[0].DType(), "%s %s", op, dt)
				w, g := want[0].Float64s(), out[0].Float64s()
				for i := range w {
					// bfloat16 keeps 8 significant bits.
					require.InDelta(t, w[i], g[i], 0.01+0.01*math.Abs(w[i]), "%s %s element %d", op, dt, i)
				}
			} else {
				require.Equal(t, want[0].Float64s(), out[0].Float64s(), "%s %s", op, dt)
			}
		}
	}
}

func TestFusedConvReluHalfPrecision(t *testing.T) {
	w := tensor.FromSlice([]float32{1, -1}, 1, 1, 1, 2).To(tensor.Float16)
	model := mkModel(17, graphParts{
		nodes: [][]byte{
			mkNode("Conv", []string{"x", "w"}, []string{"c"}),
			mkNode("Relu", []string{"c"}, []string{"y"}),
		},
		inits:   [][]byte{mkTensor("w", dtFloat16, []int64{1, 1, 1, 2}, w.LittleEndianBytes())},
		inputs:  [][]byte{mkValueInfo("x", dtFloat16, 1, 1, 1, 4)},
		outputs: [][]byte{mkValueInfo("y", dtFloat16, 1, 1, 1, 3)},
	})
	s := newSession(t, model)
	x := tensor.FromSlice([]float32{1, 3, 2, 5}, 1, 1, 1, 4).To(tensor.Float16)
	out, err := s.Run(context.Background(), map[string]*tensor.Tensor{"x": x})
	require.NoError(t, err)
	require.Equal(t, tensor.Float16, out["y"].DType())
	require.Equal(t, []float64{0, 1, 0}, out["y"].Float64s(), "relu(1-3, 3-2, 2-5)")
}
