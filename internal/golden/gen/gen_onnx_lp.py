"""Golden values for the ONNX Lp operators (onnx/ops_lp.go): LpPool,
GlobalLpPool and LpNormalization, which the Debian ONNX test data lacks.

PyTorch's lp_pool2d has no padding and, with ceil_mode, scales a partial
window's average by the full window size, so the padded, dilated, ceil-mode
and 1-d/3-d cases are computed here from the definition, in float64:
y = (sum over the window's in-bounds elements of |x|^p)^(1/p).
"""

import itertools
import math

import torch
import torch.nn.functional as F

from golden import Case, seed, write


def lp_pool_ref(x, p, kernel, strides, pads, dilations, ceil):
    """LpPool from its definition; x is [N, C, spatial...] float64."""
    k = len(kernel)
    size = x.shape[2:]
    out = []
    for i in range(k):
        span = size[i] + pads[i] + pads[k + i] - dilations[i] * (kernel[i] - 1) - 1
        o = span // strides[i] + 1
        if ceil and span % strides[i] != 0 and o * strides[i] < size[i] + pads[i]:
            o += 1
        out.append(o)
    y = torch.zeros(x.shape[:2] + tuple(out), dtype=torch.float64)
    for pos in itertools.product(*[range(o) for o in out]):
        acc = torch.zeros(x.shape[:2], dtype=torch.float64)
        for tap in itertools.product(*[range(kk) for kk in kernel]):
            c = [pos[i] * strides[i] - pads[i] + tap[i] * dilations[i] for i in range(k)]
            if all(0 <= c[i] < size[i] for i in range(k)):
                acc += x[(slice(None), slice(None)) + tuple(c)].abs() ** p
        y[(slice(None), slice(None)) + pos] = acc ** (1.0 / p)
    return y


cases = []
seed(0)
x = torch.randn(2, 3, 7, 9)
# PyTorch's own lp_pool2d where it agrees with ONNX (no padding, whole windows).
for p, k, s in ((2, (3, 3), (2, 2)), (1, (2, 3), (1, 2)), (3, (3, 2), (3, 3))):
    y = F.lp_pool2d(x.abs(), p, k, s)
    cases.append(Case("lppool/torch/p%d" % p, "LpPool", [x], [y], p=p, kernel_shape=list(k), strides=list(s),
                      pads=[0, 0, 0, 0], dilations=[1, 1], ceil_mode=0))
# From the definition: pads, dilations, ceil_mode, 1-d and 3-d.
for name, shape, p, kernel, strides, pads, dil, ceil in (
    ("pads", (2, 3, 7, 9), 2, (3, 3), (2, 2), (1, 0, 2, 1), (1, 1), 0),
    ("dilated", (1, 2, 8, 8), 2, (2, 2), (1, 1), (0, 0, 0, 0), (2, 3), 0),
    ("ceil", (1, 2, 7, 8), 2, (3, 3), (2, 3), (0, 0, 0, 0), (1, 1), 1),
    ("p3_1d", (2, 3, 10), 3, (4,), (3,), (1, 2), (1,), 0),
    ("3d", (1, 2, 4, 5, 3), 2, (2, 3, 2), (2, 1, 1), (0, 1, 0, 0, 1, 1), (1, 1, 1), 0),
):
    xi = torch.randn(*shape)
    y = lp_pool_ref(xi.double(), p, kernel, strides, pads, dil, ceil).float()
    cases.append(Case("lppool/" + name, "LpPool", [xi], [y], p=p, kernel_shape=list(kernel), strides=list(strides),
                      pads=list(pads), dilations=list(dil), ceil_mode=ceil))
for p in (1, 2, 3):
    y = torch.linalg.vector_norm(x.double(), ord=p, dim=(2, 3), keepdim=True).float()
    cases.append(Case("globallppool/p%d" % p, "GlobalLpPool", [x], [y], p=p))
xn = torch.randn(3, 4, 5)
xn[1, :, 2] = 0  # a zero lane along axis 1 stays zero
for p in (1, 2):
    for axis in (-1, 1, 0):
        y = F.normalize(xn, p=p, dim=axis)
        cases.append(Case("lpnorm/p%d/axis%d" % (p, axis), "LpNormalization", [xn], [y], p=p, axis=axis))
write("onnx/testdata/golden_lp.json", cases)
