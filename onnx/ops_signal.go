package onnx

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Window functions.

func signalOps() opTable {
	return opTable{
		"HannWindow":     {{since: 17, impl: window(0.5, 0.5, 0)}},
		"HammingWindow":  {{since: 17, impl: window(25.0/46, 21.0/46, 0)}},
		"BlackmanWindow": {{since: 17, impl: window(0.42, 0.5, 0.08)}},
	}
}

// window returns a generalized cosine window a0 - a1 cos(2πn/N) +
// a2 cos(4πn/N), with N the size (periodic) or size-1 (symmetric).
func window(a0, a1, a2 float64) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		st, err := n.need(in, 0)
		if err != nil {
			return nil, err
		}
		size := int(st.Reshape(-1).At(0))
		if size < 0 || int64(size) > n.maxElements {
			return nil, fmt.Errorf("onnx: %v: bad window size %d", n, size)
		}
		dt, err := dtypeFromONNX(n.attrInt("output_datatype", dtFloat))
		if err != nil {
			return nil, fmt.Errorf("%v: %w", n, err)
		}
		den := float64(size)
		if n.attrInt("periodic", 1) == 0 {
			den = float64(size - 1)
		}
		v := make([]float64, size)
		for i := range v {
			x := 2 * math.Pi * float64(i) / den
			v[i] = a0 - a1*math.Cos(x) + a2*math.Cos(2*x)
		}
		return one(tensor.FromSlice(v).To(dt))
	}
}
