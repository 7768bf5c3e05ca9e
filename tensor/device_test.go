package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/devicetest"
	"github.com/emberml/ember/tensor"
)

// onDev moves t to d, failing the test on error.
func onDev(t testing.TB, x *tensor.Tensor, d tensor.Device) *tensor.Tensor {
	t.Helper()
	y, err := x.ToDevice(d)
	require.NoError(t, err)
	return y
}

// requireSameOnDevice checks that got (on the emulated device) holds the
// same dtype, shape and values as want (on the CPU): equal, or within
// tol*(1+|want|) where the CPU takes a fast path of its own.
func requireSameOnDevice(t *testing.T, d tensor.Device, want, got *tensor.Tensor, tol float64, what string) {
	t.Helper()
	require.Equal(t, tensor.CPU, want.Device(), what)
	require.Equal(t, d, got.Device(), "%s: result left the device", what)
	require.Equal(t, want.DType(), got.DType(), what)
	require.Equal(t, want.Shape(), got.Shape(), what)
	w, g := want.Float64s(), got.Float64s()
	for i := range w {
		if w[i] == g[i] || (math.IsNaN(w[i]) && math.IsNaN(g[i])) {
			continue
		}
		require.LessOrEqual(t, math.Abs(w[i]-g[i]), tol*(1+math.Abs(w[i])), "%s: element %d is %v on %s, %v on the CPU", what, i, g[i], d, w[i])
	}
}

// deviceCase builds its inputs on the CPU with a fixed seed, moves them
// through mv (identity on the CPU) and returns the op's outputs.
type deviceCase struct {
	name string
	tol  float64 // 0: bitwise; the CPU has its own fast kernels otherwise
	run  func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor
}

func many(ts ...*tensor.Tensor) []*tensor.Tensor { return ts }

func deviceCases() []deviceCase {
	g := tensor.NewGenerator(7)
	a := g.Randn([]int{3, 4})
	b := g.Randn([]int{3, 4})
	row := g.Randn([]int{4})
	pos := g.Uniform([]int{3, 4}, 0.5, 2)
	a64 := g.Randn([]int{2, 3, 4}, tensor.Float64)
	ints := g.RandInt([]int{3, 4}, -5, 5)
	mask := g.Rand([]int{3, 4}).Gt(tensor.Scalar(0.5))
	idx := tensor.FromSlice([]int64{2, 0, 3})
	gidx := g.RandInt([]int{3, 2}, 0, 4)
	img := g.Randn([]int{2, 3, 6, 6})
	img64 := g.Randn([]int{2, 3, 6, 6}, tensor.Float64)
	w := g.Randn([]int{4, 3, 3, 3})
	wdw := g.Randn([]int{3, 1, 3, 3})
	bias := g.Randn([]int{4})
	ch := g.Randn([]int{3})
	chPos := g.Uniform([]int{3}, 0.5, 1.5)
	ids := tensor.FromSlice([]int64{1, 0, 4, 1}, 2, 2)
	table := g.Randn([]int{5, 3})
	return []deviceCase{
		{"unary", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			x := mv(a)
			return many(x.Neg(), x.Abs(), x.Exp(), mv(pos).Log(), x.Tanh(), x.Sigmoid(), x.Relu(), x.Clamp(-0.5, 0.5),
				x.PowScalar(2), x.Affine(2, 1), x.Erf(), x.Sign(), x.Floor(), mv(pos).Sqrt(), mv(pos).Rsqrt(), x.Square())
		}},
		{"binary and broadcasting", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			x, y, r := mv(a), mv(b), mv(row)
			return many(x.Add(y), x.Sub(r), x.Mul(r), x.Div(mv(pos)), mv(pos).Pow(y), x.Maximum(y), x.Minimum(r),
				x.Lt(y), x.Ge(r), x.Eq(x), x.AddScalar(3), x.MulScalar(-2), x.DivScalar(4), x.SubScalar(1),
				tensor.Where(mv(mask), x, y), mv(ints).FloorDiv(mv(tensor.FromSlice([]int64{2}))), mv(mask).LogicalNot(),
				mv(mask).LogicalXor(x.Gt(y)))
		}},
		{"zero-d CPU scalar operand", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			x := mv(a)
			s := tensor.Scalar(1.5)
			return many(x.Add(s), s.Sub(x), x.Mul(s), x.Gt(tensor.Scalar(0)), tensor.Where(x.Gt(tensor.Scalar(0)), x, tensor.Scalar(-1)),
				tensor.Where(mv(mask), tensor.Scalar(2), x))
		}},
		{"dtype casts", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			x := mv(a)
			return many(x.To(tensor.Float64), x.To(tensor.Int64), x.To(tensor.Float16), x.To(tensor.BFloat16), mv(ints).To(tensor.Float32),
				mv(mask).To(tensor.Int32), mv(ints).Add(x))
		}},
		{"reductions", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			x, x64 := mv(a), mv(a64)
			mx, mi := x64.MaxAxis(1, false)
			return many(x.Sum(nil, false), x.Sum([]int{0}, true), x64.Mean([]int{2}, false), x64.Var([]int{0, 2}, 1, false),
				x.Std(nil, 1, false), x.LogSumExp([]int{1}, false), x.Norm(2, nil, false), x.Max([]int{1}, false), x.Prod([]int{0}, false),
				x.ArgMax(1, false), x64.ArgMin(0, true), mx, mi, x.CumSum(1), x64.CumProd(2), x.Reshape(12).Dot(mv(b).Reshape(12)))
		}},
		{"views and joins", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			x, x64 := mv(a), mv(a64)
			parts := x.Split(2, 1)
			return many(x.T().Contiguous(), x64.Permute(2, 0, 1).Clone(), x.Slice(1, 0, 4, 2).Exp(), x.Narrow(0, 1, 2).Add(x.Narrow(0, 0, 2)),
				x.Select(1, 2), x.Reshape(2, 6), mv(row).Expand(3, 4).Contiguous(), x.Flip(0, 1), x.Unsqueeze(0).Squeeze(0),
				tensor.Concat([]*tensor.Tensor{x, mv(b)}, 0), tensor.Stack([]*tensor.Tensor{x, mv(b)}, 2), parts[0], parts[1].Mul(parts[0]),
				x.Repeat(2, 1), x.Tile(1, 2), x.Roll([]int{1}, []int{1}), x.Tril(0), x.Triu(1), x.Pad([]int{1, 1, 0, 2}, tensor.PadReflect, 0),
				x.Pad([]int{2, 1}, tensor.PadConstant, 7), x.MatMul(mv(b).T()), x64.MatMul(x64.Transpose(1, 2)), mv(row).Outer(mv(ch)))
		}},
		{"in-place writes", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			x := mv(a).Clone()
			x.Narrow(1, 1, 2).CopyFrom(mv(b).Narrow(1, 0, 2))
			x.AddInPlace(mv(row))
			x.MulScalarInPlace(0.5)
			x.Select(0, 2).Fill(3)
			y := mv(b).Clone()
			y.CopyFrom(tensor.Scalar(2))
			y.ClampInPlace(-1, 1.5)
			return many(x, y, mv(a).Clone().ReluInPlace())
		}},
		{"index ops", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			x := mv(a)
			vals, ind := x.Sort(1, true)
			tv, ti := x.TopK(2, 1, true)
			return many(x.IndexSelect(1, mv(idx)), x.Gather(1, mv(gidx)), tensor.ZerosLike(x).ScatterAdd(1, mv(gidx), x.Narrow(1, 0, 2)),
				x.Scatter(1, mv(gidx), x.Narrow(1, 0, 2)), x.ScatterScalar(1, mv(gidx), 9), x.IndexAdd(1, mv(idx), x.Narrow(1, 0, 3)),
				x.MaskedFill(mv(mask), -1), x.MaskedSelect(mv(mask)), x.MaskedScatter(mv(mask), mv(b)), vals, ind, tv, ti,
				x.ArgSort(0, false), tensor.OneHot(mv(idx), 5))
		}},
		{"random draws and 0-d sort", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			v, i := mv(tensor.Scalar(3)).TopK(1, 0, true)
			return many(v, i, tensor.NewGenerator(9).Bernoulli(mv(pos).MulScalar(0.4)))
		}},
		{"convolution", 1e-5, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			x, x64 := mv(img), mv(img64)
			opt := tensor.Conv2dOptions{Padding: [2]int{1, 1}}
			y := tensor.Conv2d(x, mv(w), mv(bias), opt)
			dw := tensor.Conv2dOptions{Padding: [2]int{1, 1}, Groups: 3}
			return many(y, tensor.Conv2dRelu(x, mv(w), mv(bias), opt), tensor.Conv2d(x, mv(wdw), nil, dw),
				tensor.Conv2d(x64, mv(w).To(tensor.Float64), nil, tensor.Conv2dOptions{Stride: [2]int{2, 2}}),
				tensor.Conv2d(x64, mv(wdw).To(tensor.Float64), mv(ch).To(tensor.Float64), dw),
				tensor.Conv2dBackwardInput(y, mv(w), 6, 6, opt), tensor.Conv2dBackwardWeight(x, y, 3, 3, opt),
				tensor.Conv2dBackwardInput(tensor.Conv2d(x, mv(wdw), nil, dw), mv(wdw), 6, 6, dw),
				tensor.ReluGrad(y, y), tensor.ReluGrad(y.To(tensor.Float64), y.To(tensor.Float64).AddScalar(-0.1)))
		}},
		{"pooling", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			x := mv(img)
			po := tensor.Pool2dOptions{Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}}
			m, mi := tensor.MaxPool2d(x, po)
			ap := tensor.AvgPool2d(x, tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}})
			ad := tensor.AdaptiveAvgPool2d(x, 4, 4)
			return many(m, mi, tensor.MaxPool2dBackward(m, mi, 6, 6), tensor.MaxPool2dGather(x, mi), ap,
				tensor.AvgPool2dBackward(ap, 6, 6, tensor.Pool2dOptions{Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}),
				ad, tensor.AdaptiveAvgPool2dBackward(ad, 6, 6))
		}},
		{"norms and softmax", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			x := mv(img)
			rm, rv := mv(tensor.Zeros([]int{3})), mv(tensor.Ones([]int{3}))
			bn, mean, variance := tensor.BatchNormWithStats(x, rm, rv, mv(chPos), mv(ch), true, 0.1, 1e-5)
			dx, dwt, db := tensor.BatchNormBackward(bn, x, mean, variance, mv(chPos), true, 1e-5)
			ln := tensor.LayerNorm(x, []int{6, 6}, nil, nil, 1e-5)
			gn := tensor.GroupNorm(x, 3, mv(chPos), mv(ch), 1e-5)
			return many(bn, rm, rv, dx, dwt, db, ln, gn, tensor.BatchNorm(x, rm, rv, mv(chPos), nil, false, 0.1, 1e-5),
				x.Softmax(1), x.LogSoftmax(3), mv(a64).Softmax(0))
		}},
		{"dropout and embedding", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			x := mv(img)
			e := tensor.Embedding(mv(ids), mv(table))
			return many(tensor.Dropout(x, 0.3, true, tensor.NewGenerator(3)), e, tensor.EmbeddingBackward(e, mv(ids), 5))
		}},
		{"fused updates", 0, func(mv func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			p, m, v, gr := mv(a).Clone(), mv(tensor.ZerosLike(a)), mv(tensor.ZerosLike(a)), mv(b)
			tensor.AdamUpdate(p, gr, m, v, nil, tensor.AdamStep{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Step: 1, WeightDecay: 0.01, Decoupled: true})
			q, buf := mv(a).Clone(), mv(tensor.ZerosLike(a))
			tensor.SGDUpdate(q, gr, buf, tensor.SGDStep{LR: 0.1, Momentum: 0.9})
			acc := mv(a).Clone()
			tensor.AddInto(acc, mv(b).T().T())
			return many(p, m, v, q, buf, acc)
		}},
	}
}

// TestOpsOnEmulatedDevice runs every op family on the emulated device and
// checks that it gives the CPU's results, bit for bit, without leaving the
// device.
func TestOpsOnEmulatedDevice(t *testing.T) { runDeviceCases(t, devicetest.Device(0), 0) }

// runDeviceCases runs every case on device d and on the CPU and compares,
// with at least the tolerance minTol.
func runDeviceCases(t *testing.T, d tensor.Device, minTol float64) {
	for _, c := range deviceCases() {
		t.Run(c.name, func(t *testing.T) {
			want := c.run(func(x *tensor.Tensor) *tensor.Tensor { return x })
			got := c.run(func(x *tensor.Tensor) *tensor.Tensor { return onDev(t, x, d) })
			require.Len(t, got, len(want))
			for i := range want {
				requireSameOnDevice(t, d, want[i], got[i], max(c.tol, minTol), fmt.Sprintf("%s output %d", c.name, i))
			}
		})
	}
}

// TestMixedDevicePanics checks that mixing devices (other than a 0-d CPU
// scalar operand) panics with a message naming both devices.
func TestMixedDevicePanics(t *testing.T) {
	d := devicetest.Device(0)
	x := tensor.Ones([]int{2, 3})
	y := onDev(t, x, d)
	idx := tensor.FromSlice([]int64{0, 1})
	cases := []struct {
		name string
		f    func()
	}{
		{"Add", func() { y.Add(x) }},
		{"Add one-element CPU tensor", func() { y.Add(tensor.Ones([]int{1})) }},
		{"MatMul", func() { y.MatMul(x.T()) }},
		{"Where", func() { tensor.Where(x.Gt(tensor.Scalar(0)), y, y) }},
		{"Where branch", func() { tensor.Where(y.Gt(tensor.Scalar(0)), y, x) }},
		{"IndexSelect", func() { y.IndexSelect(1, idx) }},
		{"Concat", func() { tensor.Concat([]*tensor.Tensor{x, y}, 0) }},
		{"Conv2d", func() {
			tensor.Conv2d(onDev(t, tensor.Ones([]int{1, 1, 3, 3}), d), tensor.Ones([]int{1, 1, 2, 2}), nil, tensor.Conv2dOptions{})
		}},
		{"BatchNorm", func() {
			tensor.BatchNorm(onDev(t, tensor.Ones([]int{2, 3, 2, 2}), d), tensor.Zeros([]int{3}), tensor.Ones([]int{3}), nil, nil, false, 0.1, 1e-5)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r, "mixing cpu and %s did not panic", d)
				msg := fmt.Sprint(r)
				assert.Contains(t, msg, "cpu")
				assert.Contains(t, msg, string(d))
				assert.Contains(t, msg, "tensor.")
			}()
			c.f()
		})
	}
}

// TestCopyFromAcrossDevices checks that CopyFrom copies a source from
// another device (as PyTorch's copy_ does), in both directions.
func TestCopyFromAcrossDevices(t *testing.T) {
	d := devicetest.Device(0)
	src := tensor.Arange(0, 6, 1, tensor.Float32).Reshape(2, 3)
	dst := onDev(t, tensor.Zeros([]int{2, 3}), d)
	v := dst.Version()
	dst.Narrow(1, 1, 2).CopyFrom(src.Narrow(1, 0, 2))
	assert.Equal(t, d, dst.Device())
	assert.Equal(t, []float32{0, 0, 1, 0, 3, 4}, dst.Float32s())
	assert.Greater(t, dst.Version(), v)
	back := tensor.Zeros([]int{2, 3}, tensor.Float64)
	back.CopyFrom(dst)
	assert.Equal(t, []float64{0, 0, 1, 0, 3, 4}, back.Float64s())
}

// TestTransfersOnEmulatedDevice checks that on-device ops do not round-trip
// through the host.
func TestTransfersOnEmulatedDevice(t *testing.T) {
	d := devicetest.Device(1)
	be := devicetest.Open(d)
	x := onDev(t, tensor.NewGenerator(1).Randn([]int{4, 8}), d)
	be.ResetCounters()
	y := x.MatMul(x.T()).Add(tensor.Scalar(1)).Softmax(1).Sum([]int{0}, false)
	_ = tensor.Conv2d(x.Reshape(1, 1, 4, 8), x.Narrow(0, 0, 1).Narrow(1, 0, 4).Reshape(1, 1, 2, 2), nil, tensor.Conv2dOptions{})
	toHost, fromHost := be.Transfers()
	assert.Zero(t, toHost, "device ops copied to the host")
	assert.Zero(t, fromHost, "device ops copied from the host")
	_ = y.Float32s()
	toHost, _ = be.Transfers()
	assert.EqualValues(t, 1, toHost)
}

// TestBackendForMissingKind checks the error of a device kind that is not
// compiled in.
func TestBackendForMissingKind(t *testing.T) {
	_, err := tensor.BackendFor("nosuch:0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nosuch")
}
