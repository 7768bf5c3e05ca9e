package onnx

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/emberml/ember/tensor"
)

// Random generators. ONNX leaves their streams to the implementation (the
// backend test data says its expected values are informational even with a
// seed), so Ember draws from a PCG generator: seeded by the seed attribute,
// every run of a model gives the same values; without one, every run draws
// a fresh seed. They are stateful, so constant folding never freezes an
// unseeded draw into the model.

func randomOps() opTable {
	st := func(f opImpl, since int64) []opVersion { return []opVersion{{since: since, impl: f, stateful: true}} }
	return opTable{
		"RandomUniform":     st(randomFill(false, false), 1),
		"RandomNormal":      st(randomFill(true, false), 1),
		"RandomUniformLike": st(randomFill(false, true), 1),
		"RandomNormalLike":  st(randomFill(true, true), 1),
		"Bernoulli":         st(opBernoulli, 15),
		"Multinomial":       st(opMultinomial, 7),
	}
}

// rng returns the node's generator: seeded from the seed attribute (a
// float in ONNX; its bits make the PCG seed) or from the runtime's source.
func (n *node) rng() *rand.Rand {
	if n.has("seed") {
		s := math.Float64bits(n.attrFloat("seed", 0))
		return rand.New(rand.NewPCG(s, s^0x9e3779b97f4a7c15))
	}
	return rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
}

// randomDType reads the dtype attribute (def when unset), a float type.
func (n *node) randomDType(def tensor.DType) (tensor.DType, error) {
	dt, err := n.dtypeAttr("dtype", def)
	if err != nil {
		return 0, err
	}
	if !dt.IsFloat() {
		return 0, fmt.Errorf("onnx: %v: dtype %s is not a float type", n, dt)
	}
	return dt, nil
}

// randomFill returns RandomUniform/RandomNormal (shape from the attribute)
// or their Like forms (shape, and by default dtype, from the input):
// uniform on [low, high) or normal with mean and scale.
func randomFill(normal, like bool) opImpl {
	return func(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
		var shape []int
		def := tensor.Float32
		if like {
			x, err := n.need(in, 0)
			if err != nil {
				return nil, err
			}
			shape = x.Shape()
			if x.DType().IsFloat() {
				def = x.DType()
			}
		} else {
			if !n.has("shape") {
				return nil, fmt.Errorf("onnx: %v: attribute shape is missing", n)
			}
			shape = toInts(n.attrInts("shape"))
			for _, d := range shape {
				if d < 0 {
					return nil, fmt.Errorf("onnx: %v: negative dimension in shape %v", n, shape)
				}
			}
		}
		// The values are drawn into a float64 buffer first.
		if err := n.checkShape(shape, tensor.Float64); err != nil {
			return nil, err
		}
		dt, err := n.randomDType(def)
		if err != nil {
			return nil, err
		}
		g := n.rng()
		v := make([]float64, prod(shape))
		if normal {
			mean, scale := n.attrFloat("mean", 0), n.attrFloat("scale", 1)
			for i := range v {
				v[i] = mean + scale*g.NormFloat64()
			}
		} else {
			low, high := n.attrFloat("low", 0), n.attrFloat("high", 1)
			if !(low <= high) {
				return nil, fmt.Errorf("onnx: %v: low %v above high %v", n, low, high)
			}
			for i := range v {
				v[i] = low + (high-low)*g.Float64()
			}
		}
		return one(tensor.FromSlice(v, shape...).To(dt))
	}
}

// opBernoulli draws 1 with probability p (the input) and 0 otherwise.
func opBernoulli(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	p, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	dt, err := n.dtypeAttr("dtype", p.DType())
	if err != nil {
		return nil, err
	}
	g := n.rng()
	probs := p.Float64s()
	v := make([]float64, len(probs))
	for i, q := range probs {
		if !(q >= 0 && q <= 1) {
			return nil, fmt.Errorf("onnx: %v: probability %v at %d outside [0, 1]", n, q, i)
		}
		if g.Float64() < q {
			v[i] = 1
		}
	}
	return one(tensor.FromSlice(v, p.Shape()...).To(dt))
}

// opMultinomial draws sample_size class indices per row of input ([batch,
// classes] unnormalized log-probabilities), with replacement.
func opMultinomial(n *node, in []*tensor.Tensor) ([]*tensor.Tensor, error) {
	x, err := n.needFloat(in, 0)
	if err != nil {
		return nil, err
	}
	if x.Dim() != 2 || x.Shape()[1] == 0 {
		return nil, fmt.Errorf("onnx: %v: input %v must be [batch, classes] with classes > 0", n, x.Shape())
	}
	dt, err := n.dtypeAttr("dtype", tensor.Int32)
	if err != nil {
		return nil, err
	}
	if dt != tensor.Int32 && dt != tensor.Int64 {
		return nil, fmt.Errorf("onnx: %v: dtype %s, want int32 or int64", n, dt)
	}
	samples := int(n.attrInt("sample_size", 1))
	batch, classes := x.Shape()[0], x.Shape()[1]
	if samples < 0 {
		return nil, fmt.Errorf("onnx: %v: sample_size %d is negative", n, samples)
	}
	if err := n.checkShape([]int{batch, samples}, dt); err != nil {
		return nil, err
	}
	g := n.rng()
	logits := x.Float64s()
	out := make([]int64, batch*samples)
	cdf := make([]float64, classes)
	for b := range batch {
		row := logits[b*classes : (b+1)*classes]
		top := math.Inf(-1)
		for _, l := range row {
			top = max(top, l)
		}
		sum := 0.0
		for c, l := range row {
			sum += math.Exp(l - top) // shifted so the largest term is 1
			cdf[c] = sum
		}
		if !(sum > 0) || math.IsInf(sum, 0) {
			return nil, fmt.Errorf("onnx: %v: row %d has no finite probabilities", n, b)
		}
		for s := range samples {
			u := g.Float64() * sum
			c := 0
			for c < classes-1 && cdf[c] <= u {
				c++
			}
			out[b*samples+s] = int64(c)
		}
	}
	return one(tensor.FromSlice(out, batch, samples).To(dt))
}
