package vec

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Known answers of Philox4x32-10 from the Random123 distribution (kat_vectors).
func TestPhiloxBlockKnownAnswers(t *testing.T) {
	assert.Equal(t, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}, PhiloxBlock(0, 0, 0))
}

// Element i of a mask depends only on (seed, i): drawing a range in pieces
// gives the range drawn whole, and each element follows the rule on the
// words of PhiloxBlock.
func TestPhiloxMaskRule(t *testing.T) {
	const n, seed, limit = 203, 77, 5 << 21
	whole := make([]float64, n)
	PhiloxMask64(whole, 0, seed, limit, 2)
	for i, v := range whole {
		w := PhiloxBlock(uint32(i/4), 0, seed)[i%4]
		want := 0.0
		if w>>8 < limit {
			want = 2
		}
		require.Equal(t, want, v, "element %d", i)
	}
	pieces := make([]float64, n)
	for lo := 0; lo < n; lo += 12 {
		PhiloxMask64(pieces[lo:min(lo+12, n)], uint64(lo), seed, limit, 2)
	}
	assert.Equal(t, whole, pieces)
	assert.Panics(t, func() { PhiloxMask64(pieces, 2, seed, limit, 2) })
	assert.Panics(t, func() { PhiloxDropout32(make([]float32, 4), make([]float32, 3), make([]float32, 4), 0, seed, limit, 2) })
}

// The assembly kernels (where the CPU has them) draw what the pure-Go twin
// does (and the fused one multiplies by it), at odd lengths and offsets, with NaN-poisoned outputs, and across a
// wrap of the low counter word.
func TestPhiloxMask32AsmMatchesGo(t *testing.T) {
	if philoxMask32Kernel == nil || philoxDropout32Kernel == nil {
		t.Skip("no assembly kernel in this build or on this CPU")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	poison := float32(math.NaN())
	firsts := []uint64{0, 4, 4 * 1001, 4 * (1<<32 - 5), 4 * (3<<32 - 17)}
	for _, first := range firsts {
		for _, n := range append([]int{64, 128, 640, 1000}, sizes1to67()...) {
			seed := rng.Uint64()
			limit := rng.Uint32N(1<<24 + 1)
			got := make([]float32, n)
			want := make([]float32, n)
			for i := range got {
				got[i], want[i] = poison, poison
			}
			PhiloxMask32(got, first, seed, limit, 1.25)
			ks := philoxKeys(seed)
			for lo := 0; lo < n; {
				// The twin needs runs that share the high counter word.
				g := (first + uint64(lo)) / 4
				hi := min(n, lo+int((1<<32-g%(1<<32))*4))
				philoxMaskGo(want[lo:hi], first+uint64(lo), &ks, limit, float32(1.25))
				lo = hi
			}
			require.Equal(t, want, got, "first %d n %d", first, n)

			// The fused kernel writes the same mask and x times it.
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			mask, out := make([]float32, n), make([]float32, n)
			for i := range mask {
				mask[i], out[i] = poison, poison
			}
			PhiloxDropout32(mask, x, out, first, seed, limit, 1.25)
			require.Equal(t, want, mask, "dropout mask: first %d n %d", first, n)
			for i := range x {
				require.Equal(t, x[i]*want[i], out[i], "dropout output: first %d n %d element %d", first, n, i)
			}
		}
	}
}

func sizes1to67() []int {
	s := make([]int, 67)
	for i := range s {
		s[i] = i + 1
	}
	return s
}

func BenchmarkPhiloxMask32(b *testing.B) {
	dst := make([]float32, 1<<20)
	b.SetBytes(int64(4 * len(dst)))
	for b.Loop() {
		PhiloxMask32(dst, 0, 42, 15099495, 1/0.9)
	}
}
