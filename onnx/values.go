package onnx

import (
	"context"
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor"
)

// Sequence is an ONNX sequence value as RunValues takes and returns it: an
// ordered, possibly empty list of tensors.
type Sequence []*tensor.Tensor

// Optional is an ONNX optional value as RunValues takes and returns it:
// Value is nil for an empty optional, otherwise a *tensor.Tensor or a
// Sequence.
type Optional struct {
	Value any
}

// RunValues is Run for graphs whose inputs or outputs include sequences,
// optionals or string tensors. Each input is a *tensor.Tensor, a Strings
// (an input of element type STRING), a Sequence or an Optional, of the kind
// the model declares for it (ValueInfo.Kind, with ValueInfo.Elem for what a
// sequence or an optional holds); each output comes back as one of the
// four. Tensors are validated as Run validates them, string tensors
// against their declared rank and static dimensions, and the elements of
// sequences against their declared element type.
func (s *Session) RunValues(ctx context.Context, inputs map[string]any) (map[string]any, error) {
	out, err := s.runValues(ctx, inputs)
	return out, bounded(err)
}

// runValues is RunValues with errors of any length.
func (s *Session) runValues(ctx context.Context, inputs map[string]any) (map[string]any, error) {
	store := &seqStore{}
	tensors := make(map[string]*tensor.Tensor, len(inputs))
	markers := map[string]*tensor.Tensor{}
	declared := map[string]ValueInfo{}
	for _, v := range s.model.Inputs {
		declared[v.Name] = v
	}
	for name, v := range inputs {
		if t, ok := v.(*tensor.Tensor); ok {
			tensors[name] = t
			continue
		}
		decl, ok := declared[name]
		if !ok {
			return nil, fmt.Errorf("onnx: %q is not an input of the model", name)
		}
		m, err := store.register(name, v, &decl)
		if err != nil {
			return nil, err
		}
		markers[name] = m
	}
	if err := s.validate(tensors, markers); err != nil {
		return nil, err
	}
	if err := s.checkShapes(tensors); err != nil {
		return nil, err
	}
	for name, m := range markers {
		tensors[name] = m
	}
	outs, err := s.execute(ctx, tensors, store)
	if err != nil {
		return nil, err
	}
	result := make(map[string]any, len(outs))
	for i, name := range s.plan.outputs {
		result[name] = s.export(store, outs[i])
	}
	return result, nil
}

// register makes the run-time marker of a Sequence or Optional input after
// checking it against the declaration decl (the graph input called name).
func (s *seqStore) register(name string, v any, decl *ValueInfo) (*tensor.Tensor, error) {
	var elem *ValueInfo // what the declared sequence or optional holds
	if decl != nil {
		elem = decl.Elem
	}
	switch v := v.(type) {
	case Sequence:
		if decl != nil && decl.Kind != "" && decl.Kind != "sequence" {
			return nil, fmt.Errorf("onnx: input %q is a sequence, the model wants %s", name, withArticle(decl.Kind))
		}
		for i, t := range v {
			if t == nil {
				return nil, fmt.Errorf("onnx: input %q: sequence element %d is nil", name, i)
			}
			if elem != nil && elem.Kind == "tensor" && elem.elemType != dtUndefined {
				dt, err := elem.DType()
				if err != nil {
					return nil, fmt.Errorf("onnx: input %q: %w", name, err)
				}
				if t.DType() != dt {
					return nil, fmt.Errorf("onnx: input %q: sequence element %d has dtype %s, the model wants %s", name, i, t.DType(), dt)
				}
			}
		}
		return s.add(slices.Clone(v)), nil
	case Optional:
		if decl != nil && decl.Kind != "" && decl.Kind != "optional" {
			return nil, fmt.Errorf("onnx: input %q is an optional, the model wants %s", name, withArticle(decl.Kind))
		}
		var inner *tensor.Tensor
		switch w := v.Value.(type) {
		case nil:
		case *tensor.Tensor:
			if w == nil {
				break // a typed nil is an empty optional too
			}
			if elem != nil && elem.Kind != "" && elem.Kind != "tensor" {
				return nil, fmt.Errorf("onnx: input %q holds a tensor, the model wants an optional %s", name, elem.Kind)
			}
			inner = w
		case Sequence:
			if elem != nil && elem.Kind != "" && elem.Kind != "sequence" {
				return nil, fmt.Errorf("onnx: input %q holds a sequence, the model wants an optional %s", name, elem.Kind)
			}
			m, err := s.register(name, w, elem)
			if err != nil {
				return nil, err
			}
			inner = m
		default:
			return nil, fmt.Errorf("onnx: input %q: an Optional holds nil, a *tensor.Tensor or a Sequence, not %T", name, v.Value)
		}
		return s.addOptional(inner), nil
	case Strings:
		if err := checkStringsInput(name, v, decl); err != nil {
			return nil, err
		}
		m := newMarker(v)
		s.addStrings(m, slices.Clone(v.Data))
		return m, nil
	case nil:
		return nil, fmt.Errorf("onnx: input %q is nil", name)
	}
	return nil, fmt.Errorf("onnx: input %q is a %T; RunValues takes *tensor.Tensor, onnx.Strings, onnx.Sequence or onnx.Optional", name, v)
}

// withArticle returns a value kind with its indefinite article.
func withArticle(kind string) string {
	if kind == "optional" {
		return "an optional"
	}
	return "a " + kind
}

// export turns a run's output into what RunValues returns, cloning
// anything that shares the session's constants.
func (s *Session) export(store *seqStore, t *tensor.Tensor) any {
	if e, ok := store.elems(t); ok {
		seq := make(Sequence, len(e))
		for i, x := range e {
			seq[i] = s.own(x)
		}
		return seq
	}
	if v, ok := store.optional(t); ok {
		if v == nil {
			return Optional{}
		}
		return Optional{Value: s.export(store, v)}
	}
	if v, ok := s.stringValue(store, t); ok {
		return v
	}
	return s.own(t)
}

// own returns t, or a copy when t shares storage with the session's
// constants, so a caller never writes into the session.
func (s *Session) own(t *tensor.Tensor) *tensor.Tensor {
	if s.sharesConst(t) {
		return t.Clone()
	}
	return t
}

// checkStringsInput checks a string tensor fed as the input called name
// against its declaration decl.
func checkStringsInput(name string, v Strings, decl *ValueInfo) error {
	if err := v.check(); err != nil {
		return fmt.Errorf("onnx: input %q: %w", name, err)
	}
	if decl == nil {
		return nil
	}
	if decl.Kind != "tensor" || decl.elemType != dtString {
		want := withArticle(decl.Kind)
		switch decl.Kind {
		case "tensor":
			want = "a tensor of " + decl.ElemType
		case "":
			// Strings are typed at load, so a string input must say so.
			want = "an input declared STRING"
		}
		return fmt.Errorf("onnx: input %q is a string tensor, the model wants %s", name, want)
	}
	if !decl.HasShape {
		return nil
	}
	if len(v.Shape) != len(decl.Shape) {
		return fmt.Errorf("onnx: input %q has shape %v (rank %d), the model wants rank %d %v", name, v.Shape, len(v.Shape), len(decl.Shape), decl.Shape)
	}
	for i, d := range decl.Shape {
		if d.Value >= 0 && d.Param == "" && int64(v.Shape[i]) != d.Value {
			return fmt.Errorf("onnx: input %q has shape %v, the model wants %v (axis %d must be %d)", name, v.Shape, decl.Shape, i, d.Value)
		}
	}
	return nil
}
