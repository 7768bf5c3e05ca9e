package main

import (
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// encoderLayer is torch.nn.TransformerEncoderLayer with its defaults
// (post-norm, ReLU feed-forward, dropout 0.1, layer-norm eps 1e-5) and
// batch_first=True, built from nn.MultiheadAttention, nn.Linear,
// nn.LayerNorm and nn.Dropout:
//
//	x = norm1(x + dropout1(self_attn(x)))
//	x = norm2(x + dropout2(linear2(dropout(relu(linear1(x))))))
type encoderLayer struct {
	nn.Base
	attn                        *nn.MultiheadAttention
	linear1, linear2            *nn.Linear
	norm1, norm2                *nn.LayerNorm
	dropout, dropout1, dropout2 *nn.Dropout
}

func newEncoderLayer(g *tensor.Generator, d, heads, ff int) *encoderLayer {
	const p = 0.1
	m := &encoderLayer{
		attn:     nn.NewMultiheadAttention(g, d, heads, nn.MultiheadAttentionOptions{BatchFirst: true, Dropout: p}),
		linear1:  nn.NewLinear(g, d, ff, true),
		linear2:  nn.NewLinear(g, ff, d, true),
		norm1:    nn.NewLayerNorm([]int{d}, 1e-5, true),
		norm2:    nn.NewLayerNorm([]int{d}, 1e-5, true),
		dropout:  nn.NewDropout(p, g),
		dropout1: nn.NewDropout(p, g),
		dropout2: nn.NewDropout(p, g),
	}
	m.RegisterModule("self_attn", m.attn)
	m.RegisterModule("linear1", m.linear1)
	m.RegisterModule("dropout", m.dropout)
	m.RegisterModule("linear2", m.linear2)
	m.RegisterModule("norm1", m.norm1)
	m.RegisterModule("norm2", m.norm2)
	m.RegisterModule("dropout1", m.dropout1)
	m.RegisterModule("dropout2", m.dropout2)
	return m
}

// Forward maps [N, L, d] to [N, L, d].
func (m *encoderLayer) Forward(x *autograd.Var) *autograd.Var {
	x = m.norm1.Forward(x.Add(m.dropout1.Forward(m.attn.Forward(x))))
	h := m.linear2.Forward(m.dropout.Forward(m.linear1.Forward(x).Relu()))
	return m.norm2.Forward(x.Add(m.dropout2.Forward(h)))
}

// buildTransformer is one encoder layer (d 256, 4 heads, ff 1024) in
// training mode on [16, 128, 256] inputs: clear the gradients, then
// backward of mean(layer(x)²). There is no optimizer step, as in
// bench/torch_workloads.py.
func buildTransformer(tiny bool) (*benchRun, error) {
	batch, seq, d, heads, ff := 16, 128, 256, 4, 1024
	if tiny {
		batch, seq, d, heads, ff = 2, 5, 8, 2, 16
	}
	m := newEncoderLayer(tensor.NewGenerator(0), d, heads, ff)
	m.Train(true)
	xt := tensor.NewGenerator(0).Randn([]int{batch, seq, d})
	x := autograd.New(xt)
	var last *tensor.Tensor // read by loss(), so a GPU step does not wait for a copy
	r := &benchRun{
		batch: batch,
		loss: func() float64 {
			if last == nil {
				return math.NaN()
			}
			return last.Item()
		},
		model: m,
		data:  []*tensor.Tensor{xt},
	}
	r.step = func() error {
		m.ZeroGrad()
		loss := m.Forward(r.in(x)).Square().Mean(nil, false)
		if err := loss.Backward(); err != nil {
			return fmt.Errorf("backward: %w", err)
		}
		last = loss.Value()
		return nil
	}
	return r, nil
}
