"""Golden values for the tensor core and the autograd core.

Writes two fixtures:

- tensor/testdata/golden_core.json: forward values of every elementwise
  op, reductions, matmul, views, joins, dtype conversions (including
  float16/bfloat16 round trips) and constructors, read by
  tensor/core_golden_test.go;
- autograd/testdata/golden_core.json: gradients of a selection of ops
  (autograd_case convention), read by autograd/core_golden_test.go.

Conventions shared with the Go tests:

- attrs "pre", "pre_a", "pre_b" name a layout transform applied to an input
  (in torch and in Go) before the op, so kernels see non-contiguous views:
  "T" transposes the last two axes of the stored input, "step2" takes every
  other element of the last axis.
- float16/bfloat16 results are written as two outputs: the float32 value of
  the rounded number and its 16-bit pattern as int32.
"""

import os
import sys
import zlib

sys.dont_write_bytecode = True  # keep __pycache__ out of the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from golden import Case, autograd_case, seed, write  # noqa: E402

NAN = float("nan")
INF = float("inf")

f32, f64, i64, i32, b8 = torch.float32, torch.float64, torch.int64, torch.int32, torch.bool


def pre(x, how):
    """Apply the layout transform named by how (see the module doc)."""
    if how is None:
        return x
    if how == "T":
        return x.transpose(-1, -2)
    if how == "step2":
        return x[..., ::2]
    raise ValueError(how)


def stored(x, how):
    """Return the tensor to store so that pre(stored, how) equals x."""
    if how is None:
        return x
    if how == "T":
        return x.transpose(-1, -2).contiguous()
    if how == "step2":
        shape = list(x.shape)
        shape[-1] *= 2
        s = torch.zeros(shape, dtype=x.dtype)
        s[..., ::2] = x
        return s
    raise ValueError(how)


# ---------------------------------------------------------------- unary

SPECIAL = [-3.7, -2.5, -1.5, -0.5, -0.0, 0.0, 0.3, 0.5, 1.5, 2.5, 7.25, 88.5, -104.0, INF, -INF, NAN]

UNARY = {
    "neg": torch.neg,
    "abs": torch.abs,
    "sign": torch.sign,
    "exp": torch.exp,
    "log": torch.log,
    "log1p": torch.log1p,
    "expm1": torch.expm1,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "sin": torch.sin,
    "cos": torch.cos,
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "square": torch.square,
    "reciprocal": torch.reciprocal,
    "erf": torch.erf,
}

INT_UNARY = ["neg", "abs", "sign", "relu", "floor", "ceil", "round", "square", "exp", "sqrt", "sigmoid", "sin", "log1p"]


def unary_cases():
    cases = []
    seed(10)
    spec32 = torch.tensor(SPECIAL, dtype=f32).reshape(4, 4)
    spec64 = torch.tensor(SPECIAL, dtype=f64).reshape(4, 4)
    rnd32 = (torch.randn(3, 5) * 2).to(f32)
    rnd64 = (torch.randn(3, 5) * 2).to(f64)
    ints = torch.tensor([[-7, -2, -1, 0], [1, 2, 3, 40]], dtype=i64)
    for name, fn in UNARY.items():
        for tag, x, how in [
            ("special_f32", spec32, None),
            ("special_f64", spec64, None),
            ("randn_f32_T", rnd32, "T"),
            ("randn_f64_step2", rnd64, "step2"),
        ]:
            cases.append(Case("unary/%s/%s" % (name, tag), "unary", [stored(x, how)], [fn(x)], fn=name, pre=how))
    for name in INT_UNARY:
        fn = UNARY[name]
        for dt in (i64, i32):
            x = ints.to(dt)
            cases.append(Case("unary/%s/%s" % (name, dt), "unary", [x], [fn(x)], fn=name, pre=None))
    # clamp: both sides, one open side, NaN kept; ints keep their dtype
    for lo, hi in [(-1.5, 2.0), (-INF, 0.25), (0.0, INF)]:
        for tag, x in [("f32", spec32), ("f64", spec64)]:
            cases.append(
                Case(
                    "unary/clamp/%s_%s_%s" % (tag, lo, hi),
                    "unary",
                    [x],
                    [torch.clamp(x, min=lo, max=hi)],
                    fn="clamp",
                    lo=lo,
                    hi=hi,
                    pre=None,
                )
            )
    for lo, hi in [(-2, 3), (-INF, 1), (0, INF)]:
        y = torch.clamp(ints, min=None if lo == -INF else lo, max=None if hi == INF else hi)
        cases.append(Case("unary/clamp/i64_%s_%s" % (lo, hi), "unary", [ints], [y], fn="clamp", lo=float(lo), hi=float(hi), pre=None))
    # pow with a scalar exponent
    pos32 = torch.tensor([[0.0, 0.5, 1.0, 2.0], [3.5, 10.0, INF, NAN]], dtype=f32)
    for e in [2.0, 3.0, 0.5, -1.0, -2.5, 0.0, 1.0]:
        for tag, x in [("f32", pos32), ("f32neg", -pos32), ("f64", pos32.to(f64))]:
            cases.append(Case("unary/pow_scalar/%s_%s" % (tag, e), "unary", [x], [torch.pow(x, e)], fn="pow_scalar", exp=e, pre=None))
    for e in [0.0, 1.0, 2.0, 3.0]:
        cases.append(Case("unary/pow_scalar/i64_%s" % e, "unary", [ints], [torch.pow(ints, int(e))], fn="pow_scalar", exp=e, pre=None))
    cases.append(Case("unary/pow_scalar/i64_0.5", "unary", [ints.abs()], [torch.pow(ints.abs(), 0.5)], fn="pow_scalar", exp=0.5, pre=None))
    # logical not of numbers and bools
    for tag, x in [("f32", spec32), ("i64", ints), ("bool", ints > 0)]:
        cases.append(Case("unary/logical_not/%s" % tag, "unary", [x], [torch.logical_not(x)], fn="logical_not", pre=None))
    return cases


# ---------------------------------------------------------------- binary

BINARY = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "pow": torch.pow,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
    "logical_and": torch.logical_and,
    "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor,
}


def binary_cases():
    cases = []
    seed(20)
    a = torch.randn(3, 4)
    b = torch.randn(3, 4)
    # Shared elements so comparisons see ties.
    b[0, :2] = a[0, :2]
    shapes = [
        ("same", a, b, None, None),
        ("bcast_col_row", a[:, :1], b[:1, :], None, None),
        ("bcast_rank", torch.randn(2, 3, 4), torch.randn(4), None, None),
        ("bcast_scalar", torch.tensor(1.5), a, None, None),
        ("T_a", a, b, "T", None),
        ("step2_b", a, b, None, "step2"),
    ]
    for name, fn in BINARY.items():
        for tag, x, y, ha, hb in shapes:
            if name == "pow":
                x = x.abs() + 0.1
            cases.append(
                Case(
                    "binary/%s/%s" % (name, tag),
                    "binary",
                    [stored(x, ha), stored(y, hb)],
                    [fn(x, y)],
                    fn=name,
                    pre_a=ha,
                    pre_b=hb,
                )
            )
    # float64
    x64, y64 = torch.randn(2, 3, dtype=f64), torch.randn(3, dtype=f64)
    for name, fn in BINARY.items():
        if name == "pow":
            x = x64.abs()
        else:
            x = x64
        cases.append(Case("binary/%s/f64" % name, "binary", [x, y64], [fn(x, y64)], fn=name, pre_a=None, pre_b=None))
    # NaN and infinities
    p = torch.tensor([NAN, 1.0, NAN, INF, -INF, 0.0, -0.0, 2.0], dtype=f32)
    q = torch.tensor([1.0, NAN, NAN, INF, INF, -0.0, 0.0, -INF], dtype=f32)
    for name, fn in BINARY.items():
        cases.append(Case("binary/%s/special" % name, "binary", [p, q], [fn(p, q)], fn=name, pre_a=None, pre_b=None))
    # integers, incl. int/int true division and promotion
    ia = torch.tensor([[-7, -3, 0, 5], [9, 2, -1, 4]], dtype=i64)
    ib = torch.tensor([2, -3, 1, 3], dtype=i64)
    for name, fn in BINARY.items():
        cases.append(Case("binary/%s/i64" % name, "binary", [ia, ib], [fn(ia, ib)], fn=name, pre_a=None, pre_b=None))
        cases.append(
            Case("binary/%s/i32_i64" % name, "binary", [ia.to(i32), ib], [fn(ia.to(i32), ib)], fn=name, pre_a=None, pre_b=None)
        )
        fb = torch.tensor([0.5, -2.0, 1.0, 0.25], dtype=f32)
        if name != "pow":
            cases.append(Case("binary/%s/i64_f32" % name, "binary", [ia, fb], [fn(ia, fb)], fn=name, pre_a=None, pre_b=None))
            cases.append(
                Case("binary/%s/f32_f64" % name, "binary", [fb, ib.to(f64)], [fn(fb, ib.to(f64))], fn=name, pre_a=None, pre_b=None)
            )
    # integer powers, negative exponents included (torch: 0 unless |base| == 1)
    pb = torch.tensor([2, -1, 1, 0, 3, -2, 5, 7], dtype=i64)
    pe = torch.tensor([-1, -3, -5, 2, 0, 3, 1, 17], dtype=i64)
    cases.append(Case("binary/pow/i64_neg_exp", "binary", [pb, pe], [torch.pow(pb, pe)], fn="pow", pre_a=None, pre_b=None))
    # bools
    ba = torch.tensor([[True, False], [True, True]])
    bb = torch.tensor([True, False])
    for name in ["add", "mul", "maximum", "minimum", "eq", "ne", "lt", "gt", "logical_and", "logical_or", "logical_xor"]:
        fn = BINARY[name]
        cases.append(Case("binary/%s/bool" % name, "binary", [ba, bb], [fn(ba, bb)], fn=name, pre_a=None, pre_b=None))
    # bool with int promotes
    cases.append(Case("binary/add/bool_i64", "binary", [ba, ib[:2]], [torch.add(ba, ib[:2])], fn="add", pre_a=None, pre_b=None))
    return cases


def where_cases():
    cases = []
    seed(25)
    cond = torch.tensor([[True, False, True], [False, False, True]])
    a = torch.randn(2, 3)
    b = torch.randn(3)
    cases.append(Case("where/same", "where", [cond, a, a * 2], [torch.where(cond, a, a * 2)]))
    cases.append(Case("where/bcast", "where", [cond[:, :1], a, b], [torch.where(cond[:, :1], a, b)]))
    cases.append(Case("where/scalar_b", "where", [cond, a, torch.tensor(0.0)], [torch.where(cond, a, torch.tensor(0.0))]))
    ia = torch.tensor([1, 2, 3], dtype=i64)
    cases.append(Case("where/promote", "where", [cond, ia, b.to(f64)], [torch.where(cond, ia, b.to(f64))]))
    cases.append(Case("where/int", "where", [cond, ia, -ia], [torch.where(cond, ia, -ia)]))
    return cases


# ---------------------------------------------------------------- reductions


def reduce_cases():
    cases = []
    seed(30)
    x32 = torch.randn(2, 3, 4)
    x64 = torch.randn(2, 3, 4, dtype=f64)
    dims_list = [None, [1], [-1], [0, 2], [-1, -3]]

    def red(op, fn, x, tag, dims, keep, **extra):
        try:
            y = fn(x, dims, keep)
        except Exception as e:  # noqa: BLE001
            print("skip %s %s %s: %s" % (op, tag, dims, e))
            return
        kd = "keep" if keep else "drop"
        nm = "reduce/%s/%s/%s/%s" % (op, tag, "all" if dims is None else "_".join(map(str, dims)), kd)
        for k, v in sorted(extra.items()):
            nm += "/%s=%s" % (k, v)
        cases.append(Case(nm, op, [x], [y], dims=dims, keepdim=keep, **extra))

    def d(dims):
        return tuple(dims) if dims is not None else None

    def allred(fn):
        # torch's reductions take no dim argument for "all"; keepdim needs dims.
        def g(x, dims, keep):
            if dims is None:
                dims = list(range(x.dim()))
            return fn(x, tuple(dims), keep)

        return g

    ops = {
        "sum": allred(lambda x, dd, k: torch.sum(x, dd, keepdim=k)),
        "mean": allred(lambda x, dd, k: torch.mean(x, dd, keepdim=k)),
        "amax": allred(lambda x, dd, k: torch.amax(x, dd, keepdim=k)),
        "amin": allred(lambda x, dd, k: torch.amin(x, dd, keepdim=k)),
        "logsumexp": allred(lambda x, dd, k: torch.logsumexp(x, dd, keepdim=k)),
    }
    for op, fn in ops.items():
        for tag, x in [("f32", x32), ("f64", x64)]:
            for dims in dims_list:
                for keep in (False, True):
                    red(op, fn, x, tag, dims, keep)
    # prod takes a single dim in torch
    for tag, x in [("f32", x32), ("f64", x64)]:
        for dim in [0, 1, -1]:
            for keep in (False, True):
                red("prod", lambda x, dims, k: torch.prod(x, dims[0], keepdim=k), x, tag, [dim], keep)
        red("prod", lambda x, dims, k: torch.prod(x), x, tag, None, False)
    for corr in (0, 1):
        for op, tfn in [("var", torch.var), ("std", torch.std)]:
            for tag, x in [("f32", x32), ("f64", x64)]:
                for dims in [None, [1], [0, 2]]:
                    for keep in (False, True):
                        red(
                            op,
                            allred(lambda x, dd, k, tfn=tfn: tfn(x, dd, correction=corr, keepdim=k)),
                            x,
                            tag,
                            dims,
                            keep,
                            correction=corr,
                        )
    for p in [1.0, 2.0, 3.0, INF, 0.0]:
        xz = x32.clone()
        xz[0, 1, :2] = 0
        for dims in [None, [1], [-1], [0, 2]]:
            for keep in (False, True):
                red(
                    "norm",
                    lambda x, dims, k: torch.linalg.vector_norm(x, p, d(dims), keepdim=k),
                    xz,
                    "f32",
                    dims,
                    keep,
                    p=p,
                )
        red("norm", lambda x, dims, k: torch.linalg.vector_norm(x, p, d(dims), keepdim=k), x64, "f64", [1], False, p=p)
    # integer and bool dtypes: sums widen to int64, max keeps the dtype
    ii = torch.randint(-9, 10, (3, 4), dtype=i64)
    for tag, x in [("i64", ii), ("i32", ii.to(i32)), ("bool", ii > 0)]:
        for dims in [None, [0], [-1]]:
            for keep in (False, True):
                red("sum", ops["sum"], x, tag, dims, keep)
                red("amax", ops["amax"], x, tag, dims, keep)
                red("amin", ops["amin"], x, tag, dims, keep)
        red("prod", lambda x, dims, k: torch.prod(x, dims[0], keepdim=k), x, tag, [1], False)
    # special values: NaN propagates through max/min/sum; -inf lanes in logsumexp
    sp = torch.tensor([[1.0, NAN, 3.0], [-INF, -INF, -INF], [INF, 1.0, 2.0], [-INF, 0.0, 1.0]], dtype=f32)
    for op in ["sum", "amax", "amin", "logsumexp"]:
        for dims in [[1], [0]]:
            red(op, ops[op], sp, "special", dims, False)
    # empty lanes: sum gives 0, prod 1, mean NaN
    e = torch.zeros(3, 0)
    red("sum", ops["sum"], e, "empty", [1], False)
    red("mean", ops["mean"], e, "empty", [1], False)
    red("prod", lambda x, dims, k: torch.prod(x, dims[0], keepdim=k), e, "empty", [1], False)
    # non-contiguous input
    xt = x32.transpose(0, 2)
    for op in ["sum", "amax", "mean"]:
        red(op, ops[op], xt, "transposed", [1], False)
    return cases


def arg_cases():
    cases = []
    seed(35)
    x = torch.randn(3, 4, 5)
    x[0, 1, 2] = x[0, 1, 4]  # a tie along the last axis
    xn = torch.tensor([[1.0, NAN, 3.0, NAN], [2.0, 2.0, 1.0, 1.0]], dtype=f32)
    ii = torch.tensor([[3, 1, 3], [-1, -5, -5]], dtype=i64)
    for op, fn in [("argmax", torch.argmax), ("argmin", torch.argmin)]:
        for tag, t in [("f32", x), ("nan", xn), ("i64", ii), ("f64", x.to(f64).transpose(0, 2))]:
            for dim in range(-1, t.dim()):
                for keep in (False, True):
                    cases.append(Case("%s/%s/%d/%s" % (op, tag, dim, keep), op, [t], [fn(t, dim, keep)], dim=dim, keepdim=keep))
    for op, fn in [("cumsum", torch.cumsum), ("cumprod", torch.cumprod)]:
        for tag, t in [
            ("f32", x[:, :, :3]),
            ("f64", x.to(f64)),
            ("i64", ii),
            ("i32", ii.to(i32)),
            ("bool", ii > 0),
            ("nan", xn),
            ("0d", torch.tensor(2.5)),
        ]:
            for dim in range(-1, max(t.dim(), 1)):
                cases.append(Case("%s/%s/%d" % (op, tag, dim), op, [t], [fn(t, dim)], dim=dim))
    return cases


# ---------------------------------------------------------------- matmul


def matmul_cases():
    cases = []
    seed(40)
    r = torch.randn
    specs = [
        ("2d", r(3, 4), r(4, 5), None, None),
        ("batched", r(2, 3, 4), r(2, 4, 5), None, None),
        ("bcast_batch", r(2, 1, 3, 4), r(5, 4, 2), None, None),
        ("bcast_2d_rhs", r(2, 3, 4), r(4, 2), None, None),
        ("bcast_2d_lhs", r(3, 4), r(2, 4, 2), None, None),
        ("1d_2d", r(4), r(4, 5), None, None),
        ("2d_1d", r(3, 4), r(4), None, None),
        ("1d_1d", r(4), r(4), None, None),
        ("1d_3d", r(4), r(2, 4, 5), None, None),
        ("3d_1d", r(2, 3, 4), r(4), None, None),
        ("T_a", r(3, 4), r(4, 5), "T", None),
        ("T_b", r(3, 4), r(4, 5), None, "T"),
        ("T_ab_batched", r(2, 3, 4), r(2, 4, 5), "T", "T"),
        ("step2_a", r(3, 4), r(4, 2), "step2", None),
        ("step2_b", r(3, 4), r(4, 2), None, "step2"),
        ("k0", r(3, 0), r(0, 2), None, None),
        ("m0", r(0, 4), r(4, 2), None, None),
        ("vec_step2", r(4), r(4, 3), "step2", None),
    ]
    for tag, a, b, ha, hb in specs:
        cases.append(Case("matmul/%s" % tag, "matmul", [stored(a, ha), stored(b, hb)], [torch.matmul(a, b)], pre_a=ha, pre_b=hb))
        if tag in ("2d", "bcast_batch", "T_a", "1d_1d"):
            a64, b64 = a.to(f64), b.to(f64)
            cases.append(
                Case("matmul/%s_f64" % tag, "matmul", [stored(a64, ha), stored(b64, hb)], [torch.matmul(a64, b64)], pre_a=ha, pre_b=hb)
            )
    ia = torch.randint(-5, 6, (2, 3, 4), dtype=i64)
    ib = torch.randint(-5, 6, (4, 2), dtype=i64)
    cases.append(Case("matmul/i64", "matmul", [ia, ib], [torch.matmul(ia, ib)], pre_a=None, pre_b=None))
    cases.append(Case("matmul/i64_T", "matmul", [stored(ia, "T"), ib], [torch.matmul(ia, ib)], pre_a="T", pre_b=None))
    cases.append(Case("matmul/i64_1d", "matmul", [ib[:, 0].contiguous(), ib], [torch.matmul(ib[:, 0], ib)], pre_a=None, pre_b=None))
    return cases


# ---------------------------------------------------------------- views


def apply_steps(x, steps):
    for s in steps:
        name, args = s[0], s[1:]
        if name == "reshape":
            x = x.reshape(*args)
        elif name == "view":
            x = x.view(*args)
        elif name == "permute":
            x = x.permute(*args)
        elif name == "transpose":
            x = x.transpose(*args)
        elif name == "narrow":
            x = x.narrow(*args)
        elif name == "slice":
            dim, start, end, step = args
            idx = [slice(None)] * x.dim()
            idx[dim] = slice(start, end, step)
            x = x[tuple(idx)]
        elif name == "select":
            x = x.select(*args)
        elif name == "squeeze":
            x = x.squeeze(*args)
        elif name == "unsqueeze":
            x = x.unsqueeze(*args)
        elif name == "expand":
            x = x.expand(*args)
        elif name == "flatten":
            x = x.flatten(*args)
        elif name == "T":
            x = x.t()
        elif name == "contiguous":
            x = x.contiguous()
        else:
            raise ValueError(name)
    return x


def view_cases():
    cases = []
    x = torch.arange(24, dtype=f32).reshape(2, 3, 4)
    big = 1 << 30
    specs = [
        ("reshape_infer", [["reshape", 4, -1]]),
        ("reshape_infer_first", [["reshape", -1, 6]]),
        ("reshape_transposed_copies", [["transpose", 0, 2], ["reshape", -1]]),
        ("reshape_narrowed_view", [["narrow", 2, 0, 2], ["reshape", 6, 2]]),
        ("reshape_to_scalar_then_back", [["select", 0, 1], ["select", 0, 2], ["select", 0, 3], ["reshape", 1, 1]]),
        ("reshape_same_expand", [["select", 2, 0], ["unsqueeze", 2], ["expand", 2, 3, 4], ["reshape", 2, 3, 2, 2]]),
        ("permute", [["permute", 2, 0, 1]]),
        ("permute_neg", [["permute", -1, 0, -2]]),
        ("transpose", [["transpose", 0, 2]]),
        ("transpose_neg", [["transpose", -1, -2]]),
        ("narrow", [["narrow", 1, 1, 2]]),
        ("narrow_neg_start", [["narrow", -1, -3, 2]]),
        ("narrow_empty", [["narrow", 2, 4, 0]]),
        ("slice_step", [["slice", 2, 1, 4, 2]]),
        ("slice_neg", [["slice", 1, -2, big, 1]]),
        ("slice_clamped", [["slice", 2, -100, 100, 3]]),
        ("slice_empty", [["slice", 2, 3, 1, 1]]),
        ("slice_of_transpose", [["transpose", 0, 2], ["slice", 0, 0, 4, 3]]),
        ("select", [["select", 1, -1]]),
        ("select_first", [["select", 0, 0]]),
        ("squeeze_all", [["reshape", 2, 1, 3, 1, 4], ["squeeze"]]),
        ("squeeze_dim", [["unsqueeze", 0], ["squeeze", 0]]),
        ("squeeze_neg_dim", [["reshape", 2, 3, 4, 1], ["squeeze", -1]]),
        ("unsqueeze_last", [["unsqueeze", -1]]),
        ("unsqueeze_mid", [["transpose", 0, 1], ["unsqueeze", 1]]),
        ("expand", [["select", 0, 0], ["select", 1, 0], ["unsqueeze", 1], ["expand", 2, 3, 4]]),
        ("expand_keep", [["narrow", 0, 0, 1], ["expand", 2, -1, -1]]),
        ("flatten_mid", [["flatten", 1, 2]]),
        ("flatten_all", [["flatten", 0, -1]]),
        ("flatten_transposed", [["transpose", 1, 2], ["flatten", 1, 2]]),
        ("view_select", [["select", 2, 0], ["view", 6]]),
        ("view_transposed_split", [["transpose", 0, 1], ["view", 3, 2, 2, 2]]),
        ("view_expand_split", [["select", 0, 0], ["select", 1, 0], ["unsqueeze", 1], ["expand", 3, 4], ["view", 3, 2, 2]]),
        ("view_narrow_merge_outer", [["narrow", 2, 0, 2], ["view", 6, 2]]),
        ("view_size1_axes", [["narrow", 0, 1, 1], ["transpose", 0, 1], ["view", 3, 4]]),
        ("view_err_transposed", [["transpose", 0, 1], ["view", -1]]),
        ("view_err_permuted_merge", [["permute", 1, 0, 2], ["view", 3, 8]]),
        ("view_err_narrow_merge_inner", [["narrow", 2, 0, 2], ["view", 2, 6]]),
        ("view_err_expand", [["select", 0, 0], ["select", 1, 0], ["unsqueeze", 1], ["expand", 3, 4], ["view", 12]]),
        ("T_then_contiguous", [["select", 0, 1], ["T"], ["contiguous"]]),
    ]
    for tag, steps in specs:
        try:
            y = apply_steps(x, steps)
        except RuntimeError:
            cases.append(Case("view/%s" % tag, "view", [x], [], steps=steps, error=True, is_view=False))
            continue
        is_view = y.numel() > 0 and y.storage().data_ptr() == x.storage().data_ptr()
        cases.append(Case("view/%s" % tag, "view", [x], [y], steps=steps, error=False, is_view=is_view))
    return cases


# ---------------------------------------------------------------- joins


def join_cases():
    cases = []
    seed(50)
    a, b, c = torch.randn(2, 3), torch.randn(2, 1), torch.randn(2, 4)
    cases.append(Case("cat/dim1", "cat", [a, b, c], [torch.cat([a, b, c], 1)], dim=1))
    cases.append(Case("cat/dim_neg", "cat", [a, b, c], [torch.cat([a, b, c], -1)], dim=-1))
    d = torch.randn(3, 3)
    cases.append(Case("cat/dim0", "cat", [a, d], [torch.cat([a, d], 0)], dim=0))
    ia = torch.tensor([[1, 2, 3]], dtype=i64)
    cases.append(Case("cat/promote", "cat", [a, ia], [torch.cat([a, ia], 0)], dim=0))
    cases.append(Case("cat/with_empty", "cat", [a, torch.zeros(0, 3)], [torch.cat([a, torch.zeros(0, 3)], 0)], dim=0))
    e = torch.randn(3, 2)
    cases.append(Case("cat/transposed", "cat", [a, e], [torch.cat([a, e.t()], 0)], dim=0, pre_b="T"))
    for dim in [0, 1, 2, -1]:
        cases.append(Case("stack/%d" % dim, "stack", [a, a * 2, a - 1], [torch.stack([a, a * 2, a - 1], dim)], dim=dim))
    x = torch.arange(24, dtype=f32).reshape(2, 3, 4)
    for dims in [[0], [1, 2], [-1], [0, 1, 2]]:
        cases.append(Case("flip/%s" % "_".join(map(str, dims)), "flip", [x], [torch.flip(x, dims)], dims=dims, pre=None))
    cases.append(Case("flip/transposed", "flip", [x], [torch.flip(x.transpose(-1, -2), [1])], dims=[1], pre="T"))
    cases.append(Case("flip/i64", "flip", [x.to(i64)], [torch.flip(x.to(i64), [2])], dims=[2], pre=None))
    return cases


# ---------------------------------------------------------------- dtype conversion


def half_bits(y):
    return y.view(torch.int16).to(i32) & 0xFFFF


def cast_cases():
    cases = []
    f16_vals = [
        0.1, -0.1, 1.0 / 3.0, 65504.0, 65519.99, 65520.0, 70000.0, -65520.0,
        1e-8, 2.9802322387695312e-08, 3e-8, 5.960464477539063e-08, 1e-5, 6.097555160522461e-05,
        6.103515625e-05, 1.0 + 2**-11, 1.0 + 3 * 2**-11, 2049.0, 2051.0, 1e10,
        -0.0, 0.0, INF, -INF, NAN, 1.0, -2.5, 1234.5678,
    ]
    bf16_vals = [
        0.1, -0.1, 1.0 / 3.0, 1.0 + 2**-8, 1.0 + 3 * 2**-8, 1.0 + 2**-8 + 2**-20,
        3.3895313892515355e38, 3.4e38, 3.4028234663852886e38, 1e-40, 1e-45, 1.1754943508222875e-38,
        -0.0, 0.0, INF, -INF, NAN, 1.0, 65504.0, 1e10, -7.75,
    ]
    for hdt, name, vals in [(torch.float16, "float16", f16_vals), (torch.bfloat16, "bfloat16", bf16_vals)]:
        for src in (f32, f64):
            x = torch.tensor(vals, dtype=src)
            y = x.to(hdt)
            cases.append(Case("cast/%s/from_%s" % (name, src), "cast", [x], [y.to(f32), half_bits(y)], to=name))
        # float64 values that double-round (torch goes float64 -> float32 -> half)
        if name == "float16":
            x = torch.tensor([1.0 + 2**-11 + 2**-40, 1.0 + 2**-11 - 2**-40], dtype=f64)
        else:
            x = torch.tensor([1.0 + 2**-8 + 2**-40, 1.0 + 2**-8 - 2**-40], dtype=f64)
        y = x.to(hdt)
        cases.append(Case("cast/%s/double_rounding" % name, "cast", [x], [y.to(f32), half_bits(y)], to=name))
        xi = torch.tensor([0, 1, -7, 2049, 65504, 65536, 300000, -123456789], dtype=i64)
        y = xi.to(hdt)
        cases.append(Case("cast/%s/from_int64" % name, "cast", [xi], [y.to(f32), half_bits(y)], to=name))
        xb = torch.tensor([True, False])
        y = xb.to(hdt)
        cases.append(Case("cast/%s/from_bool" % name, "cast", [xb], [y.to(f32), half_bits(y)], to=name))
    fl = torch.tensor([-2.7, -0.5, -0.0, 0.5, 2.9, 1e9, 123456.78, -1e9], dtype=f32)
    for to in (i64, i32, b8, f64):
        cases.append(Case("cast/f32_to_%s" % to, "cast", [fl], [fl.to(to)], to=str(to).replace("torch.", "")))
    nb = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 1e-45], dtype=f32)
    cases.append(Case("cast/special_to_bool", "cast", [nb], [nb.to(b8)], to="bool"))
    cases.append(Case("cast/special_to_f64", "cast", [nb], [nb.to(f64)], to="float64"))
    d = torch.tensor([0.1, 1e-46, 3.5e38, 1e39, -1e39, 1.0000000596046448, NAN], dtype=f64)
    cases.append(Case("cast/f64_to_f32", "cast", [d], [d.to(f32)], to="float32"))
    ii = torch.tensor([2**33 + 5, -(2**33) - 5, 2**31, -(2**31) - 1, 7, 0, 16777217, 2**53 - 1], dtype=i64)
    for to in (i32, f32, f64, b8):
        cases.append(Case("cast/i64_to_%s" % to, "cast", [ii], [ii.to(to)], to=str(to).replace("torch.", "")))
    bb = torch.tensor([True, False, True])
    for to in (i64, i32, f32, f64):
        cases.append(Case("cast/bool_to_%s" % to, "cast", [bb], [bb.to(to)], to=str(to).replace("torch.", "")))
    cases.append(Case("cast/i32_to_f32", "cast", [ii.to(i32)], [ii.to(i32).to(f32)], to="float32"))
    # non-contiguous source
    xt = torch.tensor(f16_vals[:24], dtype=f32).reshape(4, 6)
    y = xt.t().to(torch.float16)
    cases.append(Case("cast/float16/transposed", "cast", [xt], [y.to(f32), half_bits(y)], to="float16", pre="T"))
    return cases


# ---------------------------------------------------------------- constructors


def create_cases():
    cases = []
    for start, end, step in [(0, 10, 3), (5, 0, -1), (-3, 4, 2), (0, 0, 1)]:
        y = torch.arange(start, end, step)
        cases.append(Case("arange/int/%s_%s_%s" % (start, end, step), "arange", [], [y], start=float(start), end=float(end), step=float(step), dtype=None))
    for start, end, step in [(0.0, 1.0, 0.1), (-1.0, 1.0, 0.25), (0.5, 3.0, 1.0), (1.0, -1.0, -0.3)]:
        y = torch.arange(start, end, step)
        cases.append(Case("arange/float/%s_%s_%s" % (start, end, step), "arange", [], [y], start=start, end=end, step=step, dtype=None))
    y = torch.arange(0, 5, 1, dtype=f64)
    cases.append(Case("arange/f64", "arange", [], [y], start=0.0, end=5.0, step=1.0, dtype="float64"))
    y = torch.arange(0, 2, 0.5, dtype=f64)
    cases.append(Case("arange/f64_frac", "arange", [], [y], start=0.0, end=2.0, step=0.5, dtype="float64"))
    for start, end, n, dt in [(0.0, 1.0, 5, f32), (-1.0, 1.0, 4, f32), (0.0, 10.0, 1, f32), (2.0, 3.0, 0, f32), (0.0, 1.0, 7, f64), (1.0, -3.0, 9, f32), (0.1, 0.7, 11, f32)]:
        y = torch.linspace(start, end, n, dtype=dt)
        cases.append(Case("linspace/%s_%s_%s_%s" % (start, end, n, dt), "linspace", [], [y], start=start, end=end, n=n, dtype=str(dt).replace("torch.", "")))
    for n, m in [(3, 3), (2, 4), (4, 2), (0, 0), (1, 1)]:
        cases.append(Case("eye/%d_%d" % (n, m), "eye", [], [torch.eye(n, m)], n=n, m=m))
    return cases


# ---------------------------------------------------------------- autograd


def grad_cases():
    cases = []
    seed(100)
    r = lambda *s: torch.randn(*s, dtype=f64)  # noqa: E731
    pos = lambda *s: torch.rand(*s, dtype=f64) + 0.5  # noqa: E731

    def add(name, fn, inputs, **attrs):
        seed(zlib.crc32(name.encode()) % 1000 + 101)
        cases.append(autograd_case(name, name.split("/")[0], fn, inputs, **attrs))

    add("add/bcast", torch.add, [r(2, 3), r(3)])
    add("sub/bcast", torch.sub, [r(2, 1), r(1, 3)])
    add("mul/bcast", torch.mul, [r(2, 3, 4), r(3, 1)])
    add("div/bcast", torch.div, [r(2, 3), pos(2, 1)])
    add("pow/bcast", torch.pow, [pos(2, 3), r(3)])
    add("pow/zero_base", torch.pow, [torch.tensor([0.0, 0.0, 2.0], dtype=f64), torch.tensor([2.0, 0.5, 3.0], dtype=f64)])
    add("maximum/ties", torch.maximum, [torch.tensor([1.0, 2.0, 3.0], dtype=f64), torch.tensor([1.0, 5.0, -1.0], dtype=f64)])
    add("minimum/bcast", torch.minimum, [r(2, 3), r(3)])
    add("where/bcast", lambda a, b: torch.where(torch.tensor([[True, False, True]]), a, b), [r(2, 3), r(1)])
    for name, fn, mk in [
        ("neg", torch.neg, r),
        ("abs", torch.abs, r),
        ("exp", torch.exp, r),
        ("log", torch.log, pos),
        ("log1p", torch.log1p, pos),
        ("expm1", torch.expm1, r),
        ("sqrt", torch.sqrt, pos),
        ("rsqrt", torch.rsqrt, pos),
        ("sin", torch.sin, r),
        ("cos", torch.cos, r),
        ("tanh", torch.tanh, r),
        ("sigmoid", torch.sigmoid, r),
        ("relu", torch.relu, r),
        ("square", torch.square, r),
        ("reciprocal", torch.reciprocal, pos),
        ("erf", torch.erf, r),
        ("sign", torch.sign, r),
        ("floor", torch.floor, r),
    ]:
        add("%s/plain" % name, fn, [mk(3, 4)])
    add("clamp/plain", lambda x: torch.clamp(x, -0.5, 0.7), [r(3, 4)])
    add("pow_scalar/plain", lambda x: torch.pow(x, 3.0), [r(3, 4)], exp=3.0)
    add("pow_scalar/frac", lambda x: torch.pow(x, 1.5), [pos(3, 4)], exp=1.5)
    add("sum/dims", lambda x: torch.sum(x, (0, 2)), [r(2, 3, 4)])
    add("mean/keep", lambda x: torch.mean(x, (1,), keepdim=True), [r(2, 3, 4)])
    add("prod/dim", lambda x: torch.prod(x, 1), [r(2, 3, 4)])
    add("prod/zeros", lambda x: torch.prod(x, 1), [torch.tensor([[1.0, 0.0, 3.0], [0.0, 0.0, 2.0], [1.5, 2.0, 3.0]], dtype=f64)])
    add("amax/ties", lambda x: torch.amax(x, (1,)), [torch.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, 1.0]], dtype=f64)])
    add("amin/all", lambda x: torch.amin(x), [r(3, 4)])
    add("var/dims", lambda x: torch.var(x, (0, 2), correction=1), [r(2, 3, 4)])
    add("std/pop", lambda x: torch.std(x, (1,), correction=0, keepdim=True), [r(2, 3, 4)])
    add("logsumexp/dim", lambda x: torch.logsumexp(x, (-1,)), [r(3, 4)])
    for p in (1.0, 2.0, 3.0, INF):
        add("norm/p%s" % p, lambda x: torch.linalg.vector_norm(x, p, (1,)), [torch.tensor([[1.0, -2.0, 2.0], [0.5, -3.0, 3.0]], dtype=f64)], p=p)
    add("cumsum/dim", lambda x: torch.cumsum(x, 1), [r(3, 4)])
    add("cumprod/dim", lambda x: torch.cumprod(x, 1), [r(3, 4)])
    add("cumprod/zeros", lambda x: torch.cumprod(x, 1), [torch.tensor([[1.0, 0.0, 3.0, 2.0], [2.0, 3.0, 0.0, 0.0]], dtype=f64)])
    add("matmul/2d", torch.matmul, [r(3, 4), r(4, 5)])
    add("matmul/bcast", torch.matmul, [r(2, 1, 3, 4), r(5, 4, 2)])
    add("matmul/1d_2d", torch.matmul, [r(4), r(4, 5)])
    add("matmul/2d_1d", torch.matmul, [r(3, 4), r(4)])
    add("matmul/1d_1d", torch.matmul, [r(4), r(4)])
    add("matmul/1d_3d", torch.matmul, [r(4), r(2, 4, 5)])
    add("views/chain", lambda x: x.transpose(0, 2).reshape(4, 6)[:, 1:5:2].narrow(0, 1, 2), [r(2, 3, 4)])
    add("views/select_expand", lambda x: x.select(1, 1).unsqueeze(1).expand(2, 3, 4), [r(2, 3, 4)])
    add("views/flip", lambda x: torch.flip(x.permute(2, 0, 1), [0, 2]), [r(2, 3, 4)])
    add("cat/dim1", lambda a, b: torch.cat([a, b.t()], 1), [r(2, 3), r(4, 2)])
    add("stack/dim1", lambda a, b: torch.stack([a, b], 1), [r(2, 3), r(2, 3)])
    add("composite/mlp", lambda x, w, b: torch.tanh(x @ w + b).sum(1), [r(4, 3), r(3, 5), r(5)])
    return cases


def main():
    cases = []
    for gen in [unary_cases, binary_cases, where_cases, reduce_cases, arg_cases, matmul_cases, view_cases, join_cases, cast_cases, create_cases]:
        cases.extend(gen())
    write("tensor/testdata/golden_core.json", cases)
    write("autograd/testdata/golden_core.json", grad_cases())


if __name__ == "__main__":
    main()
