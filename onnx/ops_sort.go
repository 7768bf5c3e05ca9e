package onnx

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/emberml/ember/tensor"
)

// Sorting-based operators: TopK and Unique.

func sortOps() opTable {
	return opTable{
		"TopK":   {{since: 1, impl: opTopK}},
		"Unique": {{since: 11, impl: opUnique}},
	}
}

func opTopK(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	k := int(n.attrInt("k", 0))
	if n.opset >= 10 {
		kt, err := n.need(in, 1)
		if err != nil {
			return nil, err
		}
		if kt.Numel() != 1 {
			return nil, fmt.Errorf("onnx: %v: K must hold one value", n)
		}
		k = int(kt.Reshape(-1).At(0))
	}
	axis, err := n.normAxis(int(n.attrInt("axis", -1)), x.Dim())
	if err != nil {
		return nil, err
	}
	if k < 0 || k > x.Shape()[axis] {
		return nil, fmt.Errorf("onnx: %v: k=%d out of range for axis of size %d", n, k, x.Shape()[axis])
	}
	v, i := x.TopK(k, axis, n.attrInt("largest", 1) == 1)
	return []*tensor.Tensor{v, i}, nil
}

// opUnique finds the unique elements (or, with axis, unique slices along
// it) with first-occurrence indices, inverse indices and counts.
func opUnique(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	axis := 0
	rows := x.Reshape(-1, 1)
	if n.has("axis") {
		if axis, err = n.normAxis(int(n.attrInt("axis", 0)), x.Dim()); err != nil {
			return nil, err
		}
		rows = x.Transpose(0, axis).Contiguous()
		rows = rows.Reshape(rows.Shape()[0], -1)
	}
	cnt := rows.Shape()[0]
	width := 0
	if cnt > 0 {
		width = rows.Numel() / cnt
	}
	vals := rows.Float64s()
	row := func(i int) []float64 { return vals[i*width : (i+1)*width] }
	cmp := func(a, b []float64) int {
		for j := range a {
			switch {
			case a[j] < b[j]:
				return -1
			case a[j] > b[j]:
				return 1
			case math.IsNaN(a[j]) != math.IsNaN(b[j]):
				if math.IsNaN(a[j]) {
					return 1
				}
				return -1
			}
		}
		return 0
	}
	// key encodes a row so equal rows (cmp == 0: -0 equals 0, NaNs are
	// equal) get equal keys.
	key := func(r []float64) string {
		b := make([]byte, 0, 8*len(r))
		for _, v := range r {
			switch {
			case v == 0:
				v = 0
			case math.IsNaN(v):
				v = math.NaN()
			}
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
		return string(b)
	}
	var firsts []int // first occurrence of each unique row, in order seen
	seen := map[string]int{}
	inverse := make([]int64, cnt)
	for i := range cnt {
		k := key(row(i))
		found, ok := seen[k]
		if !ok {
			found = len(firsts)
			firsts = append(firsts, i)
			seen[k] = found
		}
		inverse[i] = int64(found)
	}
	order := make([]int, len(firsts)) // output position -> index into firsts
	for i := range order {
		order[i] = i
	}
	if n.attrInt("sorted", 1) == 1 {
		sort.SliceStable(order, func(a, b int) bool { return cmp(row(firsts[order[a]]), row(firsts[order[b]])) < 0 })
	}
	pos := make([]int64, len(order))
	idx := make([]int64, len(order))
	counts := make([]int64, len(order))
	for p, u := range order {
		pos[u] = int64(p)
		idx[p] = int64(firsts[u])
	}
	for i, u := range inverse {
		inverse[i] = pos[u]
		counts[pos[u]]++
	}
	var y *tensor.Tensor
	if n.has("axis") {
		y = x.IndexSelect(axis, tensor.FromSlice(slices.Clone(idx)))
	} else {
		y = x.Reshape(-1).IndexSelect(0, tensor.FromSlice(slices.Clone(idx)))
	}
	return []*tensor.Tensor{y, tensor.FromSlice(idx), tensor.FromSlice(inverse), tensor.FromSlice(counts)}, nil
}
