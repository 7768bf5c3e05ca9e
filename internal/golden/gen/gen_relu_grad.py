"""Golden values for tensor.ReluGrad (torch.ops.aten.threshold_backward with
threshold 0): the gradient of ReLU from its output gradient and its output.

Writes tensor/testdata/golden_relu_grad.json. Each case has inputs
[grad, out] and one output.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from golden import Case, seed, write  # noqa: E402


def rg(g, out):
    return torch.ops.aten.threshold_backward(g, out, 0)


def main():
    cases = []
    for dt, name in ((torch.float32, "f32"), (torch.float64, "f64")):
        seed(1)
        x = torch.randn(4, 5, dtype=dt)
        out = torch.relu(x)
        g = torch.randn(4, 5, dtype=dt)
        cases.append(Case("dense/" + name, "relu_grad", [g, out], [rg(g, out)]))

        seed(2)
        out = torch.tensor([0.0, 1.5, 0.0, 2.0, 0.0, 3.0], dtype=dt)
        g = torch.tensor([float("nan"), 2.0, float("inf"), -1.0, 4.0, float("nan")], dtype=dt)
        cases.append(Case("nonfinite/" + name, "relu_grad", [g, out], [rg(g, out)]))

        # Ember is given g transposed (a non-contiguous view); the fixture
        # holds the dense values the view shows.
        seed(3)
        out = torch.relu(torch.randn(3, 2, dtype=dt))
        gt = torch.randn(2, 3, dtype=dt)
        cases.append(Case("transposed/" + name, "relu_grad", [gt, out], [rg(gt.t(), out)], transpose_grad=True))
    write("tensor/testdata/golden_relu_grad.json", cases)


if __name__ == "__main__":
    main()
