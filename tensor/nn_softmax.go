package tensor

import "fmt"

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
