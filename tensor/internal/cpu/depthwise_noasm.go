//go:build !amd64 || purego

package cpu

// depthwiseForward32 reports false: DepthwiseForward runs its Go loops.
func depthwiseForward32(_, _, _, _ []float32, _ ConvGeom, _, _ int, _ bool) bool { return false }

// depthwiseBackwardInput32 reports false: DepthwiseBackwardInput runs its
// Go loops.
func depthwiseBackwardInput32(_, _, _ []float32, _ ConvGeom, _, _ int) bool { return false }

// depthwiseBackwardWeight32 reports false: DepthwiseBackwardWeight runs its
// Go loops.
func depthwiseBackwardWeight32(_, _, _ []float32, _ ConvGeom, _, _ int) bool { return false }
