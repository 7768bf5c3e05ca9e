package tensor

import (
	"fmt"

	"github.com/emberml/ember/tensor/internal/vec"
)

// softmax runs the (log-)softmax kernel along axis.
func (t *Tensor) softmax(op string, log bool, axis int) *Tensor {
	if t.dtype != Float32 && t.dtype != Float64 {
		panic(fmt.Sprintf("tensor.%s: tensor of shape %v has dtype %s; want float32 or float64 (convert with To)", op, t.shape, t.dtype))
	}
	if t.Dim() == 0 {
		normAxis(op, axis, 1)
		return t.Reshape(1).softmax(op, log, 0).Reshape()
	}
	a := normAxis(op, axis, t.Dim())
	c, outer, n, inner := t.aroundAxis(a)
	be := c.st.backend
	out := empty(be, c.dtype, c.shape)
	if out.Numel() > 0 {
		be.Softmax(log, out.st.buf, c.st.buf, c.offset, outer, n, inner)
	}
	return out
}

// Softmax returns exp(t) normalized to sum to one along axis, computed
// stably (the maximum is subtracted first), as torch.softmax.
func (t *Tensor) Softmax(axis int) *Tensor { return t.softmax("Softmax", false, axis) }

// LogSoftmax returns t minus the log-sum-exp of t along axis, computed
// stably, as torch.log_softmax.
func (t *Tensor) LogSoftmax(axis int) *Tensor { return t.softmax("LogSoftmax", true, axis) }

// SoftmaxBackward returns the gradient of Softmax along axis at output y
// for the output gradient grad: y·(grad - sum(grad·y, axis)). On the CPU,
// float32 rows along the last axis take one vector pass per row; anything
// else runs the same formula as tensor ops.
func SoftmaxBackward(grad, y *Tensor, axis int) *Tensor {
	const op = "SoftmaxBackward"
	nnFloat(op, grad, y)
	checkSameShape(op, grad, y)
	if y.Dim() == 0 {
		normAxis(op, axis, 1)
		return SoftmaxBackward(grad.Reshape(1), y.Reshape(1), 0).Reshape()
	}
	a := normAxis(op, axis, y.Dim())
	if a != y.Dim()-1 || y.dtype != Float32 || !sameFloatDense(grad, y) || y.Numel() == 0 {
		return y.Mul(grad.Sub(grad.Mul(y).Sum([]int{a}, true)))
	}
	n := y.shape[a]
	g, _ := cpuDense[float32](grad)
	yd, _ := cpuDense[float32](y)
	out := emptyOut(cpuBackend{}, Float32, y.shape)
	od := out.st.buf.(*cpuBuffer).data.([]float32)
	parallelRows(len(yd)/n, n, func(r int) {
		gr, yr, dr := g[r*n:(r+1)*n], yd[r*n:(r+1)*n], od[r*n:(r+1)*n]
		// g·y staged in dr: products rounded to float32 and summed in
		// float64, as the general path's Mul and Sum.
		vec.Mul(dr, gr, yr)
		vec.SubConst(dr, gr, float32(vec.Sum(dr)))
		vec.Mul(dr, dr, yr)
	})
	return out
}
