package data

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/emberml/ember/tensor"
)

func TestDistributedSamplerMatchesTorchLayout(t *testing.T) {
	// Without shuffling the layout is PyTorch's exactly:
	// torch.utils.data.DistributedSampler(range(n), num_replicas=r, rank=k, shuffle=False, drop_last=d)
	// (values printed by torch 1.13).
	tests := []struct {
		n, replicas int
		dropLast    bool
		want        [][]int
	}{
		{10, 3, false, [][]int{{0, 3, 6, 9}, {1, 4, 7, 0}, {2, 5, 8, 1}}},
		{10, 3, true, [][]int{{0, 3, 6}, {1, 4, 7}, {2, 5, 8}}},
		{8, 4, false, [][]int{{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
		{2, 5, false, [][]int{{0}, {1}, {0}, {1}, {0}}},
		{2, 5, true, [][]int{{}, {}, {}, {}, {}}},
		{0, 2, false, [][]int{{}, {}}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("n=%d/r=%d/drop=%v", tc.n, tc.replicas, tc.dropLast), func(t *testing.T) {
			for rank, want := range tc.want {
				s := NewDistributedSampler(tc.n, DistributedSamplerOptions{Replicas: tc.replicas, Rank: rank, DropLast: tc.dropLast})
				got := s.Indices(0)
				assert.Equal(t, len(want), s.Len())
				assert.Equal(t, want, append([]int{}, got...), "rank %d", rank)
			}
		})
	}
}

func TestDistributedSamplerShuffleCoversDataset(t *testing.T) {
	const n, replicas = 23, 4
	seen := map[int]int{}
	var perRank [][]int
	for rank := range replicas {
		s := NewDistributedSampler(n, DistributedSamplerOptions{Replicas: replicas, Rank: rank, Shuffle: true, Seed: 9})
		idx := s.Indices(3)
		require.Len(t, idx, 6)
		perRank = append(perRank, idx)
		for _, i := range idx {
			seen[i]++
		}
		// Same epoch, same order; another epoch, another order.
		assert.Equal(t, idx, s.Indices(3))
		s.SetEpoch(3)
		assert.Equal(t, idx, s.Indices(-1))
		assert.NotEqual(t, idx, s.Indices(4))
	}
	assert.Len(t, seen, n, "every sample is visited")
	dup := 0
	for _, c := range seen {
		dup += c - 1
	}
	assert.Equal(t, replicas*6-n, dup, "only the padding repeats")
	assert.False(t, slices.Equal(perRank[0], []int{0, 4, 8, 12, 16, 20}), "shuffled")
}

func TestDistributedSamplerSubsetAndBatches(t *testing.T) {
	ds := NewTensorDataset(tensor.Arange(0, 10, 1))
	s := NewDistributedSampler(10, DistributedSamplerOptions{Replicas: 2, Rank: 1})
	sub := s.Subset(ds, 0)
	require.Equal(t, 5, sub.Len())
	assert.Equal(t, []float64{1, 3, 5, 7, 9}, Gather(sub, []int{0, 1, 2, 3, 4})[0].Float64s())
	var batches [][]int
	for b := range s.Batches(0, 2, false) {
		batches = append(batches, b)
	}
	assert.Equal(t, [][]int{{1, 3}, {5, 7}, {9}}, batches)
	batches = nil
	for b := range s.Batches(0, 2, true) {
		batches = append(batches, b)
	}
	assert.Equal(t, [][]int{{1, 3}, {5, 7}}, batches)
	assert.Panics(t, func() { NewDistributedSampler(5, DistributedSamplerOptions{Replicas: 2, Rank: 2}) })
	assert.Panics(t, func() { s.Subset(NewTensorDataset(tensor.Arange(0, 3, 1)), 0) })
}
