//go:build amd64 && !purego

#include "textflag.h"

// func scatter32AVX512(dst *float32, stride int, src *float32, n int)
// Copies n blocks of 32 floats, block i from src[32*i:] to dst[stride*i:].
TEXT ·scatter32AVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ stride+8(FP), DX
	SHLQ $2, DX
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	TESTQ CX, CX
	JEQ done32
loop32:
	VMOVUPS (SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS Z0, (DI)
	VMOVUPS Z1, 64(DI)
	ADDQ $128, SI
	ADDQ DX, DI
	DECQ CX
	JNE loop32
done32:
	VZEROUPPER
	RET

// func scatter16AVX(dst *float32, stride int, src *float32, n int)
// Copies n blocks of 16 floats, block i from src[16*i:] to dst[stride*i:].
TEXT ·scatter16AVX(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ stride+8(FP), DX
	SHLQ $2, DX
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	TESTQ CX, CX
	JEQ done16
loop16:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ $64, SI
	ADDQ DX, DI
	DECQ CX
	JNE loop16
done16:
	VZEROUPPER
	RET
