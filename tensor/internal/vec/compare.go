package vec

import "fmt"

// CmpOp names a comparison.
type CmpOp uint8

// The comparisons Compare and CompareConst implement. Every comparison with
// NaN is false except CmpNe, which is true, as in IEEE 754.
const (
	CmpEq CmpOp = iota
	CmpNe
	CmpLt
	CmpLe
	CmpGt
	CmpGe
)

// Swap returns the comparison that gives the same answers with its
// operands exchanged: a < b is b > a.
func (op CmpOp) Swap() CmpOp {
	switch op {
	case CmpLt:
		return CmpGt
	case CmpLe:
		return CmpGe
	case CmpGt:
		return CmpLt
	case CmpGe:
		return CmpLe
	}
	return op
}

// Compare sets dst[i] = a[i] op b[i].
func Compare(op CmpOp, dst []bool, a, b []float32) {
	if len(dst) != len(a) || len(a) != len(b) {
		panic(fmt.Sprintf("vec: Compare: len(dst) = %d, len(a) = %d, len(b) = %d; they must be equal", len(dst), len(a), len(b)))
	}
	b = b[:len(a)]
	dst = dst[:len(a)]
	switch op {
	case CmpEq:
		for i, v := range a {
			dst[i] = v == b[i]
		}
	case CmpNe:
		for i, v := range a {
			dst[i] = v != b[i]
		}
	case CmpLt:
		for i, v := range a {
			dst[i] = v < b[i]
		}
	case CmpLe:
		for i, v := range a {
			dst[i] = v <= b[i]
		}
	case CmpGt:
		for i, v := range a {
			dst[i] = v > b[i]
		}
	case CmpGe:
		for i, v := range a {
			dst[i] = v >= b[i]
		}
	default:
		panic(fmt.Sprintf("vec: Compare: unknown comparison %d", op))
	}
}

// CompareConst sets dst[i] = a[i] op c.
func CompareConst(op CmpOp, dst []bool, a []float32, c float32) {
	if len(dst) != len(a) {
		panic(fmt.Sprintf("vec: CompareConst: len(dst) = %d, len(a) = %d; they must be equal", len(dst), len(a)))
	}
	dst = dst[:len(a)]
	switch op {
	case CmpEq:
		for i, v := range a {
			dst[i] = v == c
		}
	case CmpNe:
		for i, v := range a {
			dst[i] = v != c
		}
	case CmpLt:
		for i, v := range a {
			dst[i] = v < c
		}
	case CmpLe:
		for i, v := range a {
			dst[i] = v <= c
		}
	case CmpGt:
		for i, v := range a {
			dst[i] = v > c
		}
	case CmpGe:
		for i, v := range a {
			dst[i] = v >= c
		}
	default:
		panic(fmt.Sprintf("vec: CompareConst: unknown comparison %d", op))
	}
}

// FromBool sets dst[i] to 1 where src[i] is true and 0 elsewhere.
func FromBool(dst []float32, src []bool) {
	if len(dst) != len(src) {
		panic(fmt.Sprintf("vec: FromBool: len(dst) = %d, len(src) = %d; they must be equal", len(dst), len(src)))
	}
	dst = dst[:len(src)]
	for i, v := range src {
		var f float32
		if v {
			f = 1
		}
		dst[i] = f
	}
}
