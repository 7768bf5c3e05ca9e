//go:build amd64 && !purego

#include "textflag.h"

// func AddFloat32s(dst, src []float32)
// dst[i] += src[i] for i < len(dst); len(src) >= len(dst). SSE2 (every
// amd64 CPU): 16 elements per iteration in four independent registers.
TEXT ·addFloat32s(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI

f32loop:
	CMPQ CX, $16
	JLT  f32tail
	MOVUPS (DI), X0
	MOVUPS 16(DI), X1
	MOVUPS 32(DI), X2
	MOVUPS 48(DI), X3
	MOVUPS (SI), X4
	MOVUPS 16(SI), X5
	MOVUPS 32(SI), X6
	MOVUPS 48(SI), X7
	ADDPS  X4, X0
	ADDPS  X5, X1
	ADDPS  X6, X2
	ADDPS  X7, X3
	MOVUPS X0, (DI)
	MOVUPS X1, 16(DI)
	MOVUPS X2, 32(DI)
	MOVUPS X3, 48(DI)
	ADDQ   $64, DI
	ADDQ   $64, SI
	SUBQ   $16, CX
	JMP    f32loop

f32tail:
	TESTQ CX, CX
	JEQ   f32done
	MOVSS (DI), X0
	ADDSS (SI), X0
	MOVSS X0, (DI)
	ADDQ  $4, DI
	ADDQ  $4, SI
	DECQ  CX
	JMP   f32tail

f32done:
	RET

// func AddFloat64s(dst, src []float64)
// dst[i] += src[i] for i < len(dst); len(src) >= len(dst).
TEXT ·addFloat64s(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI

f64loop:
	CMPQ CX, $8
	JLT  f64tail
	MOVUPD (DI), X0
	MOVUPD 16(DI), X1
	MOVUPD 32(DI), X2
	MOVUPD 48(DI), X3
	MOVUPD (SI), X4
	MOVUPD 16(SI), X5
	MOVUPD 32(SI), X6
	MOVUPD 48(SI), X7
	ADDPD  X4, X0
	ADDPD  X5, X1
	ADDPD  X6, X2
	ADDPD  X7, X3
	MOVUPD X0, (DI)
	MOVUPD X1, 16(DI)
	MOVUPD X2, 32(DI)
	MOVUPD X3, 48(DI)
	ADDQ   $64, DI
	ADDQ   $64, SI
	SUBQ   $8, CX
	JMP    f64loop

f64tail:
	TESTQ CX, CX
	JEQ   f64done
	MOVSD (DI), X0
	ADDSD (SI), X0
	MOVSD X0, (DI)
	ADDQ  $8, DI
	ADDQ  $8, SI
	DECQ  CX
	JMP   f64tail

f64done:
	RET
