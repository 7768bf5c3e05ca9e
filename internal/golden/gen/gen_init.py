"""Golden values for the deterministic initializers of package nn.

Writes nn/testdata/golden_init.json, replayed by nn/init_more_test.go.

Cases:
    op "calculate_gain": attrs nonlinearity (str), param (float, optional);
        outputs: [gain] (scalar float64) from torch.nn.init.calculate_gain.
    op "eye": attrs shape; outputs: [tensor after torch.nn.init.eye_].
    op "dirac": attrs shape, groups; outputs: [tensor after dirac_].
    op "constant": attrs shape, value; outputs: [tensor after constant_].
"""

import os
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from golden import Case, write  # noqa: E402


def gains():
    cases = []
    for name in ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]:
        g = torch.nn.init.calculate_gain(name)
        cases.append(Case("gain/" + name, "calculate_gain", [], [torch.tensor(g, dtype=torch.float64)],
                          nonlinearity=name))
    for p in [0.0, 0.2, 1.0, 3.5]:
        g = torch.nn.init.calculate_gain("leaky_relu", p)
        cases.append(Case("gain/leaky_relu_%g" % p, "calculate_gain", [], [torch.tensor(g, dtype=torch.float64)],
                          nonlinearity="leaky_relu", param=p))
    return cases


def fills():
    cases = []
    for shape in [(3, 3), (3, 5), (4, 2)]:
        t = torch.nn.init.eye_(torch.empty(*shape, dtype=torch.float64))
        cases.append(Case("eye/%s" % "x".join(map(str, shape)), "eye", [], [t], shape=list(shape)))
    for shape, groups in [((4, 2, 3), 1), ((3, 5, 2), 1), ((6, 3, 3, 3), 1), ((6, 3, 3, 3), 2), ((6, 1, 2, 4), 3),
                          ((4, 2, 3, 3, 3), 2), ((2, 4, 5, 5), 1)]:
        t = torch.nn.init.dirac_(torch.full(shape, 7.0, dtype=torch.float64), groups)
        cases.append(Case("dirac/%s_g%d" % ("x".join(map(str, shape)), groups), "dirac", [], [t],
                          shape=list(shape), groups=groups))
    for shape, v in [((2, 3), 0.25), ((4,), -1.5)]:
        t = torch.nn.init.constant_(torch.empty(*shape, dtype=torch.float64), v)
        cases.append(Case("constant/%s" % "x".join(map(str, shape)), "constant", [], [t], shape=list(shape), value=v))
    return cases


def main():
    write("nn/testdata/golden_init.json", gains() + fills())


if __name__ == "__main__":
    main()
