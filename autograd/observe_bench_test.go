package autograd_test

import (
	"testing"

	"github.com/emberml/ember/autograd"
	"github.com/emberml/ember/tensor"
)

// nopObserver does nothing: the cost of the observer mark itself.
type nopObserver struct{}

func (nopObserver) BeginOp(string, bool)   {}
func (nopObserver) EndOp(autograd.OpEvent) {}

// BenchmarkTapeSmallOpsMarked runs BenchmarkTapeSmallOps's chain from an
// input marked for a no-op observer, and for anomaly detection (creation
// sites recorded, every gradient checked).
func BenchmarkTapeSmallOpsMarked(b *testing.B) {
	g := tensor.NewGenerator(1)
	x := autograd.New(g.Randn([]int{16}))
	w := autograd.Param(g.Randn([]int{16}))
	for _, v := range []struct {
		name string
		mark func(*autograd.Var) *autograd.Var
	}{
		{"unmarked", func(x *autograd.Var) *autograd.Var { return x }},
		{"observed", func(x *autograd.Var) *autograd.Var { return autograd.Observe(x, nopObserver{}) }},
		{"anomaly", func(x *autograd.Var) *autograd.Var { return autograd.DetectAnomaly(x, autograd.AnomalyOptions{}) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				w.ZeroGrad()
				smallOpChain(b, v.mark(x), w)
			}
		})
	}
}
