package reduce

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestCopyStreamingMatchesCopy compares CopyStreaming with copy on random
// bytes for every length 1…67 and lengths around the kernel's blocks, at
// every destination alignment mod 16, into buffers poisoned with NaNs so
// that a missed byte or a write past the end shows.
func TestCopyStreamingMatchesCopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	nan := math.Float32bits(float32(math.NaN()))
	lens := []int{0}
	for n := 1; n <= 67; n++ {
		lens = append(lens, n, 4096+n, 80+n)
	}
	for _, n := range lens {
		for shift := range streamAlign {
			src := make([]byte, n+3)
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
			poisoned := make([]float32, (n+shift+streamAlign+8)/4+1)
			for i := range poisoned {
				poisoned[i] = math.Float32frombits(nan)
			}
			buf := unsafe.Slice((*byte)(unsafe.Pointer(&poisoned[0])), 4*len(poisoned))
			want := append([]byte(nil), buf...)
			copy(want[shift:shift+n], src)
			got := CopyStreaming(buf[shift:shift+n], src)
			require.Equal(t, n, got, "n %d shift %d", n, shift)
			require.Equal(t, want, buf, "n %d shift %d", n, shift)
		}
	}
}

// TestCopyStreamingShortSource copies no more than the source holds.
func TestCopyStreamingShortSource(t *testing.T) {
	dst := make([]byte, 300)
	src := make([]byte, 200)
	for i := range src {
		src[i] = byte(i + 1)
	}
	require.Equal(t, 200, CopyStreaming(dst, src))
	require.Equal(t, src, dst[:200])
	require.Equal(t, make([]byte, 100), dst[200:])
}
