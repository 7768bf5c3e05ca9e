//go:build !amd64 || purego

package reduce

// streamKernel is nil: without assembly CopyStreaming is copy.
var streamKernel func(dst, src []byte)
