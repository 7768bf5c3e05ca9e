//go:build arm64 && !purego

package cpu

import (
	"unsafe"

	"github.com/emberml/ember/tensor/internal/isa"
)

// maxIntoNEON is maxIntoGo for the first n&^3 elements, 4 per vector (16
// per step while at least 16 remain). FMAX gives what Go's max gives: NaN
// when either operand is NaN, +0 for -0 against +0.
//
//go:noescape
func maxIntoNEON(dst, src *float32, n int)

// maxInto32 sets dst[i] = max(dst[i], src[i]) (len(src) >= len(dst)) with
// NEON unless EMBER_CPU=generic (see package isa); see maxIntoGo.
func maxInto32(dst, src []float32) {
	n := len(dst)
	src = src[:n]
	done := 0
	if isa.Has(isa.NEON) {
		done = n &^ 3
	}
	if done > 0 {
		maxIntoNEON(unsafe.SliceData(dst), unsafe.SliceData(src), done)
	}
	maxIntoGo(dst[done:], src[done:])
}
