package onnx

import (
	"fmt"
	"math/rand/v2"

	"github.com/emberml/ember/tensor"
)

// trainingDropout is Dropout with training_mode set: each element is kept
// with probability 1-ratio and scaled by 1/(1-ratio). With a seed
// attribute the mask is the one ONNX's reference implementation draws
// (NumPy's RandomState(seed).uniform(0, 1, shape) >= ratio, the MT19937
// stream), so a seeded model gives the same result everywhere, run after
// run; without one every run draws a fresh seed.
func (n *node) trainingDropout(x *tensor.Tensor, ratio float64) ([]*tensor.Tensor, error) {
	if err := n.wantFloat(x, 0); err != nil {
		return nil, err
	}
	if !(ratio >= 0 && ratio < 1) {
		return nil, fmt.Errorf("onnx: %v: ratio %v must be in [0, 1)", n, ratio)
	}
	seed := uint32(rand.Uint64())
	if n.has("seed") {
		seed = uint32(n.attrInt("seed", 0))
	}
	gen := newMT19937(seed)
	keep := make([]bool, x.Numel())
	for i := range keep {
		keep[i] = gen.float64() >= ratio
	}
	mask := tensor.FromSlice(keep, x.Shape()...)
	scale := tensor.ScalarOf(1/(1-ratio), x.DType())
	y := tensor.Where(mask, x.Mul(scale), tensor.ZerosLike(x))
	return []*tensor.Tensor{y, mask}, nil
}

// mt19937 is the 32-bit Mersenne Twister (Matsumoto and Nishimura, 1998),
// seeded as init_genrand seeds it (which is what NumPy's legacy
// RandomState does with an integer seed).
type mt19937 struct {
	state [624]uint32
	pos   int
}

func newMT19937(seed uint32) *mt19937 {
	g := &mt19937{pos: len(mt19937{}.state)}
	g.state[0] = seed
	for i := 1; i < len(g.state); i++ {
		prev := g.state[i-1]
		g.state[i] = 1812433253*(prev^(prev>>30)) + uint32(i)
	}
	return g
}

// uint32 returns the next tempered output.
func (g *mt19937) uint32() uint32 {
	const n, m = 624, 397
	if g.pos >= n {
		for k := range n {
			y := g.state[k]&0x80000000 | g.state[(k+1)%n]&0x7fffffff
			next := g.state[(k+m)%n] ^ y>>1
			if y&1 != 0 {
				next ^= 0x9908b0df
			}
			g.state[k] = next
		}
		g.pos = 0
	}
	y := g.state[g.pos]
	g.pos++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	return y ^ y>>18
}

// float64 returns a uniform value in [0, 1) with 53 random bits, built
// from two outputs as genrand_res53 builds it.
func (g *mt19937) float64() float64 {
	a, b := g.uint32()>>5, g.uint32()>>6
	return (float64(a)*67108864 + float64(b)) / 9007199254740992
}
