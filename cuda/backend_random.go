//go:build cuda

package cuda

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// randomKernels lists the kernels this file launches (internal/kernels/random.cu).
var randomKernels = []string{"dropout_mask_f32", "dropout_mask_f64"}

// DropoutMask implements tensor.RandomKernels: element i of dst is scale
// where tensor.PhiloxUniform(seed, i) < keep and 0 elsewhere, drawn on the
// device with no host transfer.
func (b *Backend) DropoutMask(dst tensor.Buffer, keep, scale float64, seed uint64) {
	n := dst.Len()
	groups := (n + 3) / 4
	switch dst.DType() {
	case tensor.Float32:
		b.launch("dropout_mask_f32", groups, b.ptr(dst, 0), int64(n), keep, float32(scale), seed)
	case tensor.Float64:
		b.launch("dropout_mask_f64", groups, b.ptr(dst, 0), int64(n), keep, scale, seed)
	default:
		panic(fmt.Sprintf("tensor.DropoutMask: dtype %s; want float32 or float64", dst.DType()))
	}
}

var _ tensor.RandomKernels = (*Backend)(nil)
