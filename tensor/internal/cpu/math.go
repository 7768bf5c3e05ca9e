package cpu

import "github.com/emberml/ember/tensor/internal/vec"

// Expf returns e**x for float32, within one ulp of the correctly rounded
// result over the whole range, subnormal results and the overflow boundary
// included. It is vec.Expf, the one scalar float32 exp of the CPU backend.
func Expf(x float32) float32 { return vec.Expf(x) }
