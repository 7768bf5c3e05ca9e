package tensor

// IndexKernels is the part of the backend contract that gathers and
// scatters elements by index.
type IndexKernels interface {
}
