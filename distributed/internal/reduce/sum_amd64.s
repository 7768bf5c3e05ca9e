//go:build amd64 && !purego

#include "textflag.h"

// func sum4Float32s(dst, a, b, c, d []float32, k int, div float32)
// dst[i] = a[i] (+ b[i] where k >= 2) (+ c[i] where k >= 3) (+ d[i] where
// k = 4), added left to right, then divided by div unless div is 0; every
// slice holds at least len(dst) elements. SSE2: 16 elements per iteration in four
// independent registers; the sum stays in registers across the sources
// and the division. Loads are unaligned (MOVUPS into registers first: SSE
// memory operands must be aligned).
TEXT ·sum4Float32s(SB), NOSPLIT, $0-132
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), R8
	MOVQ b_base+48(FP), R9
	MOVQ c_base+72(FP), R10
	MOVQ d_base+96(FP), R11
	MOVQ k+120(FP), BX
	MOVL div+128(FP), R12
	MOVSS div+128(FP), X8
	SHUFPS $0, X8, X8

sum4Float32sloop:
	CMPQ CX, $16
	JLT  sum4Float32stail
	MOVUPS (R8), X0
	MOVUPS 16(R8), X1
	MOVUPS 32(R8), X2
	MOVUPS 48(R8), X3
	CMPQ BX, $2
	JLT  sum4Float32sdiv
	MOVUPS (R9), X4
	MOVUPS 16(R9), X5
	MOVUPS 32(R9), X6
	MOVUPS 48(R9), X7
	ADDPS X4, X0
	ADDPS X5, X1
	ADDPS X6, X2
	ADDPS X7, X3
	CMPQ BX, $3
	JLT  sum4Float32sdiv
	MOVUPS (R10), X4
	MOVUPS 16(R10), X5
	MOVUPS 32(R10), X6
	MOVUPS 48(R10), X7
	ADDPS X4, X0
	ADDPS X5, X1
	ADDPS X6, X2
	ADDPS X7, X3
	CMPQ BX, $4
	JLT  sum4Float32sdiv
	MOVUPS (R11), X4
	MOVUPS 16(R11), X5
	MOVUPS 32(R11), X6
	MOVUPS 48(R11), X7
	ADDPS X4, X0
	ADDPS X5, X1
	ADDPS X6, X2
	ADDPS X7, X3

sum4Float32sdiv:
	TESTQ R12, R12
	JEQ   sum4Float32sstore
	DIVPS X8, X0
	DIVPS X8, X1
	DIVPS X8, X2
	DIVPS X8, X3

sum4Float32sstore:
	MOVUPS X0, (DI)
	MOVUPS X1, 16(DI)
	MOVUPS X2, 32(DI)
	MOVUPS X3, 48(DI)
	ADDQ $64, DI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $64, R11
	SUBQ $16, CX
	JMP  sum4Float32sloop

sum4Float32stail:
	TESTQ CX, CX
	JEQ   sum4Float32sdone
	MOVSS (R8), X0
	CMPQ  BX, $2
	JLT   sum4Float32stdiv
	MOVSS (R9), X4
	ADDSS X4, X0
	CMPQ  BX, $3
	JLT   sum4Float32stdiv
	MOVSS (R10), X4
	ADDSS X4, X0
	CMPQ  BX, $4
	JLT   sum4Float32stdiv
	MOVSS (R11), X4
	ADDSS X4, X0

sum4Float32stdiv:
	TESTQ R12, R12
	JEQ   sum4Float32sput
	DIVSS X8, X0

sum4Float32sput:
	MOVSS X0, (DI)
	ADDQ  $4, DI
	ADDQ  $4, R8
	ADDQ  $4, R9
	ADDQ  $4, R10
	ADDQ  $4, R11
	DECQ  CX
	JMP   sum4Float32stail

sum4Float32sdone:
	RET

// func sum4Float64s(dst, a, b, c, d []float64, k int, div float64)
// dst[i] = a[i] (+ b[i] where k >= 2) (+ c[i] where k >= 3) (+ d[i] where
// k = 4), added left to right, then divided by div unless div is 0; every
// slice holds at least len(dst) elements. SSE2: 8 elements per iteration in four
// independent registers; the sum stays in registers across the sources
// and the division. Loads are unaligned (MOVUPD into registers first: SSE
// memory operands must be aligned).
TEXT ·sum4Float64s(SB), NOSPLIT, $0-136
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), R8
	MOVQ b_base+48(FP), R9
	MOVQ c_base+72(FP), R10
	MOVQ d_base+96(FP), R11
	MOVQ k+120(FP), BX
	MOVQ div+128(FP), R12
	MOVSD div+128(FP), X8
	SHUFPD $0, X8, X8

sum4Float64sloop:
	CMPQ CX, $8
	JLT  sum4Float64stail
	MOVUPD (R8), X0
	MOVUPD 16(R8), X1
	MOVUPD 32(R8), X2
	MOVUPD 48(R8), X3
	CMPQ BX, $2
	JLT  sum4Float64sdiv
	MOVUPD (R9), X4
	MOVUPD 16(R9), X5
	MOVUPD 32(R9), X6
	MOVUPD 48(R9), X7
	ADDPD X4, X0
	ADDPD X5, X1
	ADDPD X6, X2
	ADDPD X7, X3
	CMPQ BX, $3
	JLT  sum4Float64sdiv
	MOVUPD (R10), X4
	MOVUPD 16(R10), X5
	MOVUPD 32(R10), X6
	MOVUPD 48(R10), X7
	ADDPD X4, X0
	ADDPD X5, X1
	ADDPD X6, X2
	ADDPD X7, X3
	CMPQ BX, $4
	JLT  sum4Float64sdiv
	MOVUPD (R11), X4
	MOVUPD 16(R11), X5
	MOVUPD 32(R11), X6
	MOVUPD 48(R11), X7
	ADDPD X4, X0
	ADDPD X5, X1
	ADDPD X6, X2
	ADDPD X7, X3

sum4Float64sdiv:
	TESTQ R12, R12
	JEQ   sum4Float64sstore
	DIVPD X8, X0
	DIVPD X8, X1
	DIVPD X8, X2
	DIVPD X8, X3

sum4Float64sstore:
	MOVUPD X0, (DI)
	MOVUPD X1, 16(DI)
	MOVUPD X2, 32(DI)
	MOVUPD X3, 48(DI)
	ADDQ $64, DI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $64, R11
	SUBQ $8, CX
	JMP  sum4Float64sloop

sum4Float64stail:
	TESTQ CX, CX
	JEQ   sum4Float64sdone
	MOVSD (R8), X0
	CMPQ  BX, $2
	JLT   sum4Float64stdiv
	MOVSD (R9), X4
	ADDSD X4, X0
	CMPQ  BX, $3
	JLT   sum4Float64stdiv
	MOVSD (R10), X4
	ADDSD X4, X0
	CMPQ  BX, $4
	JLT   sum4Float64stdiv
	MOVSD (R11), X4
	ADDSD X4, X0

sum4Float64stdiv:
	TESTQ R12, R12
	JEQ   sum4Float64sput
	DIVSD X8, X0

sum4Float64sput:
	MOVSD X0, (DI)
	ADDQ  $8, DI
	ADDQ  $8, R8
	ADDQ  $8, R9
	ADDQ  $8, R10
	ADDQ  $8, R11
	DECQ  CX
	JMP   sum4Float64stail

sum4Float64sdone:
	RET
