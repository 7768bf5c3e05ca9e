package tensor

import (
	"fmt"
	"slices"
)

// Indexing and joining operations: gather and scatter along an axis, masked
// selection, splitting, padding, repetition, rolling and triangular masks.
// They mirror PyTorch's operations of the same names. Index tensors are
// Int64 (Int32 is accepted too) and every index must lie in [0, n) for the
// size n of the axis it addresses, as in PyTorch; an index outside panics,
// naming the op. Outputs are new contiguous tensors except for Split,
// SplitSizes and Chunk, which return views.

// checkIndexTensor panics unless idx is an integer tensor on t's device.
func checkIndexTensor(op string, t, idx *Tensor) {
	if idx.dtype != Int64 && idx.dtype != Int32 {
		panic(fmt.Sprintf("tensor.%s: index tensor has dtype %s; want int64 (or int32)", op, idx.dtype))
	}
	if idx.Device() != t.Device() {
		panic(fmt.Sprintf("tensor.%s: index on %s, tensor on %s; move one with ToDevice", op, idx.Device(), t.Device()))
	}
}

// checkSrc panics unless src has t's dtype and device.
func checkSrc(op string, t, src *Tensor) {
	if src.dtype != t.dtype {
		panic(fmt.Sprintf("tensor.%s: source dtype %s differs from tensor dtype %s; convert with To", op, src.dtype, t.dtype))
	}
	if src.Device() != t.Device() {
		panic(fmt.Sprintf("tensor.%s: source on %s, tensor on %s; move one with ToDevice", op, src.Device(), t.Device()))
	}
}

// indexFail turns an index kernel's error into a panic naming the op.
func indexFail(op string, err error, axis int, shape []int) {
	if err != nil {
		panic(fmt.Sprintf("tensor.%s: %v (axis %d of shape %v)", op, err, axis, shape))
	}
}

// unaliased returns u, or a copy of it when it shares t's storage, so that
// an in-place write to t cannot change u while the kernel reads it.
func unaliased(t, u *Tensor) *Tensor {
	if u.st == t.st {
		return u.Clone()
	}
	return u
}

// vectorIndexLayout describes the 0-d or 1-d index idx broadcast over shape:
// idx runs along axis and is repeated along every other axis.
func vectorIndexLayout(idx *Tensor, shape []int, axis int) Layout {
	st := make([]int, len(shape))
	if idx.Dim() == 1 {
		st[axis] = idx.strides[0]
	}
	return Layout{Shape: shape, Strides: st, Offset: idx.offset}
}

// checkVectorIndex panics unless idx is 0-d or 1-d.
func checkVectorIndex(op string, idx *Tensor) {
	if idx.Dim() > 1 {
		panic(fmt.Sprintf("tensor.%s: index must be 0-d or 1-d, got shape %v", op, idx.shape))
	}
}

// IndexSelect returns the entries of t at positions idx along axis: the
// result has t's shape with that axis replaced by idx's length (1 for a 0-d
// idx), as torch.index_select. An embedding lookup is
// weight.IndexSelect(0, ids).
func (t *Tensor) IndexSelect(axis int, idx *Tensor) *Tensor {
	const op = "IndexSelect"
	a := normAxis(op, axis, t.Dim())
	checkIndexTensor(op, t, idx)
	checkVectorIndex(op, idx)
	shape := slices.Clone(t.shape)
	shape[a] = idx.Numel()
	b := t.st.backend
	// Gather writes every element (or fails before writing any): no zero
	// fill, which on a batch gathered from a large dataset cost as much as
	// the copy.
	out := emptyOut(b, t.dtype, shape)
	err := b.Gather(out.st.buf, t.st.buf, t.Layout(), a, idx.st.buf, vectorIndexLayout(idx, shape, a))
	indexFail(op, err, axis, t.shape)
	return out
}

// IndexAdd returns a copy of t with the slices of src added at positions idx
// along axis: out[..., idx[i], ...] += src[..., i, ...], as torch.index_add.
// Repeated indices accumulate. src has t's shape except along axis, where
// its size is idx's length.
func (t *Tensor) IndexAdd(axis int, idx, src *Tensor) *Tensor {
	return t.Clone().indexAdd("IndexAdd", axis, idx, src)
}

// IndexAddInPlace is IndexAdd writing into t; it returns t.
func (t *Tensor) IndexAddInPlace(axis int, idx, src *Tensor) *Tensor {
	return t.indexAdd("IndexAddInPlace", axis, idx, src)
}

func (t *Tensor) indexAdd(op string, axis int, idx, src *Tensor) *Tensor {
	a := normAxis(op, axis, t.Dim())
	checkIndexTensor(op, t, idx)
	checkVectorIndex(op, idx)
	checkSrc(op, t, src)
	want := slices.Clone(t.shape)
	want[a] = idx.Numel()
	if !sameShape(src.shape, want) {
		panic(fmt.Sprintf("tensor.%s: source shape %v, want %v (tensor shape %v with axis %d the index length %d)", op, src.shape, want, t.shape, axis, idx.Numel()))
	}
	src, idx = unaliased(t, src), unaliased(t, idx)
	b := t.st.backend
	err := b.Scatter(t.st.buf, t.Layout(), a, idx.st.buf, vectorIndexLayout(idx, want, a), src.st.buf, src.Layout(), true)
	indexFail(op, err, axis, t.shape)
	t.bumpVersion()
	return t
}

// Gather returns out with idx's shape where out[i][j][k] = t[i][idx[i][j][k]][k]
// for axis 1 (likewise for other axes), as torch.gather. idx has t's rank
// and no larger size than t on any axis but axis.
func (t *Tensor) Gather(axis int, idx *Tensor) *Tensor {
	const op = "Gather"
	a := normAxis(op, axis, t.Dim())
	checkIndexTensor(op, t, idx)
	if idx.Dim() != t.Dim() {
		panic(fmt.Sprintf("tensor.%s: index shape %v has rank %d, tensor shape %v has rank %d; they must match", op, idx.shape, idx.Dim(), t.shape, t.Dim()))
	}
	for d := range t.shape {
		if d != a && idx.shape[d] > t.shape[d] {
			panic(fmt.Sprintf("tensor.%s: index shape %v is larger than tensor shape %v on axis %d (only axis %d may be)", op, idx.shape, t.shape, d, a))
		}
	}
	b := t.st.backend
	out := emptyOut(b, t.dtype, idx.shape) // every element is written, as in IndexSelect
	err := b.Gather(out.st.buf, t.st.buf, t.Layout(), a, idx.st.buf, idx.Layout())
	indexFail(op, err, axis, t.shape)
	return out
}

// checkScatter validates the operands of the scatter family and returns
// the normalized axis.
func (t *Tensor) checkScatter(op string, axis int, idx *Tensor) int {
	a := normAxis(op, axis, t.Dim())
	checkIndexTensor(op, t, idx)
	if idx.Dim() != t.Dim() {
		panic(fmt.Sprintf("tensor.%s: index shape %v has rank %d, tensor shape %v has rank %d; they must match", op, idx.shape, idx.Dim(), t.shape, t.Dim()))
	}
	for d := range t.shape {
		if d != a && idx.shape[d] > t.shape[d] {
			panic(fmt.Sprintf("tensor.%s: index shape %v is larger than tensor shape %v on axis %d (only axis %d may be)", op, idx.shape, t.shape, d, a))
		}
	}
	return a
}

// scatterLayout returns the layout of src restricted to idx's shape (its
// leading corner), checking that src is large enough.
func scatterLayout(op string, idx, src *Tensor) Layout {
	if src.Dim() != idx.Dim() {
		panic(fmt.Sprintf("tensor.%s: source shape %v has rank %d, index shape %v has rank %d; they must match", op, src.shape, src.Dim(), idx.shape, idx.Dim()))
	}
	for d := range idx.shape {
		if idx.shape[d] > src.shape[d] {
			panic(fmt.Sprintf("tensor.%s: index shape %v is larger than source shape %v on axis %d", op, idx.shape, src.shape, d))
		}
	}
	return Layout{Shape: idx.shape, Strides: src.strides, Offset: src.offset}
}

func (t *Tensor) scatter(op string, axis int, idx, src *Tensor, accumulate bool) *Tensor {
	a := t.checkScatter(op, axis, idx)
	checkSrc(op, t, src)
	sl := scatterLayout(op, idx, src)
	if src.st == t.st {
		src = src.Clone()
		sl = Layout{Shape: idx.shape, Strides: src.strides, Offset: src.offset}
	}
	idx = unaliased(t, idx)
	err := t.st.backend.Scatter(t.st.buf, t.Layout(), a, idx.st.buf, idx.Layout(), src.st.buf, sl, accumulate)
	indexFail(op, err, axis, t.shape)
	t.bumpVersion()
	return t
}

// Scatter returns a copy of t with src's values written at the positions
// idx names along axis: for axis 1, out[i][idx[i][j][k]][k] = src[i][j][k]
// for every position of idx, as torch.scatter. idx has t's rank, fits in
// src, and fits in t on every axis but axis. When idx repeats a target,
// which value lands there is unspecified.
func (t *Tensor) Scatter(axis int, idx, src *Tensor) *Tensor {
	return t.Clone().scatter("Scatter", axis, idx, src, false)
}

// ScatterInPlace is Scatter writing into t; it returns t.
func (t *Tensor) ScatterInPlace(axis int, idx, src *Tensor) *Tensor {
	return t.scatter("ScatterInPlace", axis, idx, src, false)
}

// ScatterScalar returns a copy of t with v written at the positions idx
// names along axis (torch.scatter with a value).
func (t *Tensor) ScatterScalar(axis int, idx *Tensor, v float64) *Tensor {
	return t.Clone().scatterScalar("ScatterScalar", axis, idx, v)
}

// ScatterScalarInPlace is ScatterScalar writing into t; it returns t.
func (t *Tensor) ScatterScalarInPlace(axis int, idx *Tensor, v float64) *Tensor {
	return t.scatterScalar("ScatterScalarInPlace", axis, idx, v)
}

func (t *Tensor) scatterScalar(op string, axis int, idx *Tensor, v float64) *Tensor {
	a := t.checkScatter(op, axis, idx)
	s := scalarLike(t, v)
	idx = unaliased(t, idx)
	sl := Layout{Shape: idx.shape, Strides: make([]int, idx.Dim())}
	err := t.st.backend.Scatter(t.st.buf, t.Layout(), a, idx.st.buf, idx.Layout(), s.st.buf, sl, false)
	indexFail(op, err, axis, t.shape)
	t.bumpVersion()
	return t
}

// ScatterAdd returns a copy of t with src's values added at the positions
// idx names along axis, accumulating repeated targets, as
// torch.scatter_add. The shape rules are Scatter's.
func (t *Tensor) ScatterAdd(axis int, idx, src *Tensor) *Tensor {
	return t.Clone().scatter("ScatterAdd", axis, idx, src, true)
}

// ScatterAddInPlace is ScatterAdd writing into t; it returns t.
func (t *Tensor) ScatterAddInPlace(axis int, idx, src *Tensor) *Tensor {
	return t.scatter("ScatterAddInPlace", axis, idx, src, true)
}

// checkMask panics unless mask is a Bool tensor on t's device.
func checkMask(op string, t, mask *Tensor) {
	if mask.dtype != Bool {
		panic(fmt.Sprintf("tensor.%s: mask has dtype %s; want bool (compare with Gt, Eq, ... or convert with To(Bool))", op, mask.dtype))
	}
	if mask.Device() != t.Device() {
		panic(fmt.Sprintf("tensor.%s: mask on %s, tensor on %s; move one with ToDevice", op, mask.Device(), t.Device()))
	}
}

// checkMaskFits panics unless mask broadcasts to t's shape.
func checkMaskFits(op string, t, mask *Tensor) {
	if !sameShape(BroadcastShapes(op, t.shape, mask.shape), t.shape) {
		panic(fmt.Sprintf("tensor.%s: mask shape %v does not broadcast to tensor shape %v", op, mask.shape, t.shape))
	}
}

// countTrue returns the number of true elements of the Bool tensor m
// broadcast to shape.
func countTrue(m *Tensor, shape []int) int {
	return int(m.Expand(shape...).To(Int64).Sum(nil, false).Item())
}

// MaskedFill returns a copy of t with v wherever mask (Bool, broadcast to
// t's shape) is true, as torch.masked_fill.
func (t *Tensor) MaskedFill(mask *Tensor, v float64) *Tensor {
	checkMask("MaskedFill", t, mask)
	checkMaskFits("MaskedFill", t, mask)
	return Where(mask, scalarLike(t, v), t)
}

// MaskedSelect returns the 1-d tensor of t's elements where mask is true,
// in row-major order; t and mask broadcast together, as torch.masked_select.
func (t *Tensor) MaskedSelect(mask *Tensor) *Tensor {
	const op = "MaskedSelect"
	checkMask(op, t, mask)
	shape := BroadcastShapes(op, t.shape, mask.shape)
	n := countTrue(mask, shape)
	b := t.st.backend
	out := empty(b, t.dtype, []int{n})
	b.MaskedSelect(out.st.buf, t.st.buf, t.broadcastLayout(shape), mask.st.buf, mask.broadcastLayout(shape))
	return out
}

// MaskedScatter returns a copy of t whose elements where mask (broadcast to
// t's shape) is true are replaced, in row-major order, by consecutive
// elements of src, as torch.masked_scatter. src needs at least as many
// elements as mask has true values; its shape does not matter.
func (t *Tensor) MaskedScatter(mask, src *Tensor) *Tensor {
	return t.Clone().maskedScatter("MaskedScatter", mask, src)
}

// MaskedScatterInPlace is MaskedScatter writing into t; it returns t.
func (t *Tensor) MaskedScatterInPlace(mask, src *Tensor) *Tensor {
	return t.maskedScatter("MaskedScatterInPlace", mask, src)
}

func (t *Tensor) maskedScatter(op string, mask, src *Tensor) *Tensor {
	checkMask(op, t, mask)
	checkMaskFits(op, t, mask)
	checkSrc(op, t, src)
	if n := countTrue(mask, t.shape); src.Numel() < n {
		panic(fmt.Sprintf("tensor.%s: mask selects %d elements but source shape %v has only %d", op, n, src.shape, src.Numel()))
	}
	src, mask = unaliased(t, src), unaliased(t, mask)
	t.st.backend.MaskedScatter(t.st.buf, t.Layout(), mask.st.buf, mask.broadcastLayout(t.shape), src.st.buf, src.Layout())
	t.bumpVersion()
	return t
}

// Split cuts t along axis into views of size elements each; the last may be
// smaller, as torch.split with an int.
func (t *Tensor) Split(size, axis int) []*Tensor {
	a := normAxis("Split", axis, t.Dim())
	n := t.shape[a]
	if size <= 0 && !(size == 0 && n == 0) {
		panic(fmt.Sprintf("tensor.Split: size must be positive, got %d (shape %v)", size, t.shape))
	}
	if n == 0 {
		return []*Tensor{t.Narrow(a, 0, 0)}
	}
	var out []*Tensor
	for at := 0; at < n; at += size {
		out = append(out, t.Narrow(a, at, min(size, n-at)))
	}
	return out
}

// SplitSizes cuts t along axis into views of the given sizes, which must
// add up to the axis length, as torch.split with a list.
func (t *Tensor) SplitSizes(sizes []int, axis int) []*Tensor {
	a := normAxis("SplitSizes", axis, t.Dim())
	total := 0
	for _, s := range sizes {
		if s < 0 {
			panic(fmt.Sprintf("tensor.SplitSizes: negative size in %v", sizes))
		}
		total += s
	}
	if total != t.shape[a] {
		panic(fmt.Sprintf("tensor.SplitSizes: sizes %v add up to %d, axis %d of shape %v has %d", sizes, total, axis, t.shape, t.shape[a]))
	}
	out := make([]*Tensor, len(sizes))
	at := 0
	for i, s := range sizes {
		out[i] = t.Narrow(a, at, s)
		at += s
	}
	return out
}

// Chunk cuts t along axis into at most n views of equal size (the last may
// be smaller), as torch.chunk: the size is ceil(len/n), so fewer than n
// chunks come back when len/n does not round up evenly.
func (t *Tensor) Chunk(n, axis int) []*Tensor {
	a := normAxis("Chunk", axis, t.Dim())
	if n <= 0 {
		panic(fmt.Sprintf("tensor.Chunk: number of chunks must be positive, got %d", n))
	}
	l := t.shape[a]
	if l == 0 {
		out := make([]*Tensor, n)
		for i := range out {
			out[i] = t.Narrow(a, 0, 0)
		}
		return out
	}
	return t.Split((l+n-1)/n, a)
}

// PadMode selects how Pad fills the new border.
type PadMode uint8

// The padding modes, as in torch.nn.functional.pad.
const (
	// PadConstant fills the border with a value.
	PadConstant PadMode = iota
	// PadReflect mirrors the tensor about its edge, not repeating the edge
	// element: 0 1 2 3 padded by 2 is 2 1 0 1 2 3 2 1.
	PadReflect
	// PadReplicate repeats the edge element: 0 0 0 1 2 3 3 3.
	PadReplicate
	// PadCircular wraps around: 2 3 0 1 2 3 0 1.
	PadCircular
)

var padModeNames = [...]string{"constant", "reflect", "replicate", "circular"}

// String returns PyTorch's name for the mode.
func (m PadMode) String() string {
	if int(m) < len(padModeNames) {
		return padModeNames[m]
	}
	return fmt.Sprintf("PadMode(%d)", m)
}

// ParsePadMode returns the mode named s ("constant", "reflect", "replicate"
// or "circular").
func ParsePadMode(s string) (PadMode, error) {
	for i, n := range padModeNames {
		if n == s {
			return PadMode(i), nil
		}
	}
	return 0, fmt.Errorf("tensor: unknown pad mode %q", s)
}

// PadIndex returns, for reflect, replicate and circular padding of an axis
// of length n by before and after elements, the 1-d Int64 (CPU) tensor of
// length n+before+after whose entry o is the input position that output
// position o copies. Negative before or after crop the axis first, as in
// PyTorch. Pad uses it, and so can the gradient of Pad (an IndexAdd).
func PadIndex(mode PadMode, n, before, after int) *Tensor {
	lo, hi := max(0, -before), n-max(0, -after)
	m := hi - lo
	out := n + before + after
	if m <= 0 || out < 0 {
		panic(fmt.Sprintf("tensor.Pad: padding (%d, %d) leaves nothing of an axis of size %d", before, after, n))
	}
	switch mode {
	case PadReflect:
		if before >= m || after >= m {
			panic(fmt.Sprintf("tensor.Pad: reflect padding (%d, %d) must be smaller than the axis size %d", before, after, m))
		}
	case PadReplicate, PadCircular:
	default:
		panic(fmt.Sprintf("tensor.Pad: PadIndex is for reflect, replicate or circular padding, not %s", mode))
	}
	idx := make([]int64, out)
	for o := range idx {
		p := o - before // position in the input's coordinates
		var q int
		switch mode {
		case PadReflect:
			q = p - lo
			if q < 0 {
				q = -q
			}
			if q >= m {
				q = 2*(m-1) - q
			}
			q += lo
		case PadReplicate:
			q = min(max(p, lo), hi-1)
		case PadCircular:
			q = lo + ((p-lo)%m+m)%m
		}
		idx[o] = int64(q)
	}
	return FromSlice(idx)
}

// onDeviceOf moves the CPU tensor x to t's device.
func onDeviceOf(t, x *Tensor) *Tensor {
	if t.Device() == x.Device() {
		return x
	}
	y, err := x.ToDevice(t.Device())
	if err != nil {
		panic(fmt.Sprintf("tensor: moving a helper tensor to %s: %v", t.Device(), err))
	}
	return y
}

// Pad returns t padded by pads, given as PyTorch's F.pad does: pairs
// (before, after) starting from the last axis, so {1, 2} pads the last axis
// by 1 in front and 2 behind and {1, 1, 0, 3} also pads the axis before it
// by 0 and 3. Negative entries crop. PadConstant fills with value; the other
// modes ignore it and need reflect padding smaller than the axis.
func (t *Tensor) Pad(pads []int, mode PadMode, value float64) *Tensor {
	if len(pads)%2 != 0 || len(pads)/2 > t.Dim() {
		panic(fmt.Sprintf("tensor.Pad: pads %v must hold a (before, after) pair for each of up to %d trailing axes of shape %v", pads, t.Dim(), t.shape))
	}
	if mode > PadCircular {
		panic(fmt.Sprintf("tensor.Pad: unknown mode %s", mode))
	}
	shape := slices.Clone(t.shape)
	for i := 0; i < len(pads); i += 2 {
		a := t.Dim() - 1 - i/2
		shape[a] += pads[i] + pads[i+1]
		if shape[a] < 0 {
			panic(fmt.Sprintf("tensor.Pad: pads %v give a negative size on axis %d of shape %v", pads, a, t.shape))
		}
	}
	if mode != PadConstant {
		out := t
		for i := 0; i < len(pads); i += 2 {
			if pads[i] == 0 && pads[i+1] == 0 {
				continue
			}
			a := t.Dim() - 1 - i/2
			out = out.IndexSelect(a, onDeviceOf(t, PadIndex(mode, t.shape[a], pads[i], pads[i+1])))
		}
		if out == t {
			out = t.Clone()
		}
		return out
	}
	out := empty(t.st.backend, t.dtype, shape)
	if value != 0 {
		t.st.backend.Fill(out.st.buf, value)
	}
	dst, src := out, t
	for i := 0; i < len(pads); i += 2 {
		a := t.Dim() - 1 - i/2
		before, after := pads[i], pads[i+1]
		lo, hi := max(0, -before), t.shape[a]-max(0, -after)
		if hi <= lo {
			return out
		}
		src = src.Narrow(a, lo, hi-lo)
		dst = dst.Narrow(a, max(0, before), hi-lo)
	}
	dst.CopyFrom(src)
	out.st.version.Store(0)
	return out
}

// Repeat returns t repeated reps[i] times along axis i, as torch.repeat:
// reps has at least t.Dim() entries and extra leading entries add axes.
func (t *Tensor) Repeat(reps ...int) *Tensor {
	if len(reps) < t.Dim() {
		panic(fmt.Sprintf("tensor.Repeat: %d repetitions %v for a %d-d tensor of shape %v; give one per axis (Tile pads them)", len(reps), reps, t.Dim(), t.shape))
	}
	lead := len(reps) - t.Dim()
	inter := make([]int, 0, 2*len(reps))  // [1, s0, 1, s1, ...]
	expand := make([]int, 0, 2*len(reps)) // [r0, s0, r1, s1, ...]
	final := make([]int, len(reps))
	for i, r := range reps {
		if r < 0 {
			panic(fmt.Sprintf("tensor.Repeat: negative repetition in %v", reps))
		}
		s := 1
		if i >= lead {
			s = t.shape[i-lead]
		}
		inter = append(inter, 1, s)
		expand = append(expand, r, s)
		final[i] = r * s
	}
	return t.Reshape(inter...).Expand(expand...).Clone().View(final...)
}

// Tile returns t repeated reps[i] times along axis i, as torch.tile: unlike
// Repeat, fewer reps than axes are padded with leading ones.
func (t *Tensor) Tile(reps ...int) *Tensor {
	if len(reps) < t.Dim() {
		r := make([]int, t.Dim()-len(reps), t.Dim())
		for i := range r {
			r[i] = 1
		}
		reps = append(r, reps...)
	}
	return t.Repeat(reps...)
}

// Roll returns t with its elements shifted by shifts[i] positions along
// axes[i], wrapping around, as torch.roll. With no axes, t is rolled as if
// flattened by the single shift and keeps its shape.
func (t *Tensor) Roll(shifts, axes []int) *Tensor {
	if len(axes) == 0 {
		if len(shifts) != 1 {
			panic(fmt.Sprintf("tensor.Roll: without axes give exactly one shift, got %v", shifts))
		}
		return t.Reshape(-1).Roll(shifts, []int{0}).View(t.shape...)
	}
	if len(shifts) != len(axes) {
		panic(fmt.Sprintf("tensor.Roll: %d shifts %v for %d axes %v", len(shifts), shifts, len(axes), axes))
	}
	out := t
	for i, ax := range axes {
		a := normAxis("Roll", ax, t.Dim())
		n := t.shape[a]
		if n == 0 {
			continue
		}
		s := ((shifts[i] % n) + n) % n
		if s == 0 {
			continue
		}
		out = Concat([]*Tensor{out.Narrow(a, n-s, s), out.Narrow(a, 0, n-s)}, a)
	}
	if out == t {
		out = t.Clone()
	}
	return out
}

// triMask returns the Bool [rows, cols] mask of j-i <= k (lower) or
// j-i >= k (upper) on t's device.
func triMask(t *Tensor, k int, lower bool) *Tensor {
	rows, cols := t.shape[t.Dim()-2], t.shape[t.Dim()-1]
	m := make([]bool, rows*cols)
	for i := range rows {
		for j := range cols {
			if lower {
				m[i*cols+j] = j-i <= k
			} else {
				m[i*cols+j] = j-i >= k
			}
		}
	}
	return onDeviceOf(t, FromSlice(m, rows, cols))
}

func (t *Tensor) tri(op string, k int, lower bool) *Tensor {
	if t.Dim() < 2 {
		panic(fmt.Sprintf("tensor.%s: needs a tensor of at least 2 dimensions, got shape %v", op, t.shape))
	}
	return Where(triMask(t, k, lower), t, scalarLike(t, 0))
}

// Tril returns the lower triangle of the last two axes of t: elements on
// and below diagonal k are kept (k > 0 above the main diagonal, k < 0
// below), the rest zeroed, as torch.tril.
func (t *Tensor) Tril(k int) *Tensor { return t.tri("Tril", k, true) }

// Triu returns the upper triangle of the last two axes of t: elements on
// and above diagonal k are kept, the rest zeroed, as torch.triu.
func (t *Tensor) Triu(k int) *Tensor { return t.tri("Triu", k, false) }

// OneHot returns the Int64 tensor of shape idx.Shape()+[numClasses] with a
// 1 at each index's class and 0 elsewhere, as F.one_hot. idx holds integer
// classes in [0, numClasses); numClasses -1 means max(idx)+1.
func OneHot(idx *Tensor, numClasses int) *Tensor {
	if idx.dtype != Int64 && idx.dtype != Int32 {
		panic(fmt.Sprintf("tensor.OneHot: index tensor has dtype %s; want int64 (or int32)", idx.dtype))
	}
	if numClasses < 0 {
		if numClasses != -1 || idx.Numel() == 0 {
			panic(fmt.Sprintf("tensor.OneHot: numClasses %d needs to be positive, or -1 with a non-empty index", numClasses))
		}
		numClasses = int(idx.Max(nil, false).Item()) + 1
	}
	if idx.Numel() > 0 {
		if lo := idx.Min(nil, false).Item(); lo < 0 {
			panic(fmt.Sprintf("tensor.OneHot: class values must be non-negative, got %v", lo))
		}
	}
	shape := append(slices.Clone(idx.shape), numClasses)
	out := empty(idx.st.backend, Int64, shape)
	out.scatterScalar("OneHot", -1, idx.Unsqueeze(-1), 1)
	out.st.version.Store(0)
	return out
}
