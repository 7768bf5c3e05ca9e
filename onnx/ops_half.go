package onnx

import "github.com/emberml/ember/tensor"

// halfLift wraps an operator whose kernels take float32 and float64 only:
// float16 and bfloat16 inputs are widened to float32, and every float32
// output of such a call is rounded back to the first input's dtype once.
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
		for i, t := range out {
			if t != nil && t.DType() == tensor.Float32 {
				out[i] = t.To(x.DType())
			}
		}
		return out, nil
	}
}
