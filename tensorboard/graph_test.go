package tensorboard

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/tensorboard/internal/tbpb"
)

// twoLayer is a model with a named child.
type twoLayer struct {
	nn.Base
	body *nn.Sequential
}

func (m *twoLayer) Forward(x *autograd.Var) *autograd.Var { return nn.Call(m.body, x) }

func newTwoLayer() *twoLayer {
	g := tensor.NewGenerator(1)
	m := &twoLayer{body: nn.NewSequential(nn.NewLinear(g, 4, 3, true), nn.NewReLU())}
	m.RegisterModule("body", m.body)
	return m
}

func TestAddGraphWritesScopedGraphDef(t *testing.T) {
	w, err := NewWriter(t.TempDir(), Options{})
	require.NoError(t, err)
	require.NoError(t, w.AddGraph(newTwoLayer(), tensor.Zeros([]int{2, 4})))
	assert.ErrorContains(t, w.AddGraph(newTwoLayer()), "want one or two example inputs")
	require.NoError(t, w.Close())
	evs := readAll(t, w.Path())
	require.Len(t, evs, 2)
	require.NotEmpty(t, evs[1].GraphDef)
	var g tbpb.GraphDef
	require.NoError(t, proto.Unmarshal(evs[1].GraphDef, &g))
	byName := map[string]*tbpb.NodeDef{}
	for _, n := range g.Node {
		byName[n.Name] = n
	}
	in := byName["input_0"]
	require.NotNil(t, in)
	assert.Equal(t, "IO Node", in.Op)
	w0 := byName["twoLayer/Sequential[body]/Linear[0]/weight"]
	require.NotNil(t, w0, "names: %v", keys(byName))
	assert.Equal(t, "Parameter", w0.Op)
	assert.Equal(t, "body.0.weight", string(w0.Attr["name"].GetS()))
	mm := byName["twoLayer/Sequential[body]/Linear[0]/MatMul"]
	require.NotNil(t, mm)
	assert.Contains(t, mm.Input, "input_0")
	dims := mm.Attr["_output_shapes"].GetList().Shape[0].Dim
	assert.Equal(t, []int64{2, 3}, []int64{dims[0].Size, dims[1].Size})
	assert.Equal(t, tbpb.DataType_DT_FLOAT, mm.Attr["dtype"].GetType())
	relu := byName["twoLayer/Sequential[body]/ReLU[1]/Relu"]
	require.NotNil(t, relu)
	out := byName["output_0"]
	require.NotNil(t, out)
	assert.Equal(t, []string{relu.Name}, out.Input)
}

func keys(m map[string]*tbpb.NodeDef) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
