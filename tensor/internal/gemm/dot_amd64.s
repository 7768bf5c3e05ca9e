//go:build amd64 && !purego

#include "textflag.h"

// FMA16 adds the products of the four rows of A in Z16-Z19 and the four
// rows of B in Z20-Z23 to the accumulators Z0-Z15, lane by lane.
#define FMA16 \
	VFMADD231PS Z20, Z16, Z0; \
	VFMADD231PS Z21, Z16, Z1; \
	VFMADD231PS Z22, Z16, Z2; \
	VFMADD231PS Z23, Z16, Z3; \
	VFMADD231PS Z20, Z17, Z4; \
	VFMADD231PS Z21, Z17, Z5; \
	VFMADD231PS Z22, Z17, Z6; \
	VFMADD231PS Z23, Z17, Z7; \
	VFMADD231PS Z20, Z18, Z8; \
	VFMADD231PS Z21, Z18, Z9; \
	VFMADD231PS Z22, Z18, Z10; \
	VFMADD231PS Z23, Z18, Z11; \
	VFMADD231PS Z20, Z19, Z12; \
	VFMADD231PS Z21, Z19, Z13; \
	VFMADD231PS Z22, Z19, Z14; \
	VFMADD231PS Z23, Z19, Z15

// ROWSUM folds the 16 lanes of each of a row's four accumulators (Z
// registers z0-z3, whose lower halves are y0-y3) into the four sums, left
// in the XMM register x0; x1 (the lower quarter of z1) is scratch.
#define ROWSUM(z0, z1, z2, z3, y0, y1, y2, y3, x0, x1) \
	VSHUFF64X2 $0xEE, z0, z0, Z24; \
	VADDPS Z24, z0, z0; \
	VSHUFF64X2 $0xEE, z1, z1, Z24; \
	VADDPS Z24, z1, z1; \
	VSHUFF64X2 $0xEE, z2, z2, Z24; \
	VADDPS Z24, z2, z2; \
	VSHUFF64X2 $0xEE, z3, z3, Z24; \
	VADDPS Z24, z3, z3; \
	VHADDPS y1, y0, y0; \
	VHADDPS y3, y2, y2; \
	VHADDPS y2, y0, y0; \
	VEXTRACTF128 $1, y0, x1; \
	VADDPS x1, x0, x0

// func dot4x4AVX512(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc, add int)
// C[i][j] = sum over p < k of a[i*lda+p]*b[j*ldb+p] for i, j < 4, added to
// C when add != 0; C rows are ldc floats apart. Lane l of accumulator
// Z(4i+j) sums the products at p ≡ l (mod 16); a tail of k%16 is loaded
// under a mask (masked-off elements are neither read nor faulted on; masked
// loads in the main loop measured 20–30% slower). The
// 16 lanes are then folded: the upper eight onto the lower, and three
// horizontal adds that leave row i's four sums in one XMM register.
TEXT ·dot4x4AVX512(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ b+24(FP), BX
	MOVQ ldb+32(FP), R9
	MOVQ c+40(FP), R10
	MOVQ ldc+48(FP), R11
	MOVQ add+56(FP), R12
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, R11
	// DI and DX point at the fourth rows: (base)(ld*2) reaches only the third.
	LEAQ (SI)(R8*2), DI
	ADDQ R8, DI
	LEAQ (BX)(R9*2), DX
	ADDQ R9, DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	MOVQ CX, AX
	SHRQ $4, AX
	ANDQ $15, CX
	TESTQ AX, AX
	JZ tail
loop:
	VMOVUPS (SI), Z16
	VMOVUPS (SI)(R8*1), Z17
	VMOVUPS (SI)(R8*2), Z18
	VMOVUPS (DI), Z19
	VMOVUPS (BX), Z20
	VMOVUPS (BX)(R9*1), Z21
	VMOVUPS (BX)(R9*2), Z22
	VMOVUPS (DX), Z23
	FMA16
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, BX
	ADDQ $64, DX
	DECQ AX
	JNZ loop
tail:
	TESTQ CX, CX
	JZ reduce
	MOVL $1, R13
	SHLL CX, R13
	DECL R13
	KMOVW R13, K1
	VMOVUPS.Z (SI), K1, Z16
	VMOVUPS.Z (SI)(R8*1), K1, Z17
	VMOVUPS.Z (SI)(R8*2), K1, Z18
	VMOVUPS.Z (DI), K1, Z19
	VMOVUPS.Z (BX), K1, Z20
	VMOVUPS.Z (BX)(R9*1), K1, Z21
	VMOVUPS.Z (BX)(R9*2), K1, Z22
	VMOVUPS.Z (DX), K1, Z23
	FMA16
reduce:
	ROWSUM(Z0, Z1, Z2, Z3, Y0, Y1, Y2, Y3, X0, X1)
	TESTQ R12, R12
	JZ store0
	VADDPS (R10), X0, X0
store0:
	VMOVUPS X0, (R10)
	ADDQ R11, R10
	ROWSUM(Z4, Z5, Z6, Z7, Y4, Y5, Y6, Y7, X4, X5)
	TESTQ R12, R12
	JZ store1
	VADDPS (R10), X4, X4
store1:
	VMOVUPS X4, (R10)
	ADDQ R11, R10
	ROWSUM(Z8, Z9, Z10, Z11, Y8, Y9, Y10, Y11, X8, X9)
	TESTQ R12, R12
	JZ store2
	VADDPS (R10), X8, X8
store2:
	VMOVUPS X8, (R10)
	ADDQ R11, R10
	ROWSUM(Z12, Z13, Z14, Z15, Y12, Y13, Y14, Y15, X12, X13)
	TESTQ R12, R12
	JZ store3
	VADDPS (R10), X12, X12
store3:
	VMOVUPS X12, (R10)
	VZEROUPPER
	RET
