package tensor

import (
	"fmt"
	"slices"
)

// MatMul returns the matrix product of t and u with NumPy/PyTorch matmul
// semantics: 1-d operands are promoted to a row (t) or column (u) vector and
// the added axis removed afterwards; leading batch axes broadcast.
func (t *Tensor) MatMul(u *Tensor) *Tensor {
	if t.Dim() == 0 || u.Dim() == 0 {
		panic(fmt.Sprintf("tensor.MatMul: operands must be at least 1-d, got shapes %v and %v", t.shape, u.shape))
	}
	if t.Device() != u.Device() {
		panic(fmt.Sprintf("tensor.MatMul: operands on different devices (%s and %s)", t.Device(), u.Device()))
	}
	dt := computeDType(PromoteTypes(t.dtype, u.dtype))
	if dt == Bool {
		panic("tensor.MatMul: not defined for bool tensors")
	}
	a, b := t.To(dt), u.To(dt)
	vecA, vecB := a.Dim() == 1, b.Dim() == 1
	if vecA {
		a = a.Unsqueeze(0)
	}
	if vecB {
		b = b.Unsqueeze(1)
	}
	m, k := a.shape[a.Dim()-2], a.shape[a.Dim()-1]
	k2, n := b.shape[b.Dim()-2], b.shape[b.Dim()-1]
	if k != k2 {
		panic(fmt.Sprintf("tensor.MatMul: inner dimensions differ: %v @ %v (%d vs %d)", t.shape, u.shape, k, k2))
	}
	batch := BroadcastShapes("MatMul", a.shape[:a.Dim()-2], b.shape[:b.Dim()-2])
	a = a.Expand(append(slices.Clone(batch), m, k)...)
	b = b.Expand(append(slices.Clone(batch), k, n)...)
	a, transA, lda := matOperand(a)
	b, transB, ldb := matOperand(b)
	p := MatMulParams{M: m, N: n, K: k, TransA: transA, TransB: transB, LDA: lda, LDB: ldb}
	p.AOffsets = batchOffsets(a, batch)
	p.BOffsets = batchOffsets(b, batch)
	foldBatch(&p)
	be := a.st.backend
	outShape := append(slices.Clone(batch), m, n)
	var out *Tensor
	if k == 0 {
		out = empty(be, dt, outShape) // an empty sum: zeros, which no kernel writes
	} else {
		out = emptyOut(be, dt, outShape)
	}
	be.MatMul(out.st.buf, a.st.buf, b.st.buf, p)
	switch {
	case vecA && vecB:
		return out.Reshape(batch...)
	case vecA:
		return out.Squeeze(-2)
	case vecB:
		return out.Squeeze(-1)
	}
	return out
}

// matOperand returns x (or a copy) whose last two axes are row-major
// (stride[-1] == 1) or column-major (stride[-2] == 1, reported as
// transposed), and the leading dimension.
func matOperand(x *Tensor) (*Tensor, bool, int) {
	d := x.Dim()
	r, c := x.shape[d-2], x.shape[d-1]
	sr, sc := x.strides[d-2], x.strides[d-1]
	switch {
	case (sc == 1 || c == 1) && sr >= max(c, 1):
		return x, false, max(sr, 1)
	case (sr == 1 || r == 1) && sc >= max(r, 1):
		return x, true, max(sc, 1)
	}
	// Make the matrices dense, keeping broadcast batch axes at stride 0.
	y := x.Clone()
	return y, false, max(c, 1)
}

// foldBatch turns a batch of products that share one right operand (a
// broadcast weight, as in a linear layer on [batch, m, k] input) into a
// single product with batch·m rows when the left matrices are stacked rows
// at a constant stride: one large GEMM instead of many small ones.
func foldBatch(p *MatMulParams) {
	nb := len(p.AOffsets)
	if nb < 2 || p.TransA || p.M == 0 {
		return
	}
	a0, b0 := p.AOffsets[0], p.BOffsets[0]
	for i := 1; i < nb; i++ {
		if p.BOffsets[i] != b0 || p.AOffsets[i] != a0+i*p.M*p.LDA {
			return
		}
	}
	p.M *= nb
	p.AOffsets, p.BOffsets = p.AOffsets[:1], p.BOffsets[:1]
}

// batchOffsets lists the storage offset of every matrix of x over the
// broadcast batch shape.
func batchOffsets(x *Tensor, batch []int) []int {
	nb := numel(batch)
	offs := make([]int, nb)
	idx := make([]int, len(batch))
	for i := range nb {
		o := x.offset
		for j, v := range idx {
			o += v * x.strides[j]
		}
		offs[i] = o
		for j := len(idx) - 1; j >= 0; j-- {
			idx[j]++
			if idx[j] < batch[j] {
				break
			}
			idx[j] = 0
		}
	}
	return offs
}

// Dot returns the inner product of two 1-d tensors as a 0-d tensor.
func (t *Tensor) Dot(u *Tensor) *Tensor {
	if t.Dim() != 1 || u.Dim() != 1 || t.shape[0] != u.shape[0] {
		panic(fmt.Sprintf("tensor.Dot: want two 1-d tensors of equal length, got %v and %v", t.shape, u.shape))
	}
	return t.MatMul(u)
}

// Outer returns the outer product of two 1-d tensors.
func (t *Tensor) Outer(u *Tensor) *Tensor {
	if t.Dim() != 1 || u.Dim() != 1 {
		panic(fmt.Sprintf("tensor.Outer: want two 1-d tensors, got %v and %v", t.shape, u.shape))
	}
	return t.Unsqueeze(1).Mul(u.Unsqueeze(0))
}
