package tensor

import (
	"fmt"
	"math"
)

// unary runs a unary kernel, promoting integers to Float32 for float-only
// functions and refusing storage dtypes.
func (t *Tensor) unary(name string, op UnaryOp) *Tensor {
	src := t
	if t.dtype == Float16 || t.dtype == BFloat16 {
		panic(fmt.Sprintf("tensor.%s: %s is a storage dtype; call To(Float32) first", name, t.dtype))
	}
	if op.Kind.floatOnly() && !t.dtype.IsFloat() {
		src = t.To(Float32)
	}
	if src.dtype == Bool && op.Kind != OpLogicalNot {
		panic(fmt.Sprintf("tensor.%s: not defined for bool tensors", name))
	}
	b := src.st.backend
	out := emptyOut(b, src.dtype, src.shape)
	b.Unary(op, out.st.buf, src.st.buf, src.Layout())
	return out
}

// Neg returns -t.
func (t *Tensor) Neg() *Tensor { return t.unary("Neg", UnaryOp{Kind: OpNeg}) }

// Abs returns |t|.
func (t *Tensor) Abs() *Tensor { return t.unary("Abs", UnaryOp{Kind: OpAbs}) }

// Sign returns -1, 0 or 1 by the sign of each element.
func (t *Tensor) Sign() *Tensor { return t.unary("Sign", UnaryOp{Kind: OpSign}) }

// Exp returns e**t.
func (t *Tensor) Exp() *Tensor { return t.unary("Exp", UnaryOp{Kind: OpExp}) }

// Log returns the natural logarithm.
func (t *Tensor) Log() *Tensor { return t.unary("Log", UnaryOp{Kind: OpLog}) }

// Log1p returns log(1+t), accurate near zero.
func (t *Tensor) Log1p() *Tensor { return t.unary("Log1p", UnaryOp{Kind: OpLog1p}) }

// Expm1 returns e**t - 1, accurate near zero.
func (t *Tensor) Expm1() *Tensor { return t.unary("Expm1", UnaryOp{Kind: OpExpm1}) }

// Sqrt returns the square root.
func (t *Tensor) Sqrt() *Tensor { return t.unary("Sqrt", UnaryOp{Kind: OpSqrt}) }

// Rsqrt returns 1/sqrt(t).
func (t *Tensor) Rsqrt() *Tensor { return t.unary("Rsqrt", UnaryOp{Kind: OpRsqrt}) }

// Sin returns the sine.
func (t *Tensor) Sin() *Tensor { return t.unary("Sin", UnaryOp{Kind: OpSin}) }

// Cos returns the cosine.
func (t *Tensor) Cos() *Tensor { return t.unary("Cos", UnaryOp{Kind: OpCos}) }

// Tanh returns the hyperbolic tangent.
func (t *Tensor) Tanh() *Tensor { return t.unary("Tanh", UnaryOp{Kind: OpTanh}) }

// Sigmoid returns 1/(1+e**-t).
func (t *Tensor) Sigmoid() *Tensor { return t.unary("Sigmoid", UnaryOp{Kind: OpSigmoid}) }

// Relu returns max(t, 0).
func (t *Tensor) Relu() *Tensor { return t.unary("Relu", UnaryOp{Kind: OpRelu}) }

// Floor rounds down.
func (t *Tensor) Floor() *Tensor { return t.unary("Floor", UnaryOp{Kind: OpFloor}) }

// Ceil rounds up.
func (t *Tensor) Ceil() *Tensor { return t.unary("Ceil", UnaryOp{Kind: OpCeil}) }

// Round rounds half to even, as PyTorch does.
func (t *Tensor) Round() *Tensor { return t.unary("Round", UnaryOp{Kind: OpRound}) }

// Reciprocal returns 1/t.
func (t *Tensor) Reciprocal() *Tensor { return t.unary("Reciprocal", UnaryOp{Kind: OpRecip}) }

// Square returns t*t.
func (t *Tensor) Square() *Tensor { return t.unary("Square", UnaryOp{Kind: OpSquare}) }

// Erf returns the error function.
func (t *Tensor) Erf() *Tensor { return t.unary("Erf", UnaryOp{Kind: OpErf}) }

// Clamp limits every element to [lo, hi]; NaN stays NaN. Pass math.Inf to
// leave a side open. Integer tensors keep their dtype for whole (or
// infinite) bounds and compute in Float32 for fractional ones, as PyTorch
// does with a float bound.
func (t *Tensor) Clamp(lo, hi float64) *Tensor {
	if lo > hi || lo != lo || hi != hi {
		panic(fmt.Sprintf("tensor.Clamp: need min <= max, got min %v, max %v", lo, hi))
	}
	if t.dtype.IsInt() && (!wholeOrInf(lo) || !wholeOrInf(hi)) {
		return t.To(Float32).Clamp(lo, hi)
	}
	return t.unary("Clamp", UnaryOp{Kind: OpClamp, A: lo, B: hi})
}

// wholeOrInf reports whether v is an integer value or an infinity.
func wholeOrInf(v float64) bool { return v == math.Trunc(v) }

// PowScalar returns t**e.
func (t *Tensor) PowScalar(e float64) *Tensor {
	if !t.dtype.IsFloat() && (e < 0 || e != float64(int(e))) {
		return t.To(Float32).PowScalar(e)
	}
	return t.unary("PowScalar", UnaryOp{Kind: OpPowScalar, A: e})
}

// Affine returns t*a + b in one pass. Integer tensors keep their dtype when
// a and b are whole numbers and compute in Float32 otherwise.
func (t *Tensor) Affine(a, b float64) *Tensor {
	if t.dtype.IsInt() && (a != math.Trunc(a) || b != math.Trunc(b) || math.IsInf(a, 0) || math.IsInf(b, 0)) {
		return t.To(Float32).Affine(a, b)
	}
	return t.unary("Affine", UnaryOp{Kind: OpAffine, A: a, B: b})
}

// AddScalar returns t + s, keeping t's dtype (as PyTorch does with a Python
// number) unless t is integer and s is not whole.
func (t *Tensor) AddScalar(s float64) *Tensor { return t.Add(t.scalarOperand(s)) }

// SubScalar returns t - s.
func (t *Tensor) SubScalar(s float64) *Tensor { return t.Sub(t.scalarOperand(s)) }

// MulScalar returns t * s.
func (t *Tensor) MulScalar(s float64) *Tensor { return t.Mul(t.scalarOperand(s)) }

// DivScalar returns t / s (true division).
func (t *Tensor) DivScalar(s float64) *Tensor { return t.Div(t.scalarOperand(s)) }

// scalarOperand wraps s as a 0-d tensor of the dtype PyTorch would use for
// t op s.
func (t *Tensor) scalarOperand(s float64) *Tensor {
	dt := t.dtype
	switch {
	case dt.IsFloat():
		dt = computeDType(dt)
	case s != math.Trunc(s) || math.IsInf(s, 0):
		dt = Float32
	case dt == Bool:
		dt = Int64 // bool + 1 is int64 in PyTorch
	}
	return scalarOn(t.st.backend, s, dt)
}

// LogicalNot returns !t as Bool.
func (t *Tensor) LogicalNot() *Tensor {
	return t.To(Bool).unary("LogicalNot", UnaryOp{Kind: OpLogicalNot})
}

// oneDevice returns the operands of op on one device. As in PyTorch, a 0-d
// CPU tensor may meet tensors of another device: it is recreated there (its
// value read on the host, the device buffer filled, no host-to-device copy).
// Any other mix of devices panics with a message naming both.
func oneDevice(op string, ts ...*Tensor) []*Tensor {
	var home *Tensor
	for _, t := range ts {
		if t.Device() != CPU || t.Dim() != 0 {
			home = t
			break
		}
	}
	if home == nil {
		home = ts[0]
	}
	d := home.Device()
	out := ts
	for i, t := range ts {
		if t.Device() == d {
			continue
		}
		if t.Device() != CPU || t.Dim() != 0 {
			panic(fmt.Sprintf("tensor.%s: operands on different devices (%s and %s); move one with ToDevice", op, d, t.Device()))
		}
		if &out[0] == &ts[0] {
			out = append([]*Tensor(nil), ts...)
		}
		out[i] = scalarOn(home.st.backend, t.Item(), t.dtype)
	}
	return out
}

// onDeviceFor returns t on dst's device for op: a 0-d CPU tensor is
// recreated there by a fill, anything else is copied with ToDevice.
func (t *Tensor) onDeviceFor(op string, dst *Tensor) *Tensor {
	if t.Device() == CPU && t.Dim() == 0 {
		return scalarOn(dst.st.backend, t.Item(), t.dtype)
	}
	moved, err := t.ToDevice(dst.Device())
	if err != nil {
		panic(fmt.Sprintf("tensor.%s: copying the source from %s to %s: %v", op, t.Device(), dst.Device(), err))
	}
	return moved
}

// binary runs a broadcasting binary kernel with PyTorch's type promotion.
func binary(name string, op BinaryOp, a, b *Tensor) *Tensor {
	ops := oneDevice(name, a, b)
	a, b = ops[0], ops[1]
	dt := computeDType(PromoteTypes(a.dtype, b.dtype))
	if op == OpDiv && !dt.IsFloat() {
		dt = Float32 // true division, as torch.div
	}
	if op.isLogical() {
		if dt != Bool {
			a, b = a.To(Bool), b.To(Bool)
			dt = Bool
		}
	} else if dt == Bool && !op.isComparison() && op != OpMul && op != OpAdd && op != OpMaximum && op != OpMinimum {
		panic(fmt.Sprintf("tensor.%s: not defined for bool tensors", name))
	}
	a, b = a.To(dt), b.To(dt)
	shape := BroadcastShapes(name, a.shape, b.shape)
	odt := dt
	if op.isComparison() || op.isLogical() {
		odt = Bool
	}
	be := a.st.backend
	out := emptyOut(be, odt, shape)
	be.Binary(op, out.st.buf, a.st.buf, a.broadcastLayout(shape), b.st.buf, b.broadcastLayout(shape))
	return out
}

// Add returns t + u with broadcasting.
func (t *Tensor) Add(u *Tensor) *Tensor { return binary("Add", OpAdd, t, u) }

// Sub returns t - u with broadcasting.
func (t *Tensor) Sub(u *Tensor) *Tensor { return binary("Sub", OpSub, t, u) }

// Mul returns t * u with broadcasting.
func (t *Tensor) Mul(u *Tensor) *Tensor { return binary("Mul", OpMul, t, u) }

// Div returns t / u with broadcasting (true division: integers give Float32).
func (t *Tensor) Div(u *Tensor) *Tensor { return binary("Div", OpDiv, t, u) }

// FloorDiv returns floor(t / u) for integer tensors, t / u floored for floats.
func (t *Tensor) FloorDiv(u *Tensor) *Tensor {
	if PromoteTypes(t.dtype, u.dtype).IsFloat() {
		return t.Div(u).Floor()
	}
	dt := PromoteTypes(t.dtype, u.dtype)
	a, b := t.To(dt), u.To(dt)
	shape := BroadcastShapes("FloorDiv", a.shape, b.shape)
	be := a.st.backend
	out := emptyOut(be, dt, shape)
	be.Binary(OpDiv, out.st.buf, a.st.buf, a.broadcastLayout(shape), b.st.buf, b.broadcastLayout(shape))
	return out
}

// Pow returns t ** u with broadcasting.
func (t *Tensor) Pow(u *Tensor) *Tensor { return binary("Pow", OpPow, t, u) }

// Maximum returns the elementwise maximum (NaN wins).
func (t *Tensor) Maximum(u *Tensor) *Tensor { return binary("Maximum", OpMaximum, t, u) }

// Minimum returns the elementwise minimum (NaN wins).
func (t *Tensor) Minimum(u *Tensor) *Tensor { return binary("Minimum", OpMinimum, t, u) }

// Eq returns t == u as Bool.
func (t *Tensor) Eq(u *Tensor) *Tensor { return binary("Eq", OpEq, t, u) }

// Ne returns t != u as Bool.
func (t *Tensor) Ne(u *Tensor) *Tensor { return binary("Ne", OpNe, t, u) }

// Lt returns t < u as Bool.
func (t *Tensor) Lt(u *Tensor) *Tensor { return binary("Lt", OpLt, t, u) }

// Le returns t <= u as Bool.
func (t *Tensor) Le(u *Tensor) *Tensor { return binary("Le", OpLe, t, u) }

// Gt returns t > u as Bool.
func (t *Tensor) Gt(u *Tensor) *Tensor { return binary("Gt", OpGt, t, u) }

// Ge returns t >= u as Bool.
func (t *Tensor) Ge(u *Tensor) *Tensor { return binary("Ge", OpGe, t, u) }

// LogicalAnd returns t && u (non-zero is true) as Bool.
func (t *Tensor) LogicalAnd(u *Tensor) *Tensor { return binary("LogicalAnd", OpLogicalAnd, t, u) }

// LogicalOr returns t || u as Bool.
func (t *Tensor) LogicalOr(u *Tensor) *Tensor { return binary("LogicalOr", OpLogicalOr, t, u) }

// LogicalXor returns t != u in truth value as Bool.
func (t *Tensor) LogicalXor(u *Tensor) *Tensor { return binary("LogicalXor", OpLogicalXor, t, u) }

// Where returns a where cond is true and b elsewhere, all three broadcast
// together; a and b are promoted to a common dtype.
func Where(cond, a, b *Tensor) *Tensor {
	ops := oneDevice("Where", cond, a, b)
	cond, a, b = ops[0], ops[1], ops[2]
	if cond.dtype != Bool {
		cond = cond.To(Bool)
	}
	dt := PromoteTypes(a.dtype, b.dtype)
	a, b = a.To(dt), b.To(dt)
	shape := BroadcastShapes("Where", cond.shape, a.shape, b.shape)
	be := a.st.backend
	out := emptyOut(be, dt, shape)
	be.Where(out.st.buf, cond.st.buf, cond.broadcastLayout(shape), a.st.buf, a.broadcastLayout(shape), b.st.buf, b.broadcastLayout(shape))
	return out
}

// CopyFrom writes src (broadcast to t's shape and converted to t's dtype)
// into t's elements in place, through t's view, and returns t. src may live
// on another device, as with PyTorch's copy_: it is copied to t's device
// first (through the host), which is how CPU weights are loaded into a
// model on an accelerator.
// t must not be a broadcast view (stride 0 on an axis longer than 1): its
// elements would share memory, as PyTorch refuses too.
func (t *Tensor) CopyFrom(src *Tensor) *Tensor {
	if !sameShape(BroadcastShapes("CopyFrom", t.shape, src.shape), t.shape) {
		panic(fmt.Sprintf("tensor.CopyFrom: source shape %v does not broadcast to %v", src.shape, t.shape))
	}
	for i, st := range t.strides {
		if st == 0 && t.shape[i] > 1 {
			panic(fmt.Sprintf("tensor.CopyFrom: destination of shape %v has stride 0 on axis %d (an Expand view): several elements share one memory location; write to a Contiguous copy", t.shape, i))
		}
	}
	if src.Device() != t.Device() {
		src = src.onDeviceFor("CopyFrom", t)
	}
	src = src.To(t.dtype)
	if src.st == t.st { // reading and writing the same storage
		var release func()
		src, release = scratchCopy(src)
		defer release()
	}
	b := t.st.backend
	if t.IsContiguous() && t.offset == 0 && t.Numel() == t.st.buf.Len() {
		b.Copy(t.st.buf, src.st.buf, src.broadcastLayout(t.shape))
	} else {
		b.Assign(t.st.buf, t.Layout(), src.st.buf, src.broadcastLayout(t.shape))
	}
	t.bumpVersion()
	return t
}

// Fill sets every element of t's view to v in place and returns t.
func (t *Tensor) Fill(v float64) *Tensor { return t.CopyFrom(scalarLike(t, v)) }

// Zero sets every element of t's view to zero in place and returns t.
func (t *Tensor) Zero() *Tensor { return t.Fill(0) }

// AddInPlace adds u (broadcast) to t in place and returns t.
func (t *Tensor) AddInPlace(u *Tensor) *Tensor { return t.CopyFrom(t.Add(u)) }

// SubInPlace subtracts u in place and returns t.
func (t *Tensor) SubInPlace(u *Tensor) *Tensor { return t.CopyFrom(t.Sub(u)) }

// MulInPlace multiplies by u in place and returns t.
func (t *Tensor) MulInPlace(u *Tensor) *Tensor { return t.CopyFrom(t.Mul(u)) }

// DivInPlace divides by u in place and returns t.
func (t *Tensor) DivInPlace(u *Tensor) *Tensor { return t.CopyFrom(t.Div(u)) }

// MulScalarInPlace multiplies by s in place and returns t.
func (t *Tensor) MulScalarInPlace(s float64) *Tensor { return t.CopyFrom(t.MulScalar(s)) }

// AddScalarInPlace adds s in place and returns t.
func (t *Tensor) AddScalarInPlace(s float64) *Tensor { return t.CopyFrom(t.AddScalar(s)) }

// ClampInPlace clamps in place and returns t.
func (t *Tensor) ClampInPlace(lo, hi float64) *Tensor { return t.CopyFrom(t.Clamp(lo, hi)) }

// ReluInPlace applies Relu in place and returns t.
func (t *Tensor) ReluInPlace() *Tensor { return t.CopyFrom(t.Relu()) }

// MaskedFillInPlace sets elements where mask is true to v and returns t.
func (t *Tensor) MaskedFillInPlace(mask *Tensor, v float64) *Tensor {
	return t.CopyFrom(Where(mask, scalarLike(t, v), t))
}
