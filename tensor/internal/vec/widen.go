package vec

import "fmt"

// AddWiden sets acc[i] += float64(x[i]): a float32 row added into float64
// accumulators, each sum rounded as the scalar loop rounds it.
func AddWiden(acc []float64, x []float32) {
	if len(acc) != len(x) {
		panic(fmt.Sprintf("vec: AddWiden: len(acc) = %d, len(x) = %d; they must be equal", len(acc), len(x)))
	}
	done := 0
	if k := addWidenKernel; k != nil {
		done = len(acc) / 16 * 16
		if done > 0 {
			k(acc[:done], x[:done])
		}
	}
	addWidenGo(acc[done:], x[done:])
}

// addWidenGo is the pure-Go twin of the AddWiden kernel.
func addWidenGo(acc []float64, x []float32) {
	for i, v := range x {
		acc[i] += float64(v)
	}
}
