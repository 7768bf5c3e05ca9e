package reduce

import "unsafe"

// streamAlign is the destination alignment the streaming kernel needs and
// streamBlock the bytes it moves per iteration.
const (
	streamAlign = 16
	streamBlock = 64
)

// CopyStreaming copies min(len(dst), len(src)) bytes from src to dst, as
// copy does, but where the CPU has them with non-temporal stores, which
// go to memory without first reading each destination line into the cache
// (a read a cached store needs) and without evicting what the cache holds.
// Use it for large destinations that nothing reads soon; the copy is
// complete and ordered before any later store once it returns. It returns
// the bytes copied.
func CopyStreaming(dst, src []byte) int {
	n := min(len(dst), len(src))
	if streamKernel == nil || n < streamAlign+streamBlock {
		return copy(dst, src[:n])
	}
	head := int(-uintptr(unsafe.Pointer(unsafe.SliceData(dst))) & (streamAlign - 1))
	body := (n - head) &^ (streamBlock - 1)
	copy(dst[:head], src)
	streamKernel(dst[head:head+body], src[head:head+body])
	copy(dst[head+body:n], src[head+body:n])
	return n
}
