package graphviz_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/graphviz"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/nn/models"
	"github.com/emberml/ember/tensor"
)

// TestWriteModuleOfLargerModels draws a token model (int64 ids) and a
// two-input module, and checks Graphviz renders them.
func TestWriteModuleOfLargerModels(t *testing.T) {
	g := tensor.NewGenerator(2)
	gpt := models.NewGPT(g, models.GPTConfig{VocabSize: 7, BlockSize: 4, NumLayers: 1, NumHeads: 2, EmbedDim: 4})
	var b strings.Builder
	require.NoError(t, graphviz.WriteModule(&b, gpt, tensor.FromSlice([]int64{1, 2, 3}, 1, 3)))
	src := b.String()
	assert.Contains(t, src, `"output_0\n[1 3 7]"`)
	assert.Contains(t, src, "subgraph cluster_")
	render(t, src)

	b.Reset()
	bil := nn.NewBilinear(g, 2, 3, 4, true)
	require.NoError(t, graphviz.WriteModule(&b, bil, tensor.Zeros([]int{5, 2}), tensor.Zeros([]int{5, 3})))
	assert.Contains(t, b.String(), `"input_1\n[5 3]"`)
	assert.Contains(t, b.String(), `"output_0\n[5 4]"`)
	render(t, b.String())

	assert.ErrorContains(t, graphviz.WriteModule(&b, nn.NewReLU(), tensor.Zeros([]int{1}), tensor.Zeros([]int{1})), "no Forward2")
}
