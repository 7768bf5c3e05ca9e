"""Golden values for nn's regularization helpers.

Writes nn/testdata/golden_regularization.json, replayed by
nn/regularization_test.go. All float64.

op "renorm": inputs [w]; attrs maxnorm; outputs [torch.renorm(w, 2, 0, maxnorm)].
op "elastic_net": inputs [a, b]; attrs alpha, l1_ratio; outputs [penalty],
    alpha*(l1_ratio*sum|p| + (1-l1_ratio)/2*sum p^2), and grads as in
    golden.py (grad_outputs, grads of a and b).
op "weight_norm": a Linear(4, 3) wrapped by torch.nn.utils.weight_norm(dim).
    inputs [weight_g, weight_v (the original weight), bias, x] at
    registration; attrs dim (null for dim=None); outputs [y], grad_outputs
    [gy], grads [grad of weight_g, grad of weight_v, None, grad of x] after
    y.backward(gy).
op "spectral_norm": a Linear(5, 3) or Conv2d(2, 3, 2) wrapped by
    torch.nn.utils.spectral_norm(n_power_iterations, dim), its weight_u and
    weight_v buffers then overwritten with the fixed unit vectors u0, v0.
    inputs [weight, bias, x, u0, v0]; attrs layer ("linear", "conv2d"),
    n_power_iterations, dim, train (bool); outputs [y, weight_u, weight_v after
    the forward], grad_outputs [gy, 0, 0], grads [grad of weight_orig, None,
    grad of x, None, None].
"""

import os
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from golden import Case, seed, write  # noqa: E402

D = torch.float64


def renorm():
    cases = []
    seed(1)
    for shape, maxnorm in [((4, 3), 1.0), ((3, 2, 2), 1.5), ((5, 1), 0.3)]:
        w = torch.randn(*shape, dtype=D)
        cases.append(Case("renorm/%s" % "x".join(map(str, shape)), "renorm", [w], [torch.renorm(w, 2, 0, maxnorm)],
                          maxnorm=maxnorm))
    return cases


def elastic():
    seed(2)
    a, b = torch.randn(3, 2, dtype=D, requires_grad=True), torch.randn(4, dtype=D, requires_grad=True)
    cases = []
    for alpha, ratio in [(0.5, 0.3), (1.0, 1.0), (2.0, 0.0)]:
        a.grad, b.grad = None, None
        pen = alpha * (ratio * (a.abs().sum() + b.abs().sum()) + (1 - ratio) / 2 * ((a ** 2).sum() + (b ** 2).sum()))
        g = torch.randn((), dtype=D)
        pen.backward(g)
        cases.append(Case("elastic_net/%g_%g" % (alpha, ratio), "elastic_net", [a.detach(), b.detach()], [pen.detach()],
                          grads=[a.grad.clone(), b.grad.clone()], grad_outputs=[g], alpha=alpha, l1_ratio=ratio))
    return cases


def weight_norm():
    cases = []
    for dim in [0, 1, None]:
        seed(3)
        lin = torch.nn.Linear(4, 3).double()
        w0, b0 = lin.weight.detach().clone(), lin.bias.detach().clone()
        torch.nn.utils.weight_norm(lin, dim=dim)
        g0, v0 = lin.weight_g.detach().clone(), lin.weight_v.detach().clone()
        x = torch.randn(2, 4, dtype=D, requires_grad=True)
        y = lin(x)
        gy = torch.randn_like(y)
        y.backward(gy)
        assert torch.equal(v0, w0)
        cases.append(Case("weight_norm/dim_%s" % dim, "weight_norm", [g0, v0, b0, x.detach()], [y.detach()],
                          grads=[lin.weight_g.grad, lin.weight_v.grad, None, x.grad], grad_outputs=[gy], dim=dim))
    return cases


def spectral_norm():
    cases = []
    for layer, iters, dim, train in [("linear", 1, 0, True), ("linear", 3, 0, True), ("linear", 1, 1, True),
                                     ("linear", 1, 0, False), ("conv2d", 2, 0, True)]:
        seed(4)
        if layer == "linear":
            m = torch.nn.Linear(5, 3).double()
            x = torch.randn(2, 5, dtype=D, requires_grad=True)
        else:
            m = torch.nn.Conv2d(2, 3, 2).double()
            x = torch.randn(1, 2, 3, 3, dtype=D, requires_grad=True)
        w0, b0 = m.weight.detach().clone(), m.bias.detach().clone()
        torch.nn.utils.spectral_norm(m, n_power_iterations=iters, dim=dim)
        h = w0.shape[dim]
        u0 = torch.nn.functional.normalize(torch.randn(h, dtype=D), dim=0)
        v0 = torch.nn.functional.normalize(torch.randn(w0.numel() // h, dtype=D), dim=0)
        with torch.no_grad():
            m.weight_u.copy_(u0)
            m.weight_v.copy_(v0)
        m.train(train)
        y = m(x)
        gy = torch.randn_like(y)
        y.backward(gy)
        u1, v1 = m.weight_u.detach().clone(), m.weight_v.detach().clone()
        cases.append(Case("spectral_norm/%s_it%d_dim%d_%s" % (layer, iters, dim, "train" if train else "eval"),
                          "spectral_norm", [w0, b0, x.detach(), u0, v0], [y.detach(), u1, v1],
                          grads=[m.weight_orig.grad, None, x.grad, None, None],
                          grad_outputs=[gy, torch.zeros_like(u1), torch.zeros_like(v1)],
                          layer=layer, n_power_iterations=iters, dim=dim, train=train))
    return cases


def main():
    write("nn/testdata/golden_regularization.json", renorm() + elastic() + weight_norm() + spectral_norm())


if __name__ == "__main__":
    main()
