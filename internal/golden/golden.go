// Package golden loads golden-value fixtures produced by PyTorch and
// compares Ember results against them.
//
// Fixtures are JSON files written by the Python helper
// internal/golden/gen/golden.py. A fixture file has the shape
//
//	{
//	  "generator": "internal/golden/gen/gen_selftest.py",
//	  "torch_version": "2.x",
//	  "cases": [
//	    {"name": "add/broadcast", "op": "add", "attrs": {...},
//	     "inputs": [T, ...], "outputs": [T, ...],
//	     "grad_outputs": [T, ...], "grads": [T or null, ...]}
//	  ]
//	}
//
// where each tensor T is
//
//	{"shape": [2, 3], "dtype": "float32", "data": [1.5, "nan", "-inf", ...]}
//
// Data is flat and row-major. Every dtype ("float32", "float64", "int64",
// "int32", "bool") is stored as JSON numbers; bools are 0 or 1. Non-finite
// floats are stored as the strings "nan", "inf" and "-inf", which Load turns
// back into math.NaN() and ±math.Inf. Floating-point values are written with
// Python's shortest round-trip repr, so float32 and float64 values are
// reproduced exactly.
//
// Gradient convention: when a case has gradients, the generator called
// out.backward(gout) for each output with gout taken from "grad_outputs"
// (one entry per output), so Grads[i] is the gradient of
// sum_k sum(outputs[k] * grad_outputs[k]) with respect to Inputs[i]. A nil
// entry in Grads means that input has no gradient (for example an integer
// input). Cases without gradients have empty Grads and GradOutputs.
package golden

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Supported dtype names.
const (
	Float32 = "float32"
	Float64 = "float64"
	Int64   = "int64"
	Int32   = "int32"
	Bool    = "bool"
)

// maxExactInt is the largest integer magnitude a float64 holds exactly.
const maxExactInt = 1 << 53

// Tensor is a dense tensor read from a fixture. Data holds Numel values in
// row-major order whatever the DType; integer values are exact up to 2^53
// (Load rejects larger ones) and bools are 0 or 1.
type Tensor struct {
	Shape []int
	DType string
	Data  []float64
}

// Numel returns the number of elements implied by t.Shape (1 for a scalar).
func (t Tensor) Numel() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Float32s returns the data converted to float32. For float32 tensors the
// conversion is exact.
func (t Tensor) Float32s() []float32 {
	out := make([]float32, len(t.Data))
	for i, v := range t.Data {
		out[i] = float32(v)
	}
	return out
}

// Float64s returns a copy of the data.
func (t Tensor) Float64s() []float64 {
	return slices.Clone(t.Data)
}

// Int64s returns the data converted to int64 (truncating any fraction).
func (t Tensor) Int64s() []int64 {
	out := make([]int64, len(t.Data))
	for i, v := range t.Data {
		out[i] = int64(v)
	}
	return out
}

// Int32s returns the data converted to int32 (truncating any fraction).
func (t Tensor) Int32s() []int32 {
	out := make([]int32, len(t.Data))
	for i, v := range t.Data {
		out[i] = int32(v)
	}
	return out
}

// Bools returns the data as booleans (non-zero is true).
func (t Tensor) Bools() []bool {
	out := make([]bool, len(t.Data))
	for i, v := range t.Data {
		out[i] = v != 0
	}
	return out
}

// jsonTensor is the wire form of Tensor.
type jsonTensor struct {
	Shape []int           `json:"shape"`
	DType string          `json:"dtype"`
	Data  json.RawMessage `json:"data"`
}

// UnmarshalJSON decodes the fixture form of a tensor, turning the strings
// "nan", "inf" and "-inf" into non-finite floats and validating the shape,
// dtype and values.
func (t *Tensor) UnmarshalJSON(b []byte) error {
	var jt jsonTensor
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&jt); err != nil {
		return err
	}
	if jt.Shape == nil {
		return errors.New("tensor: missing shape")
	}
	switch jt.DType {
	case Float32, Float64, Int64, Int32, Bool:
	default:
		return fmt.Errorf("tensor: unknown dtype %q", jt.DType)
	}
	if jt.Data == nil {
		return errors.New("tensor: missing data")
	}
	for _, d := range jt.Shape {
		if d < 0 {
			return fmt.Errorf("tensor: negative dimension in shape %v", jt.Shape)
		}
	}
	var raw []any
	dd := json.NewDecoder(bytes.NewReader(jt.Data))
	dd.UseNumber()
	if err := dd.Decode(&raw); err != nil {
		return fmt.Errorf("tensor: data: %w", err)
	}
	data := make([]float64, len(raw))
	for i, r := range raw {
		v, err := decodeValue(r, jt.DType)
		if err != nil {
			return fmt.Errorf("tensor: data[%d]: %w", i, err)
		}
		data[i] = v
	}
	out := Tensor{Shape: jt.Shape, DType: jt.DType, Data: data}
	if n := out.Numel(); n != len(data) {
		return fmt.Errorf("tensor: shape %v needs %d values, have %d", jt.Shape, n, len(data))
	}
	*t = out
	return nil
}

// decodeValue decodes one element of a data array for the given dtype.
func decodeValue(r any, dtype string) (float64, error) {
	switch dtype {
	case Float32, Float64:
		switch v := r.(type) {
		case json.Number:
			return strconv.ParseFloat(string(v), 64)
		case string:
			return parseSpecial(v)
		}
		return 0, fmt.Errorf("want number or \"nan\"/\"inf\"/\"-inf\", got %T", r)
	case Int64, Int32, Bool:
		n, ok := r.(json.Number)
		if !ok {
			return 0, fmt.Errorf("want integer for %s, got %T", dtype, r)
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("want integer for %s: %w", dtype, err)
		}
		switch {
		case dtype == Bool && i != 0 && i != 1:
			return 0, fmt.Errorf("bool value %d is not 0 or 1", i)
		case dtype == Int32 && (i < math.MinInt32 || i > math.MaxInt32):
			return 0, fmt.Errorf("int32 value %d out of range", i)
		case i > maxExactInt || i < -maxExactInt:
			return 0, fmt.Errorf("integer %d is not exactly representable as float64", i)
		}
		return float64(i), nil
	}
	return 0, fmt.Errorf("unknown dtype %q", dtype)
}

// parseSpecial decodes the string encodings of non-finite floats.
func parseSpecial(s string) (float64, error) {
	switch s {
	case "nan":
		return math.NaN(), nil
	case "inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	}
	return 0, fmt.Errorf("unknown float string %q", s)
}

// Case is one golden test case: an op applied to inputs with optional
// attributes, its outputs and, optionally, its gradients.
type Case struct {
	// Name identifies the case, e.g. "add/broadcast"; it is a convenient
	// t.Run name.
	Name string `json:"name"`
	// Op names the operation, e.g. "add".
	Op string `json:"op"`
	// Attrs holds the op's non-tensor arguments as decoded by
	// encoding/json (float64, string, bool, []any, map[string]any, nil).
	// Non-finite float attributes are the strings "nan", "inf", "-inf";
	// Float decodes them.
	Attrs map[string]any `json:"attrs"`
	// Inputs are the op's tensor arguments in call order.
	Inputs []Tensor `json:"inputs"`
	// Outputs are the op's results in order.
	Outputs []Tensor `json:"outputs"`
	// GradOutputs holds the upstream gradient for each output (same length
	// as Outputs) when the case has gradients, and is empty otherwise.
	GradOutputs []Tensor `json:"grad_outputs"`
	// Grads holds, for each input, the gradient of
	// sum_k sum(Outputs[k] * GradOutputs[k]) with respect to it, or nil
	// where the input has no gradient. Empty when the case has no
	// gradients.
	Grads []*Tensor `json:"grads"`
}

// File is a whole fixture file.
type File struct {
	// Generator is the path of the script that wrote the file, relative
	// to the repository root.
	Generator string `json:"generator"`
	// TorchVersion is torch.__version__ at generation time.
	TorchVersion string `json:"torch_version"`
	// Cases are the test cases in file order.
	Cases []Case `json:"cases"`
}

// Parse decodes and validates a fixture file. Unknown fields are rejected so
// that typos in generators surface early.
func Parse(r io.Reader) (*File, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after fixture object")
	}
	seen := make(map[string]bool, len(f.Cases))
	for i, c := range f.Cases {
		if err := c.validate(); err != nil {
			return nil, fmt.Errorf("case %d (%q): %w", i, c.Name, err)
		}
		if seen[c.Name] {
			return nil, fmt.Errorf("case %d: duplicate name %q", i, c.Name)
		}
		seen[c.Name] = true
	}
	return &f, nil
}

// validate checks the structural invariants of a case.
func (c Case) validate() error {
	if c.Name == "" {
		return errors.New("missing name")
	}
	if c.Op == "" {
		return errors.New("missing op")
	}
	if len(c.Grads) != 0 && len(c.Grads) != len(c.Inputs) {
		return fmt.Errorf("%d grads for %d inputs", len(c.Grads), len(c.Inputs))
	}
	if len(c.GradOutputs) != 0 && len(c.GradOutputs) != len(c.Outputs) {
		return fmt.Errorf("%d grad_outputs for %d outputs", len(c.GradOutputs), len(c.Outputs))
	}
	if (len(c.Grads) == 0) != (len(c.GradOutputs) == 0) {
		return errors.New("grads and grad_outputs must be given together")
	}
	for i, g := range c.Grads {
		if g != nil && !slices.Equal(g.Shape, c.Inputs[i].Shape) {
			return fmt.Errorf("grads[%d] shape %v differs from input shape %v", i, g.Shape, c.Inputs[i].Shape)
		}
	}
	for i, g := range c.GradOutputs {
		if !slices.Equal(g.Shape, c.Outputs[i].Shape) {
			return fmt.Errorf("grad_outputs[%d] shape %v differs from output shape %v", i, g.Shape, c.Outputs[i].Shape)
		}
	}
	return nil
}

// Load reads and validates the fixture file at path and returns its cases.
// Any error fails the test immediately.
func Load(t testing.TB, path string) []Case {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("golden: %v", err)
	}
	defer f.Close()
	file, err := Parse(f)
	if err != nil {
		t.Fatalf("golden: %s: %v", path, err)
	}
	return file.Cases
}

// attr returns the named attribute or panics if it is absent.
func (c Case) attr(name string) any {
	v, ok := c.Attrs[name]
	if !ok {
		panic(fmt.Sprintf("golden: case %q: missing attr %q", c.Name, name))
	}
	return v
}

// badAttr panics with a message describing a wrongly typed attribute.
func (c Case) badAttr(name, want string, v any) {
	panic(fmt.Sprintf("golden: case %q: attr %q is %T (%v), want %s", c.Name, name, v, v, want))
}

// Has reports whether the case has the named attribute.
func (c Case) Has(name string) bool {
	_, ok := c.Attrs[name]
	return ok
}

// Int returns the named attribute as an int. Like the other attribute
// accessors it panics with a descriptive message if the attribute is
// missing or of the wrong type (here: not an integral number); use Has to
// test for optional attributes.
func (c Case) Int(name string) int {
	v := c.attr(name)
	i, ok := toInt(v)
	if !ok {
		c.badAttr(name, "integer", v)
	}
	return i
}

// Float returns the named attribute as a float64, decoding the strings
// "nan", "inf" and "-inf". It panics if the attribute is missing or not a
// number.
func (c Case) Float(name string) float64 {
	v := c.attr(name)
	switch x := v.(type) {
	case float64:
		return x
	case string:
		if f, err := parseSpecial(x); err == nil {
			return f
		}
	}
	c.badAttr(name, "number", v)
	return 0
}

// Ints returns the named attribute, a JSON array of integers, as []int. It
// panics if the attribute is missing or not such an array.
func (c Case) Ints(name string) []int {
	v := c.attr(name)
	list, ok := v.([]any)
	if !ok {
		c.badAttr(name, "array of integers", v)
	}
	out := make([]int, len(list))
	for i, e := range list {
		n, ok := toInt(e)
		if !ok {
			c.badAttr(name, "array of integers", v)
		}
		out[i] = n
	}
	return out
}

// Bool returns the named attribute as a bool. It panics if the attribute is
// missing or not a JSON boolean.
func (c Case) Bool(name string) bool {
	v := c.attr(name)
	b, ok := v.(bool)
	if !ok {
		c.badAttr(name, "bool", v)
	}
	return b
}

// String returns the named attribute as a string. It panics if the
// attribute is missing or not a JSON string.
func (c Case) String(name string) string {
	v := c.attr(name)
	s, ok := v.(string)
	if !ok {
		c.badAttr(name, "string", v)
	}
	return s
}

// toInt converts an integral JSON number to int.
func toInt(v any) (int, bool) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > maxExactInt {
		return 0, false
	}
	return int(f), true
}

// maxReported bounds the mismatches AllClose lists individually.
const maxReported = 5

// AllClose reports a test error (t.Errorf, so the test continues) unless
// gotShape equals want.Shape and every got[i] is close to want.Data[i]:
// |got-want| <= atol + rtol*|want|, as in torch.allclose. NaN matches NaN
// and an infinity matches only the same infinity. A nil and an empty shape
// are equal (both scalars). The message is prefixed by name and lists the
// first few mismatching indices. It returns whether the values matched.
func AllClose(t testing.TB, name string, want Tensor, gotShape []int, got []float64, rtol, atol float64) bool {
	t.Helper()
	if !slices.Equal(gotShape, want.Shape) {
		t.Errorf("%s: shape %v, want %v", name, gotShape, want.Shape)
		return false
	}
	if len(got) != len(want.Data) {
		t.Errorf("%s: %d values, want %d", name, len(got), len(want.Data))
		return false
	}
	var (
		bad     int
		maxDiff float64
		lines   []string
	)
	for i, w := range want.Data {
		g := got[i]
		if isClose(g, w, rtol, atol) {
			continue
		}
		bad++
		if d := math.Abs(g - w); d > maxDiff || math.IsNaN(d) {
			maxDiff = d
		}
		if len(lines) < maxReported {
			lines = append(lines, fmt.Sprintf("  [%d]%v: got %v, want %v", i, unravel(i, want.Shape), g, w))
		}
	}
	if bad == 0 {
		return true
	}
	t.Errorf("%s: %d of %d values differ (rtol=%g, atol=%g, max |diff|=%g):\n%s",
		name, bad, len(got), rtol, atol, maxDiff, strings.Join(lines, "\n"))
	return false
}

// isClose reports whether g is within tolerance of w.
func isClose(g, w, rtol, atol float64) bool {
	switch {
	case math.IsNaN(w) || math.IsNaN(g):
		return math.IsNaN(w) && math.IsNaN(g)
	case math.IsInf(w, 0) || math.IsInf(g, 0):
		return g == w
	}
	return math.Abs(g-w) <= atol+rtol*math.Abs(w)
}

// unravel converts a flat row-major index into a multi-index for shape.
func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return idx
}
