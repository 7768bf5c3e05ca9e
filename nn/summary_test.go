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
	rule := strings.Repeat("=", 67) + "\n"
	// body.0: a [5 4]·[4 8] product (2·4·40 = 320) and the bias (40);
	// its activations are the product and the sum (2·40 float32), the
	// weight's transpose being a view.
	want := rule +
		"Layer (type)           Output Shape   Param #   FLOPs   Activations\n" +
		rule +
		"twoBranch              [5 3]               --     640         540 B\n" +
		"└─body (Sequential)    [5 8]               --     400         480 B\n" +
		"  └─body.0 (Linear)    [5 8]               40     360         320 B\n" +
		"  └─body.1 (ReLU)      [5 8]               --      40         160 B\n" +
		"  └─body.2 (Dropout)   [5 8]               --       0           0 B\n" +
		"└─head (Linear)        [5 3]               24     240          60 B\n" +
		"└─unused (Linear)      --                   6      --            --\n" +
		rule +
		"Input shape: [5 4]\n" +
		"Total params: 70\n" +
		"Trainable params: 64\n" +
		"Non-trainable params: 6\n" +
		"Total FLOPs: 640\n" +
		rule +
		"Input size: 80 B\n" +
		"Params size: 280 B\n" +
		"Forward activations: 540 B\n" +
		"Estimated total size: 900 B\n" +
		rule
	assert.Equal(t, want, got)
	assert.True(t, m.IsTraining(), "training mode restored")
	// The summary's hooks are gone, and the frozen layer stays frozen.
	assert.Equal(t, got, nn.Summary(m, 5, 4))
	assert.False(t, m.unused.Parameters()[0].RequiresGrad())
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
	// ===========================================================
	// Layer (type)   Output Shape   Param #   FLOPs   Activations
	// ===========================================================
	// Sequential     [16 2]              --   1,824       1.8 KiB
	// └─0 (Linear)   [16 8]              40   1,152       1.0 KiB
	// └─1 (Tanh)     [16 8]              --     128         512 B
	// └─2 (Linear)   [16 2]              18     544         256 B
	// ===========================================================
	// Input shape: [16 4]
	// Total params: 58
	// Trainable params: 58
	// Non-trainable params: 0
	// Total FLOPs: 1,824
	// ===========================================================
	// Input size: 256 B
	// Params size: 232 B
	// Forward activations: 1.8 KiB
	// Estimated total size: 2.2 KiB
	// ===========================================================
}

func TestSummaryConvFLOPs(t *testing.T) {
	g := tensor.NewGenerator(1)
	// 2 images of 3×8×8, 4 filters of 3×3 with bias, padding 1: the output
	// is [2 4 8 8] (512 elements), each 2·3·9 FLOPs plus one for the bias.
	conv := nn.NewConv2d(g, 3, 4, [2]int{3, 3}, tensor.Conv2dOptions{Padding: [2]int{1, 1}}, true)
	got := nn.Summary(nn.NewSequential(conv, nn.NewFlatten(1, -1)), 2, 3, 8, 8)
	assert.Contains(t, got, "Total FLOPs: "+groupDigitsForTest(512*(2*27+1))+"\n")
	// The flatten is a view: the activations are the convolution's output.
	assert.Contains(t, got, "Forward activations: 2.0 KiB\n")
	assert.Regexp(t, `(?m)^└─1 \(Flatten\)\s+\[2 256\]\s+--\s+0\s+0 B$`, got)
}
