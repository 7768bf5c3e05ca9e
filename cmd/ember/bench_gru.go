package main

import (
	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/optim"
	"github.com/emberml/ember/tensor"
)

// gruSentiment is the IMDB sentiment GRU of the DeepLearningFrameworks
// benchmark (ilkarman, PyTorch_RNN notebook): embedding 30000×125, one GRU
// layer of 100 units over the batch-first sequence, and a linear layer from
// the last time step to 2 classes.
type gruSentiment struct {
	nn.Base
	embedding *embeddingTable
	gru       *nn.GRU
	out       *nn.Linear
}

func newGRUSentiment(g *tensor.Generator, vocab int) *gruSentiment {
	m := &gruSentiment{
		embedding: newEmbeddingTable(g, vocab, 125),
		gru:       nn.NewGRU(g, 125, 100, nn.RNNOptions{BatchFirst: true}),
		out:       nn.NewLinear(g, 100, 2, true),
	}
	m.RegisterModule("embedding", m.embedding)
	m.RegisterModule("gru", m.gru)
	m.RegisterModule("l_out", m.out)
	return m
}

// Forward maps int64 token ids [N, T] to [N, 2] logits.
func (m *gruSentiment) Forward(ids *autograd.Var) *autograd.Var {
	h := m.gru.Forward(m.embedding.Forward(ids))
	return m.out.Forward(h.Select(1, h.Value().Shape()[1]-1))
}

// buildGRU is the GRU sentiment model on token ids [64, 150], cross-entropy,
// Adam (lr 1e-3, betas (0.9, 0.999), eps 1e-8).
func buildGRU(tiny bool) (*benchRun, error) {
	batch, seq, vocab := 64, 150, 30000
	if tiny {
		batch, seq, vocab = 2, 8, 100
	}
	m := newGRUSentiment(tensor.NewGenerator(0), vocab)
	dg := tensor.NewGenerator(0)
	x := dg.RandInt([]int{batch, seq}, 0, int64(vocab))
	y := dg.RandInt([]int{batch}, 0, 2)
	opt := optim.NewAdam(m.Parameters(), optim.AdamOptions{LR: 1e-3, Betas: [2]float64{0.9, 0.999}, Eps: 1e-8})
	return trainStep(m, opt, x, y), nil
}

// embeddingTable is a lookup table of learnable rows, as torch.nn.Embedding
// (nn has no Embedding module yet; autograd.Embedding does the work).
type embeddingTable struct {
	nn.Base
	weight *autograd.Var
}

func newEmbeddingTable(g *tensor.Generator, num, dim int) *embeddingTable {
	// torch.nn.Embedding initializes its weight from N(0, 1).
	e := &embeddingTable{weight: autograd.Param(g.Randn([]int{num, dim}))}
	e.RegisterParameter("weight", e.weight)
	return e
}

// Forward maps int64 ids of any shape to their rows, shaped ids + [dim];
// the ids' marks (a profiler's) pass on to the rows.
func (e *embeddingTable) Forward(ids *autograd.Var) *autograd.Var {
	return autograd.EmbeddingOf(ids, e.weight)
}
