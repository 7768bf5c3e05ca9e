//go:build amd64 && !purego

#include "textflag.h"

// DWTAILMASKS sets K1…K4 to the lanes of the four 16-column chunks that lie
// below n, for the 0 < n-BX < 64 columns left from column BX. Clobbers AX
// and CX.
#define DWTAILMASKS \
	MOVQ DX, CX; \
	SUBQ BX, CX; \
	MOVQ $1, AX; \
	SHLQ CX, AX; \
	DECQ AX; \
	KMOVQ AX, K1; \
	KSHIFTRQ $16, K1, K2; \
	KSHIFTRQ $32, K1, K3; \
	KSHIFTRQ $48, K1, K4

// DWLOAD4 loads the four 16-column chunks from base(idx*4) into z0…z3,
// each under its mask K1…K4 (zeros elsewhere).
#define DWLOAD4(base, idx, z0, z1, z2, z3) \
	VMOVUPS.Z (base)(idx*4), K1, z0; \
	VMOVUPS.Z 64(base)(idx*4), K2, z1; \
	VMOVUPS.Z 128(base)(idx*4), K3, z2; \
	VMOVUPS.Z 192(base)(idx*4), K4, z3

// DWBIAS4 starts the four accumulators Z0…Z3 from the broadcast bias Z30.
#define DWBIAS4 \
	VMOVAPS Z30, Z0; \
	VMOVAPS Z30, Z1; \
	VMOVAPS Z30, Z2; \
	VMOVAPS Z30, Z3

// DWZERO4 starts the four accumulators Z0…Z3 of a dot product at zero.
#define DWZERO4 \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3

// DWRELU4 takes max(·, 0) of Z0…Z3 against the zeros in Z29; with the
// accumulator as the second source VMAXPS returns it when it is NaN, as
// the Go loop's max(v, 0) does.
#define DWRELU4 \
	VMAXPS Z0, Z29, Z0; \
	VMAXPS Z1, Z29, Z1; \
	VMAXPS Z2, Z29, Z2; \
	VMAXPS Z3, Z29, Z3

// DWHSUM stores at (DI) the sum of the 64 lanes of Z0…Z3. Clobbers Z0,
// Z2, Y1.
#define DWHSUM \
	VADDPS Z1, Z0, Z0; \
	VADDPS Z3, Z2, Z2; \
	VADDPS Z2, Z0, Z0; \
	VEXTRACTF64X4 $1, Z0, Y1; \
	VADDPS Y1, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0; \
	VPERMILPS $0x4e, X0, X1; \
	VADDPS X1, X0, X0; \
	VPERMILPS $0xb1, X0, X1; \
	VADDPS X1, X0, X0; \
	VMOVSS X0, (DI)

// DWTAPMASKS loads K1…K4 from the four 16-bit lane masks at (p).
#define DWTAPMASKS(p) \
	KMOVW (p), K1; \
	KMOVW 2(p), K2; \
	KMOVW 4(p), K3; \
	KMOVW 6(p), K4

// DWTAPFMA4 adds to Z0…Z3, in the lanes of K1…K4 only, tap AX's weight
// (R9) times the four chunks from the tap's offset (R8) past column BX of
// SI: lanes off the masks (padding, for dwShiftAVX512) are left alone, so
// an infinite weight meets no zero there, as the Go loops skip such taps.
// Clobbers CX, Z4…Z7, Z31.
#define DWTAPFMA4 \
	VBROADCASTSS (R9)(AX*4), Z31; \
	MOVQ (R8)(AX*8), CX; \
	ADDQ BX, CX; \
	DWLOAD4(SI, CX, Z4, Z5, Z6, Z7); \
	VFMADD231PS Z4, Z31, K1, Z0; \
	VFMADD231PS Z5, Z31, K2, Z1; \
	VFMADD231PS Z6, Z31, K3, Z2; \
	VFMADD231PS Z7, Z31, K4, Z3

// DWSTORE4 stores Z0…Z3 at column BX of DI; DWSTORE4MASKED under K1…K4.
#define DWSTORE4 \
	VMOVUPS Z0, (DI)(BX*4); \
	VMOVUPS Z1, 64(DI)(BX*4); \
	VMOVUPS Z2, 128(DI)(BX*4); \
	VMOVUPS Z3, 192(DI)(BX*4)

#define DWSTORE4MASKED \
	VMOVUPS Z0, K1, (DI)(BX*4); \
	VMOVUPS Z1, K2, 64(DI)(BX*4); \
	VMOVUPS Z2, K3, 128(DI)(BX*4); \
	VMOVUPS Z3, K4, 192(DI)(BX*4)

// DWDOT4 adds to Z0…Z3 the products of the four chunks under K1…K4 at
// column BX of a and of b. Clobbers Z4…Z11.
#define DWDOT4(a, b) \
	DWLOAD4(a, BX, Z4, Z5, Z6, Z7); \
	DWLOAD4(b, BX, Z8, Z9, Z10, Z11); \
	VFMADD231PS Z4, Z8, Z0; \
	VFMADD231PS Z5, Z9, Z1; \
	VFMADD231PS Z6, Z10, Z2; \
	VFMADD231PS Z7, Z11, Z3

// DWPAIRMASKS takes a step of min(CX, 16) elements and sets K1 to them
// and K2, K3 to the twice as many elements of the other side. Clobbers AX
// and CX.
#define DWPAIRMASKS \
	MOVL $16, AX; \
	CMPQ CX, AX; \
	CMOVQGT AX, CX; \
	MOVQ $1, AX; \
	SHLQ CX, AX; \
	DECQ AX; \
	KMOVQ AX, K1; \
	SHLQ $1, CX; \
	MOVQ $1, AX; \
	SHLQ CX, AX; \
	DECQ AX; \
	KMOVQ AX, K2; \
	KSHIFTRQ $16, K2, K3

// func dwRowsAVX512(dst, src *float32, offs *int64, w *float32, taps, rows, n, dstStride, srcStride int, bias float32, flags int)
// Row r of dst (n columns from dst+r·dstStride) gets bias plus the sum over
// taps t of w[t]·src[r·srcStride + offs[t] + column], 64 columns per step
// in four accumulators so that the FMA chains overlap; the last step
// (fewer than 64 columns) runs the four chunks masked. Flags: 1 applies
// max(·, 0) keeping NaN, 2 starts from dst instead of bias.
TEXT ·dwRowsAVX512(SB), NOSPLIT, $0-88
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ offs+16(FP), R8
	MOVQ w+24(FP), R9
	MOVQ taps+32(FP), R10
	MOVQ rows+40(FP), R11
	MOVQ n+48(FP), DX
	MOVQ dstStride+56(FP), R12
	MOVQ srcStride+64(FP), R13
	VBROADCASTSS bias+72(FP), Z30
	VPXORD Z29, Z29, Z29

row:
	XORQ BX, BX // BX: first column of the step

block:
	MOVQ DX, CX
	SUBQ BX, CX
	CMPQ CX, $64
	JLT tail
	MOVQ flags+80(FP), AX
	TESTQ $2, AX
	JNZ blockload
	DWBIAS4
	JMP blocktaps

blockload:
	VMOVUPS (DI)(BX*4), Z0
	VMOVUPS 64(DI)(BX*4), Z1
	VMOVUPS 128(DI)(BX*4), Z2
	VMOVUPS 192(DI)(BX*4), Z3

blocktaps:
	XORQ AX, AX

blocktap:
	VBROADCASTSS (R9)(AX*4), Z31
	MOVQ (R8)(AX*8), CX
	ADDQ BX, CX
	VFMADD231PS (SI)(CX*4), Z31, Z0
	VFMADD231PS 64(SI)(CX*4), Z31, Z1
	VFMADD231PS 128(SI)(CX*4), Z31, Z2
	VFMADD231PS 192(SI)(CX*4), Z31, Z3
	INCQ AX
	CMPQ AX, R10
	JLT blocktap
	MOVQ flags+80(FP), AX
	TESTQ $1, AX
	JZ blockstore
	DWRELU4

blockstore:
	DWSTORE4
	ADDQ $64, BX
	JMP block

tail:
	CMPQ BX, DX
	JGE nextrow
	DWTAILMASKS
	MOVQ flags+80(FP), AX
	TESTQ $2, AX
	JNZ tailload
	DWBIAS4
	JMP tailtaps

tailload:
	DWLOAD4(DI, BX, Z0, Z1, Z2, Z3)

tailtaps:
	XORQ AX, AX

tailtap:
	DWTAPFMA4
	INCQ AX
	CMPQ AX, R10
	JLT tailtap
	MOVQ flags+80(FP), AX
	TESTQ $1, AX
	JZ tailstore
	DWRELU4

tailstore:
	DWSTORE4MASKED

nextrow:
	LEAQ (DI)(R12*4), DI
	LEAQ (SI)(R13*4), SI
	DECQ R11
	JNZ row
	VZEROUPPER
	RET

// func dwDotTapsAVX512(sums *float32, a *float32, offs *int64, taps int, b *float32, rows, n, aStride, bStride int)
// sums[t] gets the sum over rows r and columns i < n of
// a[offs[t] + r·aStride + i]·b[r·bStride + i]: four accumulators over 64
// columns per step, the last step masked, added together and across
// lanes at the end of each tap.
TEXT ·dwDotTapsAVX512(SB), NOSPLIT, $0-72
	MOVQ sums+0(FP), DI
	MOVQ offs+16(FP), R9
	MOVQ taps+24(FP), R10
	MOVQ n+48(FP), DX
	MOVQ aStride+56(FP), R12
	MOVQ bStride+64(FP), R13

dottap:
	MOVQ (R9), AX
	MOVQ a+8(FP), SI
	LEAQ (SI)(AX*4), SI
	MOVQ b+32(FP), R8
	MOVQ rows+40(FP), R11
	DWZERO4

dotrow:
	XORQ BX, BX

dotblock:
	MOVQ DX, CX
	SUBQ BX, CX
	CMPQ CX, $64
	JLT dottail
	VMOVUPS (SI)(BX*4), Z4
	VMOVUPS 64(SI)(BX*4), Z5
	VMOVUPS 128(SI)(BX*4), Z6
	VMOVUPS 192(SI)(BX*4), Z7
	VFMADD231PS (R8)(BX*4), Z4, Z0
	VFMADD231PS 64(R8)(BX*4), Z5, Z1
	VFMADD231PS 128(R8)(BX*4), Z6, Z2
	VFMADD231PS 192(R8)(BX*4), Z7, Z3
	ADDQ $64, BX
	JMP dotblock

dottail:
	CMPQ BX, DX
	JGE dotnext
	DWTAILMASKS
	DWDOT4(SI, R8)

dotnext:
	LEAQ (SI)(R12*4), SI
	LEAQ (R8)(R13*4), R8
	DECQ R11
	JNZ dotrow
	DWHSUM
	ADDQ $4, DI
	ADDQ $8, R9
	DECQ R10
	JNZ dottap
	VZEROUPPER
	RET

// func dwSplit2AVX512(even, odd, src *float32, n int)
// even[i] = src[2i] and odd[i] = src[2i+1] for i < n, 16 of each per step,
// the last step masked.
TEXT ·dwSplit2AVX512(SB), NOSPLIT, $0-32
	MOVQ even+0(FP), DI
	MOVQ odd+8(FP), R8
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), DX
	// Z28: lane i is 2i, the VPERMT2PS indices of the even elements of
	// two vectors; Z29, one more, of the odd ones.
	MOVQ $0x0e0c0a0806040200, AX
	VMOVQ AX, X28
	MOVQ $0x1e1c1a1816141210, AX
	VPINSRQ $1, AX, X28, X28
	VPMOVZXBD X28, Z28
	MOVL $1, AX
	VPBROADCASTD AX, Z29
	VPADDD Z29, Z28, Z29
	XORQ BX, BX

split:
	MOVQ DX, CX
	SUBQ BX, CX
	JLE splitdone
	DWPAIRMASKS
	VMOVUPS.Z (SI)(BX*8), K2, Z0
	VMOVUPS.Z 64(SI)(BX*8), K3, Z1
	VMOVAPS Z0, Z2
	VPERMT2PS Z1, Z29, Z2
	VPERMT2PS Z1, Z28, Z0
	VMOVUPS Z0, K1, (DI)(BX*4)
	VMOVUPS Z2, K1, (R8)(BX*4)
	ADDQ $16, BX
	JMP split

splitdone:
	VZEROUPPER
	RET

// func dwMerge2AVX512(dst, even, odd *float32, n int)
// dst[2i] = even[i] and dst[2i+1] = odd[i] for i < n, 16 of each per
// step, the last step masked.
TEXT ·dwMerge2AVX512(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ even+8(FP), R8
	MOVQ odd+16(FP), SI
	MOVQ n+24(FP), DX
	// Z28: 0, 16, 1, 17, …, 7, 23, the VPERMT2PS indices interleaving the
	// low halves of two vectors; Z29, eight more, the high halves.
	MOVQ $0x1303120211011000, AX
	VMOVQ AX, X28
	MOVQ $0x1707160615051404, AX
	VPINSRQ $1, AX, X28, X28
	VPMOVZXBD X28, Z28
	MOVL $8, AX
	VPBROADCASTD AX, Z29
	VPADDD Z29, Z28, Z29
	XORQ BX, BX

merge:
	MOVQ DX, CX
	SUBQ BX, CX
	JLE mergedone
	DWPAIRMASKS
	VMOVUPS.Z (R8)(BX*4), K1, Z0
	VMOVUPS.Z (SI)(BX*4), K1, Z1
	VMOVAPS Z0, Z2
	VPERMT2PS Z1, Z28, Z2
	VPERMT2PS Z1, Z29, Z0
	VMOVUPS Z2, K2, (DI)(BX*8)
	VMOVUPS Z0, K3, 64(DI)(BX*8)
	ADDQ $16, BX
	JMP merge

mergedone:
	VZEROUPPER
	RET

// func dwShiftAVX512(dst, src *float32, offs *int64, w *float32, masks *uint16, taps, n, chunks int, bias float32, flags int)
// dst[q], q < n, gets bias (or its old value when flags&2 is set) plus the
// sum over taps t of w[t]·src[q+offs[t]] for the lanes that
// masks[t·chunks + q/16] enables (the others read nothing: masked loads
// do not fault), then max(·, 0) when flags&1 is set; 64 outputs per step
// in four accumulators, the stores of the last step masked.
TEXT ·dwShiftAVX512(SB), NOSPLIT, $0-80
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ offs+16(FP), R8
	MOVQ w+24(FP), R9
	MOVQ masks+32(FP), R12
	MOVQ taps+40(FP), R10
	MOVQ n+48(FP), DX
	MOVQ chunks+56(FP), R13
	SHLQ $1, R13 // R13: bytes from one tap's masks to the next's
	VBROADCASTSS bias+64(FP), Z30
	VPXORD Z29, Z29, Z29
	XORQ BX, BX // BX: first output of the step

shiftstep:
	CMPQ BX, DX
	JGE shiftdone
	MOVQ flags+72(FP), AX
	TESTQ $2, AX
	JNZ shiftload
	DWBIAS4
	JMP shifttaps

shiftload:
	MOVQ DX, CX
	SUBQ BX, CX
	CMPQ CX, $64
	JGE shiftfull
	DWTAILMASKS
	JMP shiftloadz

shiftfull:
	KXNORQ K1, K1, K1
	KXNORQ K2, K2, K2
	KXNORQ K3, K3, K3
	KXNORQ K4, K4, K4

shiftloadz:
	DWLOAD4(DI, BX, Z0, Z1, Z2, Z3)

shifttaps:
	MOVQ BX, CX
	SHRQ $3, CX           // BX/16 chunks of 2 bytes
	LEAQ (R12)(CX*1), R11 // R11: the step's masks of tap 0
	XORQ AX, AX

shifttap:
	DWTAPMASKS(R11)
	DWTAPFMA4
	ADDQ R13, R11
	INCQ AX
	CMPQ AX, R10
	JLT shifttap
	MOVQ flags+72(FP), AX
	TESTQ $1, AX
	JZ shiftstore
	DWRELU4

shiftstore:
	MOVQ DX, CX
	SUBQ BX, CX
	CMPQ CX, $64
	JLT shiftpartial
	DWSTORE4
	ADDQ $64, BX
	JMP shiftstep

shiftpartial:
	DWTAILMASKS
	DWSTORE4MASKED

shiftdone:
	VZEROUPPER
	RET

// func dwShiftDotAVX512(sums *float32, a *float32, offs *int64, masks *uint16, taps int, b *float32, n, chunks int)
// sums[t] gets the sum over q < n of a[q+offs[t]]·b[q] for the lanes that
// masks[t·chunks + q/16] enables, both operands loaded under the mask.
TEXT ·dwShiftDotAVX512(SB), NOSPLIT, $0-64
	MOVQ sums+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ offs+16(FP), R8
	MOVQ masks+24(FP), R11
	MOVQ taps+32(FP), R10
	MOVQ b+40(FP), R9
	MOVQ n+48(FP), DX
	MOVQ chunks+56(FP), R13
	SHLQ $1, R13

sdottap:
	MOVQ (R8), AX
	LEAQ (SI)(AX*4), R12 // R12: a seen from this tap
	MOVQ R11, CX         // CX: this tap's masks
	DWZERO4
	XORQ BX, BX

sdotstep:
	DWTAPMASKS(CX)
	DWDOT4(R12, R9)
	ADDQ $8, CX
	ADDQ $64, BX
	CMPQ BX, DX
	JLT sdotstep
	DWHSUM
	ADDQ $4, DI
	ADDQ $8, R8
	ADDQ R13, R11
	DECQ R10
	JNZ sdottap
	VZEROUPPER
	RET
