//go:build amd64 && !purego

#include "textflag.h"

// func copyNT(dst, src []byte)
// Copies len(dst) bytes (a multiple of 64) from src to dst, which is
// 16-byte aligned: unaligned loads, MOVNTO (MOVNTDQ) stores that bypass
// the caches, four registers per 64-byte block. The SFENCE orders the
// weakly ordered streaming stores before every later store, such as the
// counter that tells a peer the data is there.
TEXT ·copyNT(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ src_base+24(FP), SI

loop:
	CMPQ   CX, $64
	JLT    done
	MOVOU  (SI), X0
	MOVOU  16(SI), X1
	MOVOU  32(SI), X2
	MOVOU  48(SI), X3
	MOVNTO X0, (DI)
	MOVNTO X1, 16(DI)
	MOVNTO X2, 32(DI)
	MOVNTO X3, 48(DI)
	ADDQ   $64, SI
	ADDQ   $64, DI
	SUBQ   $64, CX
	JMP    loop

done:
	SFENCE
	RET
