//go:build amd64 && !purego

package cpu

import (
	"unsafe"

	"github.com/emberml/ember/tensor/internal/isa"
)

// winoInputAVX512 is winoInputGo with AVX-512 gathers, 16 lanes per
// vector.
//
//go:noescape
func winoInputAVX512(x *float32, planeStride, w int, gr *winoGroup, out *float32, rowStride, vs, nc int)

// winoOutputAVX512 is winoOutputGo with AVX-512 gathers and scatters; res
// is nil for no residual and relu is 0 or 1.
//
//go:noescape
func winoOutputAVX512(m *float32, ms, mk int, dst *float32, planeStride, ow int, gr *winoGroup, bias, res *float32, relu, nk int)

// winoVector reports whether the transform kernels have a vector routine
// on this CPU.
func winoVector() bool { return isa.Has(isa.AVX512) }

// winoInput runs the input transform kernel, in assembly when
// winoVector; see winoInputGo. The caller guarantees that every read and
// write lies in x and out.
func winoInput(x []float32, planeStride, w int, gr *winoGroup, out []float32, rowStride, vs, nc int) {
	if !winoVector() {
		winoInputGo(x, planeStride, w, gr, out, rowStride, vs, nc)
		return
	}
	winoInputAVX512(unsafe.SliceData(x), planeStride, w, gr, unsafe.SliceData(out), rowStride, vs, nc)
}

// winoOutput runs the output transform kernel, in assembly when
// winoVector; see winoOutputGo. The caller guarantees that every read and
// write lies in m, dst and res.
func winoOutput(m []float32, ms, mk int, dst []float32, planeStride, ow int, gr *winoGroup, bias, res []float32, relu bool, nk int) {
	if !winoVector() {
		winoOutputGo(m, ms, mk, dst, planeStride, ow, gr, bias, res, relu, nk)
		return
	}
	var rp *float32
	if res != nil {
		rp = unsafe.SliceData(res)
	}
	winoOutputAVX512(unsafe.SliceData(m), ms, mk, unsafe.SliceData(dst), planeStride, ow, gr, unsafe.SliceData(bias), rp, b2i(relu), nk)
}

// b2i is 1 for true and 0 for false.
func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
