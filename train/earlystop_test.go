package train_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
	"github.com/emberml/ember/train"
)

func TestEarlyStoppingMin(t *testing.T) {
	e := train.NewEarlyStopping(train.Min, 2, 0.01)
	_, _, ok := e.Best()
	assert.False(t, ok)
	steps := []struct {
		value          float64
		improved, stop bool
	}{
		{1.0, true, false},
		{0.995, false, false}, // better, but by less than MinDelta
		{0.98, true, false},   // 0.02 better than the best, 1.0
		{0.975, false, false},
		{math.NaN(), false, true}, // second value without improvement
	}
	for i, s := range steps {
		assert.Equal(t, s.improved, e.Observe(s.value), "value %d", i)
		assert.Equal(t, s.stop, e.ShouldStop(), "value %d", i)
	}
	best, at, ok := e.Best()
	assert.True(t, ok)
	assert.Equal(t, 0.98, best)
	assert.Equal(t, 2, at)
	assert.Equal(t, 2, e.Stale())
}

func TestEarlyStoppingMax(t *testing.T) {
	e := train.NewEarlyStopping(train.Max, 1, 0)
	assert.True(t, e.Observe(0.5))
	assert.True(t, e.Observe(0.6))
	assert.False(t, e.ShouldStop())
	assert.False(t, e.Observe(0.6), "equal is no improvement")
	assert.True(t, e.ShouldStop())
	best, _, _ := e.Best()
	assert.Equal(t, 0.6, best)

	z := train.NewEarlyStopping(train.Max, 0, 0)
	assert.False(t, z.ShouldStop(), "nothing observed yet")
	z.Observe(1)
	assert.False(t, z.ShouldStop(), "patience 0 still waits for a value that does not improve")
	z.Observe(0)
	assert.True(t, z.ShouldStop())

	assert.Panics(t, func() { train.NewEarlyStopping(train.Mode(7), 1, 0) })
	assert.Panics(t, func() { train.NewEarlyStopping(train.Min, 1, math.NaN()) })
}

func TestEarlyStoppingStateDict(t *testing.T) {
	values := []float64{3, 2, 2.5, 1.9, 2.2, 2.1, 2.0}
	whole := train.NewEarlyStopping(train.Min, 3, 0.05)
	for _, v := range values {
		whole.Observe(v)
	}
	first := train.NewEarlyStopping(train.Min, 3, 0.05)
	for _, v := range values[:4] {
		first.Observe(v)
	}
	resumed := train.NewEarlyStopping(train.Min, 3, 0.05)
	require.NoError(t, resumed.LoadStateDict(first.StateDict()))
	for _, v := range values[4:] {
		resumed.Observe(v)
	}
	assert.Equal(t, whole.StateDict(), resumed.StateDict())
	assert.True(t, resumed.ShouldStop())

	sd := whole.StateDict()
	sd["stale"] = tensor.FromSlice([]int64{99}, []int{}...)
	assert.ErrorContains(t, resumed.LoadStateDict(sd), "inconsistent")
	delete(sd, "best")
	assert.ErrorContains(t, resumed.LoadStateDict(sd), `missing "best"`)
	assert.Equal(t, whole.StateDict(), resumed.StateDict(), "a failed load changes nothing")
}
