#!/usr/bin/env python3
"""Generates vec_arm64.s, the NEON kernels of package vec for arm64.

Run from this directory: python3 asmgen_arm64.py > vec_arm64.s
With --check it instead assembles every WORD-encoded instruction with
llvm-mc (if installed) and compares the encodings with its own.

Go's arm64 assembler has no mnemonics for the floating-point vector
instructions (FADD, FMUL, FDIV, FMAX, FSQRT, FCVTL, FRINTN...), so they are
emitted as WORD encodings computed below from the Arm Architecture
Reference Manual, each commented with its assembler text; loads, stores,
integer vector operations and control flow use Go's own mnemonics.

Every kernel walks its slices 16 floats (four registers) at a time, then 4,
then 1; the exp and tanh kernels take a multiple of 4 (the Go wrapper pads
the tail). The arithmetic is that of the AVX2 kernels (asmgen.py): the same
operations in the same order, so both agree bit for bit.
"""

import struct
import subprocess
import sys

out = []
words = []


def emit(s=""):
    out.append(s)


def W(enc):
    w, text = enc
    words.append(enc)
    emit("\tWORD $0x%08x // %s" % (w, text))


# Three-register vector forms (Vd = Vn op Vm), by base encoding.
OPS3 = {
    "fadd": 0x4E20D400, "fsub": 0x4EA0D400, "fmul": 0x6E20DC00,
    "fdiv": 0x6E20FC00, "fmax": 0x4E20F400, "fmin": 0x4EA0F400,
    "fcmgt": 0x6EA0E400, "fmla": 0x4E20CC00, "fmls": 0x4EA0CC00,
}
# Two-register forms (Vd = op Vn).
OPS2 = {
    "fneg": 0x6EA0F800, "fabs": 0x4EA0F800, "fsqrt": 0x6EA1F800,
    "frintn": 0x4E218800, "fcvtzs": 0x4EA1B800,
}


def op3(name, d, n, m):
    return OPS3[name] | (m << 16) | (n << 5) | d, "%s v%d.4s, v%d.4s, v%d.4s" % (name, d, n, m)


def op2(name, d, n):
    return OPS2[name] | (n << 5) | d, "%s v%d.4s, v%d.4s" % (name, d, n)


def fcvtl(d, n, upper):
    if upper:
        return 0x4E617800 | (n << 5) | d, "fcvtl2 v%d.2d, v%d.4s" % (d, n)
    return 0x0E617800 | (n << 5) | d, "fcvtl v%d.2d, v%d.2s" % (d, n)


def fadd2d(d, n, m):
    return 0x4E60D400 | (m << 16) | (n << 5) | d, "fadd v%d.2d, v%d.2d, v%d.2d" % (d, n, m)


def faddp_d(d, n):
    return 0x7E70D800 | (n << 5) | d, "faddp d%d, v%d.2d" % (d, n)


def fmla2d(d, n, m):
    return 0x4E60CC00 | (m << 16) | (n << 5) | d, "fmla v%d.2d, v%d.2d, v%d.2d" % (d, n, m)


def fmax_s(d, n, m):
    return 0x1E204800 | (m << 16) | (n << 5) | d, "fmax s%d, s%d, s%d" % (d, n, m)


def fmaxv(d, n):
    return 0x6E30F800 | (n << 5) | d, "fmaxv s%d, v%d.4s" % (d, n)


def cmhi(d, n, m):
    return 0x6EA03400 | (m << 16) | (n << 5) | d, "cmhi v%d.4s, v%d.4s, v%d.4s" % (d, n, m)


def umaxv(d, n):
    return 0x6EB0A800 | (n << 5) | d, "umaxv s%d, v%d.4s" % (d, n)


def sshr(d, n, s):
    return 0x4F000400 | ((64 - s) << 16) | (n << 5) | d, "sshr v%d.4s, v%d.4s, #%d" % (d, n, s)


def fbits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def dup_const(reg, bits, what):
    emit("\tMOVW $0x%08x, R9 // %s" % (bits, what))
    emit("\tVDUP R9, V%d.S4" % reg)


def capture(f):
    """Runs f and returns the lines it emitted instead of emitting them."""
    start = len(out)
    f()
    lines = out[start:]
    del out[start:]
    return lines


def header(name, args, frame):
    emit("TEXT ·%s(SB), NOSPLIT, $0-%d" % (name, frame))
    for a in args:
        emit("\t" + a)


def loops(name, body, sizes=(16, 4, 1)):
    """Emits loops over the R3 elements taking the given numbers of floats
    per step (16, 4, 1, largest first); body(lanes) emits the work of one
    step on V0..V3 (lanes 16) or V0 (lanes 4 or 1), loaded from R1 (and R2)
    and stored to R0."""
    for i, lanes in enumerate(sizes):
        emit("%s_loop%d:" % (name, lanes))
        nxt = "%s_loop%d" % (name, sizes[i + 1]) if i + 1 < len(sizes) else "%s_done" % name
        if lanes == 1:
            emit("\tCBZ R3, %s" % nxt)
        else:
            emit("\tCMP $%d, R3" % lanes)
            emit("\tBLT %s" % nxt)
        body(lanes)
        emit("\tSUB $%d, R3, R3" % lanes)
        emit("\tB %s_loop%d" % (name, lanes))
    emit("%s_done:" % name)


def load(lanes, base, first, ptr):
    if lanes == 16:
        emit("\tVLD1.P 64(%s), [V%d.S4, V%d.S4, V%d.S4, V%d.S4]" % (ptr, first, first + 1, first + 2, first + 3))
    elif lanes == 4:
        emit("\tVLD1.P 16(%s), [V%d.S4]" % (ptr, first))
    else:
        emit("\tFMOVS.P 4(%s), F%d" % (ptr, first))


def store(lanes, first, ptr="R0"):
    if lanes == 16:
        emit("\tVST1.P [V%d.S4, V%d.S4, V%d.S4, V%d.S4], 64(%s)" % (first, first + 1, first + 2, first + 3, ptr))
    elif lanes == 4:
        emit("\tVST1.P [V%d.S4], 16(%s)" % (first, ptr))
    else:
        emit("\tFMOVS.P F%d, 4(%s)" % (first, ptr))


def nregs(lanes):
    return 4 if lanes == 16 else 1


SLICE2 = ["MOVD dst_base+0(FP), R0", "MOVD a_base+24(FP), R1", "MOVD a_len+32(FP), R3"]


def binary(name, desc, op, args=("a", "b")):
    """dst[i] = a[i] op b[i] (reluGrad: b[i] > 0 ? a[i] : 0); args names
    the two operands as the Go declaration does."""
    fn = name + "NEON"
    x, y = args
    emit("// func %s(dst, %s, %s []float32): dst[i] = %s." % (fn, x, y, desc))
    header(fn, ["MOVD dst_base+0(FP), R0", "MOVD %s_base+24(FP), R1" % x, "MOVD %s_len+32(FP), R3" % x,
                "MOVD %s_base+48(FP), R2" % y], 72)

    def body(lanes):
        load(lanes, 0, 0, "R1")
        load(lanes, 0, 4, "R2")
        for j in range(nregs(lanes)):
            if op == "relugrad":
                # mask = b > 0 (false for NaN), then a AND mask.
                W(op3("fcmgt", 4 + j, 4 + j, 31))
                emit("\tVAND V%d.B16, V%d.B16, V%d.B16" % (4 + j, j, j))
            else:
                W(op3(op, j, j, 4 + j))
        store(lanes, 0)

    if op == "relugrad":
        emit("\tVEOR V31.B16, V31.B16, V31.B16")
    loops(fn, body)
    emit("\tRET")
    emit()


def withconst(name, desc, op, const_first):
    """dst[i] = a[i] op c, or c op a[i] when const_first."""
    fn = name + "NEON"
    emit("// func %s(dst, a []float32, c float32): dst[i] = %s." % (fn, desc))
    header(fn, SLICE2 + ["FMOVS c+48(FP), F31", "VDUP V31.S[0], V31.S4"], 52)

    def body(lanes):
        load(lanes, 0, 0, "R1")
        for j in range(nregs(lanes)):
            if const_first:
                W(op3(op, j, 31, j))
            else:
                W(op3(op, j, j, 31))
        store(lanes, 0)

    loops(fn, body)
    emit("\tRET")
    emit()


def unary(name, desc, op):
    fn = name + "NEON"
    emit("// func %s(dst, a []float32): dst[i] = %s." % (fn, desc))
    header(fn, SLICE2, 48)
    if op == "relu":
        emit("\tVEOR V31.B16, V31.B16, V31.B16")

    def body(lanes):
        load(lanes, 0, 0, "R1")
        for j in range(nregs(lanes)):
            if op == "relu":
                # FMAX returns NaN when either operand is NaN, and +0 for
                # max(-0, +0).
                W(op3("fmax", j, j, 31))
            else:
                W(op2(op, j, j))
        store(lanes, 0)

    loops(fn, body)
    emit("\tRET")
    emit()


def sum_kernel():
    fn = "sumNEON"
    emit("// func sumNEON(a []float32) float64: the sum of a, accumulated in")
    emit("// float64 in eight partial sums (V16..V19, two lanes each).")
    header(fn, ["MOVD a_base+0(FP), R1", "MOVD a_len+8(FP), R3"], 32)
    for r in range(16, 20):
        emit("\tVEOR V%d.B16, V%d.B16, V%d.B16" % (r, r, r))

    def body(lanes):
        load(lanes, 0, 0, "R1")
        if lanes == 1:
            # F0 holds the value with the other lanes zero: widen lane 0
            # (lane 1 adds 0.0).
            W(fcvtl(4, 0, False))
            W(fadd2d(16, 16, 4))
            return
        for j in range(nregs(lanes)):
            W(fcvtl(4, j, False))
            W(fcvtl(5, j, True))
            W(fadd2d(16 + (j % 2) * 2, 16 + (j % 2) * 2, 4))
            W(fadd2d(17 + (j % 2) * 2, 17 + (j % 2) * 2, 5))

    loops(fn, body)
    W(fadd2d(16, 16, 17))
    W(fadd2d(18, 18, 19))
    W(fadd2d(16, 16, 18))
    W(faddp_d(0, 16))
    emit("\tFMOVD F0, ret+24(FP)")
    emit("\tRET")
    emit()


def max_kernel():
    fn = "maxNEON"
    emit("// func maxNEON(a []float32) float32: the largest element of a (NaN if")
    emit("// any is); len(a) >= 1. FMAX returns NaN when either operand is, and")
    emit("// +0 for max(-0, +0), as Go's max does.")
    header(fn, ["MOVD a_base+0(FP), R1", "MOVD a_len+8(FP), R3", "VLD1R (R1), [V16.S4]"], 28)
    for r in range(17, 21):
        emit("\tVMOV V16.B16, V%d.B16" % r)

    def body(lanes):
        load(lanes, 0, 0, "R1")
        if lanes == 1:
            W(fmax_s(20, 20, 0))
            return
        for j in range(nregs(lanes)):
            W(op3("fmax", 16 + j, 16 + j, j))

    loops(fn, body)
    W(op3("fmax", 16, 16, 17))
    W(op3("fmax", 18, 18, 19))
    W(op3("fmax", 16, 16, 18))
    W(fmaxv(0, 16))
    W(fmax_s(0, 0, 20))
    emit("\tFMOVS F0, ret+24(FP)")
    emit("\tRET")
    emit()


def dot_kernel():
    fn = "dotNEON"
    emit("// func dotNEON(a, b []float32) float64: the inner product of a and b,")
    emit("// accumulated in float64 in eight partial sums (V16..V19, two lanes")
    emit("// each); float32 products are exact in float64, so the fused")
    emit("// multiply-add rounds only the sum.")
    header(fn, ["MOVD a_base+0(FP), R1", "MOVD a_len+8(FP), R3", "MOVD b_base+24(FP), R2"], 56)
    for r in range(16, 20):
        emit("\tVEOR V%d.B16, V%d.B16, V%d.B16" % (r, r, r))

    def body(lanes):
        load(lanes, 0, 0, "R1")
        load(lanes, 0, 4, "R2")
        if lanes == 1:
            W(fcvtl(8, 0, False))
            W(fcvtl(10, 4, False))
            W(fmla2d(16, 8, 10))
            return
        for j in range(nregs(lanes)):
            W(fcvtl(8, j, False))
            W(fcvtl(9, j, True))
            W(fcvtl(10, 4 + j, False))
            W(fcvtl(11, 4 + j, True))
            W(fmla2d(16 + (j % 2) * 2, 8, 10))
            W(fmla2d(17 + (j % 2) * 2, 9, 11))

    loops(fn, body)
    W(fadd2d(16, 16, 17))
    W(fadd2d(18, 18, 19))
    W(fadd2d(16, 16, 18))
    W(faddp_d(0, 16))
    emit("\tFMOVD F0, ret+48(FP)")
    emit("\tRET")
    emit()


def sgd_kernel():
    fn = "sgdMomentumNEON"
    emit("// func sgdMomentumNEON(w, g, buf []float32, mom, damp, lr float32) int")
    emit("// buf[i] = buf[i]*mom + g[i]*damp, w[i] = w[i] - buf[i]*lr, each product")
    emit("// and sum rounded on its own, four elements at a time over the first")
    emit("// len(w)&^3. It stops before the first group of four in which an input")
    emit("// or a result is below 2**-80 in magnitude and not zero (where the")
    emit("// pure-Go twin applies the flush-to-zero rules) and returns how many")
    emit("// elements it updated. The constants are DAZ-flushed and within")
    emit("// [2**-40, 2**40] (or 0): the caller checks.")
    header(fn, ["MOVD w_base+0(FP), R0", "MOVD w_len+8(FP), R3", "MOVD g_base+24(FP), R1",
                "MOVD buf_base+48(FP), R2", "MOVD R0, R10", "MOVD R2, R11",
                "FMOVS mom+72(FP), F20", "VDUP V20.S[0], V20.S4",
                "FMOVS damp+76(FP), F21", "VDUP V21.S[0], V21.S4",
                "FMOVS lr+80(FP), F22", "VDUP V22.S[0], V22.S4",
                "AND $~3, R3, R3", "MOVD $0, R4"], 96)
    dup_const(23, 0x7FFFFFFF, "absolute value mask")
    dup_const(24, 0x00000001, "1 (int32)")
    dup_const(25, 0x17800000, "smallBits: 2**-80")
    emit("%s_loop:" % fn)
    emit("\tCMP R3, R4")
    emit("\tBGE %s_done" % fn)
    emit("\tVLD1 (R11), [V0.S4]")  # buf
    emit("\tVLD1.P 16(R1), [V1.S4]")  # g
    emit("\tVLD1 (R10), [V2.S4]")  # w
    W(op3("fmul", 3, 0, 20))  # buf*mom
    W(op3("fmul", 4, 1, 21))  # g*damp
    W(op3("fadd", 3, 3, 4))  # b
    W(op3("fmul", 4, 3, 22))  # b*lr
    W(op3("fsub", 4, 2, 4))  # wn = w - b*lr
    # small = OR over (buf, g, w, b, wn) of smallBits > (|x| bits) - 1
    emit("\tVEOR V7.B16, V7.B16, V7.B16")
    for x in (0, 1, 2, 3, 4):
        emit("\tVAND V23.B16, V%d.B16, V5.B16" % x)
        emit("\tVSUB V24.S4, V5.S4, V5.S4")
        W(cmhi(5, 25, 5))
        emit("\tVORR V5.B16, V7.B16, V7.B16")
    W(umaxv(6, 7))
    emit("\tFMOVS F6, R5")
    emit("\tCBNZW R5, %s_done" % fn)
    emit("\tVST1.P [V3.S4], 16(R11)")
    emit("\tVST1.P [V4.S4], 16(R10)")
    emit("\tADD $4, R4, R4")
    emit("\tB %s_loop" % fn)
    emit("%s_done:" % fn)
    emit("\tMOVD R4, ret+88(FP)")
    emit("\tRET")
    emit()


def adam_kernel():
    fn = "adamNEON"
    emit("// func adamNEON(w, g, m, v []float32, c *AdamConsts) int")
    emit("// One Adam step (see Adam) with each operation rounded on its own, four")
    emit("// elements at a time over the first len(w)&^3, stopping before the first")
    emit("// group of four in which an input or an intermediate is below 2**-80 in")
    emit("// magnitude and not zero (the pure-Go twin flushes those as FTZ|DAZ do);")
    emit("// returns how many elements it updated. The constants are DAZ-flushed,")
    emit("// Eps >= 0, and each is 0 or within [2**-40, 2**40]: the caller checks.")
    header(fn, ["MOVD w_base+0(FP), R0", "MOVD w_len+8(FP), R3", "MOVD g_base+24(FP), R1",
                "MOVD m_base+48(FP), R2", "MOVD v_base+72(FP), R6", "MOVD c+96(FP), R9",
                "AND $~3, R3, R3", "MOVD $0, R4"], 112)
    for i in range(8):
        emit("\tFMOVS %d(R9), F%d" % (4 * i, 20 + i))
        emit("\tVDUP V%d.S[0], V%d.S4" % (20 + i, 20 + i))
    B1, C1, B2, C2, BC2, EPS, STEP, DECAY = range(20, 28)
    dup_const(28, 0x7FFFFFFF, "absolute value mask")
    dup_const(29, 0x00000001, "1 (int32)")
    dup_const(30, 0x17800000, "smallBits: 2**-80")
    emit("%s_loop:" % fn)
    emit("\tCMP R3, R4")
    emit("\tBGE %s_done" % fn)
    emit("\tVLD1.P 16(R1), [V0.S4]")  # g
    emit("\tVLD1 (R2), [V1.S4]")  # m
    emit("\tVLD1 (R6), [V2.S4]")  # v
    emit("\tVLD1 (R0), [V3.S4]")  # w
    W(op3("fmul", 4, 1, B1))
    W(op3("fmul", 5, 0, C1))
    W(op3("fadd", 4, 4, 5))  # mi
    W(op3("fmul", 5, 0, 0))  # gg
    W(op3("fmul", 6, 2, B2))
    W(op3("fmul", 7, 5, C2))
    W(op3("fadd", 6, 6, 7))  # vi
    W(op2("fsqrt", 7, 6))
    W(op3("fdiv", 7, 7, BC2))
    W(op3("fadd", 7, 7, EPS))  # denom
    W(op3("fdiv", 7, 4, 7))  # q = mi / denom
    W(op3("fmul", 16, 3, DECAY))
    W(op3("fmul", 17, 7, STEP))
    W(op3("fsub", 16, 16, 17))  # wn
    emit("\tVEOR V19.B16, V19.B16, V19.B16")
    for x in (0, 1, 2, 3, 5, 4, 6, 7, 16):
        emit("\tVAND V28.B16, V%d.B16, V18.B16" % x)
        emit("\tVSUB V29.S4, V18.S4, V18.S4")
        W(cmhi(18, 30, 18))
        emit("\tVORR V18.B16, V19.B16, V19.B16")
    W(umaxv(18, 19))
    emit("\tFMOVS F18, R5")
    emit("\tCBNZW R5, %s_done" % fn)
    emit("\tVST1.P [V4.S4], 16(R2)")
    emit("\tVST1.P [V6.S4], 16(R6)")
    emit("\tVST1.P [V16.S4], 16(R0)")
    emit("\tADD $4, R4, R4")
    emit("\tB %s_loop" % fn)
    emit("%s_done:" % fn)
    emit("\tMOVD R4, ret+104(FP)")
    emit("\tRET")
    emit()


# exp: clamp x to [-104, 89] (NaN kept: FMAX and FMIN return NaN), k =
# round(x·log2e), r = x - k·ln2hi - k·ln2lo with fused multiply-subtracts,
# p = Horner(1/5040, 1/720, 1/120, 1/24, 1/6, 1/2, 1, 1) in r with fused
# multiply-adds, then p·2**(k>>1)·2**(k-(k>>1)): two scalings, so that
# results near the overflow bound and subnormal results round once.
EXP_CONSTS = [
    (8, 0xC2D00000, "-104"), (9, 0x42B20000, "89"), (10, 0x3FB8AA3B, "log2(e)"),
    (11, 0x3F318000, "ln2hi = 0.693359375"), (12, 0xB95E8083, "ln2lo = -2.12194440e-4"),
    (13, 0x0000007F, "127 (int32)"), (14, 0x3F800000, "1"),
    (15, 0x39500D01, "1/5040"), (16, 0x3AB60B61, "1/720"), (17, 0x3C088889, "1/120"),
    (18, 0x3D2AAAAB, "1/24"), (19, 0x3E2AAAAB, "1/6"), (20, 0x3F000000, "1/2"),
]


def horner(first, x, coeffs, a, b):
    """Evaluates ((first·x + c0)·x + c1)... for the constant registers
    first and coeffs, alternating between the work registers a and b (each
    step copies the coefficient into one and multiply-adds the other into
    it); returns the register holding the result."""
    cur = first
    for i, c in enumerate(coeffs):
        dst = a if i % 2 == 0 else b
        emit("\tVMOV V%d.B16, V%d.B16" % (c, dst))
        W(op3("fmla", dst, cur, x))
        cur = dst
    return cur


def exp_body(x, work):
    """e**V(x) into V(x); work is a list of 4 scratch registers."""
    k, p, t, s = work
    W(op3("fmax", x, x, 8))
    W(op3("fmin", x, x, 9))
    W(op3("fmul", k, x, 10))
    W(op2("frintn", k, k))
    W(op3("fmls", x, k, 11))
    W(op3("fmls", x, k, 12))
    p = horner(15, x, [16, 17, 18, 19, 20, 14, 14], p, t)
    W(op2("fcvtzs", k, k))
    W(sshr(s, k, 1))
    emit("\tVSUB V%d.S4, V%d.S4, V%d.S4" % (s, k, k))  # k - k>>1
    emit("\tVADD V13.S4, V%d.S4, V%d.S4" % (s, s))
    emit("\tVSHL $23, V%d.S4, V%d.S4" % (s, s))
    emit("\tVADD V13.S4, V%d.S4, V%d.S4" % (k, k))
    emit("\tVSHL $23, V%d.S4, V%d.S4" % (k, k))
    W(op3("fmul", p, p, s))
    W(op3("fmul", x, p, k))


def exp_kernel():
    fn = "expNEON"
    emit("// func expNEON(dst, a []float32): dst[i] = e**a[i]; len(a) must be a")
    emit("// multiple of 4 (the Go wrapper handles the tail). Eight floats per")
    emit("// step while at least eight remain.")
    header(fn, SLICE2, 48)
    for reg, bits, what in EXP_CONSTS:
        dup_const(reg, bits, what)

    def body(lanes):
        if lanes == 4:
            load(4, 0, 0, "R1")
            exp_body(0, [1, 2, 3, 4])
            store(4, 0)
            return
        # Two independent vectors, their instructions interleaved so that
        # each chain's latency hides behind the other's work.
        load(4, 0, 0, "R1")
        load(4, 0, 21, "R1")
        first = capture(lambda: exp_body(0, [1, 2, 3, 4]))
        second = capture(lambda: exp_body(21, [22, 23, 24, 25]))
        for x, y in zip(first, second, strict=True):
            emit(x)
            emit(y)
        store(4, 0)
        store(4, 21)

    loops(fn, body, sizes=(8, 4))
    emit("\tRET")
    emit()


# tanh: the AVX2 kernel's arithmetic. |x| < 0.625: x + x**3·P(x**2); above:
# 1 - 2/(e**(2|x|) + 1) with |x| capped at 10, then the sign of x.
TANH_CONSTS = [
    (8, 0x41200000, "10"), (9, 0x3FB8AA3B, "log2(e)"), (10, 0x3F318000, "ln2hi"),
    (11, 0xB95E8083, "ln2lo"), (12, 0x0000007F, "127 (int32)"), (13, 0x3F800000, "1"),
    (14, 0x39500D01, "1/5040"), (15, 0x3AB60B61, "1/720"), (16, 0x3C088889, "1/120"),
    (17, 0x3D2AAAAB, "1/24"), (18, 0x3E2AAAAB, "1/6"), (19, 0x3F000000, "1/2"),
    (20, 0x40000000, "2"), (21, 0x3F200000, "0.625"), (22, 0x80000000, "sign bit"),
    (23, 0xBEAAAA9C, "t0"), (24, 0x3E088435, "t1"), (25, 0xBD5C3411, "t2"),
    (26, 0x3CA9A5DD, "t3"), (27, 0xBBBD8CEF, "t4"),
]


def tanh_kernel():
    fn = "tanhNEON"
    emit("// func tanhNEON(dst, a []float32): dst[i] = tanh(a[i]); len(a) must be")
    emit("// a multiple of 4 (the Go wrapper handles the tail).")
    header(fn, SLICE2, 48)
    for reg, bits, what in TANH_CONSTS:
        dup_const(reg, bits, what)

    def body(lanes):
        load(lanes, 0, 0, "R1")
        W(op2("fabs", 1, 0))
        W(op3("fmin", 1, 1, 8))  # |x| capped at 10, NaN kept
        W(op3("fadd", 3, 1, 1))  # y = 2|x|
        W(op3("fmul", 4, 3, 9))
        W(op2("frintn", 4, 4))
        W(op3("fmls", 3, 4, 10))
        W(op3("fmls", 3, 4, 11))
        e = horner(14, 3, [15, 16, 17, 18, 19, 13, 13], 5, 6)
        W(op2("fcvtzs", 4, 4))
        emit("\tVADD V12.S4, V4.S4, V4.S4")
        emit("\tVSHL $23, V4.S4, V4.S4")
        W(op3("fmul", 5, e, 4))
        # big = 1 - 2/(e+1)
        W(op3("fadd", 5, 5, 13))
        W(op3("fdiv", 6, 20, 5))
        W(op3("fsub", 7, 13, 6))
        # small = x + x**3·P(x**2)
        W(op3("fmul", 2, 0, 0))
        q = horner(27, 2, [26, 25, 24, 23], 6, 3)
        assert q == 3
        W(op3("fmul", 2, 0, 2))
        emit("\tVMOV V0.B16, V6.B16")
        W(op3("fmla", 6, 2, q))
        # pick small where 0.625 > |x| (false for NaN)
        W(op3("fcmgt", 1, 21, 1))
        emit("\tVBIT V1.B16, V6.B16, V7.B16")
        emit("\tVAND V22.B16, V0.B16, V0.B16")
        emit("\tVORR V0.B16, V7.B16, V0.B16")
        store(lanes, 0)

    loops(fn, body, sizes=(4,))
    emit("\tRET")
    emit()


def generate():
    emit("// Code generated by asmgen_arm64.py; DO NOT EDIT.")
    emit()
    emit("//go:build arm64 && !purego")
    emit()
    emit('#include "textflag.h"')
    emit()
    for name, op in [("add", "fadd"), ("sub", "fsub"), ("mul", "fmul"), ("div", "fdiv")]:
        binary(name, "a[i] %s b[i]" % {"fadd": "+", "fsub": "-", "fmul": "*", "fdiv": "/"}[op], op)
    binary("reluGrad", "g[i] where out[i] > 0, else +0", "relugrad", ("g", "out"))
    for name, op, first, desc in [
        ("addConst", "fadd", False, "a[i] + c"), ("subConst", "fsub", False, "a[i] - c"),
        ("mulConst", "fmul", False, "a[i] * c"), ("divConst", "fdiv", False, "a[i] / c"),
        ("constSub", "fsub", True, "c - a[i]"), ("constDiv", "fdiv", True, "c / a[i]"),
    ]:
        withconst(name, desc, op, first)
    unary("relu", "max(a[i], 0), NaN kept", "relu")
    unary("neg", "-a[i]", "fneg")
    unary("abs", "|a[i]|", "fabs")
    unary("sqrt", "sqrt(a[i])", "fsqrt")
    sum_kernel()
    sgd_kernel()
    adam_kernel()
    max_kernel()
    dot_kernel()
    exp_kernel()
    tanh_kernel()
    return "\n".join(out).rstrip("\n") + "\n"


def check():
    src = "\n".join(text for _, text in words) + "\n"
    try:
        res = subprocess.run(["llvm-mc", "-triple=aarch64", "-mattr=+neon", "-show-encoding"],
                             input=src, capture_output=True, text=True, check=True)
    except FileNotFoundError:
        print("llvm-mc not found: encodings not checked", file=sys.stderr)
        return 0
    got = []
    for line in res.stdout.splitlines():
        if "encoding:" in line:
            b = line.split("encoding: [")[1].rstrip("]").split(",")
            got.append(int.from_bytes(bytes(int(x, 16) for x in b), "little"))
    bad = 0
    for (w, text), g in zip(words, got, strict=True):
        if w != g:
            print("mismatch: %s: ours 0x%08x, llvm-mc 0x%08x" % (text, w, g), file=sys.stderr)
            bad += 1
    print("%d encodings checked, %d mismatches" % (len(words), bad), file=sys.stderr)
    return bad


if __name__ == "__main__":
    text = generate()
    if "--check" in sys.argv:
        sys.exit(1 if check() else 0)
    sys.stdout.write(text)
