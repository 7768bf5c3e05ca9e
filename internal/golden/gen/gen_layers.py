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
    pbefore = [p.detach().clone() for p in params]
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
        xin + pbefore + before,
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


def conv_cases():
    cases = []
    seed(5)
    for name, kw, shape in (("pad1", dict(padding=1), (2, 2, 7)),
                            ("strided_groups", dict(stride=2, dilation=2, groups=2, bias=False), (2, 4, 9))):
        cin = shape[1]
        m = nn.Conv1d(cin, 4 if cin == 2 else 2, 3, **kw)
        cases.append(module_case("conv1d/" + name, "conv1d", m, [rand(*shape)], cin=cin, cout=m.out_channels, k=3,
                                 stride=m.stride[0], padding=m.padding[0], dilation=m.dilation[0], groups=m.groups,
                                 bias=m.bias is not None))
    for name, kw, shape in (("stride_outpad", dict(stride=2, padding=1, output_padding=1), (2, 3, 3, 3)),
                            ("groups_dilation", dict(groups=2, bias=False, dilation=(1, 2)), (1, 2, 3, 2))):
        cin = shape[1]
        m = nn.ConvTranspose2d(cin, 4, (3, 3) if cin == 3 else (2, 3), **kw)
        cases.append(module_case("convtranspose2d/" + name, "convtranspose2d", m, [rand(*shape)], cin=cin, cout=4,
                                 kernel=list(m.kernel_size), stride=list(m.stride), padding=list(m.padding),
                                 output_padding=list(m.output_padding), dilation=list(m.dilation), groups=m.groups,
                                 bias=m.bias is not None))
    for name, kw, shape, cout in (("nobias", dict(bias=False), (2, 2, 4), 3),
                                  ("stride_groups", dict(stride=2, padding=1, output_padding=1, groups=2), (1, 2, 5), 4)):
        m = nn.ConvTranspose1d(shape[1], cout, 3, **kw)
        cases.append(module_case("convtranspose1d/" + name, "convtranspose1d", m, [rand(*shape)], cin=shape[1],
                                 cout=cout, k=3, stride=m.stride[0], padding=m.padding[0],
                                 output_padding=m.output_padding[0], dilation=m.dilation[0], groups=m.groups,
                                 bias=m.bias is not None))
    seed(6)
    for name, m, shape in (("k2", nn.AvgPool2d(2), (2, 3, 4, 5)),
                           ("k23_pad_nocount", nn.AvgPool2d((2, 3), stride=1, padding=1, count_include_pad=False),
                            (1, 2, 4, 5)),
                           ("k3_pad_count", nn.AvgPool2d(3, stride=2, padding=1), (1, 2, 5, 5))):
        k = m.kernel_size if isinstance(m.kernel_size, tuple) else (m.kernel_size,) * 2
        st = m.stride if isinstance(m.stride, tuple) else (m.stride,) * 2
        pd = m.padding if isinstance(m.padding, tuple) else (m.padding,) * 2
        cases.append(module_case("avgpool2d/" + name, "avgpool2d", m, [rand(*shape)], kernel=list(k), stride=list(st),
                                 padding=list(pd), count_include_pad=m.count_include_pad))
    for size, shape in (((2, 3), (2, 2, 5, 7)), ((3, 3), (1, 2, 4, 4)), ((1, 1), (2, 3, 3, 2))):
        cases.append(module_case("adaptiveavgpool2d/%dx%d" % size, "adaptiveavgpool2d",
                                 nn.AdaptiveAvgPool2d(size if size[0] != size[1] else size[0]), [rand(*shape)],
                                 size=list(size)))
        cases.append(module_case("adaptivemaxpool2d/%dx%d" % size, "adaptivemaxpool2d",
                                 nn.AdaptiveMaxPool2d(size if size[0] != size[1] else size[0]), [rand(*shape)],
                                 size=list(size)))
    for name, m, shape in (("k3s2p1", nn.MaxPool1d(3, 2, 1), (2, 3, 8)), ("k2", nn.MaxPool1d(2), (2, 3, 7)),
                           ("k2_ceil_dil", nn.MaxPool1d(2, 2, dilation=2, ceil_mode=True), (1, 2, 8))):
        cases.append(module_case("maxpool1d/" + name, "maxpool1d", m, [rand(*shape)], kernel=m.kernel_size,
                                 stride=m.stride, padding=m.padding, dilation=m.dilation, ceil_mode=m.ceil_mode))
    for name, m, shape in (("k3", nn.AvgPool1d(3), (2, 3, 9)),
                           ("k3s2p1", nn.AvgPool1d(3, 2, 1), (2, 2, 8)),
                           ("k3s2p1_nocount", nn.AvgPool1d(3, 2, 1, count_include_pad=False), (2, 2, 8))):
        cases.append(module_case("avgpool1d/" + name, "avgpool1d", m, [rand(*shape)], kernel=m.kernel_size[0],
                                 stride=m.stride[0], padding=m.padding[0], count_include_pad=m.count_include_pad))
    return cases


def misc_cases():
    cases = []
    seed(7)
    ids = torch.tensor([[0, 3, 3, 9], [1, 0, 5, 3]])
    cases.append(module_case("embedding/padding", "embedding", nn.Embedding(10, 3, padding_idx=0), [ids],
                             num=10, dim=3, padding_idx=0))
    cases.append(module_case("embedding/negative_padding", "embedding", nn.Embedding(10, 3, padding_idx=-1), [ids],
                             num=10, dim=3, padding_idx=-1))
    cases.append(module_case("embedding/plain", "embedding", nn.Embedding(10, 3), [ids], num=10, dim=3))
    cases.append(module_case("embedding/max_norm", "embedding", nn.Embedding(10, 3, max_norm=1.0), [ids],
                             num=10, dim=3, max_norm=1.0))
    cases.append(module_case("embedding/max_norm_p1", "embedding", nn.Embedding(10, 3, max_norm=1.5, norm_type=1.0),
                             [ids], num=10, dim=3, max_norm=1.5, norm_type=1.0))
    seed(8)
    cases.append(module_case("bilinear/bias", "bilinear", nn.Bilinear(3, 4, 5), [rand(6, 3), rand(6, 4)],
                             in1=3, in2=4, out=5, bias=True))
    cases.append(module_case("bilinear/nobias_3d", "bilinear", nn.Bilinear(3, 4, 2, bias=False),
                             [rand(2, 3, 3), rand(2, 3, 4)], in1=3, in2=4, out=2, bias=False))
    cases.append(module_case("unflatten/1", "unflatten", nn.Unflatten(1, (2, 3)), [rand(4, 6, 2)], dim=1, sizes=[2, 3]))
    cases.append(module_case("unflatten/infer", "unflatten", nn.Unflatten(-1, (2, -1)), [rand(3, 8)], dim=-1,
                             sizes=[2, -1]))
    cases.append(module_case("identity", "identity", nn.Identity(), [rand(2, 3)]))
    for name, m, shape, mode, value, pad in (
        ("zeropad2d", nn.ZeroPad2d((1, 2, 0, 1)), (2, 2, 3, 3), "zero", 0.0, [1, 2, 0, 1]),
        ("zeropad2d_int", nn.ZeroPad2d(1), (1, 2, 2, 3), "zero", 0.0, [1]),
        ("constantpad1d", nn.ConstantPad1d((1, 2), 3.5), (2, 3, 4), "constant1d", 3.5, [1, 2]),
        ("constantpad2d", nn.ConstantPad2d((2, 0, 1, 1), -1.0), (1, 2, 3, 3), "constant2d", -1.0, [2, 0, 1, 1]),
        ("constantpad3d", nn.ConstantPad3d(1, 0.5), (1, 1, 2, 2, 2), "constant3d", 0.5, [1]),
        ("reflectionpad2d", nn.ReflectionPad2d((1, 1, 2, 0)), (2, 2, 3, 4), "reflect2d", 0.0, [1, 1, 2, 0]),
        ("reflectionpad1d", nn.ReflectionPad1d(2), (2, 3, 5), "reflect1d", 0.0, [2]),
        ("replicationpad2d", nn.ReplicationPad2d(2), (1, 2, 3, 3), "replicate2d", 0.0, [2]),
        ("replicationpad1d", nn.ReplicationPad1d((0, 3)), (2, 2, 4), "replicate1d", 0.0, [0, 3]),
    ):
        cases.append(module_case("pad/" + name, "pad", m, [rand(*shape)], mode=mode, value=value, pad=pad))
    cases.append(module_case("pixelshuffle/2", "pixelshuffle", nn.PixelShuffle(2), [rand(2, 8, 2, 3)], r=2))
    cases.append(module_case("pixelshuffle/3_unbatched", "pixelshuffle", nn.PixelShuffle(3), [rand(9, 2, 2)], r=3))
    cases.append(module_case("pixelunshuffle/2", "pixelunshuffle", nn.PixelUnshuffle(2), [rand(2, 2, 4, 6)], r=2))
    seed(9)
    for name, kw, shape in (
        ("nearest/scale2", dict(scale_factor=2), (1, 2, 3, 4)),
        ("nearest/size", dict(size=(5, 7)), (2, 1, 3, 4)),
        ("nearest/scale1.5", dict(scale_factor=1.5), (1, 2, 3, 5)),
        ("nearest/down", dict(size=(2, 3)), (1, 1, 5, 7)),
        ("bilinear/size", dict(size=(5, 7), mode="bilinear"), (2, 2, 3, 4)),
        ("bilinear/size_align", dict(size=(5, 7), mode="bilinear", align_corners=True), (2, 2, 3, 4)),
        ("bilinear/scale2", dict(scale_factor=2, mode="bilinear"), (1, 2, 3, 3)),
        ("bilinear/scale2_align", dict(scale_factor=2, mode="bilinear", align_corners=True), (1, 2, 3, 3)),
        ("bilinear/down", dict(size=(2, 3), mode="bilinear"), (1, 2, 5, 7)),
    ):
        m = nn.Upsample(**kw)
        sf = kw.get("scale_factor", 0.0)
        cases.append(module_case("upsample/" + name, "upsample", m, [rand(*shape)], size=list(kw.get("size", (0, 0))),
                                 scale=float(sf), mode=kw.get("mode", "nearest"),
                                 align_corners=kw.get("align_corners", False)))
    return cases


class Containers(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Conv1d(2, 3, 3), nn.ReLU(), nn.LayerNorm(3)])
        self.heads = nn.ModuleDict({"b": nn.Bilinear(3, 3, 1), "a": nn.Embedding(4, 3)})
        self.norm = nn.BatchNorm1d(3)


def container_cases():
    m = Containers()
    return [Case("containers", "containers", [], [], keys=list(m.state_dict().keys()),
                 layers_repr=repr(m.layers), heads_repr=repr(m.heads))]


def main():
    cases = norm_cases() + batchnorm_steps() + conv_cases() + misc_cases() + container_cases()
    write("nn/testdata/golden_layers.json", cases)


if __name__ == "__main__":
    main()
