//go:build arm64 && !purego

#include "textflag.h"

// func transpose4x8NEON(dst *float32, ldd int, src *float32, lds int, n int)
// Transposes n blocks of 4×8 floats: for block b, row r < 4 and column
// c < 8, src[r*lds+8b+c] goes to dst[(8b+c)*ldd+r]. Each 4×4 quarter is
// transposed with TRN1/TRN2 on words, then on doublewords.
TEXT ·transpose4x8NEON(SB), NOSPLIT, $0-40
	MOVD dst+0(FP), R9
	MOVD ldd+8(FP), R1
	LSL $2, R1, R1
	MOVD src+16(FP), R5
	MOVD lds+24(FP), R3
	LSL $2, R3, R3
	MOVD n+32(FP), R4
	ADD R3, R5, R6
	ADD R3, R6, R7
	ADD R3, R7, R8
	CBZ R4, done
loop:
	VLD1.P 32(R5), [V0.S4, V1.S4]
	VLD1.P 32(R6), [V2.S4, V3.S4]
	VLD1.P 32(R7), [V4.S4, V5.S4]
	VLD1.P 32(R8), [V6.S4, V7.S4]
	VTRN1 V2.S4, V0.S4, V16.S4
	VTRN2 V2.S4, V0.S4, V17.S4
	VTRN1 V6.S4, V4.S4, V18.S4
	VTRN2 V6.S4, V4.S4, V19.S4
	VTRN1 V18.D2, V16.D2, V20.D2
	VTRN1 V19.D2, V17.D2, V21.D2
	VTRN2 V18.D2, V16.D2, V22.D2
	VTRN2 V19.D2, V17.D2, V23.D2
	VST1 [V20.S4], (R9)
	ADD R1, R9, R9
	VST1 [V21.S4], (R9)
	ADD R1, R9, R9
	VST1 [V22.S4], (R9)
	ADD R1, R9, R9
	VST1 [V23.S4], (R9)
	ADD R1, R9, R9
	VTRN1 V3.S4, V1.S4, V16.S4
	VTRN2 V3.S4, V1.S4, V17.S4
	VTRN1 V7.S4, V5.S4, V18.S4
	VTRN2 V7.S4, V5.S4, V19.S4
	VTRN1 V18.D2, V16.D2, V20.D2
	VTRN1 V19.D2, V17.D2, V21.D2
	VTRN2 V18.D2, V16.D2, V22.D2
	VTRN2 V19.D2, V17.D2, V23.D2
	VST1 [V20.S4], (R9)
	ADD R1, R9, R9
	VST1 [V21.S4], (R9)
	ADD R1, R9, R9
	VST1 [V22.S4], (R9)
	ADD R1, R9, R9
	VST1 [V23.S4], (R9)
	ADD R1, R9, R9
	SUBS $1, R4, R4
	BNE loop
done:
	RET
