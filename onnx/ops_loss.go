package onnx

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// Loss operators.

func lossOps() opTable {
	return opTable{
		"NegativeLogLikelihoodLoss": {{since: 12, impl: opNLLLoss}},
		"SoftmaxCrossEntropyLoss":   {{since: 12, impl: opSoftmaxCrossEntropy}},
	}
}

// nllLoss computes NegativeLogLikelihoodLoss of log-probabilities x
// ([N, C, d...]) against integer targets ([N, d...]) with optional class
// weights, honouring ignore_index and reduction.
func (n *node) nllLoss(x, target, weight *tensor.Tensor) (*tensor.Tensor, error) {
	if x.Dim() < 2 || target.Dim() != x.Dim()-1 {
		return nil, fmt.Errorf("onnx: %v: input %v and target %v shapes do not match", n, x.Shape(), target.Shape())
	}
	if target.DType().IsFloat() || target.DType() == tensor.Bool {
		return nil, fmt.Errorf("onnx: %v: target must be integer, got %s", n, target.DType())
	}
	t := target.To(tensor.Int64)
	mask := tensor.OnesLike(t).To(tensor.Bool)
	if n.has("ignore_index") {
		mask = t.Ne(tensor.FullLike(t, float64(n.attrInt("ignore_index", 0))))
	}
	safe := tensor.Where(mask, t, tensor.ZerosLike(t))
	picked := x.Gather(1, safe.Unsqueeze(1)).Squeeze(1)
	w := mask.To(x.DType())
	if weight != nil {
		w = w.Mul(weight.IndexSelect(0, safe.Reshape(-1)).Reshape(t.Shape()...))
	}
	loss := picked.Mul(w).Neg()
	switch r := n.attrString("reduction", "mean"); r {
	case "none":
		return loss, nil
	case "sum":
		return loss.Sum(nil, false), nil
	case "mean":
		return loss.Sum(nil, false).Div(w.Sum(nil, false)), nil
	default:
		return nil, fmt.Errorf("onnx: %v: unknown reduction %q", n, r)
	}
}

func opNLLLoss(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	t, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	loss, err := n.nllLoss(x, t, arg(in, 2))
	if err != nil {
		return nil, err
	}
	return one(loss)
}

func opSoftmaxCrossEntropy(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.need(in, 0)
	if err != nil {
		return nil, err
	}
	t, err := n.need(in, 1)
	if err != nil {
		return nil, err
	}
	if x.Dim() < 2 {
		return nil, fmt.Errorf("onnx: %v: scores %v need a class axis", n, x.Shape())
	}
	logp := x.LogSoftmax(1)
	loss, err := n.nllLoss(logp, t, arg(in, 2))
	if err != nil {
		return nil, err
	}
	return []*tensor.Tensor{loss, logp}, nil
}
