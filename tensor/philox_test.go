package tensor

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Known answers of Philox4x32-10 published with the Random123 library
// (kat_vectors): counter, key → output.
func TestPhilox4x32KnownAnswers(t *testing.T) {
	cases := []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff}, [4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0}, [4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, Philox4x32(c.ctr, c.key))
	}
}

func TestPhiloxUniform(t *testing.T) {
	// Deterministic, in [0, 1), roughly uniform, and different per seed.
	const n = 1 << 16
	sum, same := 0.0, 0
	for i := int64(0); i < n; i++ {
		u := PhiloxUniform(42, i)
		require.GreaterOrEqual(t, u, 0.0)
		require.Less(t, u, 1.0)
		require.Equal(t, u, PhiloxUniform(42, i))
		sum += u
		if u == PhiloxUniform(43, i) {
			same++
		}
	}
	assert.InDelta(t, 0.5, sum/n, 0.01)
	assert.Less(t, same, 10)
	// Word i%4 of the block at counter i/4.
	w := Philox4x32([4]uint32{1, 0, 0, 0}, [2]uint32{7, 0})
	assert.Equal(t, float64(w[2]>>8)/(1<<24), PhiloxUniform(7, 6))
}

func TestDropoutMaskOnCPUIsTheHostMask(t *testing.T) {
	a := DropoutMaskOn(CPU, NewGenerator(3), []int{5, 7}, 0.3, Float32)
	b := DropoutMask(NewGenerator(3), []int{5, 7}, 0.3, Float32)
	assert.Equal(t, b.Float32s(), a.Float32s())
	for _, v := range a.Float32s() {
		assert.True(t, v == 0 || math.Abs(float64(v)-1/0.7) < 1e-6, "%v", v)
	}
}
