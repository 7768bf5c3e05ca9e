//go:build amd64 && !purego

package reduce

import "golang.org/x/sys/cpu"

// copyNT copies len(dst) bytes, a multiple of 64, from src to a 16-byte
// aligned dst with SSE2 non-temporal stores, then fences (stream_amd64.s).
//
//go:noescape
func copyNT(dst, src []byte)

// streamKernel is the non-temporal copy where the CPU has SSE2 (every
// amd64 CPU does; the check keeps the dispatch in one place).
var streamKernel = func() func(dst, src []byte) {
	if cpu.X86.HasSSE2 {
		return copyNT
	}
	return nil
}()
