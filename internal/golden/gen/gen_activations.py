"""Golden values for the activation functions (autograd/ops_activation.go).

Writes autograd/testdata/golden_activations.json. Each case runs one
torch.nn.functional activation on an input whose first entries are the
function's special points (kinks, thresholds, large magnitudes) followed by
random values, and records the output and the input gradients for a random
upstream gradient.
"""

import torch
import torch.nn.functional as F

from golden import autograd_case, seed, write


def inp(specials, shape=(4, 6), scale=3.0, dtype=torch.float64):
    """Random normal values times scale, the first ones replaced by specials."""
    n = 1
    for s in shape:
        n *= s
    r = torch.randn(n, dtype=torch.float64) * scale
    r[: len(specials)] = torch.tensor(specials, dtype=torch.float64)
    return r.reshape(shape).to(dtype)


def main():
    cases = []

    def add(name, op, fn, specials, extra=(), shape=(4, 6), dtype=torch.float64, **attrs):
        seed(len(cases))
        x = inp(specials, shape=shape, dtype=dtype)
        cases.append(autograd_case(name, op, fn, [x, *extra], **attrs))

    f32 = torch.float32

    add("relu6", "relu6", F.relu6, [0, 6, -1e-3, 6.001, -10, 10, 3, -0.0])

    for slope in (0.01, 0.2):
        add("leaky_relu/%g" % slope, "leaky_relu",
            lambda x, s=slope: F.leaky_relu(x, s), [0, -2, 2, -1e6], negative_slope=slope)

    seed(100)
    w3 = torch.rand(3, dtype=torch.float64) - 0.5
    add("prelu/channels", "prelu", F.prelu, [0, -2, 2, -0.5], extra=[w3], shape=(2, 3, 4))
    add("prelu/single", "prelu", F.prelu, [0, -2, 2], extra=[torch.tensor([0.25], dtype=torch.float64)])
    add("prelu/single_1d", "prelu", F.prelu, [0, -2, 2], extra=[torch.tensor([0.25], dtype=torch.float64)],
        shape=(7,))

    for alpha in (1.0, 0.5):
        add("elu/%g" % alpha, "elu", lambda x, a=alpha: F.elu(x, a),
            [0, -50, 50, 1000, -1000, -1e-8], alpha=alpha)
    add("elu/f32", "elu", F.elu, [0, -50, 50, 1000, -1000], dtype=f32, alpha=1.0)

    add("selu", "selu", F.selu, [0, -50, 50, 1000, -1000])

    for alpha in (1.0, 2.0):
        add("celu/%g" % alpha, "celu", lambda x, a=alpha: F.celu(x, a),
            [0, -50, 50, 1000, -1000], alpha=alpha)

    for approx in ("none", "tanh"):
        add("gelu/" + approx, "gelu", lambda x, a=approx: F.gelu(x, approximate=a),
            [0, -10, 10, 50, -50, 1e-3], approximate=approx)
        add("gelu/%s/f32" % approx, "gelu", lambda x, a=approx: F.gelu(x, approximate=a),
            [0, -10, 10, 50, -50], dtype=f32, approximate=approx)

    add("silu", "silu", F.silu, [0, -100, 100, -800])
    add("mish", "mish", F.mish, [0, -100, 30, 100, -800])

    kinks3 = [0, -3, 3, -3.0001, 3.0001, 10, -10, -2.9999, 2.9999]
    add("hardsigmoid", "hardsigmoid", F.hardsigmoid, kinks3)
    add("hardswish", "hardswish", F.hardswish, kinks3)
    add("hardswish/f32", "hardswish", F.hardswish, kinks3, dtype=f32)

    add("hardtanh/default", "hardtanh", F.hardtanh, [-1, 1, 0, -2, 2, -0.999, 0.999],
        min_val=-1.0, max_val=1.0)
    add("hardtanh/custom", "hardtanh", lambda x: F.hardtanh(x, -2.0, 0.5), [-2, 0.5, 0, -3, 3],
        min_val=-2.0, max_val=0.5)

    add("softplus/default", "softplus", F.softplus,
        [0, 20, 20.000001, 19.99, -50, 100, 1000, -1000, -800], beta=1.0, threshold=20.0)
    add("softplus/beta2", "softplus", lambda x: F.softplus(x, beta=2, threshold=5),
        [2.5, 2.4999, 2.5001, 1000, -1000, 0], beta=2.0, threshold=5.0)
    add("softplus/f32", "softplus", F.softplus, [0, 20, 19.99, -50, 100, 1000, -1000], dtype=f32,
        beta=1.0, threshold=20.0)

    add("softsign", "softsign", F.softsign, [0, 1e6, -1e6, 1, -1])

    add("softmin/axis1", "softmin", lambda x: F.softmin(x, dim=1), [0, 1000, -1000], axis=1)
    add("softmin/axis0", "softmin", lambda x: F.softmin(x, dim=0), [0, 1, 2], axis=0)
    add("softmin/axis-1_3d", "softmin", lambda x: F.softmin(x, dim=-1), [0, 1, 2], shape=(2, 3, 4),
        axis=-1)

    add("threshold", "threshold", lambda x: F.threshold(x, 0.5, -2.0), [0.5, 0.4999, 0.5001, 0],
        threshold=0.5, value=-2.0)

    add("logsigmoid", "logsigmoid", F.logsigmoid, [0, 100, -100, 1000, -1000, 1e-3, -1e-3, 40, -40])
    add("logsigmoid/f32", "logsigmoid", F.logsigmoid, [0, 100, -100, 1000, -1000], dtype=f32)

    add("glu/last", "glu", F.glu, [0, 1000, -1000], axis=-1)
    add("glu/axis0", "glu", lambda x: F.glu(x, dim=0), [0, 1, 2], axis=0)

    add("tanhshrink", "tanhshrink", F.tanhshrink, [0, 20, -20, 1e-4])

    for lam in (0.5, 0.0):
        add("softshrink/%g" % lam, "softshrink", lambda x, l=lam: F.softshrink(x, l),
            [lam, -lam, 0, lam + 1e-5, -lam - 1e-5, lam - 1e-5], lambd=lam)
        add("hardshrink/%g" % lam, "hardshrink", lambda x, l=lam: F.hardshrink(x, l),
            [lam, -lam, 0, lam + 1e-5, -lam - 1e-5, lam - 1e-5], lambd=lam)

    write("autograd/testdata/golden_activations.json", cases)


if __name__ == "__main__":
    main()
