package tensor_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

// draws takes a mix of every kind of draw from g, as float64s.
func draws(g *tensor.Generator) []float64 {
	var out []float64
	out = append(out, g.Uniform([]int{3}, -1, 1, tensor.Float64).Float64s()...)
	out = append(out, g.Normal([]int{3}, 0, 1, tensor.Float64).Float64s()...)
	out = append(out, g.RandInt([]int{2}, 0, 1000).Float64s()...)
	for _, p := range g.Perm(5) {
		out = append(out, float64(p))
	}
	out = append(out, g.Bernoulli(tensor.Full([]int{4}, 0.5, tensor.Float64)).Float64s()...)
	return append(out, float64(g.Uint64()))
}

func TestGeneratorStateRoundTrip(t *testing.T) {
	g := tensor.NewGenerator(42)
	draws(g) // move away from the seed's state
	state, err := g.MarshalBinary()
	require.NoError(t, err)
	want := draws(g)

	var restored tensor.Generator // the zero value can be restored into
	require.NoError(t, restored.UnmarshalBinary(state))
	assert.Equal(t, want, draws(&restored))

	other := tensor.NewGenerator(7) // and so can a generator already in use
	require.NoError(t, other.UnmarshalBinary(state))
	assert.Equal(t, want, draws(other))
	assert.NotEqual(t, want, draws(other), "the restored generator moves on")
}

func TestGeneratorSeed(t *testing.T) {
	want := draws(tensor.NewGenerator(5))
	g := tensor.NewGenerator(9)
	draws(g)
	g.Seed(5)
	assert.Equal(t, want, draws(g))

	var zero tensor.Generator
	zero.Seed(5)
	assert.Equal(t, want, draws(&zero))
}

func TestGeneratorMalformedState(t *testing.T) {
	g := tensor.NewGenerator(3)
	want := draws(tensor.NewGenerator(3))
	good, err := tensor.NewGenerator(1).MarshalBinary()
	require.NoError(t, err)
	for name, state := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-1],
		"longer":    append(append([]byte(nil), good...), 0),
		"wrong tag": append([]byte("xyz:"), good[4:]...),
	} {
		err := g.UnmarshalBinary(state)
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "tensor.Generator.UnmarshalBinary", name)
	}
	assert.Equal(t, want, draws(g), "a failed restore leaves the generator unchanged")
}

func TestGeneratorZeroValue(t *testing.T) {
	var g tensor.Generator
	_, err := g.MarshalBinary()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "never seeded")
	corePanicContains(t, func() { g.Perm(3) }, "never seeded", "NewGenerator")
}

// A generator's state saved mid-run restores the rest of the run exactly.
func ExampleGenerator_MarshalBinary() {
	g := tensor.NewGenerator(1)
	g.Rand([]int{100}) // the run so far
	state, err := g.MarshalBinary()
	if err != nil {
		panic(err)
	}
	next := g.Perm(6)

	var resumed tensor.Generator
	if err := resumed.UnmarshalBinary(state); err != nil {
		panic(err)
	}
	fmt.Println(len(state), fmt.Sprint(resumed.Perm(6)) == fmt.Sprint(next))
	// Output:
	// 20 true
}

// Seed restarts a generator, as NewGenerator with that seed would.
func ExampleGenerator_Seed() {
	g := tensor.NewGenerator(3)
	first := g.Perm(5)
	g.Perm(5)
	g.Seed(3)
	fmt.Println(fmt.Sprint(g.Perm(5)) == fmt.Sprint(first))
	// Output:
	// true
}
