package nn

import (
	"fmt"
	"math"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// CTCLoss is torch.nn.CTCLoss, the Connectionist Temporal Classification
// loss: the negative log of the total probability of every frame-level
// alignment that collapses (merge repeats, then drop blanks) to the target
// sequence. It runs the forward-backward (alpha-beta) algorithm in log
// space.
//
// The gradient is the exact derivative with respect to log_probs,
// -exp(log(sum_s alpha_t(s)*beta_t(s)) + loss - log_probs[t, c]) summed over
// the extended-label positions s holding class c. PyTorch returns that plus
// exp(log_probs), a term log_softmax's backward cancels, so the two agree on
// the gradient with respect to the logits whenever log_probs come from
// LogSoftmax. The gradient is recorded as a constant of the inputs, so CTC
// supports first-order gradients only.
//
// Build it with NewCTCLoss for PyTorch's defaults.
type CTCLoss struct {
	Blank     int // the blank class
	Reduction Reduction
	// ZeroInfinity replaces infinite losses (targets no alignment of the
	// input length can produce) and their gradients with zeros. Without it
	// such a sample's loss is +Inf and its gradient NaN, as in PyTorch.
	ZeroInfinity bool
}

// NewCTCLoss returns a CTC loss with PyTorch's defaults: blank 0, mean
// reduction, infinite losses kept.
func NewCTCLoss() *CTCLoss { return &CTCLoss{} }

// Forward returns the loss of logProbs (log-probabilities, shape [T, N, C],
// or [T, C] for one unbatched sample) against the targets.
//
// targets is either padded, shape [N, S] (or [S] unbatched), with sample
// n's labels in its first targetLengths[n] entries, or the concatenation of
// all samples' labels, shape [sum(targetLengths)]. inputLengths and
// targetLengths are integer tensors of shape [N] (scalars unbatched) with
// inputLengths[n] <= T. Labels must be classes in [0, C) other than Blank.
//
// ReduceNone returns the per-sample losses, shape [N] (a scalar unbatched);
// ReduceMean divides each loss by its target length (at least 1) and then
// averages over the batch, like PyTorch; ReduceSum adds the losses.
func (l *CTCLoss) Forward(logProbs *autograd.Var, targets, inputLengths, targetLengths *tensor.Tensor) *autograd.Var {
	const op = "CTCLoss"
	checkFloatVar(op, "log_probs", logProbs)
	for _, p := range []struct {
		name string
		t    *tensor.Tensor
	}{{"targets", targets}, {"input_lengths", inputLengths}, {"target_lengths", targetLengths}} {
		if !p.t.DType().IsInt() {
			panic(fmt.Sprintf("nn.%s: %s must be an integer tensor, got %s", op, p.name, p.t.DType()))
		}
	}
	unbatched := logProbs.Dim() == 2
	if unbatched {
		if inputLengths.Dim() != 0 || targetLengths.Dim() != 0 {
			panic(fmt.Sprintf("nn.%s: unbatched log_probs %v need scalar lengths, got %v and %v", op, logProbs.Shape(), inputLengths.Shape(), targetLengths.Shape()))
		}
		logProbs = logProbs.Unsqueeze(1)
		inputLengths, targetLengths = inputLengths.Reshape(1), targetLengths.Reshape(1)
		if targets.Dim() == 1 {
			targets = targets.Unsqueeze(0)
		}
	}
	if logProbs.Dim() != 3 {
		panic(fmt.Sprintf("nn.%s: log_probs must be [T, N, C] or [T, C], got %v", op, logProbs.Shape()))
	}
	s := logProbs.Shape()
	tMax, n, c := s[0], s[1], s[2]
	if l.Blank < 0 || l.Blank >= c {
		panic(fmt.Sprintf("nn.%s: blank %d is not a class in [0, %d)", op, l.Blank, c))
	}
	if inputLengths.Dim() != 1 || inputLengths.Numel() != n || targetLengths.Dim() != 1 || targetLengths.Numel() != n {
		panic(fmt.Sprintf("nn.%s: input_lengths %v and target_lengths %v must have shape [%d] (batch of log_probs %v)", op, inputLengths.Shape(), targetLengths.Shape(), n, s))
	}
	il := inputLengths.To(tensor.Int64).Contiguous().Int64s()
	tl := targetLengths.To(tensor.Int64).Contiguous().Int64s()
	labels := ctcLabels(op, targets, tl, n)
	for i := range n {
		if il[i] < 0 || il[i] > int64(tMax) {
			panic(fmt.Sprintf("nn.%s: input length %d of sample %d is not in [0, %d]", op, il[i], i, tMax))
		}
		for _, y := range labels[i] {
			if y < 0 || y >= int64(c) || y == int64(l.Blank) {
				panic(fmt.Sprintf("nn.%s: label %d of sample %d is not a non-blank class in [0, %d) (blank %d)", op, y, i, c, l.Blank))
			}
		}
	}

	lp := logProbs.Value().To(tensor.Float64).Contiguous().Float64s()
	losses := make([]float64, n)
	grad := make([]float64, tMax*n*c)
	for i := range n {
		losses[i] = ctcSample(lp, grad, tMax, n, c, i, int(il[i]), labels[i], l.Blank)
		if l.ZeroInfinity && math.IsInf(losses[i], 1) {
			losses[i] = 0
			for t := range tMax {
				clear(grad[(t*n+i)*c : (t*n+i+1)*c])
			}
		}
	}
	// The dynamic programme runs on the host; its losses and gradient go
	// back to the log-probabilities' device.
	dt := logProbs.DType()
	lv := logProbs.Value()
	gt := tensor.FromSlice(grad, tMax, n, c).To(dt).ToDeviceOf(lv)
	per := autograd.Custom("CTCLoss", tensor.FromSlice(losses, n).To(dt).ToDeviceOf(lv), []*autograd.Var{logProbs}, nil,
		func(g *autograd.Var, _ []*autograd.Var, _ *autograd.Var) []*autograd.Var {
			return []*autograd.Var{g.Reshape(1, n, 1).Mul(autograd.New(gt))}
		})
	switch l.Reduction {
	case ReduceNone:
		if unbatched {
			return per.Squeeze(0)
		}
		return per
	case ReduceSum:
		return per.Sum(nil, false)
	case ReduceMean:
		den := make([]float64, n)
		for i, v := range tl {
			den[i] = float64(max(v, 1))
		}
		return per.Div(autograd.New(tensor.FromSlice(den, n).To(dt).ToDeviceOf(lv))).Mean(nil, false)
	}
	panic(fmt.Sprintf("nn.%s: unknown reduction %d", op, int(l.Reduction)))
}

// ctcLabels splits padded ([N, S]) or concatenated (1-d) targets into each
// sample's label sequence.
func ctcLabels(op string, targets *tensor.Tensor, tl []int64, n int) [][]int64 {
	flat := targets.To(tensor.Int64).Contiguous().Int64s()
	out := make([][]int64, n)
	switch targets.Dim() {
	case 2:
		if targets.Shape()[0] != n {
			panic(fmt.Sprintf("nn.%s: padded targets %v must have %d rows", op, targets.Shape(), n))
		}
		w := targets.Shape()[1]
		for i := range n {
			if tl[i] < 0 || tl[i] > int64(w) {
				panic(fmt.Sprintf("nn.%s: target length %d of sample %d is not in [0, %d]", op, tl[i], i, w))
			}
			out[i] = flat[i*w : i*w+int(tl[i])]
		}
	case 1:
		off := 0
		for i := range n {
			if tl[i] < 0 || off+int(tl[i]) > len(flat) {
				panic(fmt.Sprintf("nn.%s: target lengths %v exceed the %d concatenated targets", op, tl, len(flat)))
			}
			out[i] = flat[off : off+int(tl[i])]
			off += int(tl[i])
		}
		if off != len(flat) {
			panic(fmt.Sprintf("nn.%s: target lengths %v sum to %d, but there are %d concatenated targets", op, tl, off, len(flat)))
		}
	default:
		panic(fmt.Sprintf("nn.%s: targets must be [N, S] or concatenated 1-d, got %v", op, targets.Shape()))
	}
	return out
}

// logAdd returns log(exp(a) + exp(b)).
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(a, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// ctcSample returns sample i's negative log-likelihood for the first tn
// frames of lp ([T, N, C], flat) and writes its gradient with respect to lp
// into grad (same layout).
func ctcSample(lp, grad []float64, tMax, n, c, i, tn int, labels []int64, blank int) float64 {
	sn := 2*len(labels) + 1
	ext := make([]int, sn) // extended labels: blank, l1, blank, l2, ..., blank
	for s := range ext {
		ext[s] = blank
		if s%2 == 1 {
			ext[s] = int(labels[s/2])
		}
	}
	if tn == 0 {
		if len(labels) == 0 {
			return 0
		}
		return math.Inf(1)
	}
	at := func(t, k int) float64 { return lp[(t*n+i)*c+k] }
	negInf := math.Inf(-1)
	alpha := make([]float64, tn*sn)
	beta := make([]float64, tn*sn)
	for k := range alpha {
		alpha[k], beta[k] = negInf, negInf
	}
	// skip reports whether position s may be entered from s-2.
	skip := func(s int) bool { return s > 1 && ext[s] != blank && ext[s] != ext[s-2] }
	alpha[0] = at(0, ext[0])
	if sn > 1 {
		alpha[1] = at(0, ext[1])
	}
	for t := 1; t < tn; t++ {
		prev, cur := alpha[(t-1)*sn:t*sn], alpha[t*sn:(t+1)*sn]
		for s := range sn {
			a := prev[s]
			if s > 0 {
				a = logAdd(a, prev[s-1])
			}
			if skip(s) {
				a = logAdd(a, prev[s-2])
			}
			cur[s] = a + at(t, ext[s])
		}
	}
	last := (tn - 1) * sn
	beta[last+sn-1] = at(tn-1, ext[sn-1])
	if sn > 1 {
		beta[last+sn-2] = at(tn-1, ext[sn-2])
	}
	for t := tn - 2; t >= 0; t-- {
		next, cur := beta[(t+1)*sn:(t+2)*sn], beta[t*sn:(t+1)*sn]
		for s := range sn {
			b := next[s]
			if s+1 < sn {
				b = logAdd(b, next[s+1])
			}
			if s+2 < sn && skip(s+2) {
				b = logAdd(b, next[s+2])
			}
			cur[s] = b + at(t, ext[s])
		}
	}
	ll := alpha[last+sn-1]
	if sn > 1 {
		ll = logAdd(ll, alpha[last+sn-2])
	}
	nll := -ll
	if math.IsInf(nll, 1) { // no alignment: the gradient is undefined
		for t := range tn {
			row := grad[(t*n+i)*c : (t*n+i+1)*c]
			for k := range row {
				row[k] = math.NaN()
			}
		}
		return nll
	}
	lcab := make([]float64, c)
	for t := range tn {
		for k := range lcab {
			lcab[k] = negInf
		}
		for s := range sn {
			lcab[ext[s]] = logAdd(lcab[ext[s]], alpha[t*sn+s]+beta[t*sn+s])
		}
		row := grad[(t*n+i)*c : (t*n+i+1)*c]
		for k := range c {
			row[k] = -math.Exp(lcab[k] + nll - at(t, k))
		}
	}
	return nll
}
