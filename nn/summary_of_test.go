package nn_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/nn/models"
	"github.com/emberml/ember/tensor"
)

// TestSummaryOfTokenModels summarizes models that take token ids, which
// Summary's float zero input cannot drive.
func TestSummaryOfTokenModels(t *testing.T) {
	g := tensor.NewGenerator(3)
	ids := tensor.FromSlice([]int64{1, 4, 2, 0, 3, 3}, 2, 3)

	gpt := models.NewGPT(g, models.GPTConfig{VocabSize: 5, BlockSize: 4, NumLayers: 1, NumHeads: 2, EmbedDim: 4})
	gpt.Train(true)
	got := nn.SummaryOf(gpt, ids)
	assert.True(t, gpt.IsTraining(), "training mode restored")
	lines := strings.Split(got, "\n")
	require.Greater(t, len(lines), 6)
	assert.Regexp(t, `^GPT\s+\[2 3 5\]\s+--\s+[\d,]+\s+[\d.]+ [KM]?i?B$`, lines[3])
	assert.Contains(t, got, "Input shape: [2 3]\n")
	total := 0
	for _, p := range gpt.Parameters() {
		total += p.Value().Numel()
	}
	assert.Contains(t, got, "Total params: "+groupDigitsForTest(total)+"\n")

	gru := models.NewGRUClassifier(g, models.GRUClassifierConfig{VocabSize: 5, EmbedDim: 3, HiddenSize: 4, NumClasses: 2})
	got = nn.SummaryOf(gru, ids)
	assert.Regexp(t, `(?m)^GRUClassifier\s+\[2 2\]\s+--\s+[\d,]+\s+[\d.]+ [KM]?i?B$`, got)
	assert.Contains(t, got, "Input shape: [2 3]\n")
}

// TestSummaryOfTwoInputs runs a two-input module through Forward2 and
// checks the input line lists both shapes.
func TestSummaryOfTwoInputs(t *testing.T) {
	g := tensor.NewGenerator(1)
	b := nn.NewBilinear(g, 2, 3, 4, true)
	got := nn.SummaryOf(b, tensor.Zeros([]int{5, 2}), tensor.Zeros([]int{5, 3}))
	assert.Regexp(t, `(?m)^Bilinear\s+\[5 4\]\s+28\s+[\d,]+\s+[\d.]+ [KM]?i?B$`, got)
	assert.Contains(t, got, "Input shapes: [5 2], [5 3]\n")
	assert.PanicsWithValue(t, "nn.SummaryOf: ReLU has no Forward2(a, b) method to take two inputs", func() {
		nn.SummaryOf(nn.NewReLU(), tensor.Zeros([]int{1}), tensor.Zeros([]int{1}))
	})
	assert.Panics(t, func() { nn.SummaryOf(nn.NewReLU()) })
}

// groupDigitsForTest formats n with thousands separators, as the summary
// table does.
func groupDigitsForTest(n int) string {
	d := strconv.Itoa(n)
	var s []byte
	for i := range len(d) {
		if i > 0 && (len(d)-i)%3 == 0 {
			s = append(s, ',')
		}
		s = append(s, d[i])
	}
	return string(s)
}
