"""Golden values for the narrow integer dtypes uint8, int8 and int16
(tensor/dtype.go, tensor/cpu_backend.go): conversions to and from every
dtype, wrapping arithmetic, comparisons, reductions and a few index ops.

The fixture format knows only float32, float64, int64, int32 and bool, so
narrow tensors are stored as int64 (exact) and their real dtypes travel in
the attrs "in_dtypes" and "out_dtypes" (one name per input and output).
"""

import numpy as np
import torch

from golden import Case, seed, write

NARROW = {torch.uint8: "uint8", torch.int8: "int8", torch.int16: "int16"}
HALF = {torch.float16: "float16", torch.bfloat16: "bfloat16"}
OTHER = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.bool: "bool",
}


class U16:
    """A uint16 tensor, which torch 1.13 lacks: its values as int64. The
    expected results of uint16 cases follow NumPy's uint16, computed in
    int64 and wrapped modulo 2**16 where the result is uint16."""

    def __init__(self, t):
        self.t = t.to(torch.int64) & 0xFFFF


def name(dt):
    return NARROW.get(dt) or HALF.get(dt) or OTHER[dt]


def tname(x):
    return "uint16" if isinstance(x, U16) else name(x.dtype)


def enc(t):
    """Store narrow tensors as int64 and half tensors as float32 (both
    exact); the real dtype goes in the attrs."""
    if isinstance(t, U16):
        return t.t
    if t.dtype in NARROW:
        return t.to(torch.int64)
    if t.dtype in HALF:
        return t.to(torch.float32)
    return t


def case(label, op, inputs, outputs, **attrs):
    return Case(
        label,
        op,
        [enc(x) for x in inputs],
        [enc(y) for y in outputs],
        in_dtypes=[tname(x) for x in inputs],
        out_dtypes=[tname(y) for y in outputs],
        **attrs,
    )


cases = []
seed(0)

# Conversions from floats: truncation toward zero, then wrapping through
# int32 (x86 PyTorch); NaN, infinities and values outside int32 give 0.
edge = torch.tensor(
    [-1.5, -0.7, 0.0, 0.7, 1.5, 127.9, 128.5, 255.9, 256.2, 300.7, -129.5,
     -32768.5, 40000.0, 70000.9, -70000.2, 1e10, -1e10,
     float("nan"), float("inf"), float("-inf")]
)
for src in (torch.float32, torch.float64):
    for dst in NARROW:
        x = edge.to(src)
        cases.append(case("cast/%s/%s" % (name(src), name(dst)), "cast", [x], [x.to(dst)]))

# From the 16-bit floats (values exact in both).
halfedge = torch.tensor([-1.5, -0.5, 0.5, 127.5, 200.0, 255.5, 256.0, 300.0, -129.0, 1000.0, -40000.0])
for src in HALF:
    for dst in NARROW:
        x = halfedge.to(src)
        cases.append(case("cast/%s/%s" % (name(src), name(dst)), "cast", [x], [x.to(dst)]))

# Conversions from the wide integers (wrap) and bool.
wide = torch.tensor([-70000, -32769, -129, -1, 0, 1, 127, 128, 255, 256, 32767, 70000, 2**40 + 3])
for src in (torch.int64, torch.int32):
    for dst in NARROW:
        x = wide.to(src)
        cases.append(case("cast/%s/%s" % (name(src), name(dst)), "cast", [x], [x.to(dst)]))
flags = torch.tensor([True, False, True])
for dst in NARROW:
    cases.append(case("cast/bool/%s" % name(dst), "cast", [flags], [flags.to(dst)]))

# Conversions from the narrow types to every dtype.
narrow_vals = {
    torch.uint8: torch.tensor([0, 1, 2, 127, 128, 200, 255], dtype=torch.uint8),
    torch.int8: torch.tensor([-128, -100, -1, 0, 1, 100, 127], dtype=torch.int8),
    torch.int16: torch.tensor([-32768, -300, -1, 0, 1, 300, 32767], dtype=torch.int16),
}
for src, x in narrow_vals.items():
    for dst in list(NARROW) + list(HALF) + list(OTHER):
        if dst != src:
            cases.append(case("cast/%s/%s" % (name(src), name(dst)), "cast", [x], [x.to(dst)]))


def rand_narrow(dt, *shape):
    lo, hi = {torch.uint8: (0, 256), torch.int8: (-128, 128), torch.int16: (-300, 300)}[dt]
    return torch.randint(lo, hi, shape).to(dt)


# Elementwise arithmetic wraps; comparisons give bool.
for dt in NARROW:
    seed(1)
    a = rand_narrow(dt, 3, 4)
    b = rand_narrow(dt, 4)  # broadcasts along rows
    nz = torch.where(b == 0, torch.ones_like(b), b)
    dn = name(dt)
    cases.append(case("add/%s" % dn, "add", [a, b], [a + b]))
    cases.append(case("sub/%s" % dn, "sub", [a, b], [a - b]))
    cases.append(case("mul/%s" % dn, "mul", [a, b], [a * b]))
    cases.append(case("floordiv/%s" % dn, "floordiv", [a, nz], [torch.div(a, nz, rounding_mode="floor")]))
    cases.append(case("div/%s" % dn, "div", [a, nz], [a / nz]))
    cases.append(case("maximum/%s" % dn, "maximum", [a, b], [torch.maximum(a, b)]))
    cases.append(case("minimum/%s" % dn, "minimum", [a, b], [torch.minimum(a, b)]))
    cases.append(case("eq/%s" % dn, "eq", [a, b], [a == b]))
    cases.append(case("lt/%s" % dn, "lt", [a, b], [a < b]))
    cases.append(case("ge/%s" % dn, "ge", [a, b], [a >= b]))
    cases.append(case("neg/%s" % dn, "neg", [a], [-a]))
    cases.append(case("abs/%s" % dn, "abs", [a], [a.abs()]))
    cases.append(case("sign/%s" % dn, "sign", [a], [a.sign()]))
    cases.append(case("square/%s" % dn, "square", [a], [a * a]))
    cases.append(case("addscalar/%s" % dn, "addscalar", [a], [a + 7], s=7.0))
    cases.append(case("mulscalar/%s" % dn, "mulscalar", [a], [a * -3], s=-3.0))
    cases.append(case("clamp/%s" % dn, "clamp", [a], [a.clamp(5, 100)], lo=5.0, hi=100.0))
    cases.append(case("pow/%s" % dn, "pow", [a], [a.pow(3)], e=3.0))
    cases.append(case("where/%s" % dn, "where", [a > b, a, b], [torch.where(a > b, a, b)]))
    # Reductions: sums, products and cumulative sums widen to int64.
    cases.append(case("sum/%s" % dn, "sum", [a], [a.sum(1)], axis=1))
    cases.append(case("prod/%s" % dn, "prod", [a], [a.prod(0)], axis=0))
    cases.append(case("max/%s" % dn, "max", [a], [a.amax(1)], axis=1))
    cases.append(case("min/%s" % dn, "min", [a], [a.amin(0)], axis=0))
    cases.append(case("argmax/%s" % dn, "argmax", [a], [a.argmax(1)], axis=1))
    cases.append(case("cumsum/%s" % dn, "cumsum", [a], [a.cumsum(1)], axis=1))
    # Index and join ops keep the dtype.
    idx = torch.tensor([[2, 0], [1, 1], [3, 2]])
    cases.append(case("gather/%s" % dn, "gather", [a, idx], [torch.gather(a, 1, idx)], axis=1))
    cases.append(case("cat/%s" % dn, "cat", [a, b.reshape(1, 4)], [torch.cat([a, b.reshape(1, 4)], 0)], axis=0))
    cases.append(case("transpose_contig/%s" % dn, "transpose", [a], [a.t().contiguous()]))
    m = rand_narrow(dt, 4, 2)
    cases.append(case("matmul/%s" % dn, "matmul", [a, m], [a @ m]))

# Type promotion between the narrow types and with the others.
seed(2)
u = rand_narrow(torch.uint8, 5)
i8 = rand_narrow(torch.int8, 5)
i16 = rand_narrow(torch.int16, 5)
others = {
    "float32": torch.randn(5),
    "int64": torch.randint(-1000, 1000, (5,)),
    "int32": torch.randint(-1000, 1000, (5,)).to(torch.int32),
    "bool": torch.tensor([True, False, True, True, False]),
}
for x, y in ((u, i8), (u, i16), (i8, i16)):
    cases.append(case("promote/%s/%s" % (name(x.dtype), name(y.dtype)), "add", [x, y], [x + y]))
for x in (u, i8, i16):
    for on, y in others.items():
        cases.append(case("promote/%s/%s" % (name(x.dtype), on), "add", [x, y], [x + y]))

# uint16: conversions (NumPy gives the same x86 results as PyTorch's rule for
# the other narrow types) and wrapping arithmetic.
f16edge = torch.tensor([-1.5, -0.7, 0.7, 65535.9, 65536.2, 70000.9, -70000.2, 1e10, -1e10,
                        float("nan"), float("inf"), float("-inf")])
for src in (torch.float32, torch.float64):
    x = f16edge.to(src)
    with np.errstate(invalid="ignore"):  # NaN and infinities cast to 0
        want = np.asarray(x.numpy()).astype(np.uint16).astype(np.int64)
    cases.append(case("cast/%s/uint16" % name(src), "cast", [x], [U16(torch.from_numpy(want))]))
for src in (torch.int64, torch.int32, torch.int8, torch.uint8, torch.int16):
    x = torch.tensor([-70000, -1, 0, 1, 127, 255, 65535, 70000]).to(src)
    cases.append(case("cast/%s/uint16" % name(src), "cast", [x], [U16(x.to(torch.int64))]))
cases.append(case("cast/bool/uint16", "cast", [flags], [U16(flags.to(torch.int64))]))
u16v = torch.tensor([0, 1, 255, 256, 32767, 32768, 65535])
for dst in list(NARROW) + list(HALF) + list(OTHER):
    cases.append(case("cast/uint16/%s" % name(dst), "cast", [U16(u16v)], [u16v.to(torch.int32).to(dst)]))
seed(3)
a = torch.randint(0, 65536, (3, 4))
b = torch.randint(0, 65536, (4,))
nz = torch.where(b == 0, torch.ones_like(b), b)
ua, ub, unz = U16(a), U16(b), U16(nz)
cases.append(case("add/uint16", "add", [ua, ub], [U16(a + b)]))
cases.append(case("sub/uint16", "sub", [ua, ub], [U16(a - b)]))
cases.append(case("mul/uint16", "mul", [ua, ub], [U16(a * b)]))
cases.append(case("floordiv/uint16", "floordiv", [ua, unz], [U16(a // nz)]))
cases.append(case("maximum/uint16", "maximum", [ua, ub], [U16(torch.maximum(a, b))]))
cases.append(case("lt/uint16", "lt", [ua, ub], [a < b]))
cases.append(case("neg/uint16", "neg", [ua], [U16(-a)]))
cases.append(case("sum/uint16", "sum", [ua], [a.sum(1)], axis=1))
cases.append(case("max/uint16", "max", [ua], [U16(a.amax(1))], axis=1))
cases.append(case("cumsum/uint16", "cumsum", [ua], [a.cumsum(1)], axis=1))
m = torch.randint(0, 65536, (4, 2))
cases.append(case("matmul/uint16", "matmul", [ua, U16(m)], [U16(a @ m)]))
for other in (torch.uint8, torch.int8, torch.int16, torch.int32):
    y = torch.randint(0, 100, (4,)).to(other)
    res = np.promote_types(np.uint16, {torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16, torch.int32: np.int32}[other])
    out = a + y.to(torch.int64)
    want = U16(out) if res == np.uint16 else out.to(torch.int32)
    cases.append(case("promote/uint16/%s" % name(other), "add", [ua, y], [want]))

write("tensor/testdata/golden_dtypes_small.json", cases)
