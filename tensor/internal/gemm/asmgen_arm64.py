#!/usr/bin/env python3
"""Generates gemm_arm64.s, the NEON SGEMM micro-kernels for arm64.

Run from this directory: python3 asmgen_arm64.py > gemm_arm64.s
With --check it instead assembles every WORD-encoded instruction with
llvm-mc (if installed) and compares the encodings with its own.

Go's arm64 assembler has no mnemonic for the floating-point vector forms
used here (FMLA by element, FADD on vectors), so they are emitted as WORD
encodings computed below from the Arm Architecture Reference Manual, each
commented with its assembler text.

Each kernel keeps an MR×8 tile of C in MR·2 vector registers (V8 up) and,
per step of k, loads MR floats of the packed A panel (MR/4 registers, V0
up) and 8 floats of the packed B panel (V4, V5), then issues MR·2 FMLA
(by element): C[i][0:4] += B[0:4]·A[i], C[i][4:8] += B[4:8]·A[i].
"""

import subprocess
import sys

NR = 8


def fmla_elem(d, n, m, idx):
    """FMLA Vd.4S, Vn.4S, Vm.S[idx]"""
    h, l = idx >> 1, idx & 1
    word = 0x4F801000 | (l << 21) | (m << 16) | (h << 11) | (n << 5) | d
    return word, "fmla v%d.4s, v%d.4s, v%d.s[%d]" % (d, n, m, idx)


def fadd4s(d, n, m):
    """FADD Vd.4S, Vn.4S, Vm.4S"""
    return 0x4E20D400 | (m << 16) | (n << 5) | d, "fadd v%d.4s, v%d.4s, v%d.4s" % (d, n, m)


def fmla4s(d, n, m):
    """FMLA Vd.4S, Vn.4S, Vm.4S"""
    return 0x4E20CC00 | (m << 16) | (n << 5) | d, "fmla v%d.4s, v%d.4s, v%d.4s" % (d, n, m)


def faddp4s(d, n, m):
    """FADDP Vd.4S, Vn.4S, Vm.4S"""
    return 0x6E20D400 | (m << 16) | (n << 5) | d, "faddp v%d.4s, v%d.4s, v%d.4s" % (d, n, m)


def word(enc):
    w, text = enc
    return "\tWORD $0x%08x // %s" % (w, text)


def kernel(mr, out, words):
    name = "kern%dx%dNEON" % (mr, NR)
    av = mr // 4  # A registers V0..V(av-1)
    b0 = 4  # B in V4, V5
    acc0 = 8  # row i of C in V(8+2i), V(9+2i)

    def acc(i, j):
        return acc0 + 2 * i + j

    def emit(enc):
        words.append(enc)
        out.append(word(enc))

    out.append("")
    out.append("// func %s(k int, a, b, c *float32, ldc, add int)" % name)
    out.append("// C[%dx%d] += A[%dxk packed]·B[kx%d packed] when add != 0, else" % (mr, NR, mr, NR))
    out.append("// C = A·B without reading C; C rows are ldc floats apart.")
    out.append("TEXT ·%s(SB), NOSPLIT, $0-48" % name)
    out.append("\tMOVD k+0(FP), R0")
    out.append("\tMOVD a+8(FP), R1")
    out.append("\tMOVD b+16(FP), R2")
    out.append("\tMOVD c+24(FP), R3")
    out.append("\tMOVD ldc+32(FP), R4")
    out.append("\tLSL $2, R4, R4")
    out.append("\tMOVD add+40(FP), R5")
    for i in range(mr):
        for j in range(2):
            r = acc(i, j)
            out.append("\tVEOR V%d.B16, V%d.B16, V%d.B16" % (r, r, r))
    out.append("\tCBZ R0, %s_store" % name)
    out.append("%s_loop:" % name)
    regs = ", ".join("V%d.S4" % r for r in range(av))
    out.append("\tVLD1.P %d(R1), [%s]" % (4 * mr, regs))
    out.append("\tVLD1.P 32(R2), [V%d.S4, V%d.S4]" % (b0, b0 + 1))
    for i in range(mr):
        for j in range(2):
            emit(fmla_elem(acc(i, j), b0 + j, i // 4, i % 4))
    out.append("\tSUBS $1, R0, R0")
    out.append("\tBNE %s_loop" % name)
    out.append("%s_store:" % name)
    out.append("\tCBZ R5, %s_put" % name)
    # Add mode: C row i += accumulators, through V6, V7.
    out.append("\tMOVD R3, R6")
    for i in range(mr):
        out.append("\tVLD1 (R6), [V6.S4, V7.S4]")
        for j in range(2):
            emit(fadd4s(acc(i, j), 6 + j, acc(i, j)))
        if i < mr - 1:
            out.append("\tADD R4, R6, R6")
    out.append("%s_put:" % name)
    for i in range(mr):
        out.append("\tVST1 [V%d.S4, V%d.S4], (R3)" % (acc(i, 0), acc(i, 1)))
        if i < mr - 1:
            out.append("\tADD R4, R3, R3")
    out.append("\tRET")


def dot_kernel(out, words):
    """dot4x4NEON: the 4×4 tile of inner products of four rows of A and four
    rows of B, both running along k. Accumulator (i, j) is V(16+4i+j): four
    partial sums per product, four steps of k at a time, then one step at a
    time through lane 0 (the other lanes of a scalar load are zero); the
    partial sums are folded with FADDP at the end."""

    def emit(enc):
        words.append(enc)
        out.append(word(enc))

    name = "dot4x4NEON"
    out.append("")
    out.append("// func %s(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc, add int)" % name)
    out.append("// C[i][j] = sum over p < k of a[i*lda+p]·b[j*ldb+p] for i, j < 4, added to")
    out.append("// C (rows ldc floats apart) when add != 0, else stored there.")
    out.append("TEXT ·%s(SB), NOSPLIT, $0-64" % name)
    out.append("\tMOVD k+0(FP), R0")
    out.append("\tMOVD a+8(FP), R1")
    out.append("\tMOVD lda+16(FP), R12")
    out.append("\tLSL $2, R12, R12")
    out.append("\tADD R12, R1, R2")
    out.append("\tADD R12, R2, R3")
    out.append("\tADD R12, R3, R4")
    out.append("\tMOVD b+24(FP), R5")
    out.append("\tMOVD ldb+32(FP), R12")
    out.append("\tLSL $2, R12, R12")
    out.append("\tADD R12, R5, R6")
    out.append("\tADD R12, R6, R7")
    out.append("\tADD R12, R7, R8")
    out.append("\tMOVD c+40(FP), R9")
    out.append("\tMOVD ldc+48(FP), R10")
    out.append("\tLSL $2, R10, R10")
    out.append("\tMOVD add+56(FP), R11")
    for r in range(16, 32):
        out.append("\tVEOR V%d.B16, V%d.B16, V%d.B16" % (r, r, r))

    def body():
        for i in range(4):
            for j in range(4):
                emit(fmla4s(16 + 4 * i + j, i, 4 + j))

    out.append("%s_loop4:" % name)
    out.append("\tCMP $4, R0")
    out.append("\tBLT %s_loop1" % name)
    for i in range(4):
        out.append("\tVLD1.P 16(R%d), [V%d.S4]" % (1 + i, i))
    for j in range(4):
        out.append("\tVLD1.P 16(R%d), [V%d.S4]" % (5 + j, 4 + j))
    body()
    out.append("\tSUB $4, R0, R0")
    out.append("\tB %s_loop4" % name)
    out.append("%s_loop1:" % name)
    out.append("\tCBZ R0, %s_fold" % name)
    for i in range(4):
        out.append("\tFMOVS.P 4(R%d), F%d" % (1 + i, i))
    for j in range(4):
        out.append("\tFMOVS.P 4(R%d), F%d" % (5 + j, 4 + j))
    body()
    out.append("\tSUB $1, R0, R0")
    out.append("\tB %s_loop1" % name)
    out.append("%s_fold:" % name)
    for i in range(4):
        a = 16 + 4 * i
        emit(faddp4s(0, a, a + 1))
        emit(faddp4s(1, a + 2, a + 3))
        emit(faddp4s(8 + i, 0, 1))
    out.append("\tCBZ R11, %s_put" % name)
    for i in range(4):
        out.append("\tVLD1 (R9), [V0.S4]")
        out.append("\tWORD $0x%08x // fadd v%d.4s, v%d.4s, v0.4s" % (fadd4s(8 + i, 8 + i, 0)[0], 8 + i, 8 + i))
        words.append(fadd4s(8 + i, 8 + i, 0))
        out.append("\tVST1 [V%d.S4], (R9)" % (8 + i))
        out.append("\tADD R10, R9, R9")
    out.append("\tRET")
    out.append("%s_put:" % name)
    for i in range(4):
        out.append("\tVST1 [V%d.S4], (R9)" % (8 + i))
        out.append("\tADD R10, R9, R9")
    out.append("\tRET")


def generate():
    out = [
        "// Code generated by asmgen_arm64.py; DO NOT EDIT.",
        "",
        "//go:build arm64 && !purego",
        "",
        '#include "textflag.h"',
    ]
    words = []
    for mr in (12, 8):
        kernel(mr, out, words)
    dot_kernel(out, words)
    return "\n".join(out) + "\n", words


def check(words):
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
    text, words = generate()
    if "--check" in sys.argv:
        sys.exit(1 if check(words) else 0)
    sys.stdout.write(text)
