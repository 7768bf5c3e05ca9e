package gemm

// genericKernel is the portable pure-Go micro-kernel, used where no assembly
// kernel applies (the purego build tag, or x86 CPUs without AVX2+FMA): on
// amd64 the 2×4 tile, whose accumulators fit the 15 usable float registers.
var genericKernel = generic2x4
