//go:build !unix

package onnx

// openNonblock is zero where opening a file cannot block on a FIFO.
const openNonblock = 0
