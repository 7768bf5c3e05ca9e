package tensor

import "fmt"

// IndexKernels is the part of the backend contract that gathers and
// scatters elements by index.
//
// Index operands are Int64 or Int32 buffers read through their layout.
// Every index must lie in [0, n) for the size n of the axis it addresses;
// a kernel that meets one outside returns an *IndexError and, for the
// writing kernels, leaves dst untouched (indices are checked before the
// first write). Inputs are strided views; outputs written by the
// non-in-place kernels are contiguous.
type IndexKernels interface {
	// Gather writes, for every position p of il.Shape (which is also dst's
	// shape, contiguous), dst[p] = src[p with p[axis] replaced by idx[p]].
	// sl has the rank of il and sl.Shape[d] >= il.Shape[d] for d != axis;
	// indices are bounded by sl.Shape[axis]. IndexSelect is a Gather whose
	// index layout has stride 0 on every axis but axis.
	Gather(dst, src Buffer, sl Layout, axis int, idx Buffer, il Layout) error
	// Scatter writes, for every position p of il.Shape (which sl.Shape
	// equals), dst[p with p[axis] replaced by idx[p]] = src[p] through the
	// strided view dl, or adds it when accumulate is true. dl has the rank of
	// il, dl.Shape[d] >= il.Shape[d] for d != axis, and indices are bounded by
	// dl.Shape[axis]. With accumulate false and repeated targets, which
	// write wins is unspecified (as in PyTorch). IndexAdd is an accumulating
	// Scatter with a broadcast index layout.
	Scatter(dst Buffer, dl Layout, axis int, idx Buffer, il Layout, src Buffer, sl Layout, accumulate bool) error
	// MaskedSelect writes the elements of the view sl of src whose mask
	// element (Bool view ml, same shape) is true into the contiguous 1-d dst
	// in row-major order; dst holds exactly that many elements.
	MaskedSelect(dst, src Buffer, sl Layout, mask Buffer, ml Layout)
	// MaskedScatter writes consecutive elements of the view sl of src (read
	// in row-major order) into the positions of the strided view dl of dst
	// whose mask element (Bool view ml, dl's shape) is true. src holds at
	// least as many elements as the mask has true values.
	MaskedScatter(dst Buffer, dl Layout, mask Buffer, ml Layout, src Buffer, sl Layout)
}

// IndexError is returned by an index kernel that meets an index outside
// [0, Size).
type IndexError struct {
	Index int64 // the offending index value
	Size  int   // the size of the axis it addresses
}

// Error implements error.
func (e *IndexError) Error() string {
	return fmt.Sprintf("index %d is out of range for an axis of size %d", e.Index, e.Size)
}
