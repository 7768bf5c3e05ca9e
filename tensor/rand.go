package tensor

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// Generator is a seeded source of random tensors. The same seed gives the
// same sequence of tensors, on every device: values are drawn on the host
// and returned as CPU tensors, which a caller moves to its device with one
// ToDevice (or ToDeviceOf) copy; ops that draw for a device input (Dropout,
// Bernoulli) make that copy themselves. A Generator may be shared between goroutines
// (it locks), but one per goroutine keeps results reproducible.
//
// A generator's state can be saved with MarshalBinary and restored with
// UnmarshalBinary (into any Generator, the zero value included), so that a
// resumed run draws exactly what the uninterrupted run would have drawn;
// Seed restarts it from a seed. Use NewGenerator, Seed or UnmarshalBinary
// before drawing: a zero Generator has no state to draw from.
type Generator struct {
	mu  sync.Mutex
	src *rand.PCG // the state; rng draws from it and holds nothing else
	rng *rand.Rand
}

// generatorStream is the PCG stream constant mixed into every seed.
const generatorStream = 0x9e3779b97f4a7c15

// NewGenerator returns a generator seeded with seed.
func NewGenerator(seed uint64) *Generator {
	g := &Generator{}
	g.Seed(seed)
	return g
}

// Seed restarts the generator from seed: afterwards it draws the same
// sequence as NewGenerator(seed).
func (g *Generator) Seed(seed uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setSource(rand.NewPCG(seed, seed^generatorStream))
}

func (g *Generator) setSource(src *rand.PCG) {
	g.src, g.rng = src, rand.New(src)
}

// MarshalBinary returns the generator's state (16 bytes of PCG state behind
// a short tag), for UnmarshalBinary to restore. It implements
// encoding.BinaryMarshaler.
func (g *Generator) MarshalBinary() ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.src == nil {
		return nil, errors.New("tensor.Generator.MarshalBinary: the generator was never seeded (use NewGenerator)")
	}
	return g.src.MarshalBinary()
}

// UnmarshalBinary restores a state returned by MarshalBinary: afterwards
// the generator draws what the marshalled one would have drawn next. A
// malformed state returns an error and leaves the generator unchanged. It
// implements encoding.BinaryUnmarshaler.
func (g *Generator) UnmarshalBinary(state []byte) error {
	src := &rand.PCG{}
	if err := src.UnmarshalBinary(state); err != nil {
		return fmt.Errorf("tensor.Generator.UnmarshalBinary: not a generator state (%d bytes): %w", len(state), err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.setSource(src)
	return nil
}

// lock locks the generator for drawing, panicking with a clear message if
// it was never seeded.
func (g *Generator) lock() {
	g.mu.Lock()
	if g.rng == nil {
		g.mu.Unlock()
		panic("tensor.Generator: drawing from a generator that was never seeded; use tensor.NewGenerator(seed), Seed or UnmarshalBinary")
	}
}

func (g *Generator) fill(n int, f func(r *rand.Rand) float64) []float64 {
	g.lock()
	defer g.mu.Unlock()
	v := make([]float64, n)
	for i := range v {
		v[i] = f(g.rng)
	}
	return v
}

// Uint64 returns a random 64-bit value, for seeding derived generators.
func (g *Generator) Uint64() uint64 {
	g.lock()
	defer g.mu.Unlock()
	return g.rng.Uint64()
}

// Rand returns values uniform in [0, 1).
func (g *Generator) Rand(shape []int, dt ...DType) *Tensor {
	return g.Uniform(shape, 0, 1, dt...)
}

// Uniform returns values uniform in [lo, hi). For Float32 the bound holds
// after rounding: no value rounds up to hi.
func (g *Generator) Uniform(shape []int, lo, hi float64, dt ...DType) *Tensor {
	checkShape("Uniform", shape)
	if !(lo <= hi) || math.IsInf(hi-lo, 0) {
		panic(fmt.Sprintf("tensor.Uniform: need finite lo <= hi, got [%v, %v)", lo, hi))
	}
	d := pickDType(dt)
	top := hi // largest value allowed, once rounded to d
	if lo < hi {
		top = math.Nextafter(hi, lo)
		if d == Float32 {
			top = float64(math.Nextafter32(float32(hi), float32(lo)))
		}
		top = max(top, lo)
	}
	v := g.fill(numel(shape), func(r *rand.Rand) float64 { return min(lo+(hi-lo)*r.Float64(), top) })
	return FromSlice(v, shape...).To(d)
}

// Randn returns standard normal values.
func (g *Generator) Randn(shape []int, dt ...DType) *Tensor {
	return g.Normal(shape, 0, 1, dt...)
}

// Normal returns normal values with the given mean and standard deviation.
func (g *Generator) Normal(shape []int, mean, std float64, dt ...DType) *Tensor {
	checkShape("Normal", shape)
	v := g.fill(numel(shape), func(r *rand.Rand) float64 { return mean + std*r.NormFloat64() })
	return FromSlice(v, shape...).To(pickDType(dt))
}

// RandInt returns Int64 values uniform in [lo, hi).
func (g *Generator) RandInt(shape []int, lo, hi int64) *Tensor {
	if hi <= lo {
		panic(fmt.Sprintf("tensor.RandInt: empty range [%d, %d)", lo, hi))
	}
	checkShape("RandInt", shape)
	g.lock()
	v := make([]int64, numel(shape))
	for i := range v {
		v[i] = lo + g.rng.Int64N(hi-lo)
	}
	g.mu.Unlock()
	return FromSlice(v, shape...)
}

// Bernoulli returns 0/1 values (dtype of p) that are 1 with probability p,
// elementwise, on p's device (p is read and the values drawn on the host).
func (g *Generator) Bernoulli(p *Tensor) *Tensor {
	probs := p.Float64s()
	g.lock()
	for i, q := range probs {
		if q < 0 || q > 1 || math.IsNaN(q) {
			g.mu.Unlock()
			panic(fmt.Sprintf("tensor.Bernoulli: probability %v out of [0, 1]", q))
		}
		if g.rng.Float64() < q {
			probs[i] = 1
		} else {
			probs[i] = 0
		}
	}
	g.mu.Unlock()
	dt := p.dtype
	if !dt.IsFloat() {
		dt = Float32
	}
	return FromSlice(probs, p.shape...).To(dt).ToDeviceOf(p)
}

// Permutation returns a random permutation of 0..n-1 as Int64.
func (g *Generator) Permutation(n int) *Tensor {
	return FromSlice(g.Perm(n))
}

// Perm returns a random permutation of 0..n-1 as a Go slice.
func (g *Generator) Perm(n int) []int64 {
	g.lock()
	defer g.mu.Unlock()
	p := make([]int64, n)
	for i := range p {
		p[i] = int64(i)
	}
	g.rng.Shuffle(n, func(i, j int) { p[i], p[j] = p[j], p[i] })
	return p
}
