package onnx

import "slices"

// GraphNode is one node of a model's main graph, as Nodes returns it.
type GraphNode struct {
	// Name is the node's name in the model ("" when the model gives none).
	Name string
	// OpType and Domain name the operator ("" is the default ai.onnx
	// domain).
	OpType, Domain string
	// Inputs and Outputs name the values the node reads and writes; an
	// optional input the model leaves out is "".
	Inputs, Outputs []string
}

// Nodes returns the nodes of the model's main graph in the model's order
// (subgraphs of control-flow nodes are not listed). The slices are copies.
func (m *Model) Nodes() []GraphNode {
	out := make([]GraphNode, len(m.graph.nodes))
	for i, n := range m.graph.nodes {
		out[i] = GraphNode{Name: n.name, OpType: n.opType, Domain: n.domain, Inputs: slices.Clone(n.inputs), Outputs: slices.Clone(n.outputs)}
	}
	return out
}
