"""Golden values for ONNX operators added in opsets 18-21 (Gelu, Mish,
Bitwise*, GroupNormalization, Col2Im, CenterCropPad, AffineGrid), which the
Debian ONNX test data (opset 17) lacks. Each case is one node: inputs in
order, the node's attributes, its output. onnx/ops_recent_test.go runs them.
"""

import torch
import torch.nn.functional as F

from golden import Case, seed, write

cases = []
seed(0)
x = torch.randn(3, 5) * 3
for approx in ("none", "tanh"):
    cases.append(Case("gelu/" + approx, "Gelu", [x], [F.gelu(x, approximate=approx)], opset=20, approximate=approx))
cases.append(Case("mish", "Mish", [x], [F.mish(x)], opset=18))

a = torch.randint(-1000, 1000, (4, 3), dtype=torch.int64)
b = torch.randint(-1000, 1000, (3,), dtype=torch.int64)
for op, f in (("BitwiseAnd", torch.bitwise_and), ("BitwiseOr", torch.bitwise_or), ("BitwiseXor", torch.bitwise_xor)):
    cases.append(Case("bitwise/%s/int64" % op, op, [a, b], [f(a, b)], opset=18))
    a32, b32 = a.to(torch.int32), b.to(torch.int32)
    cases.append(Case("bitwise/%s/int32" % op, op, [a32, b32], [f(a32, b32)], opset=18))
cases.append(Case("bitwise/BitwiseNot/int64", "BitwiseNot", [a], [torch.bitwise_not(a)], opset=18))

xg = torch.randn(2, 6, 4, 3)
w, bb = torch.randn(6), torch.randn(6)
cases.append(Case("groupnorm/21", "GroupNormalization", [xg, w, bb], [F.group_norm(xg, 3, w, bb, 1e-5)],
                  opset=21, num_groups=3, epsilon=1e-5))
wg, bg = torch.randn(2), torch.randn(2)
y18 = F.group_norm(xg, 2, wg.repeat_interleave(3), bg.repeat_interleave(3), 1e-3)
cases.append(Case("groupnorm/18", "GroupNormalization", [xg, wg, bg], [y18], opset=18, num_groups=2, epsilon=1e-3))

for name, image, block, dil, pad, stride in (
    ("plain", (5, 6), (2, 3), (1, 1), (0, 0), (1, 1)),
    ("strided", (7, 8), (3, 2), (1, 2), (1, 0), (2, 1)),
):
    cols_h = (image[0] + 2 * pad[0] - dil[0] * (block[0] - 1) - 1) // stride[0] + 1
    cols_w = (image[1] + 2 * pad[1] - dil[1] * (block[1] - 1) - 1) // stride[1] + 1
    cols = torch.randn(2, 3 * block[0] * block[1], cols_h * cols_w)
    y = F.fold(cols, image, block, dilation=dil, padding=pad, stride=stride)
    cases.append(Case("col2im/" + name, "Col2Im", [cols, torch.tensor(image), torch.tensor(block)], [y], opset=18,
                      dilations=list(dil), pads=[pad[0], pad[1], pad[0], pad[1]], strides=list(stride)))


def center_crop_pad(x, target, axes):
    """Crop or zero-pad each axis to its target, centred, extra on the far side."""
    out = x
    for size, a in zip(target, axes):
        d = out.shape[a]
        if size < d:
            start = (d - size) // 2
            out = out.narrow(a, start, size)
        elif size > d:
            before = (size - d) // 2
            shape = list(out.shape)
            shape[a] = size
            z = torch.zeros(shape, dtype=out.dtype)
            z.narrow(a, before, d).copy_(out)
            out = z
    return out


xc = torch.randn(5, 4, 7)
for name, target, axes in (("all", (3, 6, 7), None), ("axes", (8, 2), (2, 0)), ("odd", (2, 5, 4), None)):
    want = center_crop_pad(xc, target, axes if axes else (0, 1, 2))
    attrs = {"axes": list(axes)} if axes else {}
    cases.append(Case("centercroppad/" + name, "CenterCropPad", [xc, torch.tensor(target)], [want], opset=18, **attrs))

for align in (0, 1):
    th = torch.randn(2, 2, 3)
    size = (2, 3, 4, 5)
    cases.append(Case("affinegrid/2d/align%d" % align, "AffineGrid", [th, torch.tensor(size)],
                      [F.affine_grid(th, size, align_corners=bool(align))], opset=20, align_corners=align))
    th3 = torch.randn(1, 3, 4)
    size3 = (1, 2, 3, 2, 4)
    cases.append(Case("affinegrid/3d/align%d" % align, "AffineGrid", [th3, torch.tensor(size3)],
                      [F.affine_grid(th3, size3, align_corners=bool(align))], opset=20, align_corners=align))
write("onnx/testdata/golden_opset18.json", cases)
