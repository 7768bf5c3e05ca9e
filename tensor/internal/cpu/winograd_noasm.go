//go:build !amd64 || purego

package cpu

// winoVector reports false: this build has no vector transform kernels.
func winoVector() bool { return false }

// winoInput runs winoInputGo.
func winoInput(x []float32, planeStride, w int, gr *winoGroup, out []float32, rowStride, vs, nc int) {
	winoInputGo(x, planeStride, w, gr, out, rowStride, vs, nc)
}

// winoOutput runs winoOutputGo.
func winoOutput(m []float32, ms, mk int, dst []float32, planeStride, ow int, gr *winoGroup, bias, res []float32, relu bool, nk int) {
	winoOutputGo(m, ms, mk, dst, planeStride, ow, gr, bias, res, relu, nk)
}
