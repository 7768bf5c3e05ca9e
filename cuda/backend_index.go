//go:build cuda

package cuda

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/emberml/ember/tensor"
)

// The index kernels (internal/kernels/index.cu): gathers, scatters and the
// masked copies. Kernels that only move elements are instantiated per
// element size, accumulating scatters per arithmetic type, and both per
// index type.

// Mask scan geometry; MASK_THREADS and MASK_CHUNK in index.cu.
const (
	ixMaskThreads = 256
	ixMaskChunk   = ixMaskThreads * 8
)

// ixDTypes are the dtypes the index kernels move; ixIndexTypes the dtypes
// of index operands.
var (
	ixDTypes     = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32, tensor.Bool, tensor.Float16, tensor.BFloat16}
	ixIndexTypes = []tensor.DType{tensor.Int64, tensor.Int32}
)

// indexKernels lists the kernels this file launches.
var indexKernels = indexKernelNames()

func indexKernelNames() []string {
	names := []string{"index_bad_init", "mask_count", "mask_scan"}
	for _, it := range ixIndexTypes {
		names = append(names, "index_check_"+ixTypeSuffix(it))
		for _, dt := range ixDTypes {
			names = append(names, ixGatherKernel(dt, it), ixScatterKernel(dt, it, false))
			if dt != tensor.Float16 && dt != tensor.BFloat16 {
				names = append(names, ixScatterKernel(dt, it, true))
			}
		}
	}
	for _, dt := range ixDTypes {
		names = append(names, "masked_select_"+ixSizeSuffix(dt), "masked_scatter_"+ixSizeSuffix(dt))
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// ixSizeSuffix names the unsigned type of dt's element size, the suffix of the
// kernels that copy elements without looking at them.
func ixSizeSuffix(dt tensor.DType) string {
	switch dt.Size() {
	case 1:
		return "u8"
	case 2:
		return "u16"
	case 4:
		return "u32"
	case 8:
		return "u64"
	}
	panic(fmt.Sprintf("cuda: no index kernels for dtype %s", dt))
}

// ixTypeSuffix names an index dtype in kernel names.
func ixTypeSuffix(dt tensor.DType) string {
	switch dt {
	case tensor.Int64:
		return "i64"
	case tensor.Int32:
		return "i32"
	}
	panic(fmt.Sprintf("cuda: index buffer of dtype %s; want int64 or int32", dt))
}

func ixGatherKernel(dt, it tensor.DType) string {
	return "gather_" + ixSizeSuffix(dt) + "_" + ixTypeSuffix(it)
}

// ixScatterKernel names the plain or accumulating scatter of dt. Accumulating
// into Bool is a logical or; Float16 and BFloat16 do not accumulate.
func ixScatterKernel(dt, it tensor.DType, accumulate bool) string {
	if !accumulate {
		return "scatter_" + ixSizeSuffix(dt) + "_" + ixTypeSuffix(it)
	}
	var s string
	switch dt {
	case tensor.Float32:
		s = "scatter_add_f32"
	case tensor.Float64:
		s = "scatter_add_f64"
	case tensor.Int64:
		s = "scatter_add_i64"
	case tensor.Int32:
		s = "scatter_add_i32"
	case tensor.Bool:
		s = "scatter_or_u8"
	default:
		panic(fmt.Sprintf("tensor: accumulating scatter on %s storage; convert to Float32 first", dt))
	}
	return s + "_" + ixTypeSuffix(it)
}

// ixElems is the number of elements of shape.
func ixElems(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// ixAxisView is the view of an operand walked over the index shape: the
// operand's strides with the indexed axis zeroed, and that axis's stride.
func ixAxisView(shape []int, l tensor.Layout, axis int) (strided, int64) {
	st := slices.Clone(l.Strides)
	as := st[axis]
	st[axis] = 0
	return view(tensor.Layout{Shape: shape, Strides: st, Offset: l.Offset}), int64(as)
}

// ixBadWord allocates the device word in which kernels report the position of
// the first out-of-range index, set to "none".
func (b *Backend) ixBadWord() (uint64, func()) {
	addr, release := b.scratch(8)
	b.launch("index_bad_init", 1, addr)
	return addr, release
}

// ixError waits for the stream and turns the bad-index word into the
// *tensor.IndexError the CPU would return (its first bad index in row-major
// order over il), or nil.
func (b *Backend) ixError(bad uint64, idx tensor.Buffer, il tensor.Layout, bound int) error {
	b.sync()
	var w [8]byte
	b.toHostBytes(bad, w[:])
	pos := binary.LittleEndian.Uint64(w[:])
	if pos == ^uint64(0) {
		return nil
	}
	off := il.Offset
	rest := int(pos)
	for d := len(il.Shape) - 1; d >= 0; d-- {
		off += rest % il.Shape[d] * il.Strides[d]
		rest /= il.Shape[d]
	}
	var v int64
	switch idx.DType() {
	case tensor.Int64:
		b.toHostBytes(b.ptr(idx, off), w[:])
		v = int64(binary.LittleEndian.Uint64(w[:]))
	default:
		b.toHostBytes(b.ptr(idx, off), w[:4])
		v = int64(int32(binary.LittleEndian.Uint32(w[:4])))
	}
	return &tensor.IndexError{Index: v, Size: bound}
}

// Gather implements tensor.IndexKernels. Out-of-range indices are found
// during the gather itself (dst is a fresh output).
func (b *Backend) Gather(dst, src tensor.Buffer, sl tensor.Layout, axis int, idx tensor.Buffer, il tensor.Layout) error {
	n := ixElems(il.Shape)
	if n == 0 {
		return nil
	}
	bound := sl.Shape[axis]
	kernel := ixGatherKernel(dst.DType(), idx.DType())
	sv, as := ixAxisView(il.Shape, sl, axis)
	bad, release := b.ixBadWord()
	defer release()
	b.launch(kernel, n, b.ptr(dst, 0), b.ptr(src, 0), sv, as, int64(bound), b.ptr(idx, 0), view(il), int64(n), bad)
	return b.ixError(bad, idx, il, bound)
}

// Scatter implements tensor.IndexKernels. Every index is checked before the
// first write, so an out-of-range one leaves dst untouched. Accumulation
// uses atomic adds, so float sums over repeated targets may round in any
// order.
func (b *Backend) Scatter(dst tensor.Buffer, dl tensor.Layout, axis int, idx tensor.Buffer, il tensor.Layout, src tensor.Buffer, sl tensor.Layout, accumulate bool) error {
	kernel := ixScatterKernel(dst.DType(), idx.DType(), accumulate)
	n := ixElems(il.Shape)
	if n == 0 {
		return nil
	}
	bound := dl.Shape[axis]
	iv := view(il)
	bad, release := b.ixBadWord()
	defer release()
	b.launch("index_check_"+ixTypeSuffix(idx.DType()), n, b.ptr(idx, 0), iv, int64(n), int64(bound), bad)
	if err := b.ixError(bad, idx, il, bound); err != nil {
		return err
	}
	dv, as := ixAxisView(il.Shape, dl, axis)
	b.launch(kernel, n, b.ptr(dst, 0), dv, as, int64(bound), b.ptr(idx, 0), iv, b.ptr(src, 0), view(sl), int64(n))
	return nil
}

// ixMaskOffsets counts the true elements of each chunk of the mask view ml
// (n positions) and scans the counts, returning the device array of each
// chunk's first output rank and the number of chunks.
func (b *Backend) ixMaskOffsets(mask tensor.Buffer, ml tensor.Layout, n int) (uint64, uint32, func()) {
	nb := (n + ixMaskChunk - 1) / ixMaskChunk
	counts, release := b.scratch(8 * nb)
	block := [3]uint32{ixMaskThreads, 1, 1}
	b.launchGrid("mask_count", [3]uint32{uint32(nb), 1, 1}, block, 0, b.ptr(mask, 0), view(ml), int64(n), counts)
	b.launchGrid("mask_scan", [3]uint32{1, 1, 1}, block, 0, counts, int64(nb))
	return counts, uint32(nb), release
}

// MaskedSelect implements tensor.IndexKernels with a device scan of the
// mask: no host round trip.
func (b *Backend) MaskedSelect(dst, src tensor.Buffer, sl tensor.Layout, mask tensor.Buffer, ml tensor.Layout) {
	n := ixElems(sl.Shape)
	if n == 0 {
		return
	}
	kernel := "masked_select_" + ixSizeSuffix(src.DType())
	offsets, nb, release := b.ixMaskOffsets(mask, ml, n)
	defer release()
	b.launchGrid(kernel, [3]uint32{nb, 1, 1}, [3]uint32{ixMaskThreads, 1, 1}, 0,
		b.ptr(dst, 0), b.ptr(src, 0), view(sl), b.ptr(mask, 0), view(ml), int64(n), offsets)
}

// MaskedScatter implements tensor.IndexKernels with a device scan of the
// mask.
func (b *Backend) MaskedScatter(dst tensor.Buffer, dl tensor.Layout, mask tensor.Buffer, ml tensor.Layout, src tensor.Buffer, sl tensor.Layout) {
	n := ixElems(dl.Shape)
	if n == 0 {
		return
	}
	kernel := "masked_scatter_" + ixSizeSuffix(dst.DType())
	offsets, nb, release := b.ixMaskOffsets(mask, ml, n)
	defer release()
	b.launchGrid(kernel, [3]uint32{nb, 1, 1}, [3]uint32{ixMaskThreads, 1, 1}, 0,
		b.ptr(dst, 0), view(dl), b.ptr(mask, 0), view(ml), b.ptr(src, 0), view(sl), int64(n), offsets)
}
