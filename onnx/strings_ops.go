package onnx

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"unicode"

	"github.com/emberml/ember/tensor"
)

// String operators: Cast and CastLike to and from STRING, and
// StringNormalizer.

func stringOps() opTable {
	return opTable{
		// typeStrings gives each StringNormalizer node the model's constant
		// strings; this entry serves inputs made during the run.
		"StringNormalizer": {{since: 10, impl: withStrings(nil, opStringNormalizer), stateful: true}},
	}
}

// opCastStrings is Cast (to from the attribute) and CastLike (to from the
// second input's type) where the input or the target is STRING; numeric
// to numeric is left to the tensor package.
func opCastStrings(n *node, e strEnv, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	to := n.attrInt("to", 0)
	if n.opType == "CastLike" {
		like, err := n.need(in, 1)
		if err != nil {
			return nil, err
		}
		to = dtString
		if _, ok := e.pool(like); !ok {
			to = dtypeToONNX(like.DType())
		}
	} else if !n.has("to") {
		return nil, fmt.Errorf("onnx: %v: attribute \"to\" is required", n)
	}
	s, isStr := e.value(x)
	switch {
	case isStr && to == dtString:
		return one(x)
	case isStr:
		dt, err := dtypeFromONNX(to)
		if err != nil {
			return nil, fmt.Errorf("%v: %w", n, err)
		}
		t, err := parseStrings(s, dt)
		if err != nil {
			return nil, fmt.Errorf("onnx: %v: %w", n, err)
		}
		return one(t)
	case to == dtString:
		return one(e.put(formatTensor(x)))
	}
	dt, err := dtypeFromONNX(to)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", n, err)
	}
	return one(x.To(dt))
}

// formatTensor writes every element of x as Cast to STRING does: integers
// in decimal, booleans as "True" and "False" (the ONNX reference
// implementation's NumPy spelling), floats in plain notation (the Cast
// spec's "314.15926") with the fewest digits that read back to the same
// value of their own width (FLOAT16 and BFLOAT16 as the float32 they
// widen to), and the spec's literals "NaN", "INF" and "-INF".
func formatTensor(x *tensor.Tensor) Strings {
	out := Strings{Shape: x.Shape(), Data: make([]string, x.Numel())}
	switch dt := x.DType(); {
	case dt == tensor.Bool:
		for i, b := range x.Bools() {
			out.Data[i] = "False"
			if b {
				out.Data[i] = "True"
			}
		}
	case dt == tensor.Uint64:
		for i, v := range x.Uint64s() {
			out.Data[i] = strconv.FormatUint(v, 10)
		}
	case dt.IsInt():
		for i, v := range x.Int64s() {
			out.Data[i] = strconv.FormatInt(v, 10)
		}
	default:
		bits := 32
		if dt == tensor.Float64 {
			bits = 64
		}
		for i, v := range x.Float64s() {
			out.Data[i] = formatFloat(v, bits)
		}
	}
	return out
}

// formatFloat writes v (a value of the given bit width) as Cast does.
func formatFloat(v float64, bits int) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "INF"
	case math.IsInf(v, -1):
		return "-INF"
	}
	return strconv.FormatFloat(v, 'f', -1, bits)
}

// errNotNumber marks a string that is no number: the spec leaves the cast
// undefined, Ember refuses it.
var errNotNumber = errors.New("is not a number")

// parseFloat reads s as Cast from STRING reads a float: plain or
// scientific notation, surrounding spaces ignored, "INF", "+INF", "-INF"
// and "NaN" in any case (Go's spellings "Infinity" and hexadecimal floats
// too, as C's strtod); a value beyond the type's range is ±INF, as IEEE
// rounding makes it.
func parseFloat(s string, bits int) (float64, error) {
	t := strings.TrimSpace(s)
	switch strings.ToUpper(t) {
	case "INF", "+INF":
		return math.Inf(1), nil
	case "-INF":
		return math.Inf(-1), nil
	case "NAN", "+NAN", "-NAN":
		return math.NaN(), nil
	}
	if strings.Contains(t, "_") {
		return 0, fmt.Errorf("%q %w", s, errNotNumber) // Go literal syntax, not a number string
	}
	v, err := strconv.ParseFloat(t, bits)
	if err != nil {
		if ne := (*strconv.NumError)(nil); errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return v, nil
		}
		return 0, fmt.Errorf("%q %w", s, errNotNumber)
	}
	return v, nil
}

// intRange is the range of each integer dtype.
var intRange = map[tensor.DType][2]float64{
	tensor.Int8: {math.MinInt8, math.MaxInt8}, tensor.Uint8: {0, math.MaxUint8},
	tensor.Int16: {math.MinInt16, math.MaxInt16}, tensor.Uint16: {0, math.MaxUint16},
	tensor.Int32: {math.MinInt32, math.MaxInt32}, tensor.Uint32: {0, math.MaxUint32},
	tensor.Int64: {math.MinInt64, math.MaxInt64},
}

// parseInt reads s as an integer of dtype dt: decimal integers exactly,
// other numbers (the spec's "100.5" → 100) truncated toward zero. Values
// outside dt's range and NaN are errors, as the spec leaves them undefined.
func parseInt(s string, dt tensor.DType) (int64, error) {
	t := strings.TrimSpace(s)
	r := intRange[dt]
	if v, err := strconv.ParseInt(t, 10, 64); err == nil {
		if float64(v) < r[0] || float64(v) > r[1] {
			return 0, fmt.Errorf("%q is out of the range of %s", s, dt)
		}
		return v, nil
	}
	f, err := parseFloat(t, 64)
	if err != nil {
		return 0, err
	}
	f = math.Trunc(f)
	// MaxInt64 rounds up to 2^63 as a float64, which is out of range.
	if math.IsNaN(f) || f < r[0] || f > r[1] || (dt == tensor.Int64 && f >= math.MaxInt64) {
		return 0, fmt.Errorf("%q is out of the range of %s", s, dt)
	}
	return int64(f), nil
}

// parseUint64 reads s as a UINT64: decimal exactly, other numbers
// truncated toward zero.
func parseUint64(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if v, err := strconv.ParseUint(t, 10, 64); err == nil {
		return v, nil
	}
	f, err := parseFloat(t, 64)
	if err != nil {
		return 0, err
	}
	f = math.Trunc(f)
	if math.IsNaN(f) || f < 0 || f >= math.MaxUint64 {
		return 0, fmt.Errorf("%q is out of the range of %s", s, tensor.Uint64)
	}
	return uint64(f), nil
}

// parseBool reads s as a BOOL: "true"/"false" and Go's other spellings
// (1, t, T, TRUE, True, 0, f, F, FALSE, False), else a number, true when
// not zero (NaN is true, as a float NaN casts to true).
func parseBool(s string) (bool, error) {
	t := strings.TrimSpace(s)
	if b, err := strconv.ParseBool(t); err == nil {
		return b, nil
	}
	f, err := parseFloat(t, 64)
	if err != nil {
		return false, err
	}
	return f != 0, nil
}

// parseStrings casts a string tensor to dtype dt.
func parseStrings(s Strings, dt tensor.DType) (*tensor.Tensor, error) {
	switch {
	case dt == tensor.Bool:
		return parseAll(s, parseBool)
	case dt == tensor.Uint64:
		return parseAll(s, parseUint64)
	case dt.IsInt():
		t, err := parseAll(s, func(v string) (int64, error) { return parseInt(v, dt) })
		if err != nil {
			return nil, err
		}
		return t.To(dt), nil
	case dt == tensor.Float64:
		return parseAll(s, func(v string) (float64, error) { return parseFloat(v, 64) })
	}
	// FLOAT, and FLOAT16 and BFLOAT16 through it (rounded twice, so a
	// decimal within a float32 ulp of a half-way point may land on the
	// other neighbour).
	t, err := parseAll(s, func(v string) (float32, error) {
		f, err := parseFloat(v, 32)
		return float32(f), err
	})
	if err != nil {
		return nil, err
	}
	return t.To(dt), nil
}

// parseAll parses every element of s with parse into a tensor of s's
// shape.
func parseAll[T tensor.Element](s Strings, parse func(string) (T, error)) (*tensor.Tensor, error) {
	out := make([]T, len(s.Data))
	for i, v := range s.Data {
		x, err := parse(v)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return tensor.FromSlice(out, s.Shape...), nil
}

// opTfIdfStrings is TfIdfVectorizer over a string input and
// pool_strings: each distinct pool string becomes a token id (its first
// position in the pool), every other string an id no n-gram holds, and
// the integer implementation counts.
func opTfIdfStrings(n *node, e strEnv, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	s, ok := e.value(x)
	if !ok {
		return opTfIdfVectorizer(n, in)
	}
	if !n.has("pool_strings") {
		return nil, fmt.Errorf("onnx: %v: a string input needs pool_strings", n)
	}
	pool := n.attrs["pool_strings"].stringList()
	ids := map[string]int64{}
	poolIDs := make([]int64, len(pool))
	for i, w := range pool {
		id, seen := ids[w]
		if !seen {
			id = int64(i)
			ids[w] = id
		}
		poolIDs[i] = id
	}
	tokens := make([]int64, len(s.Data))
	for i, w := range s.Data {
		id, inPool := ids[w]
		if !inPool {
			id = -1
		}
		tokens[i] = id
	}
	c := *n
	c.attrs = maps.Clone(n.attrs)
	delete(c.attrs, "pool_strings")
	c.attrs["pool_int64s"] = &attribute{name: "pool_int64s", typ: attrInts, ints: poolIDs}
	return opTfIdfVectorizer(&c, []*tensor.Tensor{tensor.FromSlice(tokens, s.Shape...)})
}

// opStringNormalizer removes stopwords from a [C] or [1, C] string tensor
// and changes the case of what is left (case_change_action LOWER, UPPER or
// NONE). Stopwords match exactly when is_case_sensitive is 1, otherwise
// under Unicode simple case folding. An input left empty becomes one empty
// string ([1] or [1, 1]), as the spec says.
//
// Case mapping is Unicode's simple one-rune mapping (Go's unicode tables:
// "straße" upper-cases to "STRAßE", not "STRASSE"), which is what en_US, the
// default locale, does rune by rune; locales whose language is Turkish or
// Azerbaijani ("tr", "az") map dotted and dotless i their way; every other
// locale gets the Unicode mapping.
func opStringNormalizer(n *node, e strEnv, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	s, ok := e.value(x)
	if !ok {
		return nil, fmt.Errorf("onnx: %v: input is a %s tensor, StringNormalizer takes strings", n, x.DType())
	}
	if len(s.Shape) != 1 && (len(s.Shape) != 2 || s.Shape[0] != 1) {
		return nil, fmt.Errorf("onnx: %v: input has shape %v, want [C] or [1, C]", n, s.Shape)
	}
	action := n.attrString("case_change_action", "NONE")
	var change func(string) string
	upper, lower := strings.ToUpper, strings.ToLower
	if lang := strings.ToLower(n.attrString("locale", "en_US")); strings.HasPrefix(lang, "tr") || strings.HasPrefix(lang, "az") {
		upper = func(s string) string { return strings.ToUpperSpecial(unicode.TurkishCase, s) }
		lower = func(s string) string { return strings.ToLowerSpecial(unicode.TurkishCase, s) }
	}
	switch action {
	case "NONE":
	case "LOWER":
		change = lower
	case "UPPER":
		change = upper
	default:
		return nil, fmt.Errorf("onnx: %v: case_change_action %q is not LOWER, UPPER or NONE", n, action)
	}
	sensitive := n.attrInt("is_case_sensitive", 0) != 0
	stop := n.attrs["stopwords"].stringList()
	keep := func(w string) bool {
		for _, sw := range stop {
			if w == sw || !sensitive && strings.EqualFold(w, sw) {
				return false
			}
		}
		return true
	}
	out := make([]string, 0, len(s.Data))
	for _, w := range s.Data {
		if !keep(w) {
			continue
		}
		if change != nil {
			w = change(w)
		}
		out = append(out, w)
	}
	if len(out) == 0 {
		out = append(out, "")
	}
	shape := []int{len(out)}
	if len(s.Shape) == 2 {
		shape = []int{1, len(out)}
	}
	return one(e.put(Strings{Shape: shape, Data: out}))
}
