package graphviz_test

import (
	"bytes"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/graphviz"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/onnx"
	"github.com/emberml/ember/tensor"
)

// render runs Graphviz on src and checks it makes an SVG; it skips when
// Graphviz is not installed (apt-get install graphviz).
func render(t *testing.T, src string) {
	t.Helper()
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("Graphviz's dot is not installed (apt-get install graphviz)")
	}
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = strings.NewReader(src)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "dot: %s\n%s", stderr.String(), src)
	assert.Empty(t, stderr.String(), "dot warnings")
	assert.Contains(t, string(out), "<svg")
}

// mlp is a small model with nested modules.
type mlp struct {
	nn.Base
	body *nn.Sequential
	head *nn.Linear
}

func (m *mlp) Forward(x *autograd.Var) *autograd.Var { return nn.Call(m.head, nn.Call(m.body, x)) }

func newMLP() *mlp {
	g := tensor.NewGenerator(1)
	m := &mlp{body: nn.NewSequential(nn.NewLinear(g, 4, 8, true), nn.NewReLU()), head: nn.NewLinear(g, 8, 3, false)}
	m.RegisterModule("body", m.body)
	m.RegisterModule("head", m.head)
	return m
}

// count returns how many times pattern matches in src.
func count(src, pattern string) int { return len(regexp.MustCompile(pattern).FindAllString(src, -1)) }

func TestWriteModuleClustersAndShapes(t *testing.T) {
	m := newMLP()
	var b strings.Builder
	require.NoError(t, graphviz.WriteModule(&b, m, tensor.Zeros([]int{2, 4})))
	src := b.String()
	for _, want := range []string{
		`label="mlp"`, `label="body (Sequential)"`, `label="0 (Linear)"`, `label="1 (ReLU)"`, `label="head (Linear)"`,
		`"input_0\n[2 4]"`, `"body.0.weight\n[8 4]"`, `"head.weight\n[3 8]"`, `label="[2 8]"`, `"output_0\n[2 3]"`,
	} {
		assert.Contains(t, src, want)
	}
	// The three parameters (two weights, one bias) and the input are leaves.
	assert.Equal(t, 4, count(src, `shape=ellipse, style=filled, fillcolor="#(e8f5d8|cde4ff)"`))
	// body.1's cluster sits inside body's: ReLU's op is declared after
	// "1 (ReLU)" and before body's cluster closes.
	relu := strings.Index(src, `label="1 (ReLU)"`)
	head := strings.Index(src, `label="head (Linear)"`)
	require.Positive(t, relu)
	assert.Less(t, relu, head)
	assert.Contains(t, src[relu:head], "Relu")
	assert.True(t, m.IsTraining(), "training mode restored")
	for _, p := range m.Parameters() {
		assert.Nil(t, p.Grad())
	}
	render(t, src)
}

func TestWriteAutograd(t *testing.T) {
	x := autograd.Param(tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2))
	y := autograd.New(tensor.FromSlice([]float32{1, 1}, 2, 1))
	loss := x.MatMul(y).Tanh().Sum(nil, false)
	var b strings.Builder
	require.NoError(t, graphviz.WriteAutograd(&b, loss, map[*autograd.Var]string{x: "x"}))
	src := b.String()
	assert.Contains(t, src, `"x\n[2 2]"`)
	assert.Contains(t, src, "MatMul")
	assert.Contains(t, src, "Tanh")
	assert.Contains(t, src, `label="[2 1]"`)
	assert.Equal(t, 1, count(src, `fillcolor="#e8f5d8"`), "x requires a gradient, y does not")
	render(t, src)
}

func TestWriteONNX(t *testing.T) {
	var model bytes.Buffer
	require.NoError(t, onnx.Export(newMLP(), []*tensor.Tensor{tensor.Zeros([]int{2, 4})}, &model, onnx.ExportOptions{}))
	m, err := onnx.Read(&model)
	require.NoError(t, err)
	var b strings.Builder
	require.NoError(t, graphviz.WriteONNX(&b, m))
	src := b.String()
	nodes := m.Nodes()
	require.NotEmpty(t, nodes)
	assert.Equal(t, len(nodes), count(src, `(?m)^  node\d+ \[label=`))
	assert.Contains(t, src, "body.0.weight")
	assert.Contains(t, src, `[2 3]`, "the output's inferred shape")
	render(t, src)
}

func TestQuoteEscapes(t *testing.T) {
	x := autograd.Param(tensor.Zeros([]int{1}))
	var b strings.Builder
	require.NoError(t, graphviz.WriteAutograd(&b, x.Neg(), map[*autograd.Var]string{x: "a \"quoted\" \\ name"}))
	assert.Contains(t, b.String(), `"a \"quoted\" \\ name\n[1]"`)
	render(t, b.String())
}
