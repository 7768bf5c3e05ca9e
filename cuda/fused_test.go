//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestFusedPTX(t *testing.T) {
	ktCheckPTX(t, "fused.ptx", fusedKernels)
}

func TestFusedFlagsMatchKernels(t *testing.T) {
	defs := ktDefines(t, "fused.cu")
	want := map[string]int32{
		"ADAM_MAXIMIZE": adamMaximize, "ADAM_DECOUPLED": adamDecoupled, "ADAM_L2": adamL2, "ADAM_AMSGRAD": adamAMSGrad,
		"SGD_MAXIMIZE": sgdMaximize, "SGD_L2": sgdL2, "SGD_MOMENTUM": sgdMomentum, "SGD_NESTEROV": sgdNesterov, "SGD_INIT": sgdInit,
	}
	for name, v := range want {
		got, ok := defs[name]
		require.True(t, ok, "%s not defined in fused.cu", name)
		assert.Equal(t, int(v), got, name)
	}
}

func TestFusedScalarsRoundLikeCPU(t *testing.T) {
	p := tensor.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01, Step: 3}
	s := adamScalars[float32](p)
	require.Len(t, s, 9)
	assert.Equal(t, float32(0.9), s[0])
	assert.Equal(t, float32(1-p.Beta1), s[2])
	assert.Equal(t, float32(1-p.LR*p.WeightDecay), s[4])
	assert.Equal(t, float32(math.Sqrt(1-math.Pow(p.Beta2, p.Step))), s[6])
	assert.Equal(t, float32(p.LR/(1-math.Pow(p.Beta1, p.Step))), s[7])
	assert.Equal(t, []any{0.5, 0.9, 1 - 0.25, 0.1}, sgdScalars[float64](tensor.SGDStep{LR: 0.1, Momentum: 0.9, Dampening: 0.25, WeightDecay: 0.5}))
	assert.PanicsWithValue(t, "tensor.FusedSGD: unsupported dtype int32", func() { fusedKernel("FusedSGD", "sgd", tensor.Int32) })
	assert.Len(t, fusedKernels, 6)
}

// ktState returns n random values of dt, made non-negative with abs (for
// second-moment state), with a NaN at position nan when nan >= 0.
func ktState(rng *rand.Rand, dt tensor.DType, n int, abs bool, nan int) any {
	v := make([]float64, n)
	for i := range v {
		v[i] = rng.NormFloat64()
		if abs {
			v[i] = math.Abs(v[i]) * 1e-2
		}
	}
	if nan >= 0 {
		v[nan] = math.NaN()
	}
	if dt == tensor.Float64 {
		return v
	}
	f := make([]float32, n)
	for i, x := range v {
		f[i] = float32(x)
	}
	return f
}

func TestFusedAdamMatchesCPU(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(23, 24))
	base := tensor.AdamStep{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	cases := []struct {
		name string
		edit func(*tensor.AdamStep)
	}{
		{"plain", func(*tensor.AdamStep) {}},
		{"l2", func(p *tensor.AdamStep) { p.WeightDecay = 0.05 }},
		{"adamw", func(p *tensor.AdamStep) { p.WeightDecay = 0.05; p.Decoupled = true }},
		{"adamw no decay", func(p *tensor.AdamStep) { p.Decoupled = true }},
		{"amsgrad", func(p *tensor.AdamStep) { p.AMSGrad = true }},
		{"maximize", func(p *tensor.AdamStep) { p.Maximize = true }},
		{"everything", func(p *tensor.AdamStep) {
			p.WeightDecay, p.Decoupled, p.AMSGrad, p.Maximize, p.LR, p.Beta1, p.Beta2 = 0.1, true, true, true, 0.3, 0.5, 0.75
		}},
		{"l2 amsgrad", func(p *tensor.AdamStep) { p.WeightDecay, p.AMSGrad = 0.2, true }},
	}
	for _, c := range cases {
		for _, dt := range ktFloatDTypes {
			for _, step := range []float64{1, 7} {
				name := fmt.Sprintf("%s/step%v/%s", c.name, step, dt)
				t.Run(name, func(t *testing.T) {
					p := base
					c.edit(&p)
					p.Step = step
					const n, off = 1031, 5
					param := ktUpload(gpu, cpu, dt, ktState(rng, dt, off+n, false, -1))
					grad := ktUpload(gpu, cpu, dt, ktState(rng, dt, 2+n, false, 2+17))
					m := ktUpload(gpu, cpu, dt, ktState(rng, dt, n, false, -1))
					v := ktUpload(gpu, cpu, dt, ktState(rng, dt, off+n, true, -1))
					var mx ktPair
					if p.AMSGrad {
						mx = ktUpload(gpu, cpu, dt, ktState(rng, dt, n, true, -1))
					}
					spans := func(gpuSide bool) (w, g, ms, vs, mxs tensor.Span) {
						pick := func(pr ktPair) tensor.Buffer {
							if gpuSide {
								return pr.gpu
							}
							return pr.cpu
						}
						w, g = tensor.Span{Buf: pick(param), Offset: off}, tensor.Span{Buf: pick(grad), Offset: 2}
						ms, vs = tensor.Span{Buf: pick(m)}, tensor.Span{Buf: pick(v), Offset: off}
						if p.AMSGrad {
							mxs = tensor.Span{Buf: pick(mx)}
						}
						return
					}
					cw, cg, cm, cv, cmx := spans(false)
					gw, gg, gm, gv, gmx := spans(true)
					cpu.FusedAdam(n, cw, cg, cm, cv, cmx, p)
					gpu.FusedAdam(n, gw, gg, gm, gv, gmx, p)
					ktEqual(t, ktHost(cpu, param.cpu), ktHost(gpu, param.gpu), "param")
					ktEqual(t, ktHost(cpu, m.cpu), ktHost(gpu, m.gpu), "expAvg")
					ktEqual(t, ktHost(cpu, v.cpu), ktHost(gpu, v.gpu), "expAvgSq")
					if p.AMSGrad {
						ktEqual(t, ktHost(cpu, mx.cpu), ktHost(gpu, mx.gpu), "maxExpAvgSq")
					}
				})
			}
		}
	}
}

func TestFusedSGDMatchesCPU(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(25, 26))
	cases := []tensor.SGDStep{
		{LR: 0.1},
		{LR: 0.1, WeightDecay: 0.01},
		{LR: 0.05, Momentum: 0.9},
		{LR: 0.05, Momentum: 0.9, InitBuffer: true},
		{LR: 0.05, Momentum: 0.9, Dampening: 0.3},
		{LR: 0.05, Momentum: 0.9, Nesterov: true, WeightDecay: 1e-4},
		{LR: 0.05, Momentum: 0.8, Nesterov: true, InitBuffer: true},
		{LR: 0.2, Momentum: 0.5, Dampening: 0.1, WeightDecay: 0.3, Maximize: true},
		{LR: 0.2, Maximize: true},
	}
	for _, p := range cases {
		for _, dt := range ktFloatDTypes {
			name := fmt.Sprintf("%+v/%s", p, dt)
			t.Run(name, func(t *testing.T) {
				const n, off = 777, 3
				param := ktUpload(gpu, cpu, dt, ktState(rng, dt, off+n, false, -1))
				grad := ktUpload(gpu, cpu, dt, ktState(rng, dt, n, false, 100))
				var buf ktPair
				var cb, gb tensor.Span
				if p.Momentum != 0 {
					buf = ktUpload(gpu, cpu, dt, ktState(rng, dt, off+n, false, -1))
					cb, gb = tensor.Span{Buf: buf.cpu, Offset: off}, tensor.Span{Buf: buf.gpu, Offset: off}
				}
				cpu.FusedSGD(n, tensor.Span{Buf: param.cpu, Offset: off}, tensor.Span{Buf: grad.cpu}, cb, p)
				gpu.FusedSGD(n, tensor.Span{Buf: param.gpu, Offset: off}, tensor.Span{Buf: grad.gpu}, gb, p)
				ktEqual(t, ktHost(cpu, param.cpu), ktHost(gpu, param.gpu), "param")
				if p.Momentum != 0 {
					ktEqual(t, ktHost(cpu, buf.cpu), ktHost(gpu, buf.gpu), "momentum buffer")
				}
			})
		}
	}
}

func TestAddIntoMatchesCPU(t *testing.T) {
	gpu, cpu := ktBackends(t)
	rng := rand.New(rand.NewPCG(27, 28))
	shapes := [][]int{{7}, {5, 9}, {3, 4, 11}, {1, 1}}
	for _, shape := range shapes {
		for _, kind := range []string{"contig", "padded", "colmajor", "bcast"} {
			for _, dt := range ktFloatDTypes {
				name := fmt.Sprintf("%v/%s/%s", shape, kind, dt)
				t.Run(name, func(t *testing.T) {
					sl, sn := ktView(shape, kind, len(shape)-1)
					n := ixElems(shape)
					const off = 4
					dst := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, off+n))
					src := ktUpload(gpu, cpu, dt, ktRandom(rng, dt, sn))
					cpu.AddInto(n, tensor.Span{Buf: dst.cpu, Offset: off}, src.cpu, sl)
					gpu.AddInto(n, tensor.Span{Buf: dst.gpu, Offset: off}, src.gpu, sl)
					ktEqual(t, ktHost(cpu, dst.cpu), ktHost(gpu, dst.gpu), name)
				})
			}
		}
	}
}
