"""Helpers for writing PyTorch golden-value fixtures for Ember's Go tests.

Every generator script ``internal/golden/gen/gen_<area>.py`` imports this
module, builds a list of cases with :func:`Case` (or :func:`autograd_case`)
and calls :func:`write`. The Go package ``internal/golden`` loads the result.

Fixture format (JSON)::

    {
      "generator": "internal/golden/gen/gen_selftest.py",
      "torch_version": "...",
      "cases": [
        {"name": "add/broadcast", "op": "add", "attrs": {...},
         "inputs": [T, ...], "outputs": [T, ...],
         "grad_outputs": [T, ...], "grads": [T or null, ...]}
      ]
    }

Each tensor ``T`` is ``{"shape": [...], "dtype": D, "data": [...]}`` with
``D`` one of float32, float64, int64, int32, bool and ``data`` flat in
row-major order. Bools are written as 0/1. Floats are written with Python's
``repr`` (shortest string that round-trips the float64 exactly; float32
values are exact in float64). NaN and infinities, which JSON cannot express,
are written as the strings "nan", "inf" and "-inf", in tensors and in attrs.

Gradient convention: ``grad_outputs`` holds one upstream gradient ``gout``
per output; the generator runs ``out.backward(gout)`` for every output
(equivalently ``sum_k sum(out_k * gout_k)``) and ``grads[i]`` is the
resulting ``.grad`` of input ``i``, or null where the input does not
require a gradient. Cases without gradients omit both lists (they are empty
in Go).

Determinism: importing this module seeds torch's RNG with 0 and limits
torch to one thread; call :func:`seed` to reseed before each group of cases
so that adding a case does not change the data of the following ones.
"""

import json
import math
import os
import sys

import torch

#: Repository root (this file lives in internal/golden/gen/).
ROOT = os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
)

_DTYPES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.bool: "bool",
}

# Largest integer magnitude the Go loader accepts (exact in float64).
_MAX_EXACT_INT = 2**53


def seed(n=0):
    """Reseed torch's global RNG with ``n``."""
    torch.manual_seed(n)


seed(0)
torch.set_num_threads(1)


def _float(x):
    """Encode a float: repr-exact number, or "nan"/"inf"/"-inf"."""
    x = float(x)
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def t2j(t):
    """Convert a tensor to the fixture dict ``{"shape", "dtype", "data"}``.

    The tensor is detached and copied to the CPU. Dtypes other than float32,
    float64, int64, int32 and bool raise ValueError.
    """
    if not isinstance(t, torch.Tensor):
        raise TypeError("t2j: want a torch.Tensor, got %s" % type(t).__name__)
    if t.dtype not in _DTYPES:
        raise ValueError("t2j: unsupported dtype %s" % t.dtype)
    dtype = _DTYPES[t.dtype]
    flat = t.detach().cpu().contiguous().reshape(-1).tolist()
    if dtype in ("float32", "float64"):
        data = [_float(v) for v in flat]
    elif dtype == "bool":
        data = [1 if v else 0 for v in flat]
    else:
        for v in flat:
            if abs(v) > _MAX_EXACT_INT:
                raise ValueError("t2j: integer %d is not exact in float64" % v)
        data = [int(v) for v in flat]
    return {"shape": list(t.shape), "dtype": dtype, "data": data}


def _tensor(x):
    """Accept a tensor or an already converted dict."""
    if isinstance(x, dict):
        return x
    return t2j(x)


def _attr(v):
    """Make an attribute value JSON-safe (tuples, torch.Size, non-finite
    floats, torch.dtype)."""
    if isinstance(v, bool) or v is None or isinstance(v, (int, str)):
        return v
    if isinstance(v, float):
        return _float(v)
    if isinstance(v, torch.dtype):
        return _DTYPES.get(v, str(v).replace("torch.", ""))
    if isinstance(v, (list, tuple, torch.Size)):
        return [_attr(e) for e in v]
    if isinstance(v, dict):
        return {str(k): _attr(e) for k, e in v.items()}
    raise TypeError("unsupported attr value %r" % (v,))


def Case(name, op, inputs, outputs, grads=None, grad_outputs=None, **attrs):
    """Build one case dict.

    ``inputs``, ``outputs`` and ``grad_outputs`` are lists of tensors (or
    dicts from :func:`t2j`); ``grads`` is a list with a tensor or None per
    input. ``grads`` and ``grad_outputs`` must be given together. Keyword
    arguments become the case's ``attrs``.
    """
    if (grads is None) != (grad_outputs is None):
        raise ValueError("%s: grads and grad_outputs go together" % name)
    c = {
        "name": name,
        "op": op,
        "attrs": {k: _attr(v) for k, v in attrs.items()},
        "inputs": [_tensor(x) for x in inputs],
        "outputs": [_tensor(x) for x in outputs],
    }
    if grads is not None:
        if len(grads) != len(inputs):
            raise ValueError("%s: %d grads for %d inputs" % (name, len(grads), len(inputs)))
        if len(grad_outputs) != len(outputs):
            raise ValueError(
                "%s: %d grad_outputs for %d outputs" % (name, len(grad_outputs), len(outputs))
            )
        c["grad_outputs"] = [_tensor(x) for x in grad_outputs]
        c["grads"] = [None if g is None else _tensor(g) for g in grads]
    return c


def autograd_case(name, op, fn, inputs, **attrs):
    """Run ``fn(*inputs)`` and record outputs and gradients.

    Floating-point inputs get ``requires_grad``; integer and bool inputs get
    a null gradient. ``fn`` may return a tensor or a tuple of tensors. For
    every floating-point output a random ``gout`` (standard normal, from the
    current RNG state) is drawn, ``out.backward(gout)`` is accumulated and
    the resulting input gradients are stored; non-float outputs get a zero
    ``gout`` of their own dtype and do not take part. Keyword arguments
    become ``attrs`` and are not passed to ``fn``.
    """
    xs = []
    for x in inputs:
        x = x.detach().clone()
        if x.is_floating_point():
            x.requires_grad_(True)
        xs.append(x)
    outs = fn(*xs)
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    gouts, targets, grad_args = [], [], []
    for o in outs:
        if o.is_floating_point():
            g = torch.randn(o.shape, dtype=o.dtype)
            if o.requires_grad:
                targets.append(o)
                grad_args.append(g)
        else:
            g = torch.zeros(o.shape, dtype=o.dtype)
        gouts.append(g)
    if targets:
        torch.autograd.backward(targets, grad_args)
    grads = []
    for x in xs:
        if not x.requires_grad:
            grads.append(None)
        elif x.grad is None:  # output does not depend on x
            grads.append(torch.zeros_like(x))
        else:
            grads.append(x.grad)
    return Case(name, op, xs, list(outs), grads=grads, grad_outputs=gouts, **attrs)


def _dump(v):
    return json.dumps(v, allow_nan=False, separators=(", ", ": "))


def _format(cases, generator):
    """Pretty-but-compact layout: one line per tensor, diff-friendly."""
    lines = ["{"]
    lines.append('  "generator": %s,' % _dump(generator))
    lines.append('  "torch_version": %s,' % _dump(torch.__version__))
    lines.append('  "cases": [')
    for ci, c in enumerate(cases):
        head = '    {"name": %s, "op": %s, "attrs": %s' % (
            _dump(c["name"]),
            _dump(c["op"]),
            _dump(c.get("attrs", {})),
        )
        parts = [head]
        for key in ("inputs", "outputs", "grad_outputs", "grads"):
            if key not in c:
                continue
            items = c[key]
            if not items:
                parts.append('     "%s": []' % key)
                continue
            body = ",\n".join("       " + _dump(t) for t in items)
            parts.append('     "%s": [\n%s]' % (key, body))
        sep = "," if ci < len(cases) - 1 else ""
        lines.append(",\n".join(parts) + "}" + sep)
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _generator():
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None) or (sys.argv[0] if sys.argv else "")
    if not path:
        return "unknown"
    return os.path.relpath(os.path.abspath(path), ROOT).replace(os.sep, "/")


def write(path, cases):
    """Write ``cases`` to ``path`` (relative paths are taken from the
    repository root), recording the generator script and torch version.

    Duplicate case names raise ValueError. The output is checked to parse
    back before it replaces the file.
    """
    names = set()
    for c in cases:
        if c["name"] in names:
            raise ValueError("duplicate case name %r" % c["name"])
        names.add(c["name"])
    text = _format(cases, _generator())
    json.loads(text)  # self-check
    if not os.path.isabs(path):
        path = os.path.join(ROOT, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    print("wrote %d cases to %s" % (len(cases), os.path.relpath(path, ROOT)))
