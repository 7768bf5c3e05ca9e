package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// The small ONNX element types: the 8-bit floats FLOAT8E4M3FN,
// FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ and FLOAT8E8M0, the 4-bit
// float FLOAT4E2M1, and the 4- and 2-bit integers INT4, UINT4, INT2 and
// UINT2.
//
// Ember's tensors have no dtype for them. The ONNX runtime decodes them at
// its boundary into the smallest tensor dtype that holds every value
// exactly — Float32 for the floats, Int8 for INT4 and INT2, Uint8 for UINT4
// and UINT2 — and the operators that produce them (Cast, CastLike,
// QuantizeLinear) round to the small type's grid with its rules, so the
// values a model computes are those of the small type. A tensor read from a
// model, a test file or a session output therefore reports the holding
// dtype, not the small type.

// The ONNX data types of the small formats.
const (
	dtFloat8E4M3FN   = 17
	dtFloat8E4M3FNUZ = 18
	dtFloat8E5M2     = 19
	dtFloat8E5M2FNUZ = 20
	dtUint4          = 21
	dtInt4           = 22
	dtFloat4E2M1     = 23
	dtFloat8E8M0     = 24
	dtUint2          = 25
	dtInt2           = 26
)

// miniFloat describes a small binary float format: exponent and mantissa
// widths, the exponent bias, the largest finite value, and its special
// values.
type miniFloat struct {
	expBits, mantBits, bias int
	max                     float64
	// hasInf: the all-ones exponent with a zero mantissa is infinity
	// (E5M2); otherwise there is no infinity.
	hasInf bool
	// nanIsNegZero: the bit pattern of -0 is the one NaN and there is no
	// negative zero (the FNUZ formats).
	nanIsNegZero bool
	// nanAllOnes: every bit of exponent and mantissa set is NaN (E4M3FN).
	nanAllOnes bool
	// noNaN: the format has no NaN at all (FLOAT4E2M1).
	noNaN bool
}

// miniFloatFormat returns the float format of ONNX data type t.
func miniFloatFormat(t int64) (miniFloat, bool) {
	switch t {
	case dtFloat8E4M3FN:
		return miniFloat{expBits: 4, mantBits: 3, bias: 7, max: 448, nanAllOnes: true}, true
	case dtFloat8E4M3FNUZ:
		return miniFloat{expBits: 4, mantBits: 3, bias: 8, max: 240, nanIsNegZero: true}, true
	case dtFloat8E5M2:
		return miniFloat{expBits: 5, mantBits: 2, bias: 15, max: 57344, hasInf: true}, true
	case dtFloat8E5M2FNUZ:
		return miniFloat{expBits: 5, mantBits: 2, bias: 16, max: 57344, nanIsNegZero: true}, true
	case dtFloat4E2M1:
		return miniFloat{expBits: 2, mantBits: 1, bias: 1, max: 6, noNaN: true}, true
	}
	return miniFloat{}, false
}

// isSmallType reports whether ONNX data type t is one of the small types.
func isSmallType(t int64) bool { return t >= dtFloat8E4M3FN && t <= dtInt2 }

// smallHolder returns the tensor dtype that holds small type t.
func smallHolder(t int64) tensor.DType {
	switch t {
	case dtInt4, dtInt2:
		return tensor.Int8
	case dtUint4, dtUint2:
		return tensor.Uint8
	}
	return tensor.Float32
}

// smallBits returns the width of one element of small type t.
func smallBits(t int64) int {
	switch t {
	case dtInt4, dtUint4, dtFloat4E2M1:
		return 4
	case dtInt2, dtUint2:
		return 2
	}
	return 8
}

// smallIntRange returns the range of a small integer type.
func smallIntRange(t int64) (lo, hi int, ok bool) {
	switch t {
	case dtInt4:
		return -8, 7, true
	case dtUint4:
		return 0, 15, true
	case dtInt2:
		return -2, 1, true
	case dtUint2:
		return 0, 3, true
	}
	return 0, 0, false
}

// decode returns the value of bit pattern b.
func (f miniFloat) decode(b uint32) float64 {
	width := 1 + f.expBits + f.mantBits
	sign := b >> (width - 1) & 1
	exp := int(b>>f.mantBits) & (1<<f.expBits - 1)
	mant := int(b) & (1<<f.mantBits - 1)
	allExp := 1<<f.expBits - 1
	switch {
	case f.nanIsNegZero && b == 1<<(width-1):
		return math.NaN()
	case f.nanAllOnes && exp == allExp && mant == 1<<f.mantBits-1:
		return math.NaN()
	case f.hasInf && exp == allExp && mant == 0:
		return math.Inf(1 - 2*int(sign))
	case f.hasInf && exp == allExp:
		return math.NaN()
	}
	var v float64
	if exp == 0 {
		v = math.Ldexp(float64(mant), 1-f.bias-f.mantBits)
	} else {
		v = math.Ldexp(float64(mant|1<<f.mantBits), exp-f.bias-f.mantBits)
	}
	if sign == 1 {
		return -v
	}
	return v
}

// round returns x rounded to the format's nearest value (ties to even).
// With saturate, values beyond the largest finite one (infinities
// included, except E5M2's infinities kept by no-saturate) become that
// largest value; without, they become infinity where the format has one
// and NaN where it has not. FLOAT4E2M1, with neither, always saturates.
func (f miniFloat) round(x float64, saturate bool) float64 {
	if math.IsNaN(x) {
		if f.noNaN {
			// FLOAT4E2M1 has no NaN; ONNX's conversion gives the pattern
			// of -0.
			return math.Copysign(0, -1)
		}
		return x
	}
	sat := saturate || f.noNaN
	over := func(neg bool) float64 {
		v := math.NaN()
		switch {
		case sat:
			v = f.max
		case f.hasInf:
			v = math.Inf(1)
		}
		if neg {
			return -v
		}
		return v
	}
	if math.IsInf(x, 0) {
		if f.hasInf && !saturate {
			return x
		}
		return over(x < 0)
	}
	a := math.Abs(x)
	if a == 0 {
		if f.nanIsNegZero {
			return 0
		}
		return x
	}
	_, e := math.Frexp(a) // a = m·2^e, m in [0.5, 1)
	e--
	if minExp := 1 - f.bias; e < minExp {
		e = minExp
	}
	quantum := math.Ldexp(1, e-f.mantBits)
	q := math.RoundToEven(a/quantum) * quantum
	if q > f.max {
		return over(x < 0)
	}
	if x < 0 {
		if q == 0 && f.nanIsNegZero {
			return 0
		}
		return -q
	}
	return q
}

// roundE8M0 rounds x to a power of two 2^k, k in [-127, 127], as FLOAT8E8M0
// holds (no zero, no sign; the largest pattern is NaN). round_mode "up"
// (ONNX's default) rounds away from zero to the next power, "down" toward
// it, "nearest" to the nearer one (ties up). With saturate, values beyond
// the range clamp to it; without, they become NaN.
func roundE8M0(x float64, saturate bool, mode string) float64 {
	if math.IsNaN(x) || x <= 0 && !saturate {
		return math.NaN()
	}
	a := math.Abs(x)
	if math.IsInf(a, 0) {
		if saturate {
			return math.Ldexp(1, 127)
		}
		return math.NaN()
	}
	if a == 0 {
		return math.Ldexp(1, -127)
	}
	frac, e := math.Frexp(a) // a = frac·2^e
	k := e - 1               // 2^k <= a < 2^(k+1)
	exact := frac == 0.5
	switch mode {
	case "down":
	case "nearest":
		if !exact && a >= 1.5*math.Ldexp(1, k) {
			k++
		}
	default: // up
		if !exact {
			k++
		}
	}
	if k > 127 || k < -127 {
		if !saturate {
			return math.NaN()
		}
		k = min(max(k, -127), 127)
	}
	return math.Ldexp(1, k)
}

// decodeSmall decodes n elements of small type t from raw, its packed
// little-endian layout (a 4-bit type two to a byte, a 2-bit type four to a
// byte, the first element in the lowest bits).
func decodeSmall(t int64, raw []byte, n int, shape []int) (*tensor.Tensor, error) {
	bits := smallBits(t)
	per := 8 / bits
	if want := (n + per - 1) / per; len(raw) != want {
		return nil, fmt.Errorf("onnx: %d elements of type %s take %d bytes of raw data, have %d", n, typeName(t), want, len(raw))
	}
	pattern := func(i int) uint32 {
		return uint32(raw[i/per]>>(uint(i%per)*uint(bits))) & (1<<bits - 1)
	}
	if lo, _, ok := smallIntRange(t); ok {
		v := make([]int8, n)
		for i := range v {
			p := int(pattern(i))
			if lo < 0 && p >= 1<<(bits-1) {
				p -= 1 << bits
			}
			v[i] = int8(p)
		}
		return tensor.FromSlice(v, shape...).To(smallHolder(t)), nil
	}
	v := make([]float32, n)
	if t == dtFloat8E8M0 {
		for i := range v {
			if p := pattern(i); p == 0xff {
				v[i] = float32(math.NaN())
			} else {
				v[i] = float32(math.Ldexp(1, int(p)-127))
			}
		}
		return tensor.FromSlice(v, shape...), nil
	}
	f, _ := miniFloatFormat(t)
	for i := range v {
		v[i] = float32(f.decode(pattern(i)))
	}
	return tensor.FromSlice(v, shape...), nil
}

// smallFromInt32Data decodes a small-type tensor stored in int32_data: one
// 8-bit value per int32, or for the 4- and 2-bit types one packed byte per
// int32.
func smallFromInt32Data(t int64, data []int32, n int, shape []int) (*tensor.Tensor, error) {
	raw := make([]byte, len(data))
	for i, v := range data {
		raw[i] = byte(v)
	}
	return decodeSmall(t, raw, n, shape)
}

// castSmall converts x to small type t: rounded to the float formats' grid
// (ties to even) with saturate deciding what overflow gives, or for the
// integer types truncated toward zero and wrapped to their width, as Cast
// converts to the wider integers. roundMode is Cast's round_mode, used by
// FLOAT8E8M0 only.
func castSmall(x *tensor.Tensor, t int64, saturate bool, roundMode string) *tensor.Tensor {
	shape := x.Shape()
	if lo, _, ok := smallIntRange(t); ok {
		var v []int64
		if x.DType().IsFloat() {
			f := x.Float64s()
			v = make([]int64, len(f))
			for i, a := range f {
				if !math.IsNaN(a) && !math.IsInf(a, 0) {
					v[i] = int64(math.Trunc(math.Mod(a, 1<<16)))
				}
			}
		} else {
			v = x.Int64s()
		}
		return tensor.FromSlice(wrapSmall(v, t, lo), shape...).To(smallHolder(t))
	}
	src := x.Float64s()
	out := make([]float32, len(src))
	if t == dtFloat8E8M0 {
		for i, a := range src {
			out[i] = float32(roundE8M0(a, saturate, roundMode))
		}
		return tensor.FromSlice(out, shape...)
	}
	f, _ := miniFloatFormat(t)
	for i, a := range src {
		out[i] = float32(f.round(a, saturate))
	}
	return tensor.FromSlice(out, shape...)
}

// smallToTensor decodes a TensorProto of a small type: raw data (or
// external data) packed as ONNX lays it out, or int32_data.
func (tp *tensorProto) smallToTensor(src dataSource, n int, shape []int) (*tensor.Tensor, error) {
	per := 8 / smallBits(tp.dataType)
	packed := (n + per - 1) / per
	raw := tp.rawData
	if tp.dataLocation == 1 {
		var err error
		if raw, err = tp.readExternal(src, packed); err != nil {
			return nil, err
		}
	}
	var t *tensor.Tensor
	var err error
	if raw != nil || tp.dataLocation == 1 {
		t, err = decodeSmall(tp.dataType, raw, n, shape)
	} else {
		t, err = smallFromInt32Data(tp.dataType, tp.int32Data, n, shape)
	}
	if err != nil {
		return nil, fmt.Errorf("tensor %s: %w", short(tp.name), err)
	}
	return t, nil
}

// wrapSmall wraps integers to the width of small integer type t, whose
// least value is lo.
func wrapSmall(v []int64, t int64, lo int) []int64 {
	span := int64(1) << smallBits(t)
	for i, a := range v {
		v[i] = ((a-int64(lo))%span+span)%span + int64(lo)
	}
	return v
}

// smallDeclared maps the values g declares of a small type (graph inputs,
// outputs, value_info, initializers) to that type; nil when there is none.
func smallDeclared(g *graphProto) map[string]int64 {
	var m map[string]int64
	note := func(name string, t int64) {
		if isSmallType(t) {
			if m == nil {
				m = map[string]int64{}
			}
			m[name] = t
		}
	}
	for _, list := range [][]*valueInfo{g.inputs, g.outputs, g.valueInfo} {
		for _, vi := range list {
			if vi.kind == "tensor" {
				note(vi.name, vi.elemType)
			}
		}
	}
	for _, tp := range g.initializers {
		note(tp.name, tp.dataType)
	}
	return m
}

// smallInputs returns the small types of the named inputs, by index; nil
// when none has one.
func smallInputs(names []string, declared map[string]int64) map[int]int64 {
	var m map[int]int64
	for i, name := range names {
		if t, ok := declared[name]; ok {
			if m == nil {
				m = map[int]int64{}
			}
			m[i] = t
		}
	}
	return m
}

// checkSmallValues reports an input fed for a graph input declared of
// small type t whose holding tensor has a value t cannot represent (a
// float off the format's grid or beyond its range, an integer out of its
// range), naming the first one.
func checkSmallValues(x *tensor.Tensor, t int64) error {
	if lo, hi, ok := smallIntRange(t); ok {
		for i, v := range x.Int64s() {
			if v < int64(lo) || v > int64(hi) {
				return fmt.Errorf("element %d is %d, outside %s's range [%d, %d]", i, v, typeName(t), lo, hi)
			}
		}
		return nil
	}
	f, _ := miniFloatFormat(t)
	for i, v := range x.Float64s() {
		var r float64
		if t == dtFloat8E8M0 {
			r = roundE8M0(v, false, "up")
		} else {
			r = f.round(v, false)
		}
		if r != v && !(math.IsNaN(r) && math.IsNaN(v)) {
			return fmt.Errorf("element %d is %v, which %s cannot represent (nearest %v); round it to the type first", i, v, typeName(t), r)
		}
	}
	return nil
}
