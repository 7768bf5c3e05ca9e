package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/emberml/ember/tensor"
)

// Wire formats of /predict.
//
// Request:  {"inputs": {"x": {"shape": [1, 3], "data": [1, 2, 3], "dtype": "float32"}}}
// Response: {"outputs": {"y": {"shape": [1, 5], "dtype": "float32", "data": [...]}}}
//
// dtype is optional in requests (the model's declared element type is
// used). Non-finite floats are written as the strings "NaN", "Infinity"
// and "-Infinity", which JSON numbers cannot express.

// maxRank bounds the rank of a request tensor.
const maxRank = 8

// wireTensor is one tensor in a request or response.
type wireTensor struct {
	Shape []int         `json:"shape"`
	DType string        `json:"dtype,omitempty"`
	Data  []json.Number `json:"data"`
}

// predictRequest is the JSON body of POST /predict.
type predictRequest struct {
	Inputs map[string]wireTensor `json:"inputs"`
}

// outTensor is one tensor of a response.
type outTensor struct {
	Shape []int  `json:"shape"`
	DType string `json:"dtype"`
	Data  []any  `json:"data"`
}

// predictResponse is the JSON body of a successful POST /predict.
type predictResponse struct {
	Outputs map[string]outTensor `json:"outputs"`
}

// errorResponse is the JSON body of every error.
type errorResponse struct {
	Error string `json:"error"`
}

// decodeTensor turns a wire tensor into a tensor of dtype dt (or of the
// dtype the request names), checking that the shape is sane, holds at most
// maxElems elements and matches the data's length.
func decodeTensor(name string, w wireTensor, dt tensor.DType, maxElems int) (*tensor.Tensor, error) {
	if w.DType != "" {
		d, err := tensor.ParseDType(w.DType)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", name, err)
		}
		dt = d
	}
	if w.Shape == nil {
		return nil, fmt.Errorf("input %q: shape is missing", name)
	}
	if len(w.Shape) > maxRank {
		return nil, fmt.Errorf("input %q: rank %d exceeds %d", name, len(w.Shape), maxRank)
	}
	n := 1
	for _, d := range w.Shape {
		if d < 0 {
			return nil, fmt.Errorf("input %q: negative dimension in shape %v", name, w.Shape)
		}
		if d > 0 && n > maxElems/d {
			return nil, fmt.Errorf("input %q: shape %v has more than %d elements", name, w.Shape, maxElems)
		}
		n *= d
	}
	if n != len(w.Data) {
		return nil, fmt.Errorf("input %q: shape %v needs %d values, got %d", name, w.Shape, n, len(w.Data))
	}
	switch dt {
	case tensor.Float32, tensor.Float64, tensor.Float16, tensor.BFloat16:
		v := make([]float64, n)
		for i, s := range w.Data {
			f, err := strconv.ParseFloat(string(s), 64)
			if err != nil {
				return nil, fmt.Errorf("input %q: value %d: %q is not a number", name, i, s)
			}
			v[i] = f
		}
		return tensor.FromSlice(v, w.Shape...).To(dt), nil
	case tensor.Int64, tensor.Int32, tensor.Int16, tensor.Uint16, tensor.Int8, tensor.Uint8:
		lo, hi := intRange(dt)
		v := make([]int64, n)
		for i, s := range w.Data {
			x, err := strconv.ParseInt(string(s), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("input %q: value %d: %q is not an integer", name, i, s)
			}
			if x < lo || x > hi {
				return nil, fmt.Errorf("input %q: value %d: %d overflows %s", name, i, x, dt)
			}
			v[i] = x
		}
		return tensor.FromSlice(v, w.Shape...).To(dt), nil
	case tensor.Uint32, tensor.Uint64:
		// Parsed unsigned: uint64 values beyond int64's range are valid.
		hi := uint64(math.MaxUint64)
		if dt == tensor.Uint32 {
			hi = math.MaxUint32
		}
		v := make([]uint64, n)
		for i, s := range w.Data {
			x, err := strconv.ParseUint(string(s), 10, 64)
			if err != nil || x > hi {
				return nil, fmt.Errorf("input %q: value %d: %q is not an integer in %s's range", name, i, s, dt)
			}
			v[i] = x
		}
		return tensor.FromSlice(v, w.Shape...).To(dt), nil
	case tensor.Bool:
		v := make([]bool, n)
		for i, s := range w.Data {
			switch s {
			case "0":
			case "1":
				v[i] = true
			default:
				return nil, fmt.Errorf("input %q: value %d: %q is not 0 or 1", name, i, s)
			}
		}
		return tensor.FromSlice(v, w.Shape...), nil
	}
	return nil, fmt.Errorf("input %q: dtype %s is not accepted", name, dt)
}

// intRange returns the smallest and largest value of the integer dtype dt.
func intRange(dt tensor.DType) (lo, hi int64) {
	switch dt {
	case tensor.Int32:
		return math.MinInt32, math.MaxInt32
	case tensor.Int16:
		return math.MinInt16, math.MaxInt16
	case tensor.Uint16:
		return 0, math.MaxUint16
	case tensor.Int8:
		return math.MinInt8, math.MaxInt8
	case tensor.Uint8:
		return 0, math.MaxUint8
	}
	return math.MinInt64, math.MaxInt64
}

// encodeTensor turns an output tensor into its wire form.
func encodeTensor(t *tensor.Tensor) outTensor {
	o := outTensor{Shape: t.Shape(), DType: t.DType().String()}
	if o.Shape == nil {
		o.Shape = []int{}
	}
	switch {
	case t.DType().IsFloat():
		for _, f := range t.Float64s() {
			switch {
			case math.IsNaN(f):
				o.Data = append(o.Data, "NaN")
			case math.IsInf(f, 1):
				o.Data = append(o.Data, "Infinity")
			case math.IsInf(f, -1):
				o.Data = append(o.Data, "-Infinity")
			case t.DType() == tensor.Float64:
				o.Data = append(o.Data, f)
			default:
				o.Data = append(o.Data, float32(f)) // shortest float32 digits
			}
		}
	case t.DType() == tensor.Bool:
		for _, b := range t.Bools() {
			o.Data = append(o.Data, b)
		}
	case t.DType() == tensor.Uint64: // beyond int64's range
		for _, x := range t.Uint64s() {
			o.Data = append(o.Data, x)
		}
	default:
		for _, x := range t.Int64s() {
			o.Data = append(o.Data, x)
		}
	}
	if o.Data == nil {
		o.Data = []any{}
	}
	return o
}
