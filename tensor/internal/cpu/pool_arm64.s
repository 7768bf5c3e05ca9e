//go:build arm64 && !purego

#include "textflag.h"

// func maxIntoNEON(dst, src *float32, n int)
// dst[i] = max(dst[i], src[i]) for i < n (a multiple of 4). Go's assembler
// has no mnemonic for FMAX on vectors: each is a WORD, its text beside it.
TEXT ·maxIntoNEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R3
	MOVD R0, R2
loop16:
	CMP $16, R3
	BLT loop4
	VLD1.P 64(R2), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]
	WORD $0x4e24f400 // fmax v0.4s, v0.4s, v4.4s
	WORD $0x4e25f421 // fmax v1.4s, v1.4s, v5.4s
	WORD $0x4e26f442 // fmax v2.4s, v2.4s, v6.4s
	WORD $0x4e27f463 // fmax v3.4s, v3.4s, v7.4s
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUB $16, R3, R3
	B loop16
loop4:
	CBZ R3, done
	VLD1.P 16(R2), [V0.S4]
	VLD1.P 16(R1), [V4.S4]
	WORD $0x4e24f400 // fmax v0.4s, v0.4s, v4.4s
	VST1.P [V0.S4], 16(R0)
	SUB $4, R3, R3
	B loop4
done:
	RET
