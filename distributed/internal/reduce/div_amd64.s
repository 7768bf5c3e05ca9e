//go:build amd64 && !purego

#include "textflag.h"

// func divFloat32s(dst []float32, d float32)
// dst[i] /= d. SSE2: 16 elements per iteration in four registers.
TEXT ·divFloat32s(SB), NOSPLIT, $0-28
	MOVQ   dst_base+0(FP), DI
	MOVQ   dst_len+8(FP), CX
	MOVSS  d+24(FP), X8
	SHUFPS $0, X8, X8

f32loop:
	CMPQ   CX, $16
	JLT    f32tail
	MOVUPS (DI), X0
	MOVUPS 16(DI), X1
	MOVUPS 32(DI), X2
	MOVUPS 48(DI), X3
	DIVPS  X8, X0
	DIVPS  X8, X1
	DIVPS  X8, X2
	DIVPS  X8, X3
	MOVUPS X0, (DI)
	MOVUPS X1, 16(DI)
	MOVUPS X2, 32(DI)
	MOVUPS X3, 48(DI)
	ADDQ   $64, DI
	SUBQ   $16, CX
	JMP    f32loop

f32tail:
	TESTQ CX, CX
	JEQ   f32done
	MOVSS (DI), X0
	DIVSS X8, X0
	MOVSS X0, (DI)
	ADDQ  $4, DI
	DECQ  CX
	JMP   f32tail

f32done:
	RET

// func divFloat64s(dst []float64, d float64)
// dst[i] /= d.
TEXT ·divFloat64s(SB), NOSPLIT, $0-32
	MOVQ     dst_base+0(FP), DI
	MOVQ     dst_len+8(FP), CX
	MOVSD    d+24(FP), X8
	UNPCKLPD X8, X8

f64loop:
	CMPQ   CX, $8
	JLT    f64tail
	MOVUPD (DI), X0
	MOVUPD 16(DI), X1
	MOVUPD 32(DI), X2
	MOVUPD 48(DI), X3
	DIVPD  X8, X0
	DIVPD  X8, X1
	DIVPD  X8, X2
	DIVPD  X8, X3
	MOVUPD X0, (DI)
	MOVUPD X1, 16(DI)
	MOVUPD X2, 32(DI)
	MOVUPD X3, 48(DI)
	ADDQ   $64, DI
	SUBQ   $8, CX
	JMP    f64loop

f64tail:
	TESTQ CX, CX
	JEQ   f64done
	MOVSD (DI), X0
	DIVSD X8, X0
	MOVSD X0, (DI)
	ADDQ  $8, DI
	DECQ  CX
	JMP   f64tail

f64done:
	RET
