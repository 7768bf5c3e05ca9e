package tensor_test

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/internal/golden"
	"github.com/emberml/ember/tensor"
)

// Golden values for Uint32 and Uint64 from NumPy, written by
// internal/golden/gen/gen_dtypes_uint.py. Elements are strings so that
// uint64 values beyond 2^53 stay exact.

type uintGoldTensor struct {
	DType string   `json:"dtype"`
	Shape []int    `json:"shape"`
	Data  []string `json:"data"`
}

type uintGoldCase struct {
	Name   string           `json:"name"`
	Op     string           `json:"op"`
	Attrs  map[string]any   `json:"attrs"`
	Inputs []uintGoldTensor `json:"inputs"`
	Output uintGoldTensor   `json:"output"`
}

func loadUintGolden(t *testing.T) []uintGoldCase {
	b, err := os.ReadFile("testdata/golden_dtypes_uint.json")
	require.NoError(t, err)
	var f struct {
		Cases []uintGoldCase `json:"cases"`
	}
	require.NoError(t, json.Unmarshal(b, &f))
	require.NotEmpty(t, f.Cases)
	return f.Cases
}

// tensor builds the fixture tensor g with its own dtype.
func (g uintGoldTensor) tensor(t *testing.T) *tensor.Tensor {
	dt, err := tensor.ParseDType(g.DType)
	require.NoError(t, err)
	n := len(g.Data)
	switch {
	case dt == tensor.Bool:
		v := make([]bool, n)
		for i, s := range g.Data {
			v[i] = s == "1"
		}
		return tensor.FromSlice(v, g.Shape...)
	case dt.IsFloat():
		v := make([]float64, n)
		for i, s := range g.Data {
			v[i], err = strconv.ParseFloat(s, 64)
			require.NoError(t, err)
		}
		return tensor.FromSlice(v, g.Shape...).To(dt)
	case dt == tensor.Uint64:
		v := make([]uint64, n)
		for i, s := range g.Data {
			v[i], err = strconv.ParseUint(s, 10, 64)
			require.NoError(t, err)
		}
		return tensor.FromSlice(v, g.Shape...)
	}
	v := make([]int64, n)
	for i, s := range g.Data {
		v[i], err = strconv.ParseInt(s, 10, 64)
		require.NoError(t, err)
	}
	return tensor.FromSlice(v, g.Shape...).To(dt)
}

// uintGoldStrings formats x's elements as the fixture writes them, for
// exact comparison; floats use the shortest float64 form, NaN as "nan".
func uintGoldStrings(x *tensor.Tensor) []string {
	var out []string
	switch dt := x.DType(); {
	case dt == tensor.Bool:
		for _, v := range x.Bools() {
			out = append(out, map[bool]string{true: "1", false: "0"}[v])
		}
	case dt.IsFloat():
		for _, v := range x.Float64s() {
			switch {
			case math.IsNaN(v):
				out = append(out, "nan")
			case math.IsInf(v, 0):
				out = append(out, map[bool]string{true: "inf", false: "-inf"}[v > 0])
			default:
				out = append(out, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
	case dt == tensor.Uint64 || dt == tensor.Uint32:
		for _, v := range x.Uint64s() {
			out = append(out, strconv.FormatUint(v, 10))
		}
	default:
		for _, v := range x.Int64s() {
			out = append(out, strconv.FormatInt(v, 10))
		}
	}
	return out
}

// normFloatStrings rewrites Python float reprs ("1.0", "9.2e+18") in
// Go's shortest form so both sides compare as strings.
func normFloatStrings(t *testing.T, s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		f, err := strconv.ParseFloat(v, 64)
		require.NoError(t, err)
		out[i] = uintGoldStrings(tensor.FromSlice([]float64{f}))[0]
	}
	return out
}

// uintOp runs the case's op: sort here, the rest as the small-dtype golden
// test runs them.
func uintOp(t *testing.T, c uintGoldCase, in []*tensor.Tensor, out tensor.DType) *tensor.Tensor {
	gc := golden.Case{Name: c.Name, Op: c.Op, Attrs: c.Attrs}
	if c.Op == "sort" {
		v, _ := in[0].Sort(gc.Int("axis"), false)
		return v
	}
	return smallOp(t, gc, in, out)
}

func TestUintDTypesGolden(t *testing.T) {
	for _, c := range loadUintGolden(t) {
		t.Run(c.Name, func(t *testing.T) {
			in := make([]*tensor.Tensor, len(c.Inputs))
			for i, g := range c.Inputs {
				in[i] = g.tensor(t)
			}
			outDT, err := tensor.ParseDType(c.Output.DType)
			require.NoError(t, err)
			got := uintOp(t, c, in, outDT)
			require.Equal(t, outDT, got.DType(), "result dtype")
			require.Equal(t, c.Output.Shape, got.Shape())
			want := c.Output.Data
			if outDT.IsFloat() {
				want = normFloatStrings(t, want)
			}
			assert.Equal(t, want, uintGoldStrings(got))
		})
	}
}
