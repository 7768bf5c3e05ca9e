package data

import (
	"fmt"
	"math"

	"github.com/emberml/ember/tensor"
)

// Dataset is an indexed collection of samples. A sample is a fixed tuple of
// tensors, its fields: for example (image, label). Every sample of a dataset
// has the same number of fields, and a field has the same shape and dtype in
// every sample, so that samples can be stacked into batches.
//
// Get panics if i is outside [0, Len()), as slice indexing does.
type Dataset interface {
	// Len returns the number of samples.
	Len() int
	// Get returns the fields of sample i.
	Get(i int) []*tensor.Tensor
}

// Batcher is a Dataset that can gather many samples at once more cheaply
// than calling Get for each and stacking the results. Loader and Gather use
// GetBatch when a dataset has it.
type Batcher interface {
	Dataset
	// GetBatch returns, for each field, the samples at indices stacked along
	// a new first axis. The returned tensors own their storage.
	GetBatch(indices []int) []*tensor.Tensor
}

// Gather returns the samples of ds at indices, each field stacked along a
// new first axis: through GetBatch when ds is a Batcher, else with Get and
// tensor.Stack. It panics if indices is empty or out of range, or if the
// samples' fields differ in number.
func Gather(ds Dataset, indices []int) []*tensor.Tensor {
	if len(indices) == 0 {
		panic("data.Gather: no indices")
	}
	if b, ok := ds.(Batcher); ok {
		return b.GetBatch(indices)
	}
	n := ds.Len()
	var fields [][]*tensor.Tensor
	for k, i := range indices {
		checkIndex("Gather", i, n)
		s := ds.Get(i)
		if k == 0 {
			fields = make([][]*tensor.Tensor, len(s))
		} else if len(s) != len(fields) {
			panic(fmt.Sprintf("data.Gather: sample %d has %d fields, sample %d has %d; every sample needs the same fields", i, len(s), indices[0], len(fields)))
		}
		for f, t := range s {
			fields[f] = append(fields[f], t)
		}
	}
	out := make([]*tensor.Tensor, len(fields))
	for f, ts := range fields {
		out[f] = tensor.Stack(ts, 0)
	}
	return out
}

func checkIndex(op string, i, n int) {
	if i < 0 || i >= n {
		panic(fmt.Sprintf("data.%s: index %d out of range for a dataset of %d samples", op, i, n))
	}
}

// TensorDataset is a dataset over tensors that share their first axis: sample
// i is (t[i] for each tensor t). It is a Batcher: a batch is one gather of
// rows per tensor, without per-sample tensors.
type TensorDataset struct {
	tensors []*tensor.Tensor
	n       int
}

// NewTensorDataset returns the dataset whose sample i holds row i of every
// tensor. It panics if no tensors are given, if one is 0-d, or if their
// first dimensions differ.
func NewTensorDataset(tensors ...*tensor.Tensor) *TensorDataset {
	if len(tensors) == 0 {
		panic("data.NewTensorDataset: no tensors")
	}
	for i, t := range tensors {
		if t.Dim() == 0 {
			panic(fmt.Sprintf("data.NewTensorDataset: tensor %d is 0-d; every tensor needs a first (sample) axis", i))
		}
		if t.Size(0) != tensors[0].Size(0) {
			panic(fmt.Sprintf("data.NewTensorDataset: tensor %d has shape %v, tensor 0 has %v: first dimensions (sample counts) differ",
				i, t.Shape(), tensors[0].Shape()))
		}
	}
	return &TensorDataset{tensors: append([]*tensor.Tensor(nil), tensors...), n: tensors[0].Size(0)}
}

// Len returns the number of samples, the tensors' first dimension.
func (d *TensorDataset) Len() int { return d.n }

// Tensors returns the underlying tensors (not copies).
func (d *TensorDataset) Tensors() []*tensor.Tensor {
	return append([]*tensor.Tensor(nil), d.tensors...)
}

// Get returns row i of every tensor, as views sharing the dataset's storage.
func (d *TensorDataset) Get(i int) []*tensor.Tensor {
	checkIndex("TensorDataset.Get", i, d.n)
	out := make([]*tensor.Tensor, len(d.tensors))
	for k, t := range d.tensors {
		out[k] = t.Select(0, i)
	}
	return out
}

// GetBatch returns the rows at indices of every tensor, gathered into new
// contiguous tensors with a first axis of len(indices).
func (d *TensorDataset) GetBatch(indices []int) []*tensor.Tensor {
	idx := make([]int64, len(indices))
	for k, i := range indices {
		checkIndex("TensorDataset.GetBatch", i, d.n)
		idx[k] = int64(i)
	}
	it := tensor.FromSlice(idx)
	out := make([]*tensor.Tensor, len(d.tensors))
	for k, t := range d.tensors {
		if t.Device() != tensor.CPU {
			dev, err := it.ToDevice(t.Device())
			if err != nil {
				panic(fmt.Sprintf("data.TensorDataset.GetBatch: %v", err))
			}
			out[k] = t.IndexSelect(0, dev)
			continue
		}
		out[k] = t.IndexSelect(0, it)
	}
	return out
}

// Subset is the part of a dataset at a list of indices: sample i of the
// subset is sample indices[i] of the parent.
type Subset struct {
	parent  Dataset
	indices []int
}

// NewSubset returns the subset of ds at indices (copied). It panics if an
// index is out of range.
func NewSubset(ds Dataset, indices []int) *Subset {
	n := ds.Len()
	for _, i := range indices {
		checkIndex("NewSubset", i, n)
	}
	return &Subset{parent: ds, indices: append([]int(nil), indices...)}
}

// Len returns the number of samples in the subset.
func (s *Subset) Len() int { return len(s.indices) }

// Get returns sample indices[i] of the parent.
func (s *Subset) Get(i int) []*tensor.Tensor {
	checkIndex("Subset.Get", i, len(s.indices))
	return s.parent.Get(s.indices[i])
}

// GetBatch gathers the parent's samples at the mapped indices (with the
// parent's own GetBatch when it has one).
func (s *Subset) GetBatch(indices []int) []*tensor.Tensor {
	mapped := make([]int, len(indices))
	for k, i := range indices {
		checkIndex("Subset.GetBatch", i, len(s.indices))
		mapped[k] = s.indices[i]
	}
	return Gather(s.parent, mapped)
}

// Parent returns the dataset the subset indexes.
func (s *Subset) Parent() Dataset { return s.parent }

// Indices returns a copy of the parent indices of the subset's samples.
func (s *Subset) Indices() []int { return append([]int(nil), s.indices...) }

// SplitSizes returns the sizes of the parts that fractions split n samples
// into, as PyTorch's random_split does: each part gets floor(n*fraction),
// and the samples left over go one each to the parts in order. It panics
// unless the fractions are non-negative and sum to 1.
func SplitSizes(n int, fractions []float64) []int {
	sum := 0.0
	for _, f := range fractions {
		if f < 0 || math.IsNaN(f) {
			panic(fmt.Sprintf("data.SplitSizes: fractions %v: each must be in [0, 1]", fractions))
		}
		sum += f
	}
	if len(fractions) == 0 || math.Abs(sum-1) > 1e-9 {
		panic(fmt.Sprintf("data.SplitSizes: fractions %v sum to %v, want 1", fractions, sum))
	}
	sizes := make([]int, len(fractions))
	left := n
	for i, f := range fractions {
		sizes[i] = int(math.Floor(float64(n) * f))
		left -= sizes[i]
	}
	for i := 0; left > 0; i = (i + 1) % len(sizes) {
		sizes[i]++
		left--
	}
	return sizes
}

// RandomSplit splits ds into non-overlapping random subsets with the given
// fractions of its samples (sizes as SplitSizes), using one permutation
// drawn from gen. The same generator state gives the same split.
func RandomSplit(ds Dataset, fractions []float64, gen *tensor.Generator) []*Subset {
	if gen == nil {
		panic("data.RandomSplit: nil generator; use tensor.NewGenerator(seed)")
	}
	n := ds.Len()
	sizes := SplitSizes(n, fractions)
	perm := gen.Perm(n)
	out := make([]*Subset, len(sizes))
	at := 0
	for k, size := range sizes {
		idx := make([]int, size)
		for j := range idx {
			idx[j] = int(perm[at+j])
		}
		at += size
		out[k] = &Subset{parent: ds, indices: idx}
	}
	return out
}
