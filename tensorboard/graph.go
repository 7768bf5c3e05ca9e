package tensorboard

import (
	"fmt"
	"strings"
	"time"

	"github.com/emberml/ember/internal/tracegraph"
	"github.com/emberml/ember/nn"
	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/tensorboard/internal/tbpb"
)

// AddGraph traces model on the example inputs and logs its graph for
// TensorBoard's Graphs dashboard: one node per op, named inside the name
// scopes of the modules that ran it (Type[name], as PyTorch names them,
// so each module folds into one box), parameters inside their module's
// scope, inputs as input_0, ..., and each node's output shape and dtype as
// attributes. The forward runs in evaluation mode (restored after); one
// input goes through nn.Call, two go to the model's Forward2(a, b) method.
func (w *Writer) AddGraph(model nn.Module, inputs ...*tensor.Tensor) error {
	g, err := tracegraph.TraceModule(model, inputs)
	if err != nil {
		return fmt.Errorf("tensorboard.AddGraph: %w", err)
	}
	w.send(item{event: &tbpb.Event{WallTime: wallTime(time.Now()), What: &tbpb.Event_GraphDef{GraphDef: mustMarshal(graphDef(g))}}})
	return nil
}

// graphDef converts a traced graph.
func graphDef(g *tracegraph.Graph) *tbpb.GraphDef {
	scopeName := make([]string, len(g.Scopes))
	for s, sc := range g.Scopes {
		part := sc.Type
		if sc.Path != "" {
			part = sc.Type + "[" + sc.Path[strings.LastIndex(sc.Path, ".")+1:] + "]"
		}
		part = strings.ReplaceAll(part, "/", "_")
		if sc.Parent >= 0 {
			part = scopeName[sc.Parent] + "/" + part
		}
		scopeName[s] = part
	}
	names := make([]string, len(g.Nodes))
	used := map[string]bool{}
	unique := func(base string) string {
		name := base
		for k := 1; used[name]; k++ {
			name = fmt.Sprintf("%s_%d", base, k)
		}
		used[name] = true
		return name
	}
	def := &tbpb.GraphDef{Versions: &tbpb.VersionDef{Producer: 22}}
	for i, n := range g.Nodes {
		prefix := ""
		if n.Scope >= 0 {
			prefix = scopeName[n.Scope] + "/"
		}
		var base, op string
		switch n.Kind {
		case tracegraph.Op:
			base, op = n.Op, n.Op
		case tracegraph.Input:
			base, op, prefix = n.Op, "IO Node", ""
		case tracegraph.Param:
			base, op = n.Op[strings.LastIndex(n.Op, ".")+1:], "Parameter"
		default:
			base, op = "constant", "Constant"
		}
		names[i] = unique(prefix + strings.ReplaceAll(base, "/", "_"))
		nd := &tbpb.NodeDef{Name: names[i], Op: op, Attr: map[string]*tbpb.AttrValue{
			"_output_shapes": {Value: &tbpb.AttrValue_List{List: &tbpb.AttrValue_ListValue{Shape: []*tbpb.TensorShapeProto{shapeProto(n.Shape)}}}},
			"dtype":          {Value: &tbpb.AttrValue_Type{Type: dataType(n.DType)}},
		}}
		if n.Kind == tracegraph.Param {
			nd.Attr["name"] = &tbpb.AttrValue{Value: &tbpb.AttrValue_S{S: []byte(n.Op)}}
		}
		for _, in := range n.Inputs {
			nd.Input = append(nd.Input, names[in])
		}
		def.Node = append(def.Node, nd)
	}
	for k, o := range g.Outputs {
		def.Node = append(def.Node, &tbpb.NodeDef{Name: unique(fmt.Sprintf("output_%d", k)), Op: "IO Node", Input: []string{names[o]}})
	}
	return def
}

// shapeProto converts a shape.
func shapeProto(shape []int) *tbpb.TensorShapeProto {
	p := &tbpb.TensorShapeProto{}
	for _, d := range shape {
		p.Dim = append(p.Dim, &tbpb.TensorShapeProto_Dim{Size: int64(d)})
	}
	return p
}

// dataType maps a dtype to TensorFlow's enum.
func dataType(d tensor.DType) tbpb.DataType {
	switch d {
	case tensor.Float32:
		return tbpb.DataType_DT_FLOAT
	case tensor.Float64:
		return tbpb.DataType_DT_DOUBLE
	case tensor.Float16:
		return tbpb.DataType_DT_HALF
	case tensor.BFloat16:
		return tbpb.DataType_DT_BFLOAT16
	case tensor.Int64:
		return tbpb.DataType_DT_INT64
	case tensor.Int32:
		return tbpb.DataType_DT_INT32
	case tensor.Int16:
		return tbpb.DataType_DT_INT16
	case tensor.Int8:
		return tbpb.DataType_DT_INT8
	case tensor.Uint8:
		return tbpb.DataType_DT_UINT8
	case tensor.Uint16:
		return tbpb.DataType_DT_UINT16
	case tensor.Uint32:
		return tbpb.DataType_DT_UINT32
	case tensor.Uint64:
		return tbpb.DataType_DT_UINT64
	case tensor.Bool:
		return tbpb.DataType_DT_BOOL
	}
	return tbpb.DataType_DT_INVALID
}
