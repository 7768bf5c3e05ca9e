//go:build amd64 && !purego

#include "textflag.h"

// func maxIntoAVX2(dst, src *float32, n int)
// dst[i] = max(dst[i], src[i]) for i < n (a multiple of 8), as Go's max:
// VMAXPS gives its second operand for a NaN or two zeros, so the maxima
// both ways round are ANDed (+0 over -0, the same value otherwise) and
// lanes with a NaN take the sum, a NaN.
TEXT ·maxIntoAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	XORQ AX, AX
	TESTQ CX, CX
	JEQ done
loop:
	VMOVUPS (DI)(AX*4), Y0
	VMOVUPS (SI)(AX*4), Y1
	VMAXPS Y1, Y0, Y2
	VMAXPS Y0, Y1, Y3
	VANDPS Y3, Y2, Y2
	VCMPPS $3, Y1, Y0, Y4
	VADDPS Y1, Y0, Y5
	VBLENDVPS Y4, Y5, Y2, Y2
	VMOVUPS Y2, (DI)(AX*4)
	ADDQ $8, AX
	CMPQ AX, CX
	JLT loop
	VZEROUPPER
done:
	RET
