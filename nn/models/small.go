package models

import (
	"fmt"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// MLPConfig configures NewMLP.
type MLPConfig struct {
	// InFeatures is the size of the input's last axis.
	InFeatures int
	// Hidden lists the output size of every Linear layer; the last entry is
	// the output size of the network.
	Hidden []int
	// Dropout is the probability of the dropout after every Linear layer
	// (0, the default, means none).
	Dropout float64
	// NoBias drops the Linear biases.
	NoBias bool
	// Activation makes the activation after every Linear layer but the
	// last (nil means ReLU).
	Activation func() nn.Module
}

// MLP is torchvision.ops.MLP without normalization: for every hidden size
// but the last a Linear, the activation and a Dropout, then a final Linear
// and Dropout, as a Sequential, so the Linear layers' parameters are named
// 0.weight, 3.weight, 6.weight, ...
type MLP struct {
	*nn.Sequential
}

// NewMLP returns an MLP with nn.Linear's default initialization drawn from
// g (which also draws the dropout masks).
func NewMLP(g *tensor.Generator, cfg MLPConfig) *MLP {
	if cfg.InFeatures < 1 || len(cfg.Hidden) == 0 {
		panic(fmt.Sprintf("models.NewMLP: need InFeatures >= 1 and at least one Hidden size, got %d and %v", cfg.InFeatures, cfg.Hidden))
	}
	act := cfg.Activation
	if act == nil {
		act = func() nn.Module { return nn.NewReLU() }
	}
	s := nn.NewSequential()
	in := cfg.InFeatures
	for i, h := range cfg.Hidden {
		s.Append(nn.NewLinear(g, in, h, !cfg.NoBias))
		if i < len(cfg.Hidden)-1 {
			s.Append(act())
		}
		s.Append(nn.NewDropout(cfg.Dropout, g))
		in = h
	}
	return &MLP{s}
}

// LeNet5Config configures NewLeNet5. The zero value takes 1-channel images
// and predicts 10 classes.
type LeNet5Config struct {
	// InChannels is the number of input channels (0 means 1).
	InChannels int
	// NumClasses is the size of the output (0 means 10).
	NumClasses int
}

// LeNet5 is LeNet-5 (LeCun et al., 1998) in its common modern variant, for
// 32×32 images: conv1 (6 filters 5×5), ReLU, 2×2 max pool, conv2 (16
// filters 5×5), ReLU, 2×2 max pool, then fc1 (400→120), ReLU, fc2
// (120→84), ReLU and fc3 (84→NumClasses). It differs from the paper in
// using ReLU and max pooling (the paper used scaled tanh and trainable
// subsampling), full connectivity between conv1 and conv2 (the paper
// connected them sparsely) and a Linear output instead of RBF units. Its
// parameters are named conv1.weight, conv1.bias, conv2.*, fc1.*, fc2.*,
// fc3.*.
type LeNet5 struct {
	nn.Base
	Conv1, Conv2  *nn.Conv2d
	FC1, FC2, FC3 *nn.Linear
}

// NewLeNet5 returns a LeNet5 with PyTorch's default layer initialization
// drawn from g.
func NewLeNet5(g *tensor.Generator, cfg LeNet5Config) *LeNet5 {
	m := &LeNet5{
		Conv1: nn.NewConv2d(g, orDefault(cfg.InChannels, 1), 6, [2]int{5, 5}, tensor.Conv2dOptions{}, true),
		Conv2: nn.NewConv2d(g, 6, 16, [2]int{5, 5}, tensor.Conv2dOptions{}, true),
		FC1:   nn.NewLinear(g, 16*5*5, 120, true),
		FC2:   nn.NewLinear(g, 120, 84, true),
		FC3:   nn.NewLinear(g, 84, orDefault(cfg.NumClasses, 10), true),
	}
	m.RegisterModule("conv1", m.Conv1)
	m.RegisterModule("conv2", m.Conv2)
	m.RegisterModule("fc1", m.FC1)
	m.RegisterModule("fc2", m.FC2)
	m.RegisterModule("fc3", m.FC3)
	return m
}

// Forward maps images x of shape [N, InChannels, 32, 32] to logits
// [N, NumClasses].
func (m *LeNet5) Forward(x *autograd.Var) *autograd.Var {
	pool := tensor.Pool2dOptions{Kernel: [2]int{2, 2}}
	x = autograd.MaxPool2d(nn.Call(m.Conv1, x).Relu(), pool)
	x = autograd.MaxPool2d(nn.Call(m.Conv2, x).Relu(), pool)
	x = nn.Call(m.FC1, x.Flatten(1, -1)).Relu()
	return nn.Call(m.FC3, nn.Call(m.FC2, x).Relu())
}
