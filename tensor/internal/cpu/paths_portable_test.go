//go:build !amd64 || purego

package cpu

import "testing"

// checkArchKernelPath has nothing to check where depthwise convolution has
// no assembly routine to choose.
func checkArchKernelPath(*testing.T) {}
