package onnx

import "github.com/emberml/ember/tensor"

// Float16 and bfloat16 are storage dtypes in the tensor package: most
// kernels take float32 and float64 only. The operators below compute a
// float16 or bfloat16 input in float32 and round their first output back
// to the input's dtype once, as ONNX Runtime's CPU kernels do for the
// operators it supports in half precision.

// halfLiftedOps are the operators whose first output has the float dtype
// of their first input and whose kernels need float32 or float64.
var halfLiftedOps = []string{
	"Abs", "Ceil", "Clip", "Cos", "Erf", "Exp", "Floor", "Gelu", "HardSigmoid", "HardSwish",
	"LayerNormalization", "LeakyRelu", "Log", "LpNormalization", "Mish", "Neg", "PRelu", "Pow",
	"Reciprocal", "Relu", "Round", "Selu", "Sigmoid", "Sign", "Sin", "Softplus", "Softsign",
	"Sqrt", "Tanh", "InstanceNormalization", "MaxPool", "AveragePool", "GlobalAveragePool",
	"GlobalMaxPool", "LpPool", "GlobalLpPool", "Hardmax", "ConvTranspose", "CumSum", "ArgMax", "ArgMin",
}

// liftHalves wraps the implementations of halfLiftedOps in r with
// halfLift and returns r.
func liftHalves(r opTable) opTable {
	for _, op := range halfLiftedOps {
		for i := range r[op] {
			r[op][i].impl = halfLift(r[op][i].impl)
		}
	}
	return r
}

// halfLift wraps an operator whose kernels take float32 and float64 only:
// float16 and bfloat16 inputs are widened to float32, and a float32 first
// output is rounded back to the first input's dtype (further outputs keep
// theirs: LayerNormalization's statistics are float32 as its stash_type
// says, MaxPool's indices int64).
func halfLift(impl opImpl) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		x := arg(in, 0)
		if x == nil || (x.DType() != tensor.Float16 && x.DType() != tensor.BFloat16) {
			return impl(n, in)
		}
		wide := make([]*tensor.Tensor, len(in))
		for i, t := range in {
			if t != nil && (t.DType() == tensor.Float16 || t.DType() == tensor.BFloat16) {
				t = t.To(tensor.Float32)
			}
			wide[i] = t
		}
		out, err := impl(n, wide)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 && out[0] != nil && out[0].DType() == tensor.Float32 {
			out[0] = out[0].To(x.DType())
		}
		return out, nil
	}
}
