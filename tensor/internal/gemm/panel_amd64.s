//go:build amd64 && !purego

#include "textflag.h"

// TRANSPOSE_ARGS loads the arguments (dst *float32, ldd int, src *float32,
// lds int, n int) of a transpose: DI = dst, DX = ldd and BX = lds in bytes,
// SI = src, CX = n (jumping to done when it is 0), R8 = 3·BX, R11 = 3·DX,
// R10 = dst row 4 and R12 = 8·DX.
#define TRANSPOSE_ARGS(done) \
	MOVQ dst+0(FP), DI; \
	MOVQ ldd+8(FP), DX; \
	SHLQ $2, DX; \
	MOVQ src+16(FP), SI; \
	MOVQ lds+24(FP), BX; \
	SHLQ $2, BX; \
	MOVQ n+32(FP), CX; \
	TESTQ CX, CX; \
	JEQ done; \
	LEAQ (BX)(BX*2), R8; \
	LEAQ (DX)(DX*2), R11; \
	LEAQ (DI)(DX*4), R10; \
	MOVQ DX, R12; \
	SHLQ $3, R12

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

// TRANSPOSE4X4 transposes the 4×4 blocks in each 128-bit lane of r0-r3
// (row i of a block in ri), leaving column j of the blocks in rj. Clobbers
// Y8-Y11.
#define TRANSPOSE4X4(r0, r1, r2, r3) \
	VUNPCKLPS r1, r0, Y8; \
	VUNPCKHPS r1, r0, Y9; \
	VUNPCKLPS r3, r2, Y10; \
	VUNPCKHPS r3, r2, Y11; \
	VSHUFPS $0x44, Y10, Y8, r0; \
	VSHUFPS $0xEE, Y10, Y8, r1; \
	VSHUFPS $0x44, Y11, Y9, r2; \
	VSHUFPS $0xEE, Y11, Y9, r3

// STORE4 stores r0-r3 at the rows dst, dst+DX, dst+2·DX and dst+R11.
#define STORE4(r0, r1, r2, r3, dst) \
	VMOVUPS r0, (dst); \
	VMOVUPS r1, (dst)(DX*1); \
	VMOVUPS r2, (dst)(DX*2); \
	VMOVUPS r3, (dst)(R11*1)

// func transpose8AVX(dst *float32, ldd int, src *float32, lds int, n int)
// Transposes n blocks of 8×8 floats: for block b, row r < 8 and column
// c < 8, src[r*lds + 8b + c] goes to dst[(8b+c)*ldd + r]. Each block is
// loaded as four 4×4 quarters (the rows 4 apart share a register, one per
// 128-bit lane) and transposed within the lanes.
TEXT ·transpose8AVX(SB), NOSPLIT, $0-40
	TRANSPOSE_ARGS(doneT8)
	LEAQ (SI)(BX*4), R9 // src row 4
loopT8:
	// Columns 0-3 of rows r and r+4 in Y0-Y3, columns 4-7 in Y4-Y7.
	VMOVUPS (SI), X0
	VINSERTF128 $1, (R9), Y0, Y0
	VMOVUPS (SI)(BX*1), X1
	VINSERTF128 $1, (R9)(BX*1), Y1, Y1
	VMOVUPS (SI)(BX*2), X2
	VINSERTF128 $1, (R9)(BX*2), Y2, Y2
	VMOVUPS (SI)(R8*1), X3
	VINSERTF128 $1, (R9)(R8*1), Y3, Y3
	VMOVUPS 16(SI), X4
	VINSERTF128 $1, 16(R9), Y4, Y4
	VMOVUPS 16(SI)(BX*1), X5
	VINSERTF128 $1, 16(R9)(BX*1), Y5, Y5
	VMOVUPS 16(SI)(BX*2), X6
	VINSERTF128 $1, 16(R9)(BX*2), Y6, Y6
	VMOVUPS 16(SI)(R8*1), X7
	VINSERTF128 $1, 16(R9)(R8*1), Y7, Y7

	TRANSPOSE4X4(Y0, Y1, Y2, Y3)
	STORE4(Y0, Y1, Y2, Y3, DI)
	TRANSPOSE4X4(Y4, Y5, Y6, Y7)
	STORE4(Y4, Y5, Y6, Y7, R10)

	ADDQ $32, SI
	ADDQ $32, R9
	ADDQ R12, DI
	ADDQ R12, R10
	DECQ CX
	JNE loopT8
doneT8:
	VZEROUPPER
	RET

// func transpose4AVX(dst *float32, ldd int, src *float32, lds int, n int)
// Transposes n blocks of 4×8 floats: for block b, row r < 4 and column
// c < 8, src[r*lds + 8b + c] goes to dst[(8b+c)*ldd + r]. The 4×4 halves
// of a block share registers, one per 128-bit lane.
TEXT ·transpose4AVX(SB), NOSPLIT, $0-40
	TRANSPOSE_ARGS(doneT4)
loopT4:
	VMOVUPS (SI), Y0
	VMOVUPS (SI)(BX*1), Y1
	VMOVUPS (SI)(BX*2), Y2
	VMOVUPS (SI)(R8*1), Y3
	TRANSPOSE4X4(Y0, Y1, Y2, Y3)
	STORE4(X0, X1, X2, X3, DI)
	VEXTRACTF128 $1, Y0, (R10)
	VEXTRACTF128 $1, Y1, (R10)(DX*1)
	VEXTRACTF128 $1, Y2, (R10)(DX*2)
	VEXTRACTF128 $1, Y3, (R10)(R11*1)
	ADDQ $32, SI
	ADDQ R12, DI
	ADDQ R12, R10
	DECQ CX
	JNE loopT4
doneT4:
	VZEROUPPER
	RET
