//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"slices"

	"github.com/emberml/ember/tensor"
)

// The elementwise family of tensor.Backend: Copy, Assign, Fill, Unary,
// Binary, Where, Reduce, ArgReduce and Scan. Kernels live in
// internal/kernels/elementwise.cu; each method mirrors the CPU backend
// (tensor/cpu_backend.go), panicking where it panics.

// elementwiseKernels lists the kernels this file launches.
var elementwiseKernels = ewKernelNames()

// ewTags are the dtype tags of kernel names, in tensor.DType order of use.
var ewTags = []struct {
	dt  tensor.DType
	tag string
}{
	{tensor.Float32, "f32"},
	{tensor.Float64, "f64"},
	{tensor.Int64, "i64"},
	{tensor.Int32, "i32"},
	{tensor.Bool, "b8"},
	{tensor.Float16, "f16"},
	{tensor.BFloat16, "bf16"},
}

// ewNumericTags are the dtypes with arithmetic kernels (binary, reduce,
// argreduce, scan).
var ewNumericTags = []string{"f32", "f64", "i64", "i32"}

// ewSizeTags name the bit-moving kernels by element size.
var ewSizeTags = []string{"u8", "u16", "u32", "u64"}

// ewKernelNames returns every kernel name this file can launch.
func ewKernelNames() []string {
	var names []string
	for _, d := range ewTags {
		for _, s := range ewTags {
			if d.tag != s.tag {
				names = append(names, "copy_"+d.tag+"_"+s.tag)
			}
		}
	}
	for _, s := range ewSizeTags {
		names = append(names, "gather_"+s, "assign_"+s, "fill_"+s, "where_"+s)
	}
	for _, t := range ewNumericTags {
		names = append(names, "unary_"+t, "binary_"+t, "compare_"+t,
			"reduce_"+t, "reduce_part_"+t, "reduce_final_"+t,
			"argreduce_rows_"+t, "argreduce_part_"+t, "argreduce_final_"+t, "argreduce_lanes_"+t, "scan_"+t, "scan_rows_"+t)
	}
	return append(names, "unary_b8", "binary_b8")
}

// ewTag returns the kernel-name tag of dt.
func ewTag(dt tensor.DType) string {
	for _, d := range ewTags {
		if d.dt == dt {
			return d.tag
		}
	}
	panic(fmt.Sprintf("cuda: unknown dtype %v", dt))
}

// ewSizeTag returns the tag of the bit-moving kernels for dt's element size.
func ewSizeTag(dt tensor.DType) string {
	switch dt {
	case tensor.Bool:
		return "u8"
	case tensor.Float16, tensor.BFloat16:
		return "u16"
	case tensor.Float32, tensor.Int32:
		return "u32"
	case tensor.Float64, tensor.Int64:
		return "u64"
	}
	panic(fmt.Sprintf("cuda: unknown dtype %v", dt))
}

// ewNumeric panics unless dt has arithmetic kernels; what names the op.
func ewNumeric(dt tensor.DType, what string) string {
	switch dt {
	case tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32:
		return ewTag(dt)
	}
	panic(fmt.Sprintf("tensor: %s on %v", what, dt))
}

// ewNumel is the element count of shape.
func ewNumel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// ewContiguous reports whether l addresses offset, offset+1, ... in
// row-major order, so kernels can skip the index arithmetic.
func ewContiguous(l tensor.Layout) bool {
	want := 1
	for i := len(l.Shape) - 1; i >= 0; i-- {
		if l.Shape[i] == 1 {
			continue
		}
		if l.Strides[i] != want {
			return false
		}
		want *= l.Shape[i]
	}
	return true
}

// ewFlags packs contiguity bits: bit i is set when layout i is contiguous.
func ewFlags(ls ...tensor.Layout) int32 {
	var f int32
	for i, l := range ls {
		if ewContiguous(l) {
			f |= 1 << i
		}
	}
	return f
}

// Copy implements tensor.Backend: it gathers the view l of src into dst,
// converting dtype as the CPU backend does (bit for bit).
func (b *Backend) Copy(dst, src tensor.Buffer, l tensor.Layout) {
	n := ewNumel(l.Shape)
	if n == 0 {
		return
	}
	kernel := "gather_" + ewSizeTag(src.DType())
	if dst.DType() != src.DType() {
		kernel = "copy_" + ewTag(dst.DType()) + "_" + ewTag(src.DType())
	}
	b.launch(kernel, n, b.ptr(dst, 0), b.ptr(src, 0), view(l), int64(n), ewFlags(l))
}

// Assign implements tensor.Backend: it writes the view sl of src into the
// view dl of dst (same shape and dtype). The caller guarantees that the
// views do not overlap.
func (b *Backend) Assign(dst tensor.Buffer, dl tensor.Layout, src tensor.Buffer, sl tensor.Layout) {
	if dst.DType() != src.DType() {
		panic(fmt.Sprintf("cuda: Assign from %v into %v", src.DType(), dst.DType()))
	}
	n := ewNumel(dl.Shape)
	if n == 0 {
		return
	}
	b.launch("assign_"+ewSizeTag(dst.DType()), n, b.ptr(dst, 0), view(dl), b.ptr(src, 0), view(sl), int64(n), ewFlags(dl, sl))
}

// ewFillBits returns the bits of v converted to dt as the CPU backend's
// Fill converts it.
func ewFillBits(dt tensor.DType, v float64) uint64 {
	switch dt {
	case tensor.Float32:
		return uint64(math.Float32bits(float32(v)))
	case tensor.Float64:
		return math.Float64bits(v)
	case tensor.Int64:
		return uint64(int64(v))
	case tensor.Int32:
		return uint64(uint32(int32(v)))
	case tensor.Bool:
		if v != 0 {
			return 1
		}
		return 0
	case tensor.Float16:
		return uint64(tensor.Float16FromFloat32(float32(v)))
	case tensor.BFloat16:
		return uint64(tensor.BFloat16FromFloat32(float32(v)))
	}
	panic(fmt.Sprintf("cuda: unknown dtype %v", dt))
}

// Fill implements tensor.Backend: it sets every element of dst to v.
func (b *Backend) Fill(dst tensor.Buffer, v float64) {
	n := dst.Len()
	if n == 0 {
		return
	}
	b.launch("fill_"+ewSizeTag(dst.DType()), n, b.ptr(dst, 0), ewFillBits(dst.DType(), v), int64(n))
}

// ewIntUnaryKinds are the unary kinds defined for Int64 and Int32.
var ewIntUnaryKinds = []tensor.UnaryKind{
	tensor.OpNeg, tensor.OpAbs, tensor.OpSign, tensor.OpRelu, tensor.OpFloor, tensor.OpCeil,
	tensor.OpRound, tensor.OpClamp, tensor.OpAffine, tensor.OpSquare, tensor.OpPowScalar,
}

// ewIntBound converts a whole (or infinite) float bound to an integer of
// the given width, saturating so that ±Inf means "no bound" (the CPU's
// intBound).
func ewIntBound(v float64, is64 bool) int64 {
	var lo, hi int64 = math.MinInt32, math.MaxInt32
	if is64 {
		lo, hi = math.MinInt64, math.MaxInt64
	}
	switch {
	case v != v:
		panic("tensor: NaN bound for an integer op")
	case v <= float64(lo):
		return lo
	case v >= float64(hi):
		return hi
	}
	return int64(v)
}

// ewUnaryInts returns the integer operands of op for an integer kernel of
// the given width, converted exactly as the CPU's unaryInt converts them.
func ewUnaryInts(op tensor.UnaryOp, is64 bool) (ia, ib int64) {
	switch op.Kind {
	case tensor.OpClamp:
		return ewIntBound(math.Ceil(op.A), is64), ewIntBound(math.Floor(op.B), is64)
	case tensor.OpAffine, tensor.OpPowScalar:
		if is64 {
			return int64(op.A), int64(op.B)
		}
		return int64(int32(op.A)), int64(int32(op.B))
	}
	return 0, 0
}

// Unary implements tensor.Backend: it applies op to the view l of src.
func (b *Backend) Unary(op tensor.UnaryOp, dst, src tensor.Buffer, l tensor.Layout) {
	dt := src.DType()
	var ia, ib int64
	switch dt {
	case tensor.Float32, tensor.Float64:
		if op.Kind == tensor.OpLogicalNot || op.Kind > tensor.OpErf {
			panic(fmt.Sprintf("tensor: unary op %d is not defined for floats", op.Kind))
		}
	case tensor.Int64, tensor.Int32:
		if !slices.Contains(ewIntUnaryKinds, op.Kind) {
			panic(fmt.Sprintf("tensor: unary op %d is not defined for integers", op.Kind))
		}
		ia, ib = ewUnaryInts(op, dt == tensor.Int64)
	case tensor.Bool:
		if op.Kind != tensor.OpLogicalNot {
			panic(fmt.Sprintf("tensor: unary op %d is not defined for bool", op.Kind))
		}
	default:
		panic("tensor: unary op on a storage dtype; convert to Float32 first")
	}
	n := ewNumel(l.Shape)
	if n == 0 {
		return
	}
	b.launch("unary_"+ewTag(dt), n, b.ptr(dst, 0), b.ptr(src, 0), view(l), int64(n), ewFlags(l),
		int32(op.Kind), op.A, op.B, ia, ib)
}

// Binary implements tensor.Backend: it applies op to the views a and b,
// broadcast to dst's shape (la.Shape).
func (b *Backend) Binary(op tensor.BinaryOp, dst, a tensor.Buffer, la tensor.Layout, bb tensor.Buffer, lb tensor.Layout) {
	dt := a.DType()
	var kernel string
	switch dt {
	case tensor.Float32, tensor.Float64, tensor.Int64, tensor.Int32:
		switch {
		case op > tensor.OpLogicalXor:
			panic(fmt.Sprintf("tensor: unknown binary op %d", op))
		case op >= tensor.OpEq:
			kernel = "compare_" + ewTag(dt)
		default:
			kernel = "binary_" + ewTag(dt)
		}
	case tensor.Bool:
		switch op {
		case tensor.OpSub, tensor.OpDiv, tensor.OpPow:
			panic(fmt.Sprintf("tensor: binary op %d is not defined for bool", op))
		}
		if op > tensor.OpLogicalXor {
			panic(fmt.Sprintf("tensor: binary op %d is not defined for bool", op))
		}
		kernel = "binary_b8"
	default:
		panic("tensor: binary op on a storage dtype; convert to Float32 first")
	}
	n := ewNumel(la.Shape)
	if n == 0 {
		return
	}
	b.launch(kernel, n, b.ptr(dst, 0), b.ptr(a, 0), view(la), b.ptr(bb, 0), view(lb), int64(n),
		ewFlags(la, lb), int32(op))
}

// Where implements tensor.Backend: dst = cond ? a : b, all broadcast to
// dst's shape (lc.Shape).
func (b *Backend) Where(dst, cond tensor.Buffer, lc tensor.Layout, a tensor.Buffer, la tensor.Layout, bb tensor.Buffer, lb tensor.Layout) {
	n := ewNumel(lc.Shape)
	if n == 0 {
		return
	}
	b.launch("where_"+ewSizeTag(dst.DType()), n, b.ptr(dst, 0), b.ptr(cond, 0), view(lc),
		b.ptr(a, 0), view(la), b.ptr(bb, 0), view(lb), int64(n))
}

// Launch geometry of the row kernels.
const (
	ewBlock      = 256     // threads per block
	ewMaxGrid    = 1 << 16 // blocks at most; kernels loop over the rest
	ewBlockRowAt = 512     // rows this long get a block each, shorter a warp
	ewArgRowAt   = 64      // ArgReduce rows this long (inner == 1) get a block each
	ewScanRowAt  = 1024    // Scan rows this long (inner == 1) get a block each
	// Fewer than ewSplitRows rows of at least ewSplitAt elements are
	// reduced in two passes over chunks of ewChunk elements, so that more
	// than a few multiprocessors work on them.
	ewSplitRows = 256
	ewSplitAt   = 1 << 16
	ewChunk     = 1 << 14
)

// ewSplit returns the number of chunks a two-pass reduction splits each of
// outer rows of n elements into, or 0 for a one-pass reduction.
func ewSplit(outer, n int) int {
	if outer >= ewSplitRows || n < ewSplitAt {
		return 0
	}
	return (n + ewChunk - 1) / ewChunk
}

// ewGrid returns a 1-d grid of blocks (at most ewMaxGrid) and 256-thread
// blocks.
func ewGrid(blocks int) (grid, block [3]uint32) {
	return [3]uint32{uint32(min(max(blocks, 1), ewMaxGrid)), 1, 1}, [3]uint32{ewBlock, 1, 1}
}

// Reduce implements tensor.Backend: it reduces each row of the contiguous
// [outer, n] src into dst[row]. Float32 sums accumulate in float64 as on
// the CPU (in a different order, so they may differ in the last bit); Max
// and Min propagate NaN; empty rows give 0 (Sum), 1 (Prod) or leave dst
// unchanged (Max, Min), as on the CPU.
func (b *Backend) Reduce(op tensor.ReduceOp, dst, src tensor.Buffer, outer, n int) {
	tag := ewNumeric(src.DType(), "reduction")
	if op > tensor.ReduceMin {
		panic(fmt.Sprintf("tensor: unknown reduction %d", op))
	}
	if outer == 0 || (n == 0 && (op == tensor.ReduceMax || op == tensor.ReduceMin)) {
		return
	}
	if chunks := ewSplit(outer, n); chunks > 0 {
		part, release := b.scratch(8 * outer * chunks)
		defer release()
		grid, block := ewGrid(outer * chunks)
		b.launchGrid("reduce_part_"+tag, grid, block, 0, part, b.ptr(src, 0), int64(outer), int64(n), int32(op), int64(chunks), int64(ewChunk))
		grid, block = ewGrid(outer)
		b.launchGrid("reduce_final_"+tag, grid, block, 0, b.ptr(dst, 0), part, int64(outer), int64(chunks), int32(op))
		return
	}
	var blockMode int32
	blocks := (outer + ewBlock/32 - 1) / (ewBlock / 32)
	if n >= ewBlockRowAt {
		blockMode, blocks = 1, outer
	}
	grid, block := ewGrid(blocks)
	b.launchGrid("reduce_"+tag, grid, block, 0, b.ptr(dst, 0), b.ptr(src, 0), int64(outer), int64(n), int32(op), blockMode)
}

// ArgReduce implements tensor.Backend: it writes the int64 index of the
// first maximum (or minimum) along the middle axis of the contiguous
// [outer, n, inner] src; a NaN counts as the extreme.
func (b *Backend) ArgReduce(isMax bool, dst, src tensor.Buffer, outer, n, inner int) {
	tag := ewNumeric(src.DType(), "argmax/argmin")
	if outer == 0 || inner == 0 {
		return
	}
	if n == 0 {
		panic("tensor: argmax/argmin over an empty axis")
	}
	if chunks := ewSplit(outer, n); inner == 1 && chunks > 0 {
		pv, releaseV := b.scratch(8 * outer * chunks)
		defer releaseV()
		pi, releaseI := b.scratch(8 * outer * chunks)
		defer releaseI()
		grid, block := ewGrid(outer * chunks)
		b.launchGrid("argreduce_part_"+tag, grid, block, 0, pv, pi, b.ptr(src, 0), int64(outer), int64(n), int64(chunks), int64(ewChunk), isMax)
		grid, block = ewGrid(outer)
		b.launchGrid("argreduce_final_"+tag, grid, block, 0, b.ptr(dst, 0), pv, pi, int64(outer), int64(chunks), isMax)
		return
	}
	if inner == 1 && n >= ewArgRowAt {
		grid, block := ewGrid(outer)
		b.launchGrid("argreduce_rows_"+tag, grid, block, 0, b.ptr(dst, 0), b.ptr(src, 0), int64(outer), int64(n), isMax)
		return
	}
	b.launch("argreduce_lanes_"+tag, outer*inner, b.ptr(dst, 0), b.ptr(src, 0), int64(outer), int64(n), int64(inner), isMax)
}

// Scan implements tensor.Backend: it writes the running sum (or product)
// along the middle axis of the contiguous [outer, n, inner] src, in the
// element type of the CPU backend. Integer results match it exactly; so do
// float results except along long last axes (inner == 1, n >= 1024), which
// a block scans in parallel, grouping the sums differently.
func (b *Backend) Scan(prod bool, dst, src tensor.Buffer, outer, n, inner int) {
	tag := ewNumeric(src.DType(), "cumulative op")
	if outer == 0 || n == 0 || inner == 0 {
		return
	}
	if inner == 1 && n >= ewScanRowAt {
		grid, block := ewGrid(outer)
		b.launchGrid("scan_rows_"+tag, grid, block, 0, b.ptr(dst, 0), b.ptr(src, 0), int64(outer), int64(n), prod)
		return
	}
	b.launch("scan_"+tag, outer*inner, b.ptr(dst, 0), b.ptr(src, 0), int64(outer), int64(n), int64(inner), prod)
}
