package data_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/data"
	"github.com/emberml/ember/tensor"
)

func TestDistributedSamplerStateDict(t *testing.T) {
	opts := data.DistributedSamplerOptions{Replicas: 3, Rank: 1, Shuffle: true, Seed: 11}
	s := data.NewDistributedSampler(20, opts)
	s.SetEpoch(4)
	want := s.Indices(-1)

	resumed := data.NewDistributedSampler(20, opts)
	require.NoError(t, resumed.LoadStateDict(s.StateDict()))
	assert.Equal(t, 4, resumed.Epoch())
	assert.Equal(t, want, resumed.Indices(-1))

	other := data.NewDistributedSampler(20, data.DistributedSamplerOptions{Replicas: 3, Rank: 1, Shuffle: true, Seed: 12})
	require.ErrorContains(t, other.LoadStateDict(s.StateDict()), "seed 11")
	assert.Equal(t, 0, other.Epoch(), "a refused state changes nothing")

	sd := s.StateDict()
	delete(sd, "epoch")
	require.ErrorContains(t, resumed.LoadStateDict(sd), `missing "epoch"`)
	sd = s.StateDict()
	sd["epoch"] = tensor.FromSlice([]float64{1, 2}, 2)
	require.ErrorContains(t, resumed.LoadStateDict(sd), `"epoch" is a`)
	sd = s.StateDict()
	sd["position"] = sd["epoch"]
	require.ErrorContains(t, resumed.LoadStateDict(sd), `unexpected key "position"`)
	sd = s.StateDict()
	sd["epoch"] = tensor.FromSlice([]int64{-2}, []int{}...)
	require.ErrorContains(t, resumed.LoadStateDict(sd), "negative epoch")
	assert.Equal(t, 4, resumed.Epoch())
}
