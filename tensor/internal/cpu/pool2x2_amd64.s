//go:build amd64 && !purego

#include "textflag.h"

// Lane i of pool2x2Even is 2i: the VPERMT2PS indices that pick the even
// columns of 32 inputs (plus one, the odd ones) and the offsets of the 16
// windows' first inputs.
DATA pool2x2Even<>+0(SB)/4, $0
DATA pool2x2Even<>+4(SB)/4, $2
DATA pool2x2Even<>+8(SB)/4, $4
DATA pool2x2Even<>+12(SB)/4, $6
DATA pool2x2Even<>+16(SB)/4, $8
DATA pool2x2Even<>+20(SB)/4, $10
DATA pool2x2Even<>+24(SB)/4, $12
DATA pool2x2Even<>+28(SB)/4, $14
DATA pool2x2Even<>+32(SB)/4, $16
DATA pool2x2Even<>+36(SB)/4, $18
DATA pool2x2Even<>+40(SB)/4, $20
DATA pool2x2Even<>+44(SB)/4, $22
DATA pool2x2Even<>+48(SB)/4, $24
DATA pool2x2Even<>+52(SB)/4, $26
DATA pool2x2Even<>+56(SB)/4, $28
DATA pool2x2Even<>+60(SB)/4, $30
GLOBL pool2x2Even<>(SB), RODATA|NOPTR, $64

// func maxPool2x2AVX512(out *float32, oidx *int64, plane *float32, oh, ow, w int)
// Each output row takes 16 windows per step, the last step masked: rows 2r
// and 2r+1 are split into even and odd columns, giving each window's inputs
// a0, a1 (upper row) and b0, b1. The later of a pair wins when strictly
// greater or NaN, and so does the lower pair's winner over the upper's:
// the same choice as scanning a0, a1, b0, b1 (first of equal maxima, last
// NaN). Positions are the offsets 0, 1, w, w+1 added to the window's a0.
TEXT ·maxPool2x2AVX512(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DI
	MOVQ oidx+8(FP), R8
	MOVQ plane+16(FP), SI
	MOVQ oh+24(FP), R13
	MOVQ ow+32(FP), DX
	MOVQ w+40(FP), BX
	MOVQ $1, R12
	VPBROADCASTD R12, Z25 // offsets 1, w, w+1
	VMOVDQU32 pool2x2Even<>(SB), Z28
	VPADDD Z25, Z28, Z29
	VPBROADCASTD BX, Z26
	VPADDD Z25, Z26, Z27
	XORQ R9, R9 // R9: position of row 2r's first input

row:
	LEAQ (SI)(BX*4), AX // AX: row 2r+1
	XORQ R10, R10       // R10: first output of the step

step:
	MOVQ DX, R11
	SUBQ R10, R11
	CMPQ R11, $16
	JLE masks
	MOVQ $16, R11

masks:
	// K1, K2: the step's 2·R11 inputs of a row; K3, K4: its R11 outputs,
	// eight positions each.
	LEAQ (R11)(R11*1), CX
	MOVQ $1, R12
	SHLQ CX, R12
	DECQ R12
	KMOVW R12, K1
	SHRQ $16, R12
	KMOVW R12, K2
	MOVQ R11, CX
	MOVQ $1, R12
	SHLQ CX, R12
	DECQ R12
	KMOVW R12, K3
	SHRQ $8, R12
	KMOVW R12, K4

	VMOVUPS.Z (SI)(R10*8), K1, Z0
	VMOVUPS.Z 64(SI)(R10*8), K2, Z1
	VMOVUPS.Z (AX)(R10*8), K1, Z2
	VMOVUPS.Z 64(AX)(R10*8), K2, Z3
	VMOVAPS Z0, Z4
	VPERMT2PS Z1, Z29, Z4 // a1
	VPERMT2PS Z1, Z28, Z0 // a0
	VMOVAPS Z2, Z5
	VPERMT2PS Z3, Z29, Z5 // b1
	VPERMT2PS Z3, Z28, Z2 // b0

	// Upper pair into Z0 with offset Z6, lower pair into Z2 with Z10.
	VCMPPS $0x1e, Z0, Z4, K5 // a1 > a0
	VCMPPS $3, Z4, Z4, K6    // a1 is NaN
	KORW K6, K5, K5
	VCMPPS $0x1e, Z2, Z5, K6 // b1 > b0
	VCMPPS $3, Z5, Z5, K7    // b1 is NaN
	KORW K7, K6, K6
	VBLENDMPS Z4, Z0, K5, Z0
	VMOVDQA32.Z Z25, K5, Z6
	VBLENDMPS Z5, Z2, K6, Z2
	VPBLENDMD Z27, Z26, K6, Z10

	// The lower winner over the upper one.
	VCMPPS $0x1e, Z0, Z2, K5
	VCMPPS $3, Z2, Z2, K6
	KORW K6, K5, K5
	VBLENDMPS Z2, Z0, K5, Z0
	VPBLENDMD Z10, Z6, K5, Z6
	VMOVUPS Z0, K3, (DI)(R10*4)

	LEAQ (R9)(R10*2), R12
	VPBROADCASTD R12, Z7
	VPADDD Z28, Z7, Z7
	VPADDD Z6, Z7, Z7
	VPMOVZXDQ Y7, Z8
	VEXTRACTI64X4 $1, Z7, Y9
	VPMOVZXDQ Y9, Z9
	VMOVDQU64 Z8, K3, (R8)(R10*8)
	VMOVDQU64 Z9, K4, 64(R8)(R10*8)

	ADDQ $16, R10
	CMPQ R10, DX
	JLT step

	LEAQ (DI)(DX*4), DI
	LEAQ (R8)(DX*8), R8
	LEAQ (SI)(BX*8), SI
	LEAQ (R9)(BX*2), R9
	DECQ R13
	JNZ row
	VZEROUPPER
	RET
