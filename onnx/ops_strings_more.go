package onnx

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/emberml/ember/tensor"
)

// The string operators of opset 20: StringConcat, StringSplit and
// RegexFullMatch. Like StringNormalizer they run on string markers (see
// strings.go) and are given their string implementation at load.

// stringMoreOps registers them; stringNode gives each node the model's
// constant strings.
func stringMoreOps() opTable {
	return opTable{
		"StringConcat":   {{since: 20, impl: withStrings(nil, opStringConcat), stateful: true}},
		"StringSplit":    {{since: 20, impl: withStrings(nil, opStringSplit), stateful: true}},
		"RegexFullMatch": {{since: 20, impl: withStrings(nil, opRegexFullMatch), stateful: true}},
	}
}

// needStrings returns input i as strings, or an error naming the node.
func (n *node) needStrings(e strEnv, in []*tensor.Tensor, i int) (Strings, error) {
	t, err := n.need(in, i)
	if err != nil {
		return Strings{}, err
	}
	s, ok := e.value(t)
	if !ok {
		return Strings{}, fmt.Errorf("onnx: %v: input %d is a %s tensor; it takes strings", n, i, t.DType())
	}
	return s, nil
}

// broadcastPositions returns, for each element of the broadcast of shapes
// a and b, the positions of the elements of a and b it combines.
func broadcastPositions(n *node, a, b []int) (shape []int, ia, ib []int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("onnx: %v: shapes %v and %v do not broadcast", n, a, b)
		}
	}()
	shape = tensor.BroadcastShapes("StringConcat", a, b)
	if err := n.checkShape(shape, tensor.Int64); err != nil {
		return nil, nil, nil, err
	}
	positions := func(s []int) []int64 {
		v := make([]int64, prod(s))
		for i := range v {
			v[i] = int64(i)
		}
		return tensor.FromSlice(v, len(v)).Reshape(s...).Expand(shape...).Contiguous().Int64s()
	}
	return shape, positions(a), positions(b), nil
}

// opStringConcat is StringConcat 20: X and Y joined element by element,
// broadcasting.
func opStringConcat(n *node, e strEnv, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needStrings(e, in, 0)
	if err != nil {
		return nil, err
	}
	y, err := n.needStrings(e, in, 1)
	if err != nil {
		return nil, err
	}
	shape, ix, iy, err := broadcastPositions(n, x.Shape, y.Shape)
	if err != nil {
		return nil, err
	}
	out := Strings{Shape: shape, Data: make([]string, len(ix))}
	var size int64
	for i := range ix {
		size += int64(len(x.Data[ix[i]]) + len(y.Data[iy[i]]))
		if size > n.byteLimit() {
			return nil, fmt.Errorf("onnx: %v: the joined strings exceed the session's %d bytes", n, n.byteLimit())
		}
		out.Data[i] = x.Data[ix[i]] + y.Data[iy[i]]
	}
	return one(e.put(out))
}

// opRegexFullMatch is RegexFullMatch 20: whether each string matches
// pattern as a whole. Go's regexp implements RE2's syntax, which the
// operator specifies.
func opRegexFullMatch(n *node, e strEnv, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needStrings(e, in, 0)
	if err != nil {
		return nil, err
	}
	pattern := n.attrString("pattern", "")
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return nil, fmt.Errorf("onnx: %v: pattern %q: %w", n, short(pattern), err)
	}
	out := make([]bool, len(x.Data))
	for i, s := range x.Data {
		out[i] = re.MatchString(s)
	}
	return one(tensor.FromSlice(out, x.Shape...))
}

// opStringSplit is StringSplit 20: each string split at delimiter (runs of
// whitespace, with empty pieces dropped, when the delimiter is unset or
// empty), at most maxsplit times when maxsplit is set, as Python's
// str.split does. Y holds the pieces along a new last axis as long as the
// most pieces, padded with empty strings; Z holds each string's count.
func opStringSplit(n *node, e strEnv, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needStrings(e, in, 0)
	if err != nil {
		return nil, err
	}
	delim := n.attrString("delimiter", "")
	limit := -1
	if n.has("maxsplit") {
		if limit = int(n.attrInt("maxsplit", -1)); limit < 0 {
			return nil, fmt.Errorf("onnx: %v: maxsplit %d is negative", n, limit)
		}
	}
	pieces := make([][]string, len(x.Data))
	widest := 0
	var total int64
	for i, s := range x.Data {
		pieces[i] = splitLikePython(s, delim, limit)
		widest = max(widest, len(pieces[i]))
		total += int64(len(pieces[i]))
	}
	if total > n.byteLimit() || int64(widest)*int64(len(x.Data)) > n.byteLimit() {
		return nil, fmt.Errorf("onnx: %v: %d pieces exceed the session's limits", n, total)
	}
	shape := append(append([]int(nil), x.Shape...), widest)
	y := Strings{Shape: shape, Data: make([]string, len(x.Data)*widest)}
	z := make([]int64, len(x.Data))
	for i, p := range pieces {
		copy(y.Data[i*widest:], p)
		z[i] = int64(len(p))
	}
	return []*tensor.Tensor{e.put(y), tensor.FromSlice(z, x.Shape...)}, nil
}

// splitLikePython splits s as Python's s.split(delim or None, limit)
// does (limit < 0: no limit).
func splitLikePython(s, delim string, limit int) []string {
	if delim != "" {
		if limit < 0 {
			return strings.Split(s, delim)
		}
		return strings.SplitN(s, delim, limit+1)
	}
	var out []string
	rest := strings.TrimLeftFunc(s, unicode.IsSpace)
	for rest != "" {
		if limit >= 0 && len(out) == limit {
			out = append(out, rest) // the rest keeps its trailing space
			break
		}
		end := strings.IndexFunc(rest, unicode.IsSpace)
		if end < 0 {
			out = append(out, rest)
			break
		}
		out = append(out, rest[:end])
		rest = strings.TrimLeftFunc(rest[end:], unicode.IsSpace)
	}
	return out
}
