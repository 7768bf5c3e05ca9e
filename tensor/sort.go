package tensor

import (
	"fmt"
	"math"
	"sort"
)

// Sorting along an axis: Sort, ArgSort and TopK. The order is computed on
// the host; values are then gathered from t, so every dtype keeps its exact
// values. NaN sorts above every number (as in PyTorch), and equal values
// keep their original order (a stable sort), so ties resolve to the lower
// index first.

// Sort returns t sorted along axis (ascending, or descending when
// descending is true) and the Int64 positions the sorted elements came
// from, as torch.sort(stable=True).
func (t *Tensor) Sort(axis int, descending bool) (values, indices *Tensor) {
	a := normAxis("Sort", axis, max(t.Dim(), 1))
	n := 1
	if t.Dim() > 0 {
		n = t.shape[a]
	}
	return t.topK("Sort", n, a, descending)
}

// ArgSort returns the Int64 positions that sort t along axis (see Sort).
func (t *Tensor) ArgSort(axis int, descending bool) *Tensor {
	_, idx := t.Sort(axis, descending)
	return idx
}

// TopK returns the k largest (largest true) or smallest elements of t
// along axis, in that order, and their Int64 positions, as torch.topk with
// sorted=True; ties keep the lower position first. k must be in
// [0, size of axis].
func (t *Tensor) TopK(k, axis int, largest bool) (values, indices *Tensor) {
	a := normAxis("TopK", axis, max(t.Dim(), 1))
	return t.topK("TopK", k, a, largest)
}

func (t *Tensor) topK(op string, k, a int, desc bool) (values, indices *Tensor) {
	if t.dtype == Float16 || t.dtype == BFloat16 {
		v, i := t.To(Float32).topK(op, k, a, desc)
		return v.To(t.dtype), i
	}
	if t.Dim() == 0 {
		if k < 0 || k > 1 {
			panic(fmt.Sprintf("tensor.%s: k=%d out of range for a 0-d tensor", op, k))
		}
		return t.Reshape(1).Narrow(0, 0, k).Reshape(), onDeviceOf(t, FromSlice([]int64{0})).Narrow(0, 0, k).Reshape()
	}
	n := t.shape[a]
	if k < 0 || k > n {
		panic(fmt.Sprintf("tensor.%s: k=%d out of range for axis %d of shape %v", op, k, a, t.shape))
	}
	last := t.Transpose(a, t.Dim()-1).Contiguous()
	lanes := 0
	if n > 0 {
		lanes = last.Numel() / n
	}
	var less func(x, y int) bool // compares positions in the flat lane data
	switch t.dtype {
	case Int64, Int32, Int16, Uint16, Uint32, Int8, Uint8, Bool:
		v := last.Int64s()
		less = func(x, y int) bool { return v[x] < v[y] }
	case Uint64: // beyond int64's range
		v := last.Uint64s()
		less = func(x, y int) bool { return v[x] < v[y] }
	default:
		v := last.Float64s()
		less = func(x, y int) bool {
			if math.IsNaN(v[y]) {
				return !math.IsNaN(v[x])
			}
			return v[x] < v[y]
		}
	}
	idx := make([]int64, lanes*k)
	order := make([]int, n)
	for l := range lanes {
		base := l * n
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(i, j int) bool {
			if desc {
				return less(base+order[j], base+order[i])
			}
			return less(base+order[i], base+order[j])
		})
		for i := range k {
			idx[l*k+i] = int64(order[i])
		}
	}
	shape := last.Shape()
	shape[len(shape)-1] = k
	indices = onDeviceOf(t, FromSlice(idx, shape...)).Transpose(a, t.Dim()-1).Contiguous()
	return t.Gather(a, indices), indices
}
