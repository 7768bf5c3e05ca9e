package vec

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCompare(t *testing.T) {
	nan := float32(math.NaN())
	a := []float32{1, 2, 3, nan, -0.0, 5}
	b := []float32{2, 2, 1, 1, 0, nan}
	tests := []struct {
		op        CmpOp
		want      []bool
		wantConst []bool // a op 2
	}{
		{CmpEq, []bool{false, true, false, false, true, false}, []bool{false, true, false, false, false, false}},
		{CmpNe, []bool{true, false, true, true, false, true}, []bool{true, false, true, true, true, true}},
		{CmpLt, []bool{true, false, false, false, false, false}, []bool{true, false, false, false, true, false}},
		{CmpLe, []bool{true, true, false, false, true, false}, []bool{true, true, false, false, true, false}},
		{CmpGt, []bool{false, false, true, false, false, false}, []bool{false, false, true, false, false, true}},
		{CmpGe, []bool{false, true, true, false, true, false}, []bool{false, true, true, false, false, true}},
	}
	for _, tc := range tests {
		got := make([]bool, len(a))
		Compare(tc.op, got, a, b)
		assert.Equal(t, tc.want, got, "Compare %d", tc.op)
		CompareConst(tc.op, got, a, 2)
		assert.Equal(t, tc.wantConst, got, "CompareConst %d", tc.op)
		Compare(tc.op.Swap(), got, b, a)
		assert.Equal(t, tc.want, got, "swapped %d", tc.op)
	}
	assert.Panics(t, func() { Compare(CmpEq, make([]bool, 2), a, b) })
	f := make([]float32, 3)
	FromBool(f, []bool{true, false, true})
	assert.Equal(t, []float32{1, 0, 1}, f)
}
