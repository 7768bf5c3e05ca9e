package nn_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
)

// twoBranch is a custom module that reaches its children through nn.Call.
type twoBranch struct {
	nn.Base
	body   *nn.Sequential
	head   *nn.Linear
	unused *nn.Linear
}

func (m *twoBranch) Forward(x *autograd.Var) *autograd.Var {
	return nn.Call(m.head, nn.Call(m.body, x))
}

func TestSummary(t *testing.T) {
	g := tensor.NewGenerator(1)
	m := &twoBranch{
		body:   nn.NewSequential(nn.NewLinear(g, 4, 8, true), nn.NewReLU(), nn.NewDropout(0.5, g)),
		head:   nn.NewLinear(g, 8, 3, false),
		unused: nn.NewLinear(g, 2, 2, true),
	}
	m.RegisterModule("body", m.body)
	m.RegisterModule("head", m.head)
	m.RegisterModule("unused", m.unused)
	nn.Freeze(m.unused)

	got := nn.Summary(m, 5, 4)
	rule := strings.Repeat("=", 45) + "\n"
	want := rule +
		"Layer (type)           Output Shape   Param #\n" +
		rule +
		"twoBranch              [5 3]               --\n" +
		"└─body (Sequential)    [5 8]               --\n" +
		"  └─body.0 (Linear)    [5 8]               40\n" +
		"  └─body.1 (ReLU)      [5 8]               --\n" +
		"  └─body.2 (Dropout)   [5 8]               --\n" +
		"└─head (Linear)        [5 3]               24\n" +
		"└─unused (Linear)      --                   6\n" +
		rule +
		"Input shape: [5 4]\n" +
		"Total params: 70\n" +
		"Trainable params: 64\n" +
		"Non-trainable params: 6\n" +
		rule
	assert.Equal(t, want, got)
	assert.True(t, m.IsTraining(), "training mode restored")
	// The summary's hooks are gone.
	assert.Equal(t, got, nn.Summary(m, 5, 4))
}

func TestSummaryLargeCounts(t *testing.T) {
	m := nn.NewSequential(nn.NewLinear(tensor.NewGenerator(1), 1000, 1200, true))
	s := nn.Summary(m, 1, 1000)
	assert.Contains(t, s, "1,201,200")
	assert.Contains(t, s, "[1 1200]")
}

func ExampleSummary() {
	g := tensor.NewGenerator(1)
	model := nn.NewSequential(nn.NewLinear(g, 4, 8, true), nn.NewTanh(), nn.NewLinear(g, 8, 2, true))
	fmt.Print(nn.Summary(model, 16, 4))
	// Output:
	// =====================================
	// Layer (type)   Output Shape   Param #
	// =====================================
	// Sequential     [16 2]              --
	// └─0 (Linear)   [16 8]              40
	// └─1 (Tanh)     [16 8]              --
	// └─2 (Linear)   [16 2]              18
	// =====================================
	// Input shape: [16 4]
	// Total params: 58
	// Trainable params: 58
	// Non-trainable params: 0
	// =====================================
}
