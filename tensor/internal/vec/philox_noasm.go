//go:build !amd64 || purego

package vec

// philoxMask32Kernel is nil: without assembly the pure-Go twin draws every
// mask element.
var philoxMask32Kernel func([]float32, uint32, uint32, *[2 * philoxRounds]uint32, uint32, float32)
