package onnx

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/emberml/ember/tensor"
)

// Sequences. Inside a run a sequence value is a marker tensor (an empty
// tensor whose identity is the key) mapped to its elements in the run's
// seqStore, carried by the run's context. Sequence values are immutable:
// every operator that changes one makes a new marker, so loops and
// branches can pass them around like tensors. Sequence operators are
// stateful (never folded at load); RunValues takes and returns sequences.

func sequenceOps() opTable {
	st := func(f opImpl, since int64) []opVersion { return []opVersion{{since: since, impl: f, stateful: true}} }
	return opTable{
		"SequenceEmpty":      st(opSequenceEmpty, 11),
		"SequenceConstruct":  st(opSequenceConstruct, 11),
		"SequenceAt":         st(opSequenceAt, 11),
		"SequenceInsert":     st(opSequenceInsert, 11),
		"SequenceErase":      st(opSequenceErase, 11),
		"SequenceLength":     st(opSequenceLength, 11),
		"ConcatFromSequence": st(opConcatFromSequence, 11),
		"SplitToSequence":    st(opSplitToSequence, 11),
		"SequenceMap":        st(opSequenceMap, 17),
	}
}

// seqStore maps the markers of one run to their elements (sequences) or
// to the value they hold (optionals; nil for none).
type seqStore struct {
	mu   sync.Mutex
	seqs map[*tensor.Tensor][]*tensor.Tensor
	opts map[*tensor.Tensor]*tensor.Tensor
	strs strTable // string markers made during the run (strings.go)
}

type seqStoreKey struct{}

func withSeqStore(ctx context.Context, s *seqStore) context.Context {
	return context.WithValue(ctx, seqStoreKey{}, s)
}

// add registers elems as a new sequence and returns its marker.
func (s *seqStore) add(elems []*tensor.Tensor) *tensor.Tensor {
	m := tensor.Zeros([]int{0})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seqs == nil {
		s.seqs = map[*tensor.Tensor][]*tensor.Tensor{}
	}
	s.seqs[m] = elems
	return m
}

// addOptional registers an optional holding v (a tensor or a sequence
// marker; nil for none) and returns its marker.
func (s *seqStore) addOptional(v *tensor.Tensor) *tensor.Tensor {
	m := tensor.Zeros([]int{0})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts == nil {
		s.opts = map[*tensor.Tensor]*tensor.Tensor{}
	}
	s.opts[m] = v
	return m
}

// optional reports whether t is an optional marker and what it holds.
func (s *seqStore) optional(t *tensor.Tensor) (v *tensor.Tensor, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok = s.opts[t]
	return v, ok
}

// elems returns the elements of sequence marker t.
func (s *seqStore) elems(t *tensor.Tensor) ([]*tensor.Tensor, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.seqs[t]
	return e, ok
}

// store returns the run's sequence store.
func (n *node) store() (*seqStore, error) {
	if n.ctx != nil {
		if s, ok := n.ctx.Value(seqStoreKey{}).(*seqStore); ok {
			return s, nil
		}
	}
	return nil, fmt.Errorf("onnx: %v: sequences need a running session", n)
}

// newSeq registers elems as a new sequence and returns its marker.
func (n *node) newSeq(elems []*tensor.Tensor) (*tensor.Tensor, error) {
	s, err := n.store()
	if err != nil {
		return nil, err
	}
	return s.add(slices.Clone(elems)), nil
}

// seq returns the elements of the sequence input i.
func (n *node) seq(in []*tensor.Tensor, i int) ([]*tensor.Tensor, error) {
	t, err := n.need(in, i)
	if err != nil {
		return nil, err
	}
	s, err := n.store()
	if err != nil {
		return nil, err
	}
	elems, ok := s.elems(t)
	if !ok {
		return nil, fmt.Errorf("onnx: %v: input %d is a tensor, not a sequence", n, i)
	}
	return elems, nil
}

// position reads a position input, wrapping negatives, in [0, size]
// (insert) or [0, size).
func (n *node) position(t *tensor.Tensor, size int, insert bool) (int, error) {
	p := int(t.Reshape(-1).At(0))
	if p < 0 {
		p += size
	}
	hi := size - 1
	if insert {
		hi = size
	}
	if p < 0 || p > hi {
		return 0, fmt.Errorf("onnx: %v: position %d out of range for a sequence of %d", n, int(t.Reshape(-1).At(0)), size)
	}
	return p, nil
}

func oneSeq(n *node, elems []*tensor.Tensor) ([]*tensor.Tensor, error) {
	m, err := n.newSeq(elems)
	if err != nil {
		return nil, err
	}
	return one(m)
}

func opSequenceEmpty(n *node, _ []*tensor.Tensor) ([]*tensor.Tensor, error) {
	return oneSeq(n, nil)
}

func opSequenceConstruct(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	for i, t := range in[:n.numIn] {
		if t == nil {
			return nil, fmt.Errorf("onnx: %v: input %d is absent", n, i)
		}
	}
	return oneSeq(n, in[:n.numIn])
}

func opSequenceAt(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := n.seq(in, 0)
	if err != nil {
		return nil, err
	}
	pt, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	p, err := n.position(pt, len(s), false)
	if err != nil {
		return nil, err
	}
	return one(s[p])
}

func opSequenceInsert(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := n.seq(in, 0)
	if err != nil {
		return nil, err
	}
	t, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	p := len(s)
	if pt := arg(in, 2); pt != nil && n.numIn > 2 {
		if p, err = n.position(pt, len(s), true); err != nil {
			return nil, err
		}
	}
	return oneSeq(n, slices.Insert(slices.Clone(s), p, t))
}

func opSequenceErase(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := n.seq(in, 0)
	if err != nil {
		return nil, err
	}
	p := len(s) - 1
	if pt := arg(in, 1); pt != nil && n.numIn > 1 {
		if p, err = n.position(pt, len(s), false); err != nil {
			return nil, err
		}
	}
	if p < 0 {
		return nil, fmt.Errorf("onnx: %v: erasing from an empty sequence", n)
	}
	return oneSeq(n, slices.Delete(slices.Clone(s), p, p+1))
}

func opSequenceLength(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := n.seq(in, 0)
	if err != nil {
		return nil, err
	}
	return one(tensor.FromSlice([]int64{int64(len(s))}, []int{}...))
}

func opConcatFromSequence(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := n.seq(in, 0)
	if err != nil {
		return nil, err
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("onnx: %v: empty sequence", n)
	}
	r := s[0].Dim()
	newAxis := n.attrInt("new_axis", 0) == 1
	if newAxis {
		r++
	}
	axis, err := n.normAxis(int(n.attrInt("axis", 0)), r)
	if err != nil {
		return nil, err
	}
	if newAxis {
		return one(tensor.Stack(s, axis))
	}
	return one(tensor.Concat(s, axis))
}

func opSplitToSequence(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	axis, err := n.normAxis(int(n.attrInt("axis", 0)), x.Dim())
	if err != nil {
		return nil, err
	}
	dim := x.Shape()[axis]
	var parts []*tensor.Tensor
	switch sp := arg(in, 1); {
	case sp == nil:
		for i := range dim {
			p := x.Narrow(axis, i, 1)
			if n.attrInt("keepdims", 1) == 0 {
				p = p.Squeeze(axis)
			}
			parts = append(parts, p)
		}
	case sp.Dim() == 0:
		size := int(sp.Item())
		if size <= 0 {
			return nil, fmt.Errorf("onnx: %v: split size %d must be positive", n, size)
		}
		for start := 0; start < dim; start += size {
			parts = append(parts, x.Narrow(axis, start, min(size, dim-start)))
		}
	default:
		parts = x.SplitSizes(ints(sp), axis)
	}
	return oneSeq(n, parts)
}

// opSequenceMap applies the body graph to each element of the input
// sequence (and the matching element of further sequence inputs, or the
// whole of further tensor inputs), collecting each body output into a
// sequence.
func opSequenceMap(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	s, err := n.seq(in, 0)
	if err != nil {
		return nil, err
	}
	store, err := n.store()
	if err != nil {
		return nil, err
	}
	extra := make([][]*tensor.Tensor, n.numIn-1)
	for j := 1; j < n.numIn; j++ {
		if e, ok := store.elems(in[j]); ok {
			if len(e) != len(s) {
				return nil, fmt.Errorf("onnx: %v: sequences of lengths %d and %d", n, len(s), len(e))
			}
			extra[j-1] = e
		}
	}
	body := n.graphs["body"]
	if body == nil {
		return nil, fmt.Errorf("onnx: %v: attribute body is missing", n)
	}
	outs := make([][]*tensor.Tensor, len(body.outputs))
	for i, e := range s {
		formal := []*tensor.Tensor{e}
		for j := 1; j < n.numIn; j++ {
			if extra[j-1] != nil {
				formal = append(formal, extra[j-1][i])
			} else {
				formal = append(formal, in[j])
			}
		}
		res, err := n.runGraph("body", in, formal)
		if err != nil {
			return nil, err
		}
		for k := range outs {
			outs[k] = append(outs[k], res[k])
		}
	}
	result := make([]*tensor.Tensor, len(outs))
	for k, o := range outs {
		if result[k], err = n.newSeq(o); err != nil {
			return nil, err
		}
	}
	return result, nil
}
