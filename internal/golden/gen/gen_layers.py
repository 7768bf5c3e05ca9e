"""Golden values for the nn layers of nn/layers_*.go.

Writes nn/testdata/golden_layers.json, checked by nn/layers_test.go.

Most cases come from module_case: a float64 torch module with random
parameters runs forward (in training or evaluation mode) and backward. A
case's inputs are the module inputs, then the parameters, then the buffers
before the call; its outputs are the module output, then the buffers after
the call. Grads hold the gradients of the inputs and parameters (null for
buffers). Attrs give the constructor options, and:

  nx      number of module inputs
  params  parameter names (state-dict order), matching the inputs after nx
  buffers buffer names, matching the remaining inputs and outputs
  keys    the module's state_dict() keys in order
  repr    repr(module)
  train   whether the module ran in training mode

RMSNorm is not in torch 1.13: a reference module defines it as
x / sqrt(mean(x**2, trailing dims) + eps) * weight.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from golden import Case, seed, write  # noqa: E402

F64 = torch.float64


class RMSNorm(nn.Module):
    """Reference RMSNorm (torch.nn.RMSNorm appeared in PyTorch 2.4)."""

    def __init__(self, shape, eps=None, elementwise_affine=True):
        super().__init__()
        self.shape = tuple(shape)
        self.eps = eps
        if elementwise_affine:
            self.weight = nn.Parameter(torch.ones(self.shape))
        else:
            self.register_parameter("weight", None)

    def forward(self, x):
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        dims = tuple(range(-len(self.shape), 0))
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
        return y * self.weight if self.weight is not None else y

    def extra_repr(self):
        return "%s, eps=%s, elementwise_affine=%s" % (self.shape, self.eps, self.weight is not None)


def module_case(name, op, mod, xs, train=True, randomize=True, **attrs):
    mod = mod.double()
    mod.train(train)
    if randomize:
        with torch.no_grad():
            for p in mod.parameters():
                p.copy_(torch.randn_like(p) * 0.5 + 1)
    pnames = [n for n, _ in mod.named_parameters()]
    params = [p for _, p in mod.named_parameters()]
    bnames = [n for n, _ in mod.named_buffers()]
    before = [b.detach().clone() for _, b in mod.named_buffers()]
    keys = list(mod.state_dict().keys())
    rep = repr(mod)
    xin = []
    for x in xs:
        x = x.detach().clone()
        if x.is_floating_point():
            x.requires_grad_(True)
        xin.append(x)
    y = mod(*xin)
    gout = torch.randn(y.shape, dtype=y.dtype)
    y.backward(gout)
    after = [b.detach().clone() for _, b in mod.named_buffers()]
    grads = []
    for v in xin + params:
        if not v.requires_grad:
            grads.append(None)
        elif v.grad is None:
            grads.append(torch.zeros_like(v))
        else:
            grads.append(v.grad)
    grads += [None] * len(before)
    gouts = [gout] + [torch.zeros_like(b) for b in after]
    return Case(
        name,
        op,
        xin + [p.detach() for p in params] + before,
        [y] + after,
        grads=grads,
        grad_outputs=gouts,
        nx=len(xs),
        params=pnames,
        buffers=bnames,
        keys=keys,
        repr=rep,
        train=train,
        **attrs
    )


def rand(*shape):
    return torch.randn(*shape, dtype=F64)


def norm_cases():
    cases = []
    seed(1)
    for train in (True, False):
        mode = "train" if train else "eval"
        for affine in (True, False):
            for track in (True, False):
                tag = "%s/affine=%d/track=%d" % (mode, affine, track)
                m = nn.BatchNorm1d(3, affine=affine, track_running_stats=track)
                if track:
                    m.running_mean.copy_(torch.randn(3) * 0.3)
                    m.running_var.copy_(torch.rand(3) + 0.5)
                cases.append(module_case("batchnorm1d/2d/" + tag, "batchnorm1d", m, [rand(5, 3)], train,
                                         c=3, affine=affine, track=track))
        m = nn.BatchNorm2d(3, eps=1e-3, momentum=0.3)
        cases.append(module_case("batchnorm2d/" + mode, "batchnorm2d", m, [rand(2, 3, 4, 3)], train,
                                 c=3, eps=1e-3, momentum=0.3, affine=True, track=True))
        m = nn.BatchNorm3d(2, momentum=None)
        cases.append(module_case("batchnorm3d/cumulative/" + mode, "batchnorm3d", m, [rand(2, 2, 3, 2, 2)], train,
                                 c=2, cumulative=True, affine=True, track=True))
    m = nn.BatchNorm1d(4)
    cases.append(module_case("batchnorm1d/3d_input", "batchnorm1d", m, [rand(3, 4, 5)], True,
                             c=4, affine=True, track=True))

    for shape, affine in (((6,), True), ((3, 4), True), ((4,), False)):
        m = nn.LayerNorm(shape, eps=1e-4 if affine else 1e-5, elementwise_affine=affine)
        cases.append(module_case("layernorm/%s/affine=%d" % ("x".join(map(str, shape)), affine), "layernorm", m,
                                 [rand(2, 5, *shape) if len(shape) == 1 else rand(2, *shape)],
                                 shape=list(shape), eps=m.eps, affine=affine))
    for affine in (True, False):
        m = nn.GroupNorm(2, 6, affine=affine)
        cases.append(module_case("groupnorm/affine=%d" % affine, "groupnorm", m, [rand(3, 6, 2, 2)],
                                 groups=2, c=6, affine=affine))

    seed(2)
    for name, cls, shape in (("instancenorm1d", nn.InstanceNorm1d, (3, 2, 5)),
                             ("instancenorm2d", nn.InstanceNorm2d, (2, 3, 3, 4))):
        for affine, track in ((False, False), (True, False), (True, True), (False, True)):
            for train in ((True, False) if track else (True,)):
                m = cls(shape[1], affine=affine, track_running_stats=track, momentum=0.2)
                if track:
                    m.running_mean.copy_(torch.randn(shape[1]) * 0.3)
                    m.running_var.copy_(torch.rand(shape[1]) + 0.5)
                cases.append(module_case("%s/affine=%d/track=%d/%s" % (name, affine, track, "train" if train else "eval"),
                                         name, m, [rand(*shape)], train, c=shape[1], affine=affine, track=track,
                                         momentum=0.2))
    m = nn.InstanceNorm2d(3, affine=True)
    cases.append(module_case("instancenorm2d/unbatched", "instancenorm2d", m, [rand(3, 4, 4)], c=3, affine=True,
                             track=False, momentum=0.1))

    seed(3)
    for shape, eps, affine in (((6,), 1e-6, True), ((2, 3), None, True), ((5,), 1e-3, False)):
        m = RMSNorm(shape, eps=eps, elementwise_affine=affine)
        cases.append(module_case("rmsnorm/%s/affine=%d" % ("x".join(map(str, shape)), affine), "rmsnorm", m,
                                 [rand(3, 4, *shape)], shape=list(shape), eps=eps or 0.0, affine=affine))
    for size, alpha, beta, k in ((2, 1e-4, 0.75, 1.0), (3, 0.5, 0.6, 2.0), (4, 1.0, 1.2, 0.5)):
        m = nn.LocalResponseNorm(size, alpha=alpha, beta=beta, k=k)
        cases.append(module_case("lrn/size=%d" % size, "lrn", m, [rand(2, 5, 3, 2)], size=size, alpha=alpha,
                                 beta=beta, k=k))
    m = nn.LocalResponseNorm(3, alpha=0.5, beta=0.6, k=2.0)
    cases.append(module_case("lrn/3d", "lrn", m, [rand(2, 5, 4)], size=3, alpha=0.5, beta=0.6, k=2.0))
    return cases


def batchnorm_steps():
    """Three training steps of BatchNorm2d, then an evaluation step."""
    cases = []
    seed(4)
    for momentum in (0.1, None):
        m = nn.BatchNorm2d(3, momentum=momentum).double()
        with torch.no_grad():
            m.weight.copy_(torch.randn(3) + 1)
            m.bias.copy_(torch.randn(3))
        xs = [rand(4, 3, 2, 2) * (i + 1) + i for i in range(3)]
        xe = rand(2, 3, 2, 2)
        w, b = m.weight.detach().clone(), m.bias.detach().clone()
        m.train()
        for x in xs:
            m(x)
        m.eval()
        y = m(xe)
        cases.append(Case("batchnorm2d/steps/momentum=%s" % momentum, "batchnorm_steps", xs + [xe, w, b],
                          [m.running_mean, m.running_var, m.num_batches_tracked, y.detach()],
                          cumulative=momentum is None))
    return cases


def main():
    cases = norm_cases() + batchnorm_steps()
    write("nn/testdata/golden_layers.json", cases)


if __name__ == "__main__":
    main()
