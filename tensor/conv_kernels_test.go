package tensor_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/devicetest"
	"github.com/emberml/ember/tensor"
)

// convFakeKind is the device kind of convFake; "convfake:0" takes every
// convolution, "convfake:1" declines every one.
const convFakeKind = "convfake"

var convFakeOnce sync.Once

// convFake is the emulated device with tensor.ConvKernels: it counts the
// calls and, unless it declines, computes each convolution with the CPU's
// tensor functions on host copies of its operands.
type convFake struct {
	*devicetest.Backend
	dev     tensor.Device
	decline bool
	calls   [3]atomic.Int64 // forward, backward input, backward weight
}

// openConvFake returns the backend of device convfake:i.
func openConvFake(t *testing.T, i int) (*convFake, tensor.Device) {
	t.Helper()
	convFakeOnce.Do(func() {
		tensor.RegisterBackend(convFakeKind, func(i int) (tensor.Backend, error) {
			// Emulated ordinals of their own keep the transfer counters of
			// other tests apart.
			inner := devicetest.Open(devicetest.Device(900 + i))
			return &convFake{Backend: inner, dev: tensor.Device(fmt.Sprintf("%s:%d", convFakeKind, i)), decline: i == 1}, nil
		})
	})
	d := tensor.Device(fmt.Sprintf("%s:%d", convFakeKind, i))
	b, err := tensor.BackendFor(d)
	require.NoError(t, err)
	return b.(*convFake), d
}

func (f *convFake) Device() tensor.Device { return f.dev }

func contiguousStrides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

// host returns the shape-sized block of buf from element off as a CPU
// tensor.
func (f *convFake) host(buf tensor.Buffer, off int, shape ...int) *tensor.Tensor {
	data := f.ToHost(buf, tensor.Layout{Shape: shape, Strides: contiguousStrides(shape), Offset: off})
	switch d := data.(type) {
	case []float32:
		return tensor.FromSlice(d, shape...)
	case []float64:
		return tensor.FromSlice(d, shape...)
	}
	panic(fmt.Sprintf("convFake: %T operand", data))
}

// device copies a CPU result into the fake's memory.
func (f *convFake) device(y *tensor.Tensor) tensor.Buffer {
	if y.DType() == tensor.Float32 {
		return f.FromHost(tensor.Float32, y.Float32s())
	}
	return f.FromHost(tensor.Float64, y.Float64s())
}

func (f *convFake) ConvForward(x, w tensor.Buffer, xOff, wOff int, g tensor.ConvGeom, o, groups int) (tensor.Buffer, bool) {
	f.calls[0].Add(1)
	if f.decline {
		return nil, false
	}
	xt := f.host(x, xOff, g.N, g.C, g.H, g.W)
	wt := f.host(w, wOff, o, g.C/groups, g.KH, g.KW)
	return f.device(tensor.ConvForward(xt, wt, g, groups)), true
}

func (f *convFake) ConvBackwardInput(grad, w tensor.Buffer, gradOff, wOff int, g tensor.ConvGeom, o, groups int) (tensor.Buffer, bool) {
	f.calls[1].Add(1)
	if f.decline {
		return nil, false
	}
	gt := f.host(grad, gradOff, g.N, o, g.OH, g.OW)
	wt := f.host(w, wOff, o, g.C/groups, g.KH, g.KW)
	return f.device(tensor.ConvBackwardInput(gt, wt, g, groups)), true
}

func (f *convFake) ConvBackwardWeight(x, grad tensor.Buffer, xOff, gradOff int, g tensor.ConvGeom, o, groups int) (tensor.Buffer, bool) {
	f.calls[2].Add(1)
	if f.decline {
		return nil, false
	}
	xt := f.host(x, xOff, g.N, g.C, g.H, g.W)
	gt := f.host(grad, gradOff, g.N, o, g.OH, g.OW)
	return f.device(tensor.ConvBackwardWeight(xt, gt, g, groups)), true
}

var _ tensor.ConvKernels = (*convFake)(nil)

// convDispatchCase is one convolution computed on the CPU and on the fake,
// with the ConvKernels method it must reach.
type convDispatchCase struct {
	name   string
	method int // index into convFake.calls
	run    func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor
}

func convDispatchCases() []convDispatchCase {
	g := tensor.NewGenerator(11)
	x := g.Randn([]int{2, 4, 7, 6})
	x64 := g.Randn([]int{2, 4, 7, 6}, tensor.Float64)
	w := g.Randn([]int{6, 2, 3, 2})
	wdw := g.Randn([]int{4, 1, 3, 3}, tensor.Float64)
	b := g.Randn([]int{6})
	opt := tensor.Conv2dOptions{Stride: [2]int{2, 1}, Padding: [2]int{1, 1}, Dilation: [2]int{1, 2}, Groups: 2}
	geom := tensor.Conv2dGeometry(x.Shape(), w.Shape(), opt)
	gy := g.Randn([]int{2, 6, geom.OH, geom.OW})
	dwOpt := tensor.Conv2dOptions{Padding: [2]int{1, 1}, Groups: 4}
	dwGeom := tensor.Conv2dGeometry(x64.Shape(), wdw.Shape(), dwOpt)
	gy64 := g.Randn([]int{2, 4, dwGeom.OH, dwGeom.OW}, tensor.Float64)
	xt := g.Randn([]int{1, 6, 4, 3})
	topt := tensor.ConvTranspose2dOptions{Stride: [2]int{2, 2}, Padding: [2]int{1, 0}, Groups: 2}
	return []convDispatchCase{
		{"Conv2d with bias", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			return tensor.Conv2d(mv(x), mv(w), mv(b), opt)
		}},
		{"ConvForward of a strided view", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			xv := mv(x64.Transpose(2, 3)).Transpose(2, 3) // non-contiguous: dense copies it
			return tensor.ConvForward(xv, mv(wdw), dwGeom, 4)
		}},
		{"ConvBackwardInput", 1, func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			return tensor.ConvBackwardInput(mv(gy), mv(w), geom, 2)
		}},
		{"ConvTranspose2d", 1, func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			return tensor.ConvTranspose2d(mv(xt), mv(w), nil, topt)
		}},
		{"ConvBackwardWeight", 2, func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			return tensor.ConvBackwardWeight(mv(x), mv(gy), geom, 2)
		}},
		{"ConvBackwardWeight depthwise float64", 2, func(mv func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
			return tensor.ConvBackwardWeight(mv(x64), mv(gy64), dwGeom, 4)
		}},
	}
}

// TestConvKernelsDispatch checks that convolutions on a backend with
// ConvKernels reach it, and that a declined call falls back to the generic
// Im2Col and MatMul path with the same result.
func TestConvKernelsDispatch(t *testing.T) {
	for _, declining := range []bool{false, true} {
		idx := 0
		if declining {
			idx = 1
		}
		fake, dev := openConvFake(t, idx)
		for _, c := range convDispatchCases() {
			t.Run(fmt.Sprintf("%s/declining=%v", c.name, declining), func(t *testing.T) {
				want := c.run(func(x *tensor.Tensor) *tensor.Tensor { return x })
				before := fake.calls[c.method].Load()
				got := c.run(func(x *tensor.Tensor) *tensor.Tensor { return onDev(t, x, dev) })
				assert.Equal(t, before+1, fake.calls[c.method].Load(), "ConvKernels method %d called once", c.method)
				tol := 0.0 // the fake computes with the CPU's own functions
				if declining {
					tol = 1e-5 // the generic path sums in another order
				}
				requireSameOnDevice(t, dev, want, got, tol, c.name)
			})
		}
	}
}

// TestConvKernelsSkipEmpty checks that convolutions without work never
// reach the backend.
func TestConvKernelsSkipEmpty(t *testing.T) {
	fake, dev := openConvFake(t, 0)
	before := fake.calls[0].Load()
	x := onDev(t, tensor.Zeros([]int{0, 3, 5, 5}), dev)
	w := onDev(t, tensor.Ones([]int{2, 3, 3, 3}), dev)
	y := tensor.Conv2d(x, w, nil, tensor.Conv2dOptions{})
	assert.Equal(t, []int{0, 2, 3, 3}, y.Shape())
	assert.Equal(t, before, fake.calls[0].Load())
}

// badConv returns a buffer of the wrong size from ConvForward.
type badConv struct{ *convFake }

var badConvOnce sync.Once

func (badConv) Device() tensor.Device { return "badconv:0" }

func (b badConv) ConvForward(x, w tensor.Buffer, xOff, wOff int, g tensor.ConvGeom, o, groups int) (tensor.Buffer, bool) {
	return b.Alloc(tensor.Float32, 1), true
}

// TestConvKernelsResultChecked checks that a backend returning a buffer of
// the wrong size is caught with a message naming the shape.
func TestConvKernelsResultChecked(t *testing.T) {
	fake, _ := openConvFake(t, 0)
	badConvOnce.Do(func() {
		tensor.RegisterBackend("badconv", func(int) (tensor.Backend, error) { return badConv{fake}, nil })
	})
	dev := tensor.Device("badconv:0")
	x := onDev(t, tensor.Ones([]int{1, 1, 3, 3}), dev)
	w := onDev(t, tensor.Ones([]int{2, 1, 2, 2}), dev)
	assert.PanicsWithValue(t,
		"tensor.ConvForward: the tensor_test.badConv backend's ConvKernels returned a float32 buffer of 1 elements, not a float32 buffer of 8 elements for shape [1 2 2 2]",
		func() { tensor.Conv2d(x, w, nil, tensor.Conv2dOptions{}) })
}
