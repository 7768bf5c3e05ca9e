package data

import (
	"fmt"

	"github.com/emberml/ember/tensor"
)

// StateDict returns the sampler's position for a checkpoint, in the
// optimizers' convention: "epoch" (the epoch SetEpoch recorded) and, to
// check the resumed run, "seed" and "samples", all Int64 scalars (the
// seed's 64 bits as an int64).
func (s *DistributedSampler) StateDict() map[string]*tensor.Tensor {
	scalar := func(v int64) *tensor.Tensor { return tensor.FromSlice([]int64{v}, []int{}...) }
	return map[string]*tensor.Tensor{
		"epoch":   scalar(int64(s.Epoch())),
		"seed":    scalar(int64(s.opts.Seed)),
		"samples": scalar(int64(s.n)),
	}
}

// LoadStateDict restores the epoch saved by StateDict. It returns an error,
// changing nothing, if a key is missing, unexpected or not a one-element
// Int64 tensor, or if the seed or the dataset's size differ from this
// sampler's (the indices would not be the same).
func (s *DistributedSampler) LoadStateDict(sd map[string]*tensor.Tensor) error {
	const op = "data.DistributedSampler.LoadStateDict"
	keys := []string{"epoch", "seed", "samples"}
	var v [3]int64
	for i, key := range keys {
		t, ok := sd[key]
		if !ok || t == nil {
			return fmt.Errorf("%s: missing %q", op, key)
		}
		if t.Numel() != 1 || t.DType() != tensor.Int64 {
			return fmt.Errorf("%s: %q is a %v tensor of shape %v, want one Int64", op, key, t.DType(), t.Shape())
		}
		v[i] = t.Int64s()[0]
	}
	if len(sd) != len(keys) {
		for k := range sd {
			if k != "epoch" && k != "seed" && k != "samples" {
				return fmt.Errorf("%s: unexpected key %q", op, k)
			}
		}
	}
	epoch, seed, samples := v[0], uint64(v[1]), v[2]
	if seed != s.opts.Seed || samples != int64(s.n) {
		return fmt.Errorf("%s: saved for %d samples with seed %d, this sampler has %d samples and seed %d", op, samples, seed, s.n, s.opts.Seed)
	}
	if epoch < 0 {
		return fmt.Errorf("%s: negative epoch %d", op, epoch)
	}
	s.SetEpoch(int(epoch))
	return nil
}
