//go:build amd64 && !purego

#include "textflag.h"

// func addWidenAVX512(acc []float64, x []float32)
// acc[i] += float64(x[i]) for i < len(acc) rounded down to a multiple of 16.
TEXT ·addWidenAVX512(SB), NOSPLIT, $0-48
	MOVQ acc_base+0(FP), DI
	MOVQ acc_len+8(FP), CX
	MOVQ x_base+24(FP), SI
	SHRQ $4, CX
	JZ done

loop:
	VCVTPS2PD (SI), Z0
	VCVTPS2PD 32(SI), Z1
	VADDPD (DI), Z0, Z0
	VADDPD 64(DI), Z1, Z1
	VMOVUPD Z0, (DI)
	VMOVUPD Z1, 64(DI)
	ADDQ $64, SI
	ADDQ $128, DI
	DECQ CX
	JNZ loop
	VZEROUPPER

done:
	RET
