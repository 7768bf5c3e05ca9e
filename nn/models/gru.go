package models

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// GRUClassifierConfig configures NewGRUClassifier.
type GRUClassifierConfig struct {
	// VocabSize is the number of token ids.
	VocabSize int
	// EmbedDim is the size of the token embeddings.
	EmbedDim int
	// HiddenSize is the GRU's hidden size.
	HiddenSize int
	// NumLayers is the number of stacked GRU layers (0 means 1).
	NumLayers int
	// NumClasses is the size of the output.
	NumClasses int
	// Bidirectional runs a backward GRU beside each layer; the classifier
	// then sees both directions' final states.
	Bidirectional bool
	// Dropout is the GRU's dropout between layers, in training only.
	Dropout float64
}

// GRUClassifier classifies token sequences: an embedding table, a
// batch-first GRU and a linear head on the last layer's final hidden state
// (the forward and backward states concatenated when bidirectional). Its
// state dict names are those of the PyTorch module
//
//	class GRUClassifier(torch.nn.Module):
//	    def __init__(self, vocab, embed, hidden, layers, classes, bidirectional):
//	        super().__init__()
//	        self.embedding = torch.nn.Embedding(vocab, embed)
//	        self.gru = torch.nn.GRU(embed, hidden, num_layers=layers,
//	                                batch_first=True, bidirectional=bidirectional)
//	        self.fc = torch.nn.Linear(hidden * (2 if bidirectional else 1), classes)
//
// whose forward is fc(h_n[-1]) or fc(cat(h_n[-2], h_n[-1])): embedding.weight,
// gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0 (and the
// _reverse and higher-layer ones), fc.weight, fc.bias.
type GRUClassifier struct {
	nn.Base
	Config    GRUClassifierConfig
	Embedding *nn.Embedding
	GRU       *nn.GRU
	FC        *nn.Linear
}

// NewGRUClassifier returns a GRUClassifier with PyTorch's default layer
// initialization drawn from g.
func NewGRUClassifier(g *tensor.Generator, cfg GRUClassifierConfig) *GRUClassifier {
	if cfg.VocabSize < 1 || cfg.EmbedDim < 1 || cfg.HiddenSize < 1 || cfg.NumClasses < 1 {
		panic(fmt.Sprintf("models.NewGRUClassifier: VocabSize, EmbedDim, HiddenSize and NumClasses must be positive, got %+v", cfg))
	}
	cfg.NumLayers = orDefault(cfg.NumLayers, 1)
	dirs := 1
	if cfg.Bidirectional {
		dirs = 2
	}
	m := &GRUClassifier{
		Config:    cfg,
		Embedding: nn.NewEmbedding(g, cfg.VocabSize, cfg.EmbedDim, nn.EmbeddingOptions{}),
		GRU: nn.NewGRU(g, cfg.EmbedDim, cfg.HiddenSize, nn.RNNOptions{
			NumLayers: cfg.NumLayers, BatchFirst: true, Bidirectional: cfg.Bidirectional, Dropout: cfg.Dropout,
		}),
		FC: nn.NewLinear(g, cfg.HiddenSize*dirs, cfg.NumClasses, true),
	}
	m.RegisterModule("embedding", m.Embedding)
	m.RegisterModule("gru", m.GRU)
	m.RegisterModule("fc", m.FC)
	return m
}

// Forward maps integer token ids of shape [N, T] (a Var wrapping an Int64
// tensor) to logits [N, NumClasses].
func (m *GRUClassifier) Forward(ids *autograd.Var) *autograd.Var {
	if s := ids.Shape(); len(s) != 2 {
		panic(fmt.Sprintf("models.GRUClassifier.Forward: ids must be [N, T], got shape %v", s))
	}
	return m.ForwardLengths(ids, nil)
}

// ForwardLengths is Forward on padded sequences of the given lengths (one
// per sequence, each in 1..T; nil means all T), as torch's
// pack_padded_sequence: the classifier sees each sequence's state at its
// last valid step.
func (m *GRUClassifier) ForwardLengths(ids *autograd.Var, lengths []int) *autograd.Var {
	_, hn := m.GRU.ForwardState(nn.Call(m.Embedding, ids), nil, lengths)
	n := hn.Shape()[0]
	h := hn.Select(0, n-1)
	if m.Config.Bidirectional {
		h = autograd.Concat([]*autograd.Var{hn.Select(0, n-2), h}, 1)
	}
	return nn.Call(m.FC, h)
}
