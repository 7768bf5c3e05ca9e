package onnx

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// Optionals. Like a sequence, an optional value inside a run is a marker
// tensor mapped in the run's seqStore, here to the tensor or sequence
// marker it holds (nil when empty).

func optionalOps() opTable {
	st := func(f opImpl, since int64) opVersion { return opVersion{since: since, impl: f, stateful: true} }
	return opTable{
		"Optional": {st(opOptional, 15)},
		// From opset 18 OptionalHasElement and OptionalGetElement also take
		// a plain tensor or sequence (and HasElement an absent input).
		"OptionalHasElement": {st(opOptionalHasElement, 15)},
		"OptionalGetElement": {st(opOptionalGetElement, 15)},
	}
}

// opOptional wraps its input in an optional, or makes an empty one when
// the input is absent (the type attribute then says of what; a run does not
// need it).
func opOptional(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := n.store()
	if err != nil {
		return nil, err
	}
	x := arg(in, 0)
	if x == nil && !n.has("type") {
		return nil, fmt.Errorf("onnx: %v: an empty Optional needs the type attribute", n)
	}
	return one(s.addOptional(x))
}

func opOptionalHasElement(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := n.store()
	if err != nil {
		return nil, err
	}
	has := false
	if x := arg(in, 0); x != nil {
		v, isOpt := s.optional(x)
		has = !isOpt || v != nil
	}
	return one(tensor.FromSlice([]bool{has}, []int{}...))
}

func opOptionalGetElement(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	s, err := n.store()
	if err != nil {
		return nil, err
	}
	v, isOpt := s.optional(x)
	if !isOpt {
		return one(x) // opset 18: a tensor or a sequence is its own element
	}
	if v == nil {
		return nil, fmt.Errorf("onnx: %v: the optional is empty", n)
	}
	return one(v)
}
