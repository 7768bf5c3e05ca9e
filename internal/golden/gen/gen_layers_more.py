"""Golden values for the volumetric, extra pooling, EmbeddingBag and RReLU
layers of nn/layers_3d.go, nn/layers_pool_more.go, nn/embedding_bag.go and
nn/rrelu.go.

Writes nn/testdata/golden_layers_more.json, checked by nn/layers_3d_test.go.

Each case runs a float64 torch module (parameters redrawn from
N(1, 0.25)) forward and backward. Inputs are the module inputs, then the
parameters; outputs are the module output. Grads hold the gradients of the
inputs (null for integer inputs and for inputs listed in attr "nograd")
and of the parameters. Attrs give the constructor options, and:

  nx      number of module inputs
  params  parameter names (state-dict order), matching the inputs after nx
  keys    the module's state_dict() keys in order
  repr    repr(module)
  train   whether the module ran in training mode
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


def module_case(name, op, mod, xs, train=False, nograd=(), **attrs):
    mod = mod.double()
    mod.train(train)
    with torch.no_grad():
        for p in mod.parameters():
            p.copy_(torch.randn_like(p) * 0.5 + 1)
    pnames = [n for n, _ in mod.named_parameters()]
    params = [p for _, p in mod.named_parameters()]
    pbefore = [p.detach().clone() for p in params]
    keys = list(mod.state_dict().keys())
    xin = []
    for i, x in enumerate(xs):
        x = x.detach().clone()
        if x.is_floating_point() and i not in nograd:
            x.requires_grad_(True)
        xin.append(x)
    y = mod(*xin)
    gout = torch.randn(y.shape, dtype=y.dtype)
    y.backward(gout)
    grads = []
    for v in xin + params:
        if not v.requires_grad:
            grads.append(None)
        elif v.grad is None:
            grads.append(torch.zeros_like(v))
        else:
            grads.append(v.grad)
    return Case(name, op, xin + pbefore, [y], grads=grads, grad_outputs=[gout],
                nx=len(xs), params=pnames, keys=keys, repr=repr(mod), train=train, **attrs)


def sz(v):
    """A size as a PyTorch user passes it: an int when all entries agree
    (Ember prints it so), else a tuple."""
    return v[0] if all(e == v[0] for e in v) else tuple(v)


def rand(*shape):
    return torch.randn(*shape, dtype=F64)


def conv_cases():
    cases = []
    seed(1)
    for tag, kw, shape in [
        ("basic", dict(kernel=[2, 3, 2], stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1], groups=1, bias=True), (2, 2, 4, 5, 4)),
        ("strided_padded", dict(kernel=[2, 3, 2], stride=[2, 1, 2], padding=[1, 1, 0], dilation=[1, 1, 2], groups=1, bias=True), (2, 2, 5, 5, 6)),
        ("groups_dilated_nobias", dict(kernel=[2, 2, 3], stride=[1, 2, 1], padding=[1, 0, 1], dilation=[2, 1, 1], groups=2, bias=False), (1, 4, 5, 4, 4)),
        ("unbatched", dict(kernel=[3, 2, 2], stride=[1, 1, 1], padding=[1, 1, 1], dilation=[1, 1, 1], groups=1, bias=True), (2, 3, 3, 3)),
    ]:
        cin = shape[-4]
        m = nn.Conv3d(cin, 4, tuple(kw["kernel"]), stride=tuple(kw["stride"]), padding=tuple(kw["padding"]),
                      dilation=tuple(kw["dilation"]), groups=kw["groups"], bias=kw["bias"])
        cases.append(module_case("conv3d/" + tag, "conv3d", m, [rand(*shape)], cin=cin, cout=4, **kw))
    for mode in ("reflect", "replicate", "circular"):
        m = nn.Conv3d(2, 3, (2, 3, 2), stride=(1, 2, 1), padding=(1, 1, 1), padding_mode=mode)
        cases.append(module_case("conv3d/padding_mode_" + mode, "conv3d", m, [rand(1, 2, 3, 5, 4)], cin=2, cout=3,
                                 kernel=[2, 3, 2], stride=[1, 2, 1], padding=[1, 1, 1], dilation=[1, 1, 1], groups=1,
                                 bias=True, padding_mode=mode))
        m = nn.Conv2d(2, 4, (3, 2), stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=2, padding_mode=mode)
        cases.append(module_case("conv2d/padding_mode_" + mode, "conv2d", m, [rand(2, 2, 5, 4)], cin=2, cout=4,
                                 kernel=[3, 2], stride=[2, 1], padding=[1, 1], dilation=[1, 2], groups=2,
                                 bias=True, padding_mode=mode))
        m = nn.Conv1d(3, 2, 3, stride=2, padding=2, bias=False, padding_mode=mode)
        cases.append(module_case("conv1d/padding_mode_" + mode, "conv1d", m, [rand(2, 3, 6)], cin=3, cout=2,
                                 kernel=3, stride=2, padding=2, dilation=1, groups=1, bias=False, padding_mode=mode))
    for tag, kw, shape in [
        ("basic", dict(kernel=[2, 3, 2], stride=[1, 1, 1], padding=[0, 0, 0], output_padding=[0, 0, 0], dilation=[1, 1, 1], groups=1, bias=True), (2, 2, 3, 4, 3)),
        ("strided_padded", dict(kernel=[3, 2, 3], stride=[2, 1, 2], padding=[1, 0, 1], output_padding=[1, 0, 1], dilation=[1, 1, 1], groups=1, bias=True), (2, 2, 3, 3, 4)),
        ("groups_dilated_nobias", dict(kernel=[2, 2, 2], stride=[3, 2, 1], padding=[1, 1, 0], output_padding=[1, 0, 0], dilation=[2, 1, 2], groups=2, bias=False), (1, 4, 3, 3, 3)),
        ("unbatched", dict(kernel=[2, 2, 2], stride=[2, 2, 2], padding=[0, 0, 0], output_padding=[0, 0, 0], dilation=[1, 1, 1], groups=1, bias=True), (2, 2, 3, 2)),
    ]:
        cin = shape[-4]
        m = nn.ConvTranspose3d(cin, 4, tuple(kw["kernel"]), stride=tuple(kw["stride"]), padding=tuple(kw["padding"]),
                               output_padding=tuple(kw["output_padding"]), dilation=tuple(kw["dilation"]),
                               groups=kw["groups"], bias=kw["bias"])
        cases.append(module_case("convtranspose3d/" + tag, "convtranspose3d", m, [rand(*shape)], cin=cin, cout=4, **kw))
    return cases


def pool_cases():
    cases = []
    seed(2)
    for tag, kw, shape in [
        ("basic", dict(kernel=[2, 2, 2], stride=[0, 0, 0], padding=[0, 0, 0], dilation=[1, 1, 1], ceil=False), (2, 2, 4, 4, 6)),
        ("padded_dilated", dict(kernel=[3, 2, 3], stride=[2, 1, 2], padding=[1, 1, 1], dilation=[1, 2, 1], ceil=False), (1, 2, 5, 6, 7)),
        ("ceil", dict(kernel=[2, 3, 2], stride=[2, 2, 2], padding=[0, 1, 1], dilation=[1, 1, 1], ceil=True), (2, 1, 5, 6, 5)),
        ("unbatched", dict(kernel=[2, 2, 1], stride=[1, 2, 1], padding=[0, 0, 0], dilation=[1, 1, 1], ceil=False), (2, 3, 4, 3)),
    ]:
        stride = None if kw["stride"] == [0, 0, 0] else sz(kw["stride"])
        m = nn.MaxPool3d(sz(kw["kernel"]), stride=stride, padding=sz(kw["padding"]),
                         dilation=sz(kw["dilation"]), ceil_mode=kw["ceil"])
        cases.append(module_case("maxpool3d/" + tag, "maxpool3d", m, [rand(*shape)], **kw))
    for tag, kw, shape in [
        ("basic", dict(kernel=[2, 2, 2], stride=[0, 0, 0], padding=[0, 0, 0], ceil=False, count_include_pad=True), (2, 2, 4, 4, 6)),
        ("padded_include", dict(kernel=[3, 2, 3], stride=[2, 1, 2], padding=[1, 1, 1], ceil=False, count_include_pad=True), (1, 2, 5, 6, 7)),
        ("padded_exclude", dict(kernel=[3, 2, 3], stride=[2, 1, 2], padding=[1, 1, 1], ceil=False, count_include_pad=False), (1, 2, 5, 6, 7)),
        ("ceil_include", dict(kernel=[2, 3, 2], stride=[2, 2, 2], padding=[1, 1, 0], ceil=True, count_include_pad=True), (2, 1, 5, 6, 5)),
        ("ceil_exclude", dict(kernel=[2, 3, 2], stride=[2, 2, 2], padding=[1, 1, 0], ceil=True, count_include_pad=False), (2, 1, 5, 6, 5)),
    ]:
        stride = None if kw["stride"] == [0, 0, 0] else sz(kw["stride"])
        m = nn.AvgPool3d(sz(kw["kernel"]), stride=stride, padding=sz(kw["padding"]),
                         ceil_mode=kw["ceil"], count_include_pad=kw["count_include_pad"])
        cases.append(module_case("avgpool3d/" + tag, "avgpool3d", m, [rand(*shape)], **kw))
    for name, cls in (("reflectionpad3d", nn.ReflectionPad3d), ("replicationpad3d", nn.ReplicationPad3d)):
        for tag, pad, shape in [("uniform", [1], (2, 2, 3, 3, 4)), ("per_side", [1, 2, 0, 1, 2, 1], (1, 2, 3, 4, 3)),
                                ("unbatched", [2, 0, 1, 1, 0, 2], (2, 3, 3, 4))]:
            m = cls(pad[0] if len(pad) == 1 else tuple(pad))
            cases.append(module_case("%s/%s" % (name, tag), name, m, [rand(*shape)], padding=pad))
    for out, shape in [(3, (2, 3, 7)), (4, (3, 9)), (5, (1, 2, 5))]:
        tag = "%d/%s" % (out, "x".join(map(str, shape)))
        cases.append(module_case("adaptiveavgpool1d/" + tag, "adaptiveavgpool1d", nn.AdaptiveAvgPool1d(out), [rand(*shape)], out=out))
        cases.append(module_case("adaptivemaxpool1d/" + tag, "adaptivemaxpool1d", nn.AdaptiveMaxPool1d(out), [rand(*shape)], out=out))
    for tag, p, k, s, ceil, shape in [
        ("p2", 2, 3, 0, False, (2, 3, 8)),
        ("p1.5_strided_ceil", 1.5, 3, 2, True, (2, 2, 8)),
        ("unbatched", 3, 2, 1, False, (3, 6)),
    ]:
        m = nn.LPPool1d(p, k, stride=None if s == 0 else s, ceil_mode=ceil)
        x = rand(*shape).abs() + 0.1
        cases.append(module_case("lppool1d/" + tag, "lppool1d", m, [x], p=float(p), kernel=k, stride=s, ceil=ceil))
    for tag, p, k, s, ceil, shape in [
        ("p2", 2, [2, 2], [0, 0], False, (2, 3, 6, 6)),
        ("p3_rect_strided_ceil", 3, [2, 3], [1, 2], True, (2, 2, 5, 6)),
        ("p1.5_unbatched", 1.5, [3, 2], [2, 1], False, (2, 5, 4)),
    ]:
        m = nn.LPPool2d(p, sz(k), stride=None if s == [0, 0] else sz(s), ceil_mode=ceil)
        x = rand(*shape).abs() + 0.1
        cases.append(module_case("lppool2d/" + tag, "lppool2d", m, [x], p=float(p), kernel=k, stride=s, ceil=ceil))
    for tag, k, s, pad, shape in [
        ("k2", [2, 2], [0, 0], [0, 0], (2, 3, 6, 6)),
        ("k3_s2_p1", [3, 3], [2, 2], [1, 1], (1, 2, 7, 5)),
        ("unbatched", [2, 3], [2, 3], [0, 0], (2, 4, 6)),
    ]:
        stride = tuple(k) if s == [0, 0] else tuple(s)
        _, idx = F.max_pool2d(rand(*shape), tuple(k), stride, tuple(pad), return_indices=True)
        vals = rand(*idx.shape)
        m = nn.MaxUnpool2d(tuple(k), stride=None if s == [0, 0] else tuple(s), padding=tuple(pad))
        cases.append(module_case("maxunpool2d/" + tag, "maxunpool2d", m, [vals, idx], kernel=k, stride=s, padding=pad))
    return cases


def bag_cases():
    cases = []
    seed(3)
    ids2 = torch.randint(0, 10, (3, 4))
    ids1 = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 0, 2])
    offs = torch.tensor([0, 3, 3, 7])
    for mode in ("sum", "mean", "max"):
        m = nn.EmbeddingBag(10, 3, mode=mode)
        cases.append(module_case("embeddingbag/%s/2d" % mode, "embeddingbag", m, [ids2], mode=mode))
        m = nn.EmbeddingBag(10, 3, mode=mode)
        cases.append(module_case("embeddingbag/%s/offsets_empty_bag" % mode, "embeddingbag", m, [ids1, offs], mode=mode))
        m = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=2)
        cases.append(module_case("embeddingbag/%s/padding_idx" % mode, "embeddingbag", m, [ids1, offs], mode=mode, padding_idx=2))
        m = nn.EmbeddingBag(10, 3, mode=mode, include_last_offset=True)
        cases.append(module_case("embeddingbag/%s/include_last_offset" % mode, "embeddingbag", m,
                                 [ids1, torch.tensor([0, 2, 6, 10])], mode=mode, include_last_offset=True))
    m = nn.EmbeddingBag(10, 3, mode="mean", max_norm=1.0)
    cases.append(module_case("embeddingbag/mean/max_norm", "embeddingbag", m, [ids1, offs], mode="mean", max_norm=1.0))
    m = nn.EmbeddingBag(10, 3, mode="sum", max_norm=1.5, norm_type=1.5, padding_idx=2)
    cases.append(module_case("embeddingbag/sum/max_norm_p1.5_padding_idx", "embeddingbag", m, [ids1, offs], mode="sum",
                             max_norm=1.5, norm_type=1.5, padding_idx=2))
    m = nn.EmbeddingBag(10, 3, mode="sum")
    cases.append(module_case("embeddingbag/sum/per_sample_weights", "embeddingbag", m, [ids1, offs, rand(10)],
                             nograd=(2,), mode="sum"))
    return cases


def rrelu_cases():
    cases = []
    seed(4)
    for lo, hi in [(0.125, 1.0 / 3.0), (0.1, 0.3)]:
        m = nn.RReLU(lo, hi)
        cases.append(module_case("rrelu/eval/%g_%g" % (lo, hi), "rrelu", m, [rand(3, 5)], train=False, lower=lo, upper=hi))
    return cases


if __name__ == "__main__":
    write("nn/testdata/golden_layers_more.json", conv_cases() + pool_cases() + bag_cases() + rrelu_cases())
