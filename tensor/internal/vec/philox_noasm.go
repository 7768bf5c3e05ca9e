//go:build !amd64 || purego

package vec

// philoxMask32Kernel is nil: without assembly the pure-Go twin draws every
// mask element.
var philoxMask32Kernel func([]float32, uint32, uint32, *[2 * philoxRounds]uint32, uint32, float32)

// philoxDropout32Kernel is nil: without assembly the pure-Go twin draws and
// applies every mask element.
var philoxDropout32Kernel func(mask, x, out []float32, block, hi uint32, keys *[2 * philoxRounds]uint32, limit uint32, scale float32)
