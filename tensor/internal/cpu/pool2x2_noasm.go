//go:build !amd64 || purego

package cpu

// maxPool2x2Plane32 runs maxPool2x2Go.
func maxPool2x2Plane32(out []float32, oidx []int64, plane []float32, oh, ow, w int) {
	maxPool2x2Go(out, oidx, plane, oh, ow, w)
}
