package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// emptyModule holds no parameters; it lets raLoad check functional cases.
type emptyModule struct{ nn.Base }

func (emptyModule) Forward(x *autograd.Var) *autograd.Var { return x }

func TestAttentionGolden(t *testing.T) {
	g := tensor.NewGenerator(9)
	for _, c := range golden.Load(t, rnnAttnGolden) {
		if c.Op != "sdpa" && c.Op != "mha" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			switch c.Op {
			case "sdpa":
				nData := 3
				if c.String("mask") != "none" {
					nData = 4
				}
				r := raLoad(t, c, &emptyModule{}, nData)
				opt := nn.AttentionOptions{IsCausal: c.Bool("is_causal")}
				if nData == 4 {
					opt.AttnMask = r.data[3].Value()
				}
				r.check(t, nn.ScaledDotProductAttention(r.data[0], r.data[1], r.data[2], opt))
			case "mha":
				m := nn.NewMultiheadAttention(g, c.Int("embed_dim"), c.Int("num_heads"), nn.MultiheadAttentionOptions{
					NoBias: !c.Bool("bias"), BatchFirst: c.Bool("batch_first"), Dropout: 0.2,
				}, tensor.Float64)
				nData := 3
				if c.Bool("self_attn") {
					nData = 1
				}
				at := nData
				if c.Bool("has_kpm") {
					nData++
				}
				if c.Bool("has_attn_mask") {
					nData++
				}
				r := raLoad(t, c, m, nData)
				opt := nn.MHAOptions{NeedWeights: c.Bool("need_weights"), PerHeadWeights: !c.Bool("average")}
				if c.Bool("has_kpm") {
					opt.KeyPaddingMask = r.data[at].Value()
					at++
				}
				if c.Bool("has_attn_mask") {
					opt.AttnMask = r.data[at].Value()
				}
				q, k, v := r.data[0], r.data[0], r.data[0]
				if !c.Bool("self_attn") {
					k, v = r.data[1], r.data[2]
				}
				out, w := m.Attend(q, k, v, opt)
				if opt.NeedWeights {
					r.check(t, out, w)
				} else {
					assert.Nil(t, w)
					r.check(t, out)
				}
			}
		})
	}
}

func TestMultiheadAttentionParams(t *testing.T) {
	g := tensor.NewGenerator(1)
	m := nn.NewMultiheadAttention(g, 8, 2, nn.MultiheadAttentionOptions{})
	assert.Equal(t, []string{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}, nn.StateDictKeys(m))
	sd := nn.StateDict(m)
	assert.Equal(t, []int{24, 8}, sd["in_proj_weight"].Shape())
	assert.Equal(t, make([]float32, 24), sd["in_proj_bias"].Float32s())
	assert.Equal(t, make([]float32, 8), sd["out_proj.bias"].Float32s())
	xavier := math.Sqrt(6.0 / 32)
	for _, v := range sd["in_proj_weight"].Float32s() {
		require.LessOrEqual(t, math.Abs(float64(v)), xavier)
	}
	for _, v := range sd["out_proj.weight"].Float32s() {
		require.LessOrEqual(t, math.Abs(float64(v)), 1/math.Sqrt(8))
	}
	nb := nn.NewMultiheadAttention(g, 4, 4, nn.MultiheadAttentionOptions{NoBias: true})
	assert.Equal(t, []string{"in_proj_weight", "out_proj.weight"}, nn.StateDictKeys(nb))
	// Forward is self-attention and keeps the layout.
	x := autograd.New(g.Randn([]int{5, 3, 8}))
	assert.Equal(t, []int{5, 3, 8}, m.Forward(x).Shape())
}

// TestAttentionSelfMatchesCross checks that the fused self-attention
// projection gives the same result as three separate inputs.
func TestAttentionSelfMatchesCross(t *testing.T) {
	g := tensor.NewGenerator(2)
	m := nn.NewMultiheadAttention(g, 6, 3, nn.MultiheadAttentionOptions{BatchFirst: true}, tensor.Float64)
	x := g.Randn([]int{2, 4, 6}, tensor.Float64)
	a, wa := m.Attend(autograd.New(x), autograd.New(x), autograd.New(x), nn.MHAOptions{NeedWeights: true})
	xv := autograd.New(x)
	b, wb := m.Attend(xv, xv, xv, nn.MHAOptions{NeedWeights: true})
	assert.InDeltaSlice(t, a.Value().Float64s(), b.Value().Float64s(), 1e-12)
	assert.InDeltaSlice(t, wa.Value().Float64s(), wb.Value().Float64s(), 1e-12)
	// Averaged weights are the mean of the per-head ones; rows sum to one.
	_, ph := m.Attend(xv, xv, xv, nn.MHAOptions{NeedWeights: true, PerHeadWeights: true})
	assert.Equal(t, []int{2, 3, 4, 4}, ph.Shape())
	assert.InDeltaSlice(t, ph.Value().Mean([]int{1}, false).Float64s(), wa.Value().Float64s(), 1e-12)
	for _, s := range wa.Value().Sum([]int{-1}, false).Float64s() {
		assert.InDelta(t, 1, s, 1e-12)
	}
}

func TestAttentionDropout(t *testing.T) {
	g := tensor.NewGenerator(3)
	q := autograd.New(g.Randn([]int{2, 3, 4}, tensor.Float64))
	plain := nn.ScaledDotProductAttention(q, q, q, nn.AttentionOptions{}).Value().Float64s()
	d1 := nn.ScaledDotProductAttention(q, q, q, nn.AttentionOptions{DropoutP: 0.5, Gen: tensor.NewGenerator(4)}).Value().Float64s()
	d2 := nn.ScaledDotProductAttention(q, q, q, nn.AttentionOptions{DropoutP: 0.5, Gen: tensor.NewGenerator(4)}).Value().Float64s()
	assert.Equal(t, d1, d2, "same seed, same masks")
	assert.NotEqual(t, plain, d1)
	m := nn.NewMultiheadAttention(g, 4, 2, nn.MultiheadAttentionOptions{Dropout: 0.5}, tensor.Float64)
	tr := m.Forward(q).Value().Float64s()
	m.Train(false)
	e1 := m.Forward(q).Value().Float64s()
	assert.Equal(t, e1, m.Forward(q).Value().Float64s())
	assert.NotEqual(t, tr, e1)
}

func TestAttentionPanics(t *testing.T) {
	g := tensor.NewGenerator(1)
	q := autograd.New(tensor.Zeros([]int{2, 3, 4}))
	m := nn.NewMultiheadAttention(g, 4, 2, nn.MultiheadAttentionOptions{})
	for _, tc := range []struct {
		name string
		f    func()
		msg  string
	}{
		{"sdpa shapes", func() {
			nn.ScaledDotProductAttention(q, autograd.New(tensor.Zeros([]int{2, 3, 5})), q, nn.AttentionOptions{})
		}, "must be [..., L, E]"},
		{"causal and mask", func() {
			nn.ScaledDotProductAttention(q, q, q, nn.AttentionOptions{IsCausal: true, AttnMask: tensor.Zeros([]int{3, 3})})
		}, "exclude each other"},
		{"dropout without gen", func() { nn.ScaledDotProductAttention(q, q, q, nn.AttentionOptions{DropoutP: 0.1}) }, "nil *tensor.Generator"},
		{"heads", func() { nn.NewMultiheadAttention(g, 6, 4, nn.MultiheadAttentionOptions{}) }, "divisible by num_heads=4"},
		{"embed", func() { m.Forward(autograd.New(tensor.Zeros([]int{2, 3, 5}))) }, "must be [L, N, 4]"},
		{"attn mask", func() { m.Attend(q, q, q, nn.MHAOptions{AttnMask: tensor.Zeros([]int{3, 3})}) }, "attn_mask shape [3 3] must be [2, 2] or [6, 2, 2]"},
		{"kpm", func() { m.Attend(q, q, q, nn.MHAOptions{KeyPaddingMask: tensor.Zeros([]int{2, 2}, tensor.Bool)}) }, "key_padding_mask shape [2 2] must be [3 2]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				require.NotNil(t, r)
				assert.Contains(t, fmt.Sprint(r), tc.msg)
			}()
			tc.f()
		})
	}
}

// TestAttentionGradCheck checks scaled dot-product attention (with masks
// and causality) and MultiheadAttention, including its parameters, by
// finite differences in float64.
func TestAttentionGradCheck(t *testing.T) {
	f64 := tensor.Float64
	g := tensor.NewGenerator(12)
	bmask := tensor.FromSlice([]bool{true, false, true, true, true, false}, 2, 3)
	fmask := g.Randn([]int{2, 3}, f64)
	for _, tc := range []struct {
		name string
		opt  nn.AttentionOptions
	}{
		{"plain", nn.AttentionOptions{}},
		{"causal", nn.AttentionOptions{IsCausal: true}},
		{"bool_mask", nn.AttentionOptions{AttnMask: bmask}},
		{"float_mask_scale", nn.AttentionOptions{AttnMask: fmask, Scale: 0.3}},
	} {
		t.Run("sdpa/"+tc.name, func(t *testing.T) {
			q, k, v := g.Randn([]int{2, 2, 3}, f64), g.Randn([]int{2, 3, 3}, f64), g.Randn([]int{2, 3, 2}, f64)
			require.NoError(t, autograd.GradCheck(func(in []*autograd.Var) *autograd.Var {
				return nn.ScaledDotProductAttention(in[0], in[1], in[2], tc.opt)
			}, q, k, v.Transpose(0, 1).Contiguous().Transpose(0, 1)))
		})
	}
	for _, self := range []bool{false, true} {
		t.Run(fmt.Sprintf("mha/self=%t", self), func(t *testing.T) {
			m := nn.NewMultiheadAttention(g, 4, 2, nn.MultiheadAttentionOptions{}, f64)
			// Non-zero biases so their gradients are exercised at a generic point.
			m.InProjBias.Value().CopyFrom(g.Randn([]int{12}, f64))
			m.OutProj.Bias.Value().CopyFrom(g.Randn([]int{4}, f64))
			kpm := tensor.FromSlice([]bool{false, false, true, false, false, false}, 2, 3)
			inputs := []*tensor.Tensor{g.Randn([]int{3, 2, 4}, f64), g.Randn([]int{3, 2, 4}, f64), g.Randn([]int{3, 2, 4}, f64)}
			for _, p := range m.Parameters() {
				inputs = append(inputs, p.Value().Clone())
			}
			require.NoError(t, autograd.GradCheck(func(in []*autograd.Var) *autograd.Var {
				saved := [4]*autograd.Var{m.InProjWeight, m.InProjBias, m.OutProj.Weight, m.OutProj.Bias}
				m.InProjWeight, m.InProjBias, m.OutProj.Weight, m.OutProj.Bias = in[3], in[4], in[5], in[6]
				defer func() {
					m.InProjWeight, m.InProjBias, m.OutProj.Weight, m.OutProj.Bias = saved[0], saved[1], saved[2], saved[3]
				}()
				k, v := in[1], in[2]
				if self {
					k, v = in[0], in[0]
				}
				out, w := m.Attend(in[0], k, v, nn.MHAOptions{KeyPaddingMask: kpm, NeedWeights: true})
				return autograd.Concat([]*autograd.Var{out.Flatten(0, -1), w.Flatten(0, -1)}, 0)
			}, inputs...))
		})
	}
}
