package onnx

import (
	"fmt"
	"slices"
	"strings"

	"github.com/emberml/ember/tensor"
)

// Einsum and ReverseSequence.

func einsumOps() opTable {
	return opTable{
		"Einsum":          {{since: 12, impl: opEinsum}},
		"ReverseSequence": {{since: 10, impl: opReverseSequence}},
	}
}

// einsumTerms splits an equation into input terms and the output term,
// expanding "..." into placeholder letters ('A', 'B', ...; ONNX terms use
// lower-case letters) sized by each operand's rank.
func einsumTerms(eq string, ranks []int) (ins []string, out string, err error) {
	eq = strings.ReplaceAll(eq, " ", "")
	lhs, rhs, explicit := strings.Cut(eq, "->")
	ins = strings.Split(lhs, ",")
	if len(ins) != len(ranks) {
		return nil, "", fmt.Errorf("equation %q has %d terms for %d inputs", eq, len(ins), len(ranks))
	}
	ell := 0
	for i, term := range ins {
		if strings.Contains(term, "...") {
			k := ranks[i] - (len(term) - 3)
			if k < 0 {
				return nil, "", fmt.Errorf("term %q does not fit rank %d", term, ranks[i])
			}
			ell = max(ell, k)
		}
	}
	placeholder := func(k int) string {
		var b strings.Builder
		for j := ell - k; j < ell; j++ {
			b.WriteByte(byte('A' + j))
		}
		return b.String()
	}
	for i, term := range ins {
		if strings.Contains(term, "...") {
			ins[i] = strings.Replace(term, "...", placeholder(ranks[i]-(len(term)-3)), 1)
		}
		if len(ins[i]) != ranks[i] {
			return nil, "", fmt.Errorf("term %q does not fit rank %d", term, ranks[i])
		}
	}
	if explicit {
		out = strings.Replace(rhs, "...", placeholder(ell), 1)
		return ins, out, nil
	}
	count := map[rune]int{}
	for _, term := range ins {
		for _, c := range term {
			count[c]++
		}
	}
	var once []rune
	for c, k := range count {
		if k == 1 && c >= 'a' {
			once = append(once, c)
		}
	}
	slices.Sort(once)
	return ins, placeholder(ell) + string(once), nil
}

// opEinsum evaluates the equation by broadcasting every operand over the
// union of its letters, multiplying, and summing the letters absent from
// the output. Repeated letters within a term take the diagonal.
func opEinsum(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("onnx: %v needs inputs", n)
	}
	ranks := make([]int, len(in))
	for i, t := range in {
		if t == nil {
			return nil, fmt.Errorf("onnx: %v: input %d is absent", n, i)
		}
		ranks[i] = t.Dim()
	}
	terms, out, err := einsumTerms(n.attrString("equation", ""), ranks)
	if err != nil {
		return nil, fmt.Errorf("onnx: %v: %w", n, err)
	}
	var letters []rune // the union, output letters first
	for _, c := range out {
		if slices.Contains(letters, c) {
			return nil, fmt.Errorf("onnx: %v: output letter %q repeated", n, c)
		}
		letters = append(letters, c)
	}
	for _, term := range terms {
		for _, c := range term {
			if !slices.Contains(letters, c) {
				letters = append(letters, c)
			}
		}
	}
	// The product is formed over the union of letters: bound its size.
	sizes := make([]int, len(letters))
	for i, t := range in {
		for k, c := range terms[i] {
			j := slices.Index(letters, c)
			sizes[j] = max(sizes[j], t.Shape()[k])
		}
	}
	if err := n.checkShape(sizes, in[0].DType()); err != nil {
		return nil, err
	}
	var prod *tensor.Tensor
	for i, t := range in {
		term := []rune(terms[i])
		// Take diagonals of repeated letters.
		for {
			a, b := -1, -1
			for x := range term {
				for y := x + 1; y < len(term); y++ {
					if term[x] == term[y] && a < 0 {
						a, b = x, y
					}
				}
			}
			if a < 0 {
				break
			}
			s := t.Shape()
			if s[a] != s[b] {
				return nil, fmt.Errorf("onnx: %v: repeated letter %q over sizes %d and %d", n, term[a], s[a], s[b])
			}
			shape := make([]int, len(s))
			for k := range shape {
				shape[k] = 1
			}
			shape[a], shape[b] = s[a], s[b]
			eye := tensor.Eye(s[a]).To(t.DType()).Reshape(shape...)
			t = t.Mul(eye).Sum([]int{b}, false)
			term = slices.Delete(term, b, b+1)
		}
		// Permute to the union's order and insert the missing letters.
		var perm []int
		var shape []int
		ts := t.Shape()
		for _, c := range letters {
			if k := slices.Index(term, c); k >= 0 {
				perm = append(perm, k)
				shape = append(shape, ts[k])
			} else {
				shape = append(shape, 1)
			}
		}
		t = t.Permute(perm...).Reshape(shape...)
		if prod == nil {
			prod = t
		} else {
			prod = prod.Mul(t)
		}
	}
	if len(letters) > len(out) {
		var sum []int
		for k := len(out); k < len(letters); k++ {
			sum = append(sum, k)
		}
		prod = prod.Sum(sum, false)
	} else {
		prod = prod.Contiguous()
	}
	return one(prod.To(in[0].DType()))
}

func opReverseSequence(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	lt, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	r := x.Dim()
	bAxis, err := n.normAxis(int(n.attrInt("batch_axis", 1)), r)
	if err != nil {
		return nil, err
	}
	tAxis, err := n.normAxis(int(n.attrInt("time_axis", 0)), r)
	if err != nil {
		return nil, err
	}
	if bAxis == tAxis {
		return nil, fmt.Errorf("onnx: %v: batch_axis and time_axis must differ", n)
	}
	xs := x.Shape()
	lens := lt.Int64s()
	if len(lens) != xs[bAxis] {
		return nil, fmt.Errorf("onnx: %v: %d lengths for batch %d", n, len(lens), xs[bAxis])
	}
	steps := xs[tAxis]
	idx := make([]int64, steps*len(lens)) // [time, batch]
	for t := range steps {
		for b, l := range lens {
			if l < 0 || l > int64(steps) {
				return nil, fmt.Errorf("onnx: %v: sequence length %d out of range [0, %d]", n, l, steps)
			}
			v := int64(t)
			if v < l {
				v = l - 1 - v
			}
			idx[t*len(lens)+b] = v
		}
	}
	shape := make([]int, r)
	for k := range shape {
		shape[k] = 1
	}
	shape[tAxis], shape[bAxis] = steps, len(lens)
	it := tensor.FromSlice(idx, steps, len(lens))
	if bAxis < tAxis {
		it = it.T()
	}
	it = it.Contiguous().Reshape(shape...).Expand(xs...).Contiguous()
	return one(x.Gather(tAxis, it))
}
