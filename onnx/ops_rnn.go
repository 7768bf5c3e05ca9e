package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Recurrent layers: RNN, GRU and LSTM with forward, reverse and
// bidirectional directions, per-batch sequence lengths, clipping, custom
// activations and both layouts.

func rnnOps() opTable {
	return opTable{
		"RNN":  {{since: 7, impl: rnnOp("RNN")}},
		"GRU":  {{since: 7, impl: rnnOp("GRU")}},
		"LSTM": {{since: 7, impl: rnnOp("LSTM")}},
	}
}

// activation returns the named ONNX recurrent activation with its alpha
// and beta (NaN: the function's default).
func activation(name string, alpha, beta float64) (func(*tensor.Tensor) *tensor.Tensor, error) {
	def := func(v, d float64) float64 {
		if math.IsNaN(v) {
			return d
		}
		return v
	}
	switch name {
	case "Tanh":
		return (*tensor.Tensor).Tanh, nil
	case "Sigmoid":
		return (*tensor.Tensor).Sigmoid, nil
	case "Relu":
		return (*tensor.Tensor).Relu, nil
	case "Affine":
		a, b := def(alpha, 1), def(beta, 0)
		return func(x *tensor.Tensor) *tensor.Tensor { return x.Affine(a, b) }, nil
	case "LeakyRelu":
		a := def(alpha, 0.01)
		return func(x *tensor.Tensor) *tensor.Tensor {
			return negPart(x, func(t *tensor.Tensor) *tensor.Tensor { return t.MulScalar(a) })
		}, nil
	case "ThresholdedRelu":
		a := def(alpha, 1)
		return func(x *tensor.Tensor) *tensor.Tensor {
			return tensor.Where(x.Gt(tensor.FullLike(x, a)), x, tensor.ZerosLike(x))
		}, nil
	case "ScaledTanh":
		a, b := def(alpha, 1), def(beta, 1)
		return func(x *tensor.Tensor) *tensor.Tensor { return x.MulScalar(b).Tanh().MulScalar(a) }, nil
	case "HardSigmoid":
		a, b := def(alpha, 0.2), def(beta, 0.5)
		return func(x *tensor.Tensor) *tensor.Tensor { return x.Affine(a, b).Clamp(0, 1) }, nil
	case "Elu":
		a := def(alpha, 1)
		return func(x *tensor.Tensor) *tensor.Tensor {
			return negPart(x, func(t *tensor.Tensor) *tensor.Tensor { return t.Expm1().MulScalar(a) })
		}, nil
	case "Softsign":
		return func(x *tensor.Tensor) *tensor.Tensor { return x.Div(x.Abs().AddScalar(1)) }, nil
	case "Softplus":
		return func(x *tensor.Tensor) *tensor.Tensor { return x.Relu().Add(x.Abs().Neg().Exp().Log1p()) }, nil
	}
	return nil, fmt.Errorf("unknown activation %q", name)
}

// rnnOp implements kind ("RNN", "GRU" or "LSTM").
func rnnOp(kind string) opImpl {
	gates := map[string]int{"RNN": 1, "GRU": 3, "LSTM": 4}[kind]
	defaults := map[string][]string{"RNN": {"Tanh"}, "GRU": {"Sigmoid", "Tanh"}, "LSTM": {"Sigmoid", "Tanh", "Tanh"}}[kind]
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		w, err := n.need(in, 1)
		if err != nil {
			return nil, err
		}
		r, err := n.need(in, 2)
		if err != nil {
			return nil, err
		}
		b, seqLens, h0 := arg(in, 3), arg(in, 4), arg(in, 5)
		var c0, peep *tensor.Tensor
		if kind == "LSTM" {
			c0, peep = arg(in, 6), arg(in, 7)
			if n.attrInt("input_forget", 0) == 1 {
				return nil, fmt.Errorf("onnx: %v: input_forget=1 is not supported", n)
			}
		}
		layout := n.attrInt("layout", 0)
		if x.Dim() != 3 || w.Dim() != 3 || r.Dim() != 3 {
			return nil, fmt.Errorf("onnx: %v: X %v, W %v and R %v must be 3-d", n, x.Shape(), w.Shape(), r.Shape())
		}
		if layout == 1 {
			x = x.Transpose(0, 1)
			if h0 != nil {
				h0 = h0.Transpose(0, 1)
			}
			if c0 != nil {
				c0 = c0.Transpose(0, 1)
			}
		}
		xs := x.Shape()
		seq, batch := xs[0], xs[1]
		hidden := int(n.attrInt("hidden_size", int64(r.Shape()[2])))
		dir := n.attrString("direction", "forward")
		numDir := 1
		if dir == "bidirectional" {
			numDir = 2
		} else if dir != "forward" && dir != "reverse" {
			return nil, fmt.Errorf("onnx: %v: unknown direction %q", n, dir)
		}
		if w.Shape()[0] != numDir || w.Shape()[1] != gates*hidden || r.Shape()[1] != gates*hidden || r.Shape()[2] != hidden {
			return nil, fmt.Errorf("onnx: %v: W %v and R %v do not fit %d directions of hidden size %d", n, w.Shape(), r.Shape(), numDir, hidden)
		}
		names := n.attrs["activations"].stringList()
		if len(names) == 0 {
			for range numDir {
				names = append(names, defaults...)
			}
		}
		if len(names) != numDir*len(defaults) {
			return nil, fmt.Errorf("onnx: %v: %d activations, want %d", n, len(names), numDir*len(defaults))
		}
		alphas, betas := n.attrFloats("activation_alpha"), n.attrFloats("activation_beta")
		acts := make([]func(*tensor.Tensor) *tensor.Tensor, len(names))
		for i, name := range names {
			a, bt := math.NaN(), math.NaN()
			if i < len(alphas) {
				a = float64(alphas[i])
			}
			if i < len(betas) {
				bt = float64(betas[i])
			}
			if acts[i], err = activation(name, a, bt); err != nil {
				return nil, fmt.Errorf("onnx: %v: %w", n, err)
			}
		}
		clip := n.attrFloat("clip", 0)
		clipFn := func(t *tensor.Tensor) *tensor.Tensor {
			if clip > 0 {
				return t.Clamp(-clip, clip)
			}
			return t
		}
		lens := make([]int, batch)
		for i := range lens {
			lens[i] = seq
		}
		if seqLens != nil {
			lens = ints(seqLens)
			if len(lens) != batch {
				return nil, fmt.Errorf("onnx: %v: %d sequence lengths for batch %d", n, len(lens), batch)
			}
		}
		dt := x.DType()
		linearBeforeReset := n.attrInt("linear_before_reset", 0) == 1
		var ys []*tensor.Tensor
		var hs, cs []*tensor.Tensor
		for d := range numDir {
			wd, rd := w.Select(0, d), r.Select(0, d)
			var wb, rb *tensor.Tensor
			if b != nil {
				bd := b.Select(0, d)
				wb, rb = bd.Narrow(0, 0, gates*hidden), bd.Narrow(0, gates*hidden, gates*hidden)
			} else {
				wb, rb = tensor.Zeros([]int{gates * hidden}, dt), tensor.Zeros([]int{gates * hidden}, dt)
			}
			h := tensor.Zeros([]int{batch, hidden}, dt)
			if h0 != nil {
				h = h0.Select(0, d)
			}
			c := tensor.Zeros([]int{batch, hidden}, dt)
			if c0 != nil {
				c = c0.Select(0, d)
			}
			var pi, po, pf *tensor.Tensor
			if peep != nil {
				pd := peep.Select(0, d)
				pi, po, pf = pd.Narrow(0, 0, hidden), pd.Narrow(0, hidden, hidden), pd.Narrow(0, 2*hidden, hidden)
			}
			act := acts[d*len(defaults) : (d+1)*len(defaults)]
			xw := x.MatMul(wd.T()).Add(wb) // [seq, batch, gates*hidden]
			rt := rd.T()
			gate := func(t *tensor.Tensor, i int) *tensor.Tensor { return t.Narrow(-1, i*hidden, hidden) }
			out := make([]*tensor.Tensor, seq)
			reverse := dir == "reverse" || d == 1
			for step := range seq {
				t := step
				if reverse {
					t = seq - 1 - step
				}
				activeV := make([]bool, batch)
				for i := range activeV {
					activeV[i] = t < lens[i]
				}
				active := tensor.FromSlice(activeV, batch, 1)
				xt := xw.Select(0, t)
				var hNew, cNew *tensor.Tensor
				switch kind {
				case "RNN":
					hNew = act[0](clipFn(xt.Add(h.MatMul(rt)).Add(rb)))
				case "GRU":
					hr := h.MatMul(rt)
					z := act[0](clipFn(gate(xt, 0).Add(gate(hr, 0)).Add(gate(rb, 0))))
					rg := act[0](clipFn(gate(xt, 1).Add(gate(hr, 1)).Add(gate(rb, 1))))
					var pre *tensor.Tensor
					if linearBeforeReset {
						pre = gate(xt, 2).Add(rg.Mul(gate(hr, 2).Add(gate(rb, 2))))
					} else {
						pre = gate(xt, 2).Add(rg.Mul(h).MatMul(gate(rt, 2))).Add(gate(rb, 2))
					}
					hh := act[1](clipFn(pre))
					hNew = z.Neg().AddScalar(1).Mul(hh).Add(z.Mul(h))
				case "LSTM":
					g := xt.Add(h.MatMul(rt)).Add(rb)
					gi, gof, gf, gc := gate(g, 0), gate(g, 1), gate(g, 2), gate(g, 3)
					if pi != nil {
						gi, gf = gi.Add(pi.Mul(c)), gf.Add(pf.Mul(c))
					}
					it, ft := act[0](clipFn(gi)), act[0](clipFn(gf))
					ct := act[1](clipFn(gc))
					cNew = ft.Mul(c).Add(it.Mul(ct))
					if po != nil {
						gof = gof.Add(po.Mul(cNew))
					}
					ot := act[0](clipFn(gof))
					hNew = ot.Mul(act[2](cNew))
					c = tensor.Where(active, cNew, c)
				}
				h = tensor.Where(active, hNew, h)
				out[t] = tensor.Where(active, hNew, tensor.ZerosLike(hNew))
			}
			ys = append(ys, tensor.Stack(out, 0))
			hs = append(hs, h)
			cs = append(cs, c)
		}
		y := tensor.Stack(ys, 1) // [seq, numDir, batch, hidden]
		yh, yc := tensor.Stack(hs, 0), tensor.Stack(cs, 0)
		if layout == 1 {
			y = y.Permute(2, 0, 1, 3)
			yh, yc = yh.Transpose(0, 1), yc.Transpose(0, 1)
		}
		outs := []*tensor.Tensor{y, yh}
		if kind == "LSTM" {
			outs = append(outs, yc)
		}
		return outs, nil
	}
}
