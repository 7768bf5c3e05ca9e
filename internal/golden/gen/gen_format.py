"""Golden strings for tensor printing: PyTorch's str(tensor) for a set of
tensors and print options, written to tensor/testdata/golden_format.json.

The shared golden.py format holds tensors, not strings, so this script writes
its own plain JSON:

    {"generator": ..., "torch_version": ...,
     "cases": [{"name": ..., "shape": [...], "dtype": "float32",
                "data": [...] | null, "arange": [start, step] | null,
                "transpose": false, "options": {...}, "str": "tensor(...)"}]}

A case's tensor is built from "data" (flat, row-major, NaN and infinities as
the strings "nan", "inf", "-inf", bools as 0/1) or, for big tensors, from
"arange": element i is start + i*step computed in float64; either way it is
made in float64 and converted to "dtype", then reshaped to "shape" and, with
"transpose", transposed (a non-contiguous view). "options" are keyword
arguments of torch.set_printoptions (precision, threshold, edgeitems,
linewidth, sci_mode); the defaults are restored after each case.

Run with Debian's python3-torch:  /usr/bin/python3 internal/golden/gen/gen_format.py
"""

import json
import math
import os

import torch

ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
)
OUT = os.path.join(ROOT, "tensor", "testdata", "golden_format.json")

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "int64": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def enc(v):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def dec(v):
    if isinstance(v, str):
        return float(v)
    return float(v)


cases = []


def case(name, shape, dtype, data=None, arange=None, transpose=False, **options):
    if data is not None:
        flat = torch.tensor([dec(enc(v)) for v in data], dtype=torch.float64)
    else:
        n = 1
        for d in shape:
            n *= d
        start, step = arange
        flat = torch.arange(n, dtype=torch.float64) * step + start
    t = flat.to(DTYPES[dtype]).reshape(shape)
    if transpose:
        t = t.t()
    # Store the data after the dtype conversion, so Go rebuilds the same values.
    stored = None
    if data is not None:
        stored = [enc(v) for v in flat.to(DTYPES[dtype]).to(torch.float64).tolist()]
    torch.set_printoptions(profile="default")
    if options:
        torch.set_printoptions(**options)
    s = str(t)
    torch.set_printoptions(profile="default")
    cases.append(
        {
            "name": name,
            "shape": list(shape),
            "dtype": dtype,
            "data": stored,
            "arange": list(arange) if arange is not None else None,
            "transpose": transpose,
            "options": options,
            "str": s,
        }
    )


torch.manual_seed(0)
nan, inf = float("nan"), float("inf")

case("float/int_valued_2x2", [2, 2], "float32", [1, 2, 3, 4])
case("float/fixed", [3], "float32", [1.5, -2.25, 3.125])
case("float/fixed_rounding", [2, 3], "float32", [0.123456, 1.0, -7.5, 2.0 / 3.0, 10.0, 0.5])
case("float64/randn_3x4", [3, 4], "float64", torch.randn(12, dtype=torch.float64).tolist())
case("float/sci_small", [3], "float32", [1e-5, 1.0, 1234.5])
case("float/sci_range", [2, 2], "float32", [0.5, 2.0, 3000.0, -1.25])
case("float/int_valued_sci", [2], "float32", [1e9, 1.0])
case("float/zeros", [2, 3], "float32", [0.0] * 6)
case("float/neg_zero", [2], "float32", [-0.0, 1.5])
case("float/nonfinite_int_mode", [3], "float32", [1.0, nan, inf])
case("float/nonfinite_fixed", [3], "float32", [1.5, nan, -inf])
case("float/nonfinite_sci", [2], "float32", [1e-5, nan])
case("float/wrap_1d", [30], "float32", torch.randn(30).tolist())
case("float64/wrap_suffix", [20], "float64", torch.randn(20, dtype=torch.float64).tolist())
case("float64/suffix_newline", [8], "float64", [-1.5, 2.25, -3.125, 4.5, -5.75, 6.5, -7.25, 8.5])
case("float/4d", [2, 3, 2, 2], "float32", arange=[0, 0.5])
case("float/transposed", [2, 3], "float32", [1.25, 2, 3, 4, 5, 6], transpose=True)
case("float16/basic", [2], "float16", [0.5, 1.25])
case("bfloat16/basic", [2, 2], "bfloat16", [1, -2, 0.5, 3])
case("int64/arange", [10], "int64", list(range(10)))
case("int32/mixed_width", [2, 2], "int32", [1, -20, 300, 4])
case("int64/wrap_1d", [40], "int64", arange=[-1000, 97])
case("bool/2x2", [2, 2], "bool", [1, 0, 0, 1])
case("scalar/float", [], "float32", [3.5])
case("scalar/int_valued", [], "float32", [2.0])
case("scalar/int64", [], "int64", [7])
case("scalar/bool", [], "bool", [1])
case("scalar/float64", [], "float64", [0.1])
case("scalar/nan", [], "float32", [nan])
case("empty/1d_float", [0], "float32", [])
case("empty/2d_float", [2, 0], "float32", [])
case("empty/1d_int64", [0], "int64", [])
case("summarize/float_2d", [40, 50], "float32", arange=[0, 1])
case("summarize/int_3d", [10, 15, 20], "int64", arange=[0, 1])
case("summarize/float_1d", [2000], "float32", arange=[-1, 0.001])
case("summarize/float64_partial", [1001, 2], "float64", arange=[0, 0.25])
case("options/precision2", [3], "float32", [1.23456, -2.5, 3.0], precision=2)
case("options/precision0", [2], "float32", [1.6, 2.25], precision=0)
case("options/sci_on", [2], "float32", [1.5, 2.0], sci_mode=True)
case("options/sci_off", [2], "float32", [1e-5, 1.0], sci_mode=False)
case("options/threshold", [10], "int64", list(range(10)), threshold=5)
case("options/edgeitems", [4, 10], "float32", arange=[0, 1], threshold=5, edgeitems=1)
case("options/linewidth", [12], "float32", arange=[0, 0.5], linewidth=40)

os.makedirs(os.path.dirname(OUT), exist_ok=True)
with open(OUT, "w") as f:
    json.dump(
        {
            "generator": "internal/golden/gen/gen_format.py",
            "torch_version": torch.__version__,
            "cases": cases,
        },
        f,
        indent=1,
    )
    f.write("\n")
print("wrote", os.path.relpath(OUT, ROOT), len(cases), "cases")
