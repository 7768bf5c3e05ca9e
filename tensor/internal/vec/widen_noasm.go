//go:build !amd64 || purego

package vec

// addWidenKernel is nil: without assembly the pure-Go twin adds everything.
var addWidenKernel func([]float64, []float32)
