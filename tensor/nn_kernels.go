package tensor

// NNKernels is the part of the backend contract for neural-network
// primitives: convolution lowering, pooling and normalization statistics.
type NNKernels interface {
}
