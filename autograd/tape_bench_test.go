package autograd_test

import (
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// smallOpChain runs 24 elementwise ops on x and a parameter, then backward:
// tensors of 16 elements, so the per-op bookkeeping of the tape (what an
// observer mark or anomaly detection would add to) weighs as much as it
// ever does.
func smallOpChain(b *testing.B, x, w *autograd.Var) {
	h := x
	for range 6 {
		h = h.Mul(w).Add(x).Tanh().MulScalar(0.5)
	}
	if err := h.Sum(nil, false).Backward(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkTapeSmallOps is the unmarked path: what every computation that
// is neither observed nor checked for anomalies costs. Compare it with the
// same benchmark on a commit before Observe and DetectAnomaly existed.
func BenchmarkTapeSmallOps(b *testing.B) {
	g := tensor.NewGenerator(1)
	x := autograd.New(g.Randn([]int{16}))
	w := autograd.Param(g.Randn([]int{16}))
	for b.Loop() {
		w.ZeroGrad()
		smallOpChain(b, x, w)
	}
}
