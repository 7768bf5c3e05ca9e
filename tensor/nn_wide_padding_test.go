package tensor

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConvPaddingWiderThanInput covers kernel taps whose whole valid range
// lies in the padding (an input narrower than the padding): Im2Col and
// Col2Im must treat the empty range as zeros instead of slicing before the
// row. Values checked by hand: only the centre tap of the 1×5 kernel sees
// the single input pixel.
func TestConvPaddingWiderThanInput(t *testing.T) {
	x := FromSlice([]float32{3}, 1, 1, 1, 1)
	w := FromSlice([]float32{1, 2, 5, 7, 11}, 1, 1, 1, 5)
	y := Conv2d(x, w, nil, Conv2dOptions{Padding: [2]int{0, 2}})
	require.Equal(t, []int{1, 1, 1, 1}, y.Shape())
	require.Equal(t, []float32{15}, y.Float32s())

	// The transposed convolution runs Col2Im over the same geometry.
	g := FromSlice([]float32{2}, 1, 1, 1, 1)
	dx := ConvTranspose2d(g, w, nil, ConvTranspose2dOptions{Padding: [2]int{0, 2}})
	require.Equal(t, []int{1, 1, 1, 1}, dx.Shape())
	require.Equal(t, []float32{10}, dx.Float32s())
}
