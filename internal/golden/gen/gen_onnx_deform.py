"""Golden values for ONNX DeformConv (onnx/ops_deform.go) from
torchvision.ops.deform_conv2d, which defines the operator's semantics (the
Debian ONNX test data, opset 17, has no DeformConv cases)."""

import torch
from torchvision.ops import deform_conv2d

from golden import Case, seed, write

cases = []
seed(0)
for name, n, c, h, w, oc, k, stride, pad, dil, group, offg, with_mask, with_bias in (
    ("plain", 1, 2, 5, 6, 3, (3, 3), (1, 1), (1, 1), (1, 1), 1, 1, False, True),
    ("mask_strided", 2, 4, 6, 5, 4, (2, 3), (2, 1), (0, 1), (1, 2), 2, 2, True, False),
    ("groups", 1, 6, 4, 4, 6, (3, 2), (1, 2), (2, 0), (1, 1), 3, 3, True, True),
):
    x = torch.randn(n, c, h, w)
    weight = torch.randn(oc, c // group, *k)
    oh = (h + 2 * pad[0] - dil[0] * (k[0] - 1) - 1) // stride[0] + 1
    ow = (w + 2 * pad[1] - dil[1] * (k[1] - 1) - 1) // stride[1] + 1
    # Offsets of a few pixels, so samples cross pixel and image borders.
    offset = torch.randn(n, 2 * offg * k[0] * k[1], oh, ow) * 1.5
    mask = torch.rand(n, offg * k[0] * k[1], oh, ow) if with_mask else None
    bias = torch.randn(oc) if with_bias else None
    y = deform_conv2d(x, offset, weight, bias, stride=stride, padding=pad, dilation=dil, mask=mask)
    inputs = [x, weight, offset]
    if with_bias or with_mask:
        inputs.append(bias if with_bias else torch.zeros(oc))
    if with_mask:
        inputs.append(mask)
    cases.append(Case("deformconv/" + name, "DeformConv", inputs, [y], opset=19, group=group, offset_group=offg,
                      strides=list(stride), pads=[pad[0], pad[1], pad[0], pad[1]], dilations=list(dil),
                      kernel_shape=list(k)))
write("onnx/testdata/golden_deform.json", cases)
