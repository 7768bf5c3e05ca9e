//go:build !amd64

package gemm

// genericKernel is the portable pure-Go micro-kernel, the only one on
// architectures other than amd64: the 4×4 tile, for their 32 float
// registers.
var genericKernel = generic4x4
