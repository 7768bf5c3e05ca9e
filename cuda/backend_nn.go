//go:build cuda

package cuda

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// The neural-network kernels (internal/kernels/nn.cu): convolution
// lowering, pooling, softmax and normalization statistics, one
// instantiation per float dtype.

// nnKernelBases are the kernel names of nn.cu without their dtype suffix.
var nnKernelBases = []string{
	"im2col", "col2im", "max_pool2d", "plane_gather", "plane_scatter_add",
	"avg_pool2d", "avg_pool2d_backward", "adaptive_avg_pool2d", "adaptive_avg_pool2d_backward",
	"softmax_lanes", "softmax_rows", "moments", "scale_shift", "norm_backward",
}

// nnKernels lists the kernels this file launches.
var nnKernels = nnFloatNames(nnKernelBases)

// nnFloatNames returns every base name with the _f32 and _f64 suffixes.
func nnFloatNames(bases []string) []string {
	names := make([]string, 0, 2*len(bases))
	for _, s := range []string{"_f32", "_f64"} {
		for _, base := range bases {
			names = append(names, base+s)
		}
	}
	return names
}

// nnThreads is NN_THREADS in nn.cu: the block size of the kernels that
// reduce with one block per row or per channel.
const nnThreads = 256

// maxReduceBlocks caps the grid of the one-block-per-row kernels, which
// loop over the rows with a grid stride.
const maxReduceBlocks = 1 << 16

// convGeom mirrors struct ConvGeom in internal/kernels/nn.cu: the fields of
// tensor.ConvGeom, in the same order, as int64. Keep the two in sync.
type convGeom struct {
	N, C, H, W           int64
	KH, KW               int64
	StrideH, StrideW     int64
	PadH, PadW           int64
	DilationH, DilationW int64
	OH, OW               int64
}

func makeConvGeom(g tensor.ConvGeom) convGeom {
	return convGeom{
		N: int64(g.N), C: int64(g.C), H: int64(g.H), W: int64(g.W),
		KH: int64(g.KH), KW: int64(g.KW),
		StrideH: int64(g.StrideH), StrideW: int64(g.StrideW),
		PadH: int64(g.PadH), PadW: int64(g.PadW),
		DilationH: int64(g.DilationH), DilationW: int64(g.DilationW),
		OH: int64(g.OH), OW: int64(g.OW),
	}
}

// poolGeom mirrors struct PoolGeom in internal/kernels/nn.cu: the fields of
// tensor.PoolGeom, in the same order, as int64 (CountIncludePad as 0 or 1).
// Keep the two in sync.
type poolGeom struct {
	Planes, H, W         int64
	KH, KW               int64
	StrideH, StrideW     int64
	PadH, PadW           int64
	DilationH, DilationW int64
	OH, OW               int64
	CountIncludePad      int64
}

func makePoolGeom(g tensor.PoolGeom) poolGeom {
	p := poolGeom{
		Planes: int64(g.Planes), H: int64(g.H), W: int64(g.W),
		KH: int64(g.KH), KW: int64(g.KW),
		StrideH: int64(g.StrideH), StrideW: int64(g.StrideW),
		PadH: int64(g.PadH), PadW: int64(g.PadW),
		DilationH: int64(g.DilationH), DilationW: int64(g.DilationW),
		OH: int64(g.OH), OW: int64(g.OW),
	}
	if g.CountIncludePad {
		p.CountIncludePad = 1
	}
	return p
}

// nnFloatKernel is the instantiation of base for the dtype of b, panicking as
// the CPU backend does for dtypes other than Float32 and Float64.
func nnFloatKernel(base string, b tensor.Buffer) string {
	switch dt := b.DType(); dt {
	case tensor.Float32:
		return base + "_f32"
	case tensor.Float64:
		return base + "_f64"
	default:
		panic(fmt.Sprintf("tensor: %s kernel on %s data; want float32 or float64", base, dt))
	}
}

// nnPtr is the device address of element 0 of b, or 0 (a null pointer)
// for a nil buffer.
func (b *Backend) nnPtr(buf tensor.Buffer) uint64 {
	if buf == nil {
		return 0
	}
	return b.ptr(buf, 0)
}

// nnReduceGrid is the grid of a kernel that gives each of rows rows a block.
func nnReduceGrid(rows int) [3]uint32 {
	return [3]uint32{uint32(min(rows, maxReduceBlocks)), 1, 1}
}

// Im2Col implements tensor.NNKernels.
func (b *Backend) Im2Col(dst, src tensor.Buffer, srcOff int, g tensor.ConvGeom) {
	k := nnFloatKernel("im2col", src)
	if n := g.C * g.KH * g.KW * g.N * g.OH * g.OW; n > 0 {
		b.launch(k, n, b.ptr(dst, 0), b.ptr(src, srcOff), makeConvGeom(g))
	}
}

// Col2Im implements tensor.NNKernels. Each input pixel sums the matrix
// elements that read it, in the CPU's order, with no atomics.
func (b *Backend) Col2Im(dst, src tensor.Buffer, g tensor.ConvGeom) {
	k := nnFloatKernel("col2im", src)
	if n := g.N * g.C * g.H * g.W; n > 0 {
		b.launch(k, n, b.ptr(dst, 0), b.ptr(src, 0), makeConvGeom(g))
	}
}

// MaxPool2d implements tensor.NNKernels. A nil indices buffer skips the
// indices.
func (b *Backend) MaxPool2d(dst, indices, src tensor.Buffer, srcOff int, g tensor.PoolGeom) {
	k := nnFloatKernel("max_pool2d", src)
	if n := g.Planes * g.OH * g.OW; n > 0 {
		b.launch(k, n, b.ptr(dst, 0), b.nnPtr(indices), b.ptr(src, srcOff), makePoolGeom(g))
	}
}

// PlaneGather implements tensor.NNKernels. An index outside [0, n) reads
// as zero.
func (b *Backend) PlaneGather(dst, src tensor.Buffer, srcOff int, indices tensor.Buffer, planes, n, m int) {
	k := nnFloatKernel("plane_gather", src)
	if total := planes * m; total > 0 {
		b.launch(k, total, b.ptr(dst, 0), b.ptr(src, srcOff), b.ptr(indices, 0), int64(planes), int64(n), int64(m))
	}
}

// PlaneScatterAdd implements tensor.NNKernels with atomic adds, so sums
// into repeated targets may round in any order. Indices outside [0, n) are
// dropped.
func (b *Backend) PlaneScatterAdd(dst, src tensor.Buffer, srcOff int, indices tensor.Buffer, planes, n, m int) {
	k := nnFloatKernel("plane_scatter_add", src)
	if total := planes * m; total > 0 {
		b.launch(k, total, b.ptr(dst, 0), b.ptr(src, srcOff), b.ptr(indices, 0), int64(planes), int64(n), int64(m))
	}
}

// AvgPool2d implements tensor.NNKernels.
func (b *Backend) AvgPool2d(dst, src tensor.Buffer, srcOff int, g tensor.PoolGeom) {
	k := nnFloatKernel("avg_pool2d", src)
	if n := g.Planes * g.OH * g.OW; n > 0 {
		b.launch(k, n, b.ptr(dst, 0), b.ptr(src, srcOff), makePoolGeom(g))
	}
}

// AvgPool2dBackward implements tensor.NNKernels: each input pixel adds the
// shares of the windows covering it, in the CPU's order, with no atomics.
func (b *Backend) AvgPool2dBackward(dst, grad tensor.Buffer, gradOff int, g tensor.PoolGeom) {
	k := nnFloatKernel("avg_pool2d_backward", grad)
	if n := g.Planes * g.H * g.W; n > 0 {
		b.launch(k, n, b.ptr(dst, 0), b.ptr(grad, gradOff), makePoolGeom(g))
	}
}

// AdaptiveAvgPool2d implements tensor.NNKernels.
func (b *Backend) AdaptiveAvgPool2d(dst, src tensor.Buffer, srcOff int, planes, h, w, oh, ow int) {
	k := nnFloatKernel("adaptive_avg_pool2d", src)
	if n := planes * oh * ow; n > 0 {
		b.launch(k, n, b.ptr(dst, 0), b.ptr(src, srcOff), int64(planes), int64(h), int64(w), int64(oh), int64(ow))
	}
}

// AdaptiveAvgPool2dBackward implements tensor.NNKernels with one thread per
// input pixel (no atomics).
func (b *Backend) AdaptiveAvgPool2dBackward(dst, grad tensor.Buffer, gradOff int, planes, h, w, oh, ow int) {
	k := nnFloatKernel("adaptive_avg_pool2d_backward", grad)
	if n := planes * h * w; n > 0 && oh > 0 && ow > 0 {
		b.launch(k, n, b.ptr(dst, 0), b.ptr(grad, gradOff), int64(planes), int64(h), int64(w), int64(oh), int64(ow))
	}
}

// Softmax implements tensor.NNKernels, accumulating in float64: a block per
// row when the reduced axis is contiguous (inner == 1), else a thread per
// (outer, inner) lane.
func (b *Backend) Softmax(log bool, dst, src tensor.Buffer, srcOff int, outer, n, inner int) {
	lg := int32(0)
	if log {
		lg = 1
	}
	if inner == 1 {
		k := nnFloatKernel("softmax_rows", src)
		if outer > 0 && n > 0 {
			b.launchGrid(k, nnReduceGrid(outer), [3]uint32{nnThreads, 1, 1}, 0, lg, b.ptr(dst, 0), b.ptr(src, srcOff), int64(outer), int64(n))
		}
		return
	}
	k := nnFloatKernel("softmax_lanes", src)
	if outer*inner > 0 && n > 0 {
		b.launch(k, outer*inner, lg, b.ptr(dst, 0), b.ptr(src, srcOff), int64(outer), int64(n), int64(inner))
	}
}

// Moments implements tensor.NNKernels: a block per middle index, two passes
// in float64.
func (b *Backend) Moments(mean, variance, src tensor.Buffer, srcOff int, outer, n, inner int) {
	k := nnFloatKernel("moments", src)
	if n > 0 {
		b.launchGrid(k, nnReduceGrid(n), [3]uint32{nnThreads, 1, 1}, 0, b.ptr(mean, 0), b.ptr(variance, 0), b.ptr(src, srcOff), int64(outer), int64(n), int64(inner))
	}
}

// ScaleShift implements tensor.NNKernels.
func (b *Backend) ScaleShift(dst, src tensor.Buffer, srcOff int, scale, shift tensor.Buffer, outer, n, inner int) {
	k := nnFloatKernel("scale_shift", src)
	if total := outer * n * inner; total > 0 {
		b.launch(k, total, b.ptr(dst, 0), b.ptr(src, srcOff), b.nnPtr(scale), b.nnPtr(shift), int64(outer), int64(n), int64(inner))
	}
}

// NormBackward implements tensor.NNKernels: a block per middle index, sums
// in float64.
func (b *Backend) NormBackward(dx, sumG, sumGX, grad tensor.Buffer, gradOff int, x tensor.Buffer, xOff int, mean, rstd, scale tensor.Buffer, outer, n, inner int) {
	k := nnFloatKernel("norm_backward", grad)
	if n > 0 {
		b.launchGrid(k, nnReduceGrid(n), [3]uint32{nnThreads, 1, 1}, 0,
			b.nnPtr(dx), b.nnPtr(sumG), b.nnPtr(sumGX), b.ptr(grad, gradOff), b.ptr(x, xOff),
			b.nnPtr(mean), b.nnPtr(rstd), b.nnPtr(scale), int64(outer), int64(n), int64(inner))
	}
}
