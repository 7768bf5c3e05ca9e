"""Golden values for Ember's Uint32 and Uint64 dtypes, computed by NumPy.

PyTorch 1.13 has neither dtype, so the expected values come from NumPy
(python3-numpy) and the fixture has a format of its own: uint64 values
beyond 2**53 do not survive the float64 numbers of golden.py's format.
Every tensor is {"dtype": D, "shape": [...], "data": [...]} with D a NumPy
dtype name and every element written as a string: integers in decimal,
floats with repr (and "nan", "inf", "-inf"). Each case is
{"name", "op", "attrs", "inputs": [T...], "output": T}.

Where Ember's rules differ from NumPy's the expected value follows Ember,
and the case says so:
  * an unsigned integer with a float computes in the float (PyTorch's
    category rule), where NumPy widens uint32 + float32 to float64;
  * float -> uint32 and float -> uint64 follow NumPy's element-by-element
    C casts (x86-64: truncate to int64 and wrap; for uint64 the compiler's
    unsigned conversion). NumPy's contiguous SIMD loops give other values
    for out-of-range inputs, so those casts are computed on strided views.

Run with /usr/bin/python3 from the repository root:
    python3 internal/golden/gen/gen_dtypes_uint.py
"""

import json
import os

import numpy as np

ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
)
OUT = os.path.join(ROOT, "tensor", "testdata", "golden_dtypes_uint.json")

rng = np.random.default_rng(5)


def enc(a):
    a = np.asarray(a)
    if a.dtype.kind == "f":
        data = [repr(float(v)) for v in a.ravel()]
    elif a.dtype.kind == "b":
        data = ["1" if v else "0" for v in a.ravel()]
    else:
        data = [str(int(v)) for v in a.ravel()]
    return {"dtype": a.dtype.name, "shape": list(a.shape), "data": data}


cases = []


def case(name, op, inputs, output, **attrs):
    cases.append(
        {
            "name": name,
            "op": op,
            "attrs": attrs,
            "inputs": [enc(x) for x in inputs],
            "output": enc(output),
        }
    )


def strided_cast(x, dt):
    """x.astype(dt) through NumPy's element-wise (non-SIMD) loop."""
    with np.errstate(invalid="ignore", over="ignore"):
        return np.repeat(x, 2)[::2].astype(dt)


U32, U64 = np.uint32, np.uint64
OTHER = [np.float32, np.float64, np.int64, np.int32, np.int16, np.int8,
         np.uint8, np.uint16, np.bool_]

# Casts from floats, with the edge values of both ranges.
edges = np.array([-1.5, -0.7, 0.7, 1e3 + 0.5, 4294967295.9, 4294967296.2, 5e9,
                  -5e9, 9.3e18, 1.8e19, 1.9e19, 2e19, -9.3e18, -1e19, 1e20,
                  -1e20, np.nan, np.inf, -np.inf])
for src in (np.float32, np.float64):
    x = edges.astype(src)
    for dst in (U32, U64):
        case("cast/%s/%s" % (np.dtype(src).name, np.dtype(dst).name), "cast",
             [x], strided_cast(x, dst))

# Casts from the integers and bool (they wrap).
ints = np.array([-2**63, -5000000000, -70000, -1, 0, 1, 255, 65535,
                 4294967295, 4294967296, 2**63 - 1])
for src in (np.int64, np.int32, np.int16, np.int8, np.uint8, np.uint16):
    with np.errstate(over="ignore"):
        x = ints.astype(src)
    for dst in (U32, U64):
        case("cast/%s/%s" % (np.dtype(src).name, np.dtype(dst).name), "cast",
             [x], x.astype(dst))
flags = np.array([True, False, True])
for dst in (U32, U64):
    case("cast/bool/%s" % np.dtype(dst).name, "cast", [flags], flags.astype(dst))

# Casts out of uint32 and uint64, to every dtype.
u32v = np.array([0, 1, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 16777217,
                 2**32 - 1], dtype=U32)
u64v = np.array([0, 1, 255, 65536, 2**32 - 1, 2**32, 2**53 + 1, 2**63 - 1,
                 2**63, 2**63 + 2**39 + 1, 2**64 - 2**40, 2**64 - 1], dtype=U64)
for x in (u32v, u64v):
    for dst in OTHER + [U32, U64]:
        if dst == x.dtype:
            continue
        with np.errstate(over="ignore"):
            want = x.astype(dst)
        case("cast/%s/%s" % (x.dtype.name, np.dtype(dst).name), "cast", [x], want)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16)
    case("cast/%s/float16" % x.dtype.name, "cast", [x], want)

# Wrapping arithmetic, comparisons, reductions and indexing.
for dt, hi in ((U32, 2**32), (U64, 2**64)):
    n = np.dtype(dt).name
    a = rng.integers(0, hi, (3, 4), dtype=dt, endpoint=False)
    b = rng.integers(0, hi, (4,), dtype=dt, endpoint=False)
    b[1] = 0
    nz = np.where(b == 0, dt(7), b)
    small = rng.integers(0, 6, (3, 4), dtype=dt)
    with np.errstate(over="ignore", divide="ignore"):
        case("add/" + n, "add", [a, b], a + b)
        case("sub/" + n, "sub", [a, b], a - b)
        case("mul/" + n, "mul", [a, b], a * b)
        case("floordiv/" + n, "floordiv", [a, nz], a // nz)
        case("maximum/" + n, "maximum", [a, b], np.maximum(a, b))
        case("minimum/" + n, "minimum", [a, b], np.minimum(a, b))
        case("lt/" + n, "lt", [a, b], a < b)
        case("ge/" + n, "ge", [a, b], a >= b)
        case("eq/" + n, "eq", [a, a[:, ::-1]], a == a[:, ::-1])
        case("neg/" + n, "neg", [a], -a)
        case("abs/" + n, "abs", [a], np.abs(a))
        case("sign/" + n, "sign", [b], np.sign(b))
        case("square/" + n, "square", [a], a * a)
        case("mulscalar/" + n, "mulscalar", [a], a * dt(3), s=3)
        case("addscalar/" + n, "addscalar", [a], a + dt(5), s=5)
        case("pow/" + n, "pow", [small], small ** dt(3), e=3)
        # Bounds with their low 12 bits clear, so that Clamp's float64
        # bounds hold them exactly.
        lo, hi_ = (int(np.sort(a.ravel())[3]) >> 12) << 12, (int(np.sort(a.ravel())[8]) >> 12) << 12
        case("clamp/" + n, "clamp", [a], np.clip(a, dt(lo), dt(hi_)), lo=float(lo), hi=float(hi_))
        cond = rng.integers(0, 2, (3, 4)).astype(bool)
        case("where/" + n, "where", [cond, a, b], np.where(cond, a, b))
        # NumPy sums and multiplies uint32 and uint64 as uint64, as Ember does.
        case("sum/" + n, "sum", [a], a.sum(1), axis=1)
        case("prod/" + n, "prod", [small], small.prod(1), axis=1)
        case("cumsum/" + n, "cumsum", [a], a.cumsum(1), axis=1)
        case("max/" + n, "max", [a], a.max(1), axis=1)
        case("min/" + n, "min", [a], a.min(0), axis=0)
        case("argmax/" + n, "argmax", [a], a.argmax(1).astype(np.int64), axis=1)
        case("sort/" + n, "sort", [a], np.sort(a, 1), axis=1)
        idx = np.array([[2, 0, 1, 1], [0, 2, 2, 1]], dtype=np.int64)
        case("gather/" + n, "gather", [a, idx], np.take_along_axis(a, idx, 0), axis=0)
        case("cat/" + n, "cat", [a, a[:1]], np.concatenate([a, a[:1]], 0), axis=0)
        case("transpose/" + n, "transpose", [a], a.T.copy())
        m = rng.integers(0, hi, (4, 2), dtype=dt, endpoint=False)
        case("matmul/" + n, "matmul", [a, m], a @ m)

# Type promotion with every other dtype (NumPy's promote_types for two
# integers; a float keeps its own type, see the docstring).
x32 = np.array([0, 7, 2**31, 2**32 - 1], dtype=U32)
x64 = np.array([0, 7, 2**63, 2**64 - 1], dtype=U64)
for x in (x32, x64):
    for other in OTHER + [U32, U64]:
        y = np.array([1, 0, 1, 1]).astype(other)
        if np.dtype(other).kind == "f":
            want = x.astype(other) + y
        else:
            with np.errstate(over="ignore"):
                want = x + y
        case("promote/%s/%s" % (x.dtype.name, np.dtype(other).name), "add", [x, y], want)

with open(OUT, "w") as f:
    json.dump({"generator": "internal/golden/gen/gen_dtypes_uint.py",
               "numpy_version": np.__version__, "cases": cases}, f, indent=0)
    f.write("\n")
print("wrote %d cases to %s" % (len(cases), OUT))
