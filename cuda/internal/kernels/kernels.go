// Package kernels embeds the PTX of Ember's CUDA kernels. The .cu sources
// beside this file are compiled with Debian's nvcc 11.8 to PTX for
// compute_80 (the driver JIT-compiles it for newer GPUs); both are committed.
// Run go generate after changing a .cu file (it needs nvcc on PATH).
package kernels

import "embed"

//go:generate sh ./build.sh

// PTX holds one compiled module per .cu source, named <source>.ptx.
//
//go:embed *.ptx
var PTX embed.FS
