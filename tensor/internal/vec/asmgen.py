#!/usr/bin/env python3
"""Writes vec_amd64.s: the AVX2+FMA and AVX-512F kernels of package vec.

Run with `go generate` (or python3 asmgen.py) after editing; the generated
file is committed so building never needs Python.
"""

ISAS = {
    # name: (register prefix, bytes per vector, lanes)
    "AVX2": ("Y", 32, 8),
    "AVX512": ("Z", 64, 16),
}

out = []


def emit(s=""):
    out.append(s)


def loops(isa, body, scalar, unroll=4, ftz=False):
    """Index AX runs over CX elements: unrolled vector loop, single-vector
    loop, then a scalar tail (skipped when scalar is None). With ftz the
    caller's MXCSR (saved by ftz_on) is restored before returning."""
    _, w, lanes = ISAS[isa]
    big = lanes * unroll
    emit("\tXORQ AX, AX")
    if unroll > 1:
        emit("\tMOVQ CX, BX")
        emit(f"\tANDQ $-{big}, BX")
        emit("\tJZ   one")
        emit("big:")
        for j in range(unroll):
            body(j, j * w)
        emit(f"\tADDQ ${big}, AX")
        emit("\tCMPQ AX, BX")
        emit("\tJLT  big")
        emit("one:")
    emit("\tMOVQ CX, BX")
    emit(f"\tANDQ $-{lanes}, BX")
    emit("\tCMPQ AX, BX")
    emit("\tJGE  tail")
    emit("oneloop:")
    body(0, 0)
    emit(f"\tADDQ ${lanes}, AX")
    emit("\tCMPQ AX, BX")
    emit("\tJLT  oneloop")
    emit("tail:")
    if scalar is not None:
        emit("\tCMPQ AX, CX")
        emit("\tJGE  done")
        emit("tailloop:")
        scalar()
        emit("\tINCQ AX")
        emit("\tCMPQ AX, CX")
        emit("\tJLT  tailloop")
    emit("done:")
    emit("\tVZEROUPPER")
    if ftz:
        emit("\tLDMXCSR mxcsr-4(SP)")
    emit("\tRET")
    emit()


def relu_grad(isa):
    r, _, _ = ISAS[isa]
    emit(f"// func reluGrad{isa}(dst, g, out []float32): dst[i] = g[i] where out[i] > 0")
    emit("// (ordered: not where out[i] is NaN), else +0; g's bits pass unchanged.")
    emit(f"TEXT ·reluGrad{isa}(SB), NOSPLIT, $0-72")
    emit("\tMOVQ dst_base+0(FP), DI")
    emit("\tMOVQ dst_len+8(FP), CX")
    emit("\tMOVQ g_base+24(FP), SI")
    emit("\tMOVQ out_base+48(FP), DX")
    emit(f"\tVXORPS {r}14, {r}14, {r}14" if r == "Y" else "\tVPXORD Z14, Z14, Z14")

    # The vector loops compare 0 < out (predicate 0x11, LT_OQ, false for
    # NaN; out is the memory operand, so it comes second), the scalar tail
    # out > 0 (0x1e, GT_OQ). AVX2 turns the comparison into an all-ones
    # lane mask to AND with g; AVX-512 into a mask register for a zeroing
    # load of g.
    def body(j, d):
        if r == "Y":
            emit(f"\tVCMPPS $0x11, {d}(DX)(AX*4), Y14, Y{j}")
            emit(f"\tVANDPS {d}(SI)(AX*4), Y{j}, Y{j}")
        else:
            emit(f"\tVCMPPS $0x11, {d}(DX)(AX*4), Z14, K{j + 1}")
            emit(f"\tVMOVUPS.Z {d}(SI)(AX*4), K{j + 1}, Z{j}")
        emit(f"\tVMOVUPS {r}{j}, {d}(DI)(AX*4)")

    def scalar():
        emit("\tVMOVSS (DX)(AX*4), X0")
        emit("\tVCMPSS $0x1e, X14, X0, X0")
        emit("\tVMOVSS (SI)(AX*4), X1")
        emit("\tVANDPS X1, X0, X0")
        emit("\tVMOVSS X0, (DI)(AX*4)")

    loops(isa, body, scalar)


def binary(isa, name, op):
    r, _, _ = ISAS[isa]
    emit(f"// func {name}{isa}(dst, a, b []float32): dst[i] = a[i] {op} b[i].")
    emit(f"TEXT ·{name}{isa}(SB), NOSPLIT, $0-72")
    emit("\tMOVQ dst_base+0(FP), DI")
    emit("\tMOVQ dst_len+8(FP), CX")
    emit("\tMOVQ a_base+24(FP), SI")
    emit("\tMOVQ b_base+48(FP), DX")

    def body(j, d):
        emit(f"\tVMOVUPS {d}(SI)(AX*4), {r}{j}")
        emit(f"\tV{op}PS {d}(DX)(AX*4), {r}{j}, {r}{j}")
        emit(f"\tVMOVUPS {r}{j}, {d}(DI)(AX*4)")

    def scalar():
        emit("\tVMOVSS (SI)(AX*4), X0")
        emit(f"\tV{op}SS (DX)(AX*4), X0, X0")
        emit("\tVMOVSS X0, (DI)(AX*4)")

    loops(isa, body, scalar)


def const(isa, name, op, rev):
    """dst = a op c, or c op a when rev."""
    r, _, _ = ISAS[isa]
    desc = f"c {op} a[i]" if rev else f"a[i] {op} c"
    emit(f"// func {name}{isa}(dst, a []float32, c float32): dst[i] = {desc}.")
    emit(f"TEXT ·{name}{isa}(SB), NOSPLIT, $0-52")
    emit("\tMOVQ dst_base+0(FP), DI")
    emit("\tMOVQ dst_len+8(FP), CX")
    emit("\tMOVQ a_base+24(FP), SI")
    emit(f"\tVBROADCASTSS c+48(FP), {r}15")

    def body(j, d):
        emit(f"\tVMOVUPS {d}(SI)(AX*4), {r}{j}")
        if rev:
            emit(f"\tV{op}PS {r}{j}, {r}15, {r}{j}")
        else:
            emit(f"\tV{op}PS {r}15, {r}{j}, {r}{j}")
        emit(f"\tVMOVUPS {r}{j}, {d}(DI)(AX*4)")

    def scalar():
        emit("\tVMOVSS (SI)(AX*4), X0")
        if rev:
            emit(f"\tV{op}SS X0, X15, X0")
        else:
            emit(f"\tV{op}SS X15, X0, X0")
        emit("\tVMOVSS X0, (DI)(AX*4)")

    loops(isa, body, scalar)


def relu(isa):
    r, _, _ = ISAS[isa]
    emit(f"// func relu{isa}(dst, a []float32): dst[i] = max(a[i], 0), NaN kept, -0 -> +0.")
    emit(f"TEXT ·relu{isa}(SB), NOSPLIT, $0-48")
    emit("\tMOVQ dst_base+0(FP), DI")
    emit("\tMOVQ dst_len+8(FP), CX")
    emit("\tMOVQ a_base+24(FP), SI")
    emit(f"\tVXORPS {r}14, {r}14, {r}14" if r == "Y" else "\tVPXORD Z14, Z14, Z14")

    # VMAXPS returns its second source (Intel order), here a[i], when either
    # operand is NaN or both are zeros; adding +0 turns -0 into +0.
    def body(j, d):
        emit(f"\tVMOVUPS {d}(SI)(AX*4), {r}{j}")
        emit(f"\tVMAXPS {r}{j}, {r}14, {r}{j}")
        emit(f"\tVADDPS {r}14, {r}{j}, {r}{j}")
        emit(f"\tVMOVUPS {r}{j}, {d}(DI)(AX*4)")

    def scalar():
        emit("\tVMOVSS (SI)(AX*4), X0")
        emit("\tVMAXSS X0, X14, X0")
        emit("\tVADDSS X14, X0, X0")
        emit("\tVMOVSS X0, (DI)(AX*4)")

    loops(isa, body, scalar)


def sum_(isa):
    r, _, lanes = ISAS[isa]
    half = "X" if r == "Y" else "Y"  # float32 source register width
    emit(f"// func sum{isa}(a []float32) float64: the sum of a, accumulated in float64.")
    emit(f"TEXT ·sum{isa}(SB), NOSPLIT, $0-32")
    emit("\tMOVQ a_base+0(FP), SI")
    emit("\tMOVQ a_len+8(FP), CX")
    for i in range(4):
        emit(f"\tVXORPD {r}{i}, {r}{i}, {r}{i}" if r == "Y" else f"\tVPXORQ Z{i}, Z{i}, Z{i}")
    dl = lanes // 2  # doubles per vector
    emit("\tXORQ AX, AX")
    emit("\tMOVQ CX, BX")
    emit(f"\tANDQ $-{4 * dl}, BX")
    emit("\tJZ   one")
    emit("big:")
    for j in range(4):
        emit(f"\tVCVTPS2PD {j * dl * 4}(SI)(AX*4), {r}{j + 4}")
        emit(f"\tVADDPD {r}{j + 4}, {r}{j}, {r}{j}")
    emit(f"\tADDQ ${4 * dl}, AX")
    emit("\tCMPQ AX, BX")
    emit("\tJLT  big")
    emit("one:")
    emit("\tMOVQ CX, BX")
    emit(f"\tANDQ $-{dl}, BX")
    emit("\tCMPQ AX, BX")
    emit("\tJGE  reduce")
    emit("oneloop:")
    emit(f"\tVCVTPS2PD (SI)(AX*4), {r}4")
    emit(f"\tVADDPD {r}4, {r}0, {r}0")
    emit(f"\tADDQ ${dl}, AX")
    emit("\tCMPQ AX, BX")
    emit("\tJLT  oneloop")
    emit("reduce:")
    emit(f"\tVADDPD {r}1, {r}0, {r}0")
    emit(f"\tVADDPD {r}3, {r}2, {r}2")
    emit(f"\tVADDPD {r}2, {r}0, {r}0")
    if r == "Z":
        emit("\tVEXTRACTF64X4 $1, Z0, Y1")
        emit("\tVADDPD Y1, Y0, Y0")
    emit("\tVEXTRACTF128 $1, Y0, X1")
    emit("\tVADDPD X1, X0, X0")
    emit("\tVUNPCKHPD X0, X0, X1")
    emit("\tVADDSD X1, X0, X0")
    emit("\tCMPQ AX, CX")
    emit("\tJGE  done")
    emit("tailloop:")
    emit("\tVCVTSS2SD (SI)(AX*4), X2, X2")
    emit("\tVADDSD X2, X0, X0")
    emit("\tINCQ AX")
    emit("\tCMPQ AX, CX")
    emit("\tJLT  tailloop")
    emit("done:")
    emit("\tVMOVSD X0, ret+24(FP)")
    emit("\tVZEROUPPER")
    emit("\tRET")
    emit()


def exp(isa):
    r, _, _ = ISAS[isa]
    emit(f"// func exp{isa}(dst, a []float32): dst[i] = e**a[i]; len(a) must be a")
    emit("// multiple of the vector width (the Go wrapper handles the tail).")
    emit(f"TEXT ·exp{isa}(SB), NOSPLIT, $0-48")
    emit("\tMOVQ dst_base+0(FP), DI")
    emit("\tMOVQ dst_len+8(FP), CX")
    emit("\tMOVQ a_base+24(FP), SI")
    names = ["lo", "hi", "log2e", "ln2hi", "ln2lo", "bias", "one", "c6", "c5", "c4", "c3", "c2"]
    regs = [8, 9, 10, 11, 12, 13, 14, 4, 5, 6, 7, 15]
    for n, g in zip(names, regs):
        emit(f"\tVBROADCASTSS expconst<>+{names.index(n) * 4}(SB), {r}{g}")
    if r == "Y":
        emit("\tVPBROADCASTD expconst<>+20(SB), Y13")

    def body(j, d):
        emit(f"\tVMOVUPS {d}(SI)(AX*4), {r}0")
        # Clamp with NaN kept: Intel MAX/MIN return the second source, x,
        # when either operand is NaN.
        emit(f"\tVMAXPS {r}0, {r}8, {r}0")
        emit(f"\tVMINPS {r}0, {r}9, {r}0")
        emit(f"\tVMULPS {r}10, {r}0, {r}1")
        if r == "Y":
            emit("\tVROUNDPS $0, Y1, Y1")
        else:
            emit("\tVRNDSCALEPS $0, Z1, Z1")
        emit(f"\tVFNMADD231PS {r}11, {r}1, {r}0")
        emit(f"\tVFNMADD231PS {r}12, {r}1, {r}0")
        emit(f"\tVBROADCASTSS expconst<>+48(SB), {r}2")
        for g in [4, 5, 6, 7, 15, 14, 14]:
            emit(f"\tVFMADD213PS {r}{g}, {r}0, {r}2")
        if r == "Y":
            emit("\tVCVTPS2DQ Y1, Y3")
            emit("\tVPSRAD $1, Y3, Y1")
            emit("\tVPSUBD Y1, Y3, Y3")
            emit("\tVPADDD Y13, Y1, Y1")
            emit("\tVPSLLD $23, Y1, Y1")
            emit("\tVPADDD Y13, Y3, Y3")
            emit("\tVPSLLD $23, Y3, Y3")
            emit("\tVMULPS Y1, Y2, Y2")
            emit("\tVMULPS Y3, Y2, Y2")
        else:
            emit("\tVSCALEFPS Z1, Z2, Z2")
        emit(f"\tVMOVUPS {r}2, {d}(DI)(AX*4)")

    loops(isa, body, None, unroll=1)


# Constants of tanh, each replicated 16 times so that AVX2 and AVX-512
# instructions can take them as full-width memory operands.
TANH_CONSTS = [
    ("abs", "0x7fffffff"), ("sign", "0x80000000"), ("ten", "0x41200000"),
    ("two", "0x40000000"), ("thr", "0x3f200000"), ("log2e", "0x3fb8aa3b"),
    ("ln2hi", "0x3f318000"), ("ln2lo", "0xb95e8083"), ("bias", "0x0000007f"),
    ("one", "0x3f800000"), ("c7", "0x39500d01"), ("c6", "0x3ab60b61"),
    ("c5", "0x3c088889"), ("c4", "0x3d2aaaab"), ("c3", "0x3e2aaaab"),
    ("c2", "0x3f000000"),
    # tanh(x) = x + x**3 * P(x**2) on |x| < 0.625, P fitted for relative error.
    ("t0", "0xbeaaaa9c"), ("t1", "0x3e088435"), ("t2", "0xbd5c3411"),
    ("t3", "0x3ca9a5dd"), ("t4", "0xbbbd8cef"),
]


def tc(name):
    i = [n for n, _ in TANH_CONSTS].index(name)
    return f"tanhconst<>+{i * 64}(SB)"


def tanh(isa):
    r, _, _ = ISAS[isa]
    emit(f"// func tanh{isa}(dst, a []float32): dst[i] = tanh(a[i]); len(a) must be a")
    emit("// multiple of the vector width (the Go wrapper handles the tail).")
    emit(f"TEXT ·tanh{isa}(SB), NOSPLIT, $0-48")
    emit("\tMOVQ dst_base+0(FP), DI")
    emit("\tMOVQ dst_len+8(FP), CX")
    emit("\tMOVQ a_base+24(FP), SI")

    def body(j, d):
        v = lambda i: f"{r}{i}"
        emit(f"\tVMOVUPS {d}(SI)(AX*4), {v(0)}")
        emit(f"\tVANDPS {tc('abs')}, {v(0)}, {v(1)}")
        emit(f"\tVMOVUPS {tc('ten')}, {v(2)}")
        emit(f"\tVMINPS {v(1)}, {v(2)}, {v(1)}")  # |x| capped at 10 (tanh(10) rounds to 1), NaN kept
        # e = exp(2|x|), 2|x| in [0, 20]
        emit(f"\tVADDPS {v(1)}, {v(1)}, {v(3)}")
        emit(f"\tVMULPS {tc('log2e')}, {v(3)}, {v(4)}")
        if r == "Y":
            emit("\tVROUNDPS $0, Y4, Y4")
        else:
            emit("\tVRNDSCALEPS $0, Z4, Z4")
        emit(f"\tVFNMADD231PS {tc('ln2hi')}, {v(4)}, {v(3)}")
        emit(f"\tVFNMADD231PS {tc('ln2lo')}, {v(4)}, {v(3)}")
        emit(f"\tVMOVUPS {tc('c7')}, {v(5)}")
        for c in ["c6", "c5", "c4", "c3", "c2", "one", "one"]:
            emit(f"\tVFMADD213PS {tc(c)}, {v(3)}, {v(5)}")
        if r == "Y":
            emit("\tVCVTPS2DQ Y4, Y4")
            emit(f"\tVPADDD {tc('bias')}, Y4, Y4")
            emit("\tVPSLLD $23, Y4, Y4")
            emit("\tVMULPS Y4, Y5, Y5")
        else:
            emit("\tVSCALEFPS Z4, Z5, Z5")
        # big = 1 - 2/(e+1) = tanh(|x|)
        emit(f"\tVADDPS {tc('one')}, {v(5)}, {v(5)}")
        emit(f"\tVMOVUPS {tc('two')}, {v(6)}")
        emit(f"\tVDIVPS {v(5)}, {v(6)}, {v(6)}")
        emit(f"\tVMOVUPS {tc('one')}, {v(7)}")
        emit(f"\tVSUBPS {v(6)}, {v(7)}, {v(7)}")
        # small = x + x**3 * P(x**2)
        emit(f"\tVMULPS {v(0)}, {v(0)}, {v(2)}")
        emit(f"\tVMOVUPS {tc('t4')}, {v(3)}")
        for c in ["t3", "t2", "t1", "t0"]:
            emit(f"\tVFMADD213PS {tc(c)}, {v(2)}, {v(3)}")
        emit(f"\tVMULPS {v(2)}, {v(0)}, {v(2)}")
        emit(f"\tVFMADD213PS {v(0)}, {v(2)}, {v(3)}")
        # pick small where |x| < 0.625
        if r == "Y":
            emit(f"\tVCMPPS $1, {tc('thr')}, Y1, Y8")
            emit("\tVBLENDVPS Y8, Y3, Y7, Y7")
        else:
            emit(f"\tVCMPPS $1, {tc('thr')}, Z1, K1")
            emit("\tVBLENDMPS Z3, Z7, K1, Z7")
        # Both results get the sign of x (-0 included; tanh is odd).
        emit(f"\tVANDPS {tc('sign')}, {v(0)}, {v(6)}")
        emit(f"\tVORPS {v(6)}, {v(7)}, {v(7)}")
        emit(f"\tVMOVUPS {v(7)}, {d}(DI)(AX*4)")

    loops(isa, body, None, unroll=1)


def unary(isa, name, desc, vec_op, scalar_op):
    """dst[i] = f(a[i]) for an f that is one instruction; vec_op(src, dst)
    and scalar_op(src, dst) return it for a vector and an X register."""
    r, _, _ = ISAS[isa]
    emit(f"// func {name}{isa}(dst, a []float32): dst[i] = {desc}.")
    emit(f"TEXT ·{name}{isa}(SB), NOSPLIT, $0-48")
    emit("\tMOVQ dst_base+0(FP), DI")
    emit("\tMOVQ dst_len+8(FP), CX")
    emit("\tMOVQ a_base+24(FP), SI")

    def body(j, d):
        emit(f"\tVMOVUPS {d}(SI)(AX*4), {r}{j}")
        emit("\t" + vec_op(f"{r}{j}"))
        emit(f"\tVMOVUPS {r}{j}, {d}(DI)(AX*4)")

    def scalar():
        emit("\tVMOVSS (SI)(AX*4), X0")
        emit("\t" + scalar_op("X0"))
        emit("\tVMOVSS X0, (DI)(AX*4)")

    loops(isa, body, scalar)


def ftz_on():
    """Saves MXCSR in the 8-byte frame and sets FTZ (bit 15) and DAZ (bit
    6): subnormal operands read as zero and subnormal results become zero,
    so no instruction takes the microcode assist. Nothing in the kernel
    calls Go, Go never preempts inside assembly, and the kernel restores
    MXCSR (loops with ftz) before it returns."""
    emit("\tSTMXCSR mxcsr-4(SP)")
    emit("\tMOVL mxcsr-4(SP), R10")
    emit("\tORL $0x8040, R10")
    emit("\tMOVL R10, ftz-8(SP)")
    emit("\tLDMXCSR ftz-8(SP)")


def sgd_momentum(isa):
    """w -= (buf = buf*mom + g*damp) * lr, every product and sum rounded on
    its own (no FMA), as the unfused tensor ops compute it."""
    r, _, _ = ISAS[isa]
    emit(f"// func sgdMomentum{isa}(w, g, buf []float32, mom, damp, lr float32):")
    emit("// buf[i] = buf[i]*mom + g[i]*damp; w[i] = w[i] - buf[i]*lr.")
    emit(f"TEXT ·sgdMomentum{isa}(SB), NOSPLIT, $8-84")
    ftz_on()
    emit("\tMOVQ w_base+0(FP), DI")
    emit("\tMOVQ w_len+8(FP), CX")
    emit("\tMOVQ g_base+24(FP), SI")
    emit("\tMOVQ buf_base+48(FP), DX")
    emit(f"\tVBROADCASTSS mom+72(FP), {r}13")
    emit(f"\tVBROADCASTSS damp+76(FP), {r}14")
    emit(f"\tVBROADCASTSS lr+80(FP), {r}15")

    def body(j, d):
        b, t = f"{r}{2 * j}", f"{r}{2 * j + 1}"
        emit(f"\tVMULPS {d}(DX)(AX*4), {r}13, {b}")
        emit(f"\tVMULPS {d}(SI)(AX*4), {r}14, {t}")
        emit(f"\tVADDPS {t}, {b}, {b}")
        emit(f"\tVMOVUPS {b}, {d}(DX)(AX*4)")
        emit(f"\tVMULPS {r}15, {b}, {t}")
        emit(f"\tVMOVUPS {d}(DI)(AX*4), {b}")
        emit(f"\tVSUBPS {t}, {b}, {b}")
        emit(f"\tVMOVUPS {b}, {d}(DI)(AX*4)")

    def scalar():
        emit("\tVMULSS (DX)(AX*4), X13, X0")
        emit("\tVMULSS (SI)(AX*4), X14, X1")
        emit("\tVADDSS X1, X0, X0")
        emit("\tVMOVSS X0, (DX)(AX*4)")
        emit("\tVMULSS X15, X0, X1")
        emit("\tVMOVSS (DI)(AX*4), X0")
        emit("\tVSUBSS X1, X0, X0")
        emit("\tVMOVSS X0, (DI)(AX*4)")

    loops(isa, body, scalar, ftz=True)


def adam(isa):
    """One Adam step without weight decay, AMSGrad or maximize (AdamW's
    decoupled decay is the factor decay), every operation rounded on its
    own (no FMA), in the order of AdamUpdate's tensor ops."""
    r, _, _ = ISAS[isa]
    emit(f"// func adam{isa}(w, g, m, v []float32, c *AdamConsts):")
    emit("// m = m*b1 + g*c1; v = v*b2 + (g*g)*c2;")
    emit("// w = w*decay - (m / (sqrt(v)/bc2 + eps)) * stepSize.")
    emit(f"TEXT ·adam{isa}(SB), NOSPLIT, $8-104")
    ftz_on()
    emit("\tMOVQ w_base+0(FP), DI")
    emit("\tMOVQ w_len+8(FP), CX")
    emit("\tMOVQ g_base+24(FP), SI")
    emit("\tMOVQ m_base+48(FP), DX")
    emit("\tMOVQ v_base+72(FP), R8")
    emit("\tMOVQ c+96(FP), R9")
    # AdamConsts field order: B1, C1, B2, C2, BC2, Eps, StepSize, Decay.
    for k in range(8):
        emit(f"\tVBROADCASTSS {4 * k}(R9), {r}{8 + k}")

    def ops(sfx, ld, reg):
        # ld(p) is the memory operand of base register p; reg(i) a register.
        g, m, v, t, dd = reg(0), reg(1), reg(2), reg(3), reg(4)
        mov = "VMOVUPS" if sfx == "PS" else "VMOVSS"
        emit(f"\t{mov} {ld('SI')}, {g}")
        emit(f"\tVMUL{sfx} {ld('DX')}, {reg(8)}, {m}")
        emit(f"\tVMUL{sfx} {g}, {reg(9)}, {t}")
        emit(f"\tVADD{sfx} {t}, {m}, {m}")
        emit(f"\t{mov} {m}, {ld('DX')}")
        emit(f"\tVMUL{sfx} {ld('R8')}, {reg(10)}, {v}")
        emit(f"\tVMUL{sfx} {g}, {g}, {t}")
        emit(f"\tVMUL{sfx} {reg(11)}, {t}, {t}")
        emit(f"\tVADD{sfx} {t}, {v}, {v}")
        emit(f"\t{mov} {v}, {ld('R8')}")
        if sfx == "PS":
            emit(f"\tVSQRTPS {v}, {dd}")
        else:
            emit(f"\tVSQRTSS {v}, {v}, {dd}")
        emit(f"\tVDIV{sfx} {reg(12)}, {dd}, {dd}")
        emit(f"\tVADD{sfx} {reg(13)}, {dd}, {dd}")
        emit(f"\tVDIV{sfx} {dd}, {m}, {m}")
        emit(f"\tVMUL{sfx} {reg(14)}, {m}, {m}")
        emit(f"\tVMUL{sfx} {ld('DI')}, {reg(15)}, {t}")
        emit(f"\tVSUB{sfx} {m}, {t}, {t}")
        emit(f"\t{mov} {t}, {ld('DI')}")

    def body(j, d):
        ops("PS", lambda p: f"{d}({p})(AX*4)", lambda i: f"{r}{i}")

    def scalar():
        ops("SS", lambda p: f"({p})(AX*4)", lambda i: f"X{i}")

    loops(isa, body, scalar, unroll=1, ftz=True)


emit("// Code generated by asmgen.py; DO NOT EDIT.")
emit()
emit("//go:build amd64 && !purego")
emit()
emit('#include "textflag.h"')
emit()
emit("// Constants of exp: clamp bounds, log2(e), ln2 split in two (Cody-Waite),")
emit("// the exponent bias, 1, the Taylor coefficients 1/6!..1/2! and 1/7!.")
consts = [
    ("0xc2d00000", "-104"),
    ("0x42b20000", "89"),
    ("0x3fb8aa3b", "log2(e)"),
    ("0x3f318000", "ln2hi = 0.693359375"),
    ("0xb95e8083", "ln2lo = -2.12194440e-4"),
    ("0x0000007f", "127 (int32)"),
    ("0x3f800000", "1"),
    ("0x3ab60b61", "1/720"),
    ("0x3c088889", "1/120"),
    ("0x3d2aaaab", "1/24"),
    ("0x3e2aaaab", "1/6"),
    ("0x3f000000", "1/2"),
    ("0x39500d01", "1/5040"),
]
for i, (bits, what) in enumerate(consts):
    emit(f"DATA expconst<>+{i * 4}(SB)/4, ${bits} // {what}")
emit(f"GLOBL expconst<>(SB), RODATA|NOPTR, ${len(consts) * 4}")
emit()
for i, (name, bits) in enumerate(TANH_CONSTS):
    for lane in range(16):
        emit(f"DATA tanhconst<>+{i * 64 + lane * 4}(SB)/4, ${bits}" + (f" // {name}" if lane == 0 else ""))
emit(f"GLOBL tanhconst<>(SB), RODATA|NOPTR, ${len(TANH_CONSTS) * 64}")
emit()
for isa in ISAS:
    for name, op in [("add", "ADD"), ("sub", "SUB"), ("mul", "MUL"), ("div", "DIV")]:
        binary(isa, name, op)
    for name, op, rev in [("addConst", "ADD", False), ("subConst", "SUB", False),
                          ("mulConst", "MUL", False), ("divConst", "DIV", False),
                          ("constSub", "SUB", True), ("constDiv", "DIV", True)]:
        const(isa, name, op, rev)
    relu(isa)
    relu_grad(isa)
    sum_(isa)
    exp(isa)
    tanh(isa)
    unary(isa, "neg", "-a[i] (the sign bit flipped)",
          lambda v: f"VXORPS {tc('sign')}, {v}, {v}", lambda v: f"VXORPS {tc('sign')}, {v}, {v}")
    unary(isa, "abs", "|a[i]| (the sign bit cleared)",
          lambda v: f"VANDPS {tc('abs')}, {v}, {v}", lambda v: f"VANDPS {tc('abs')}, {v}, {v}")
    unary(isa, "sqrt", "sqrt(a[i]), correctly rounded",
          lambda v: f"VSQRTPS {v}, {v}", lambda v: f"VSQRTSS {v}, {v}, {v}")
    sgd_momentum(isa)
    adam(isa)

with open("vec_amd64.s", "w") as f:
    f.write("\n".join(out).rstrip() + "\n")
