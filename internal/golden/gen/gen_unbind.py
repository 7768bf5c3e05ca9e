"""Golden values for autograd's Var.Unbind (autograd/ops_unbind.go).

Each case unbinds its input along ``axis`` and keeps the pieces listed in
``used`` (the others get no gradient), so the gradient covers missing
pieces as zeros.
"""

import torch

from golden import autograd_case, seed, write

cases = []
seed(0)
for name, shape, axis, used, dtype in (
    ("axis0", (4, 3, 2), 0, [0, 1, 2, 3], torch.float64),
    ("axis1", (2, 5, 3), 1, [0, 1, 2, 3, 4], torch.float64),
    ("axis_neg", (3, 2, 4), -1, [0, 1, 2, 3], torch.float64),
    ("some_unused", (2, 6, 2), 1, [4, 1, 1], torch.float64),
    ("float32", (5, 3), 0, [0, 2, 4], torch.float32),
    ("len1", (1, 4), 0, [0], torch.float64),
):
    x = torch.randn(shape, dtype=dtype)

    def fn(t, axis=axis, used=used):
        pieces = torch.unbind(t, axis)
        return tuple(pieces[i] for i in used)

    cases.append(autograd_case("unbind/" + name, "unbind", fn, [x], axis=axis, used=used))

write("autograd/testdata/golden_unbind.json", cases)
