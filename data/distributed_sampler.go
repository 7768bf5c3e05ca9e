package data

import (
	"fmt"
	"iter"
	"sync/atomic"

	"github.com/emberml/ember/tensor"
)

// DistributedSamplerOptions configures a DistributedSampler.
type DistributedSamplerOptions struct {
	// Replicas is the number of ranks sharing the dataset (at least 1).
	Replicas int
	// Rank is this rank, in [0, Replicas).
	Rank int
	// Shuffle permutes the indices every epoch; the permutation depends
	// only on Seed and the epoch, so all ranks agree on it.
	Shuffle bool
	// Seed seeds the shuffling; it must be the same on every rank.
	Seed uint64
	// DropLast drops the tail that would not divide evenly among the
	// ranks; otherwise the index list is padded by repeating its start.
	DropLast bool
}

// DistributedSampler splits a dataset's indices among the ranks of a
// data-parallel job, as PyTorch's DistributedSampler does: every rank gets
// the same number of indices, disjoint from the other ranks' except for
// the padding, taken as every Replicas-th index of the (shuffled) order
// starting at Rank.
//
// It lives in data and knows nothing of the network: the replica count and
// rank come from the caller (for example from a distributed.ProcessGroup).
// A sampler may be shared between goroutines.
type DistributedSampler struct {
	n     int
	opts  DistributedSamplerOptions
	per   int
	epoch atomic.Int64
}

// NewDistributedSampler returns a sampler over n samples. It panics on a
// negative n, fewer than one replica or a rank outside [0, Replicas).
func NewDistributedSampler(n int, opts DistributedSamplerOptions) *DistributedSampler {
	if n < 0 {
		panic(fmt.Sprintf("data.NewDistributedSampler: negative dataset length %d", n))
	}
	if opts.Replicas < 1 {
		panic(fmt.Sprintf("data.NewDistributedSampler: %d replicas, want at least 1", opts.Replicas))
	}
	if opts.Rank < 0 || opts.Rank >= opts.Replicas {
		panic(fmt.Sprintf("data.NewDistributedSampler: rank %d outside [0, %d)", opts.Rank, opts.Replicas))
	}
	s := &DistributedSampler{n: n, opts: opts}
	if opts.DropLast && n%opts.Replicas != 0 {
		s.per = n / opts.Replicas
	} else {
		s.per = (n + opts.Replicas - 1) / opts.Replicas
	}
	return s
}

// Len returns the number of indices each rank gets per epoch.
func (s *DistributedSampler) Len() int { return s.per }

// SetEpoch records the epoch used by Indices with a negative argument;
// call it at the start of each epoch, as with PyTorch's set_epoch.
func (s *DistributedSampler) SetEpoch(epoch int) { s.epoch.Store(int64(epoch)) }

// Epoch returns the epoch set by SetEpoch.
func (s *DistributedSampler) Epoch() int { return int(s.epoch.Load()) }

// Indices returns this rank's dataset indices for epoch (the epoch set by
// SetEpoch when epoch is negative).
func (s *DistributedSampler) Indices(epoch int) []int {
	if epoch < 0 {
		epoch = s.Epoch()
	}
	order := make([]int, s.n)
	if s.opts.Shuffle {
		for i, p := range tensor.NewGenerator(epochSeed(s.opts.Seed, epoch)).Perm(s.n) {
			order[i] = int(p)
		}
	} else {
		for i := range order {
			order[i] = i
		}
	}
	total := s.per * s.opts.Replicas
	if total > s.n && s.n > 0 {
		for len(order) < total {
			order = append(order, order[:min(total-len(order), s.n)]...)
		}
	}
	order = order[:total]
	out := make([]int, 0, s.per)
	for i := s.opts.Rank; i < total; i += s.opts.Replicas {
		out = append(out, order[i])
	}
	return out
}

// Subset returns this rank's part of ds for epoch, ready for a Loader
// (shuffling, if wanted, is already done: use a Loader without Shuffle).
func (s *DistributedSampler) Subset(ds Dataset, epoch int) *Subset {
	if ds.Len() != s.n {
		panic(fmt.Sprintf("data.DistributedSampler.Subset: dataset has %d samples, the sampler was made for %d", ds.Len(), s.n))
	}
	return NewSubset(ds, s.Indices(epoch))
}

// Batches yields this rank's index batches of epoch, batchSize at a time;
// with dropLast a short final batch is left out.
func (s *DistributedSampler) Batches(epoch, batchSize int, dropLast bool) iter.Seq[[]int] {
	if batchSize < 1 {
		panic(fmt.Sprintf("data.DistributedSampler.Batches: batch size %d, want at least 1", batchSize))
	}
	return func(yield func([]int) bool) {
		idx := s.Indices(epoch)
		for at := 0; at < len(idx); at += batchSize {
			end := min(at+batchSize, len(idx))
			if end-at < batchSize && dropLast {
				return
			}
			if !yield(idx[at:end:end]) {
				return
			}
		}
	}
}
