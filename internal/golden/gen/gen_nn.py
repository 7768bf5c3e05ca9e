"""Golden values for Ember's neural-network ops (tensor/nn*.go, autograd/ops_nn.go).

Writes tensor/testdata/golden_nn.json. Every case records the forward
outputs and, where the op is differentiable, the gradients of
sum(out * gout) with respect to its floating-point inputs (see golden.py).

Attribute conventions (read by tensor/nn_golden_test.go and
autograd/nn_golden_test.go):

- conv2d / conv1d / conv_transpose2d: inputs [x, w] or [x, w, b] (attr
  "bias" says which); attrs stride, padding, dilation, groups and, for the
  transposed convolution, output_padding. 2-d values are [h, w] pairs.
- max_pool2d: outputs [values, indices]; avg_pool2d: outputs [values];
  attrs kernel, stride, padding, dilation (max only), ceil_mode,
  count_include_pad (avg only).
- adaptive_avg_pool2d: attr out_size [oh, ow].
- softmax / log_softmax: attr axis.
- batch_norm: inputs [x, weight?, bias?, running_mean?, running_var?]
  (attrs "affine" and "running"), outputs [y] or [y, running_mean_after,
  running_var_after]; attrs training, momentum, eps.
- layer_norm: inputs [x] or [x, weight, bias]; attrs normalized_shape, eps.
- group_norm: inputs [x] or [x, weight, bias]; attrs groups, eps.
- embedding: inputs [ids, weight].
"""

import os
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from golden import Case, seed, write  # noqa: E402

D = torch.float64
S = torch.float32


def short(t):
    """Round to 3 decimals so the fixture stays small (the rounded value is
    the exact input; only outputs carry full precision)."""
    if t.is_floating_point():
        return (t * 1000).round() / 1000
    return t


def grad_case(name, op, fn, inputs, diff, **attrs):
    """Like golden.autograd_case, but only inputs with diff[i] True get a
    gradient (others, such as running statistics, are passed as they are),
    and only outputs that require a gradient get a random gout. Inputs and
    gouts are rounded with short()."""
    xs = []
    for x, d in zip(inputs, diff):
        x = short(x.detach().clone())
        if d:
            x.requires_grad_(True)
        xs.append(x)
    # Keep copies of what the op may modify in place (running statistics).
    before = [x.detach().clone() for x in xs]
    outs = fn(*xs)
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    gouts, targets, gargs = [], [], []
    for o in outs:
        if o.is_floating_point() and o.requires_grad:
            g = short(torch.randn(o.shape, dtype=o.dtype))
            targets.append(o)
            gargs.append(g)
        else:
            g = torch.zeros(o.shape, dtype=o.dtype)
        gouts.append(g)
    if targets:
        torch.autograd.backward(targets, gargs)
    grads = []
    for x, d in zip(xs, diff):
        if not d:
            grads.append(None)
        elif x.grad is None:
            grads.append(torch.zeros_like(x))
        else:
            grads.append(x.grad)
    return Case(name, op, before, list(outs), grads=grads, grad_outputs=gouts, **attrs)


def conv2d_cases(cases):
    seed(10)
    specs = [
        # name, x shape, w shape, bias, stride, padding, dilation, groups, dtype
        ("basic", (2, 3, 5, 6), (4, 3, 3, 3), True, (1, 1), (0, 0), (1, 1), 1, D),
        ("stride_pad", (2, 2, 7, 6), (3, 2, 3, 2), True, (2, 1), (1, 0), (1, 1), 1, D),
        ("dilation", (1, 2, 8, 7), (2, 2, 3, 3), False, (1, 1), (2, 1), (2, 1), 1, D),
        ("groups", (2, 4, 5, 5), (6, 2, 3, 3), True, (2, 2), (1, 1), (1, 1), 2, D),
        ("depthwise", (2, 3, 6, 6), (3, 1, 3, 3), True, (1, 1), (1, 1), (1, 1), 3, D),
        ("pointwise", (3, 4, 4, 4), (5, 4, 1, 1), False, (1, 1), (0, 0), (1, 1), 1, D),
        ("mixed", (2, 2, 9, 8), (4, 2, 2, 3), True, (2, 3), (1, 2), (2, 1), 1, D),
        ("groups_dilation", (1, 6, 7, 7), (4, 3, 2, 2), True, (1, 2), (1, 0), (2, 3), 2, D),
        ("float32", (2, 3, 8, 8), (4, 3, 3, 3), True, (1, 1), (1, 1), (1, 1), 1, S),
        # float32 depthwise runs its own kernels: rows past 64 columns,
        # stride 2 with two outputs per channel, a dilated 5x5.
        ("depthwise_f32", (2, 3, 5, 67), (3, 1, 3, 3), True, (1, 1), (1, 1), (1, 1), 3, S),
        ("depthwise_f32_s2_mult", (1, 4, 9, 13), (8, 1, 3, 3), True, (2, 2), (1, 1), (1, 1), 4, S),
        ("depthwise_f32_k5_dilation", (1, 3, 11, 9), (3, 1, 5, 5), False, (1, 1), (2, 2), (2, 1), 3, S),
    ]
    for name, xs, ws, bias, st, pad, dil, gr, dt in specs:
        x = torch.randn(xs, dtype=dt)
        w = torch.randn(ws, dtype=dt)
        ins = [x, w]
        if bias:
            ins.append(torch.randn(ws[0], dtype=dt))

        def fn(x, w, b=None, st=st, pad=pad, dil=dil, gr=gr):
            return F.conv2d(x, w, b, stride=st, padding=pad, dilation=dil, groups=gr)

        cases.append(
            grad_case("conv2d/" + name, "conv2d", fn, ins, [True] * len(ins),
                      bias=bias, stride=st, padding=pad, dilation=dil, groups=gr)
        )


def conv1d_cases(cases):
    seed(11)
    specs = [
        ("basic", (2, 3, 10), (4, 3, 3), True, 2, 1, 2, 1),
        ("groups", (1, 4, 7), (4, 2, 2), False, 1, 0, 1, 2),
        ("pad", (3, 2, 5), (2, 2, 4), True, 1, 2, 1, 1),
    ]
    for name, xs, ws, bias, st, pad, dil, gr in specs:
        ins = [torch.randn(xs, dtype=D), torch.randn(ws, dtype=D)]
        if bias:
            ins.append(torch.randn(ws[0], dtype=D))

        def fn(x, w, b=None, st=st, pad=pad, dil=dil, gr=gr):
            return F.conv1d(x, w, b, stride=st, padding=pad, dilation=dil, groups=gr)

        cases.append(
            grad_case("conv1d/" + name, "conv1d", fn, ins, [True] * len(ins),
                      bias=bias, stride=st, padding=pad, dilation=dil, groups=gr)
        )


def conv_transpose2d_cases(cases):
    seed(12)
    specs = [
        # name, x, w, bias, stride, padding, output_padding, dilation, groups, dtype
        ("stride_outpad", (2, 3, 4, 4), (3, 2, 3, 3), True, (2, 2), (1, 1), (1, 1), (1, 1), 1, D),
        ("groups", (1, 4, 3, 5), (4, 3, 2, 3), True, (2, 1), (0, 1), (0, 0), (1, 2), 2, D),
        ("outpad_lt_dilation", (1, 2, 4, 4), (2, 3, 3, 3), False, (1, 1), (0, 0), (1, 1), (2, 2), 1, D),
        ("nonsquare", (2, 2, 3, 4), (2, 2, 2, 3), True, (3, 2), (1, 0), (2, 1), (1, 1), 1, D),
        ("float32", (2, 2, 5, 5), (2, 4, 3, 3), True, (1, 1), (1, 1), (0, 0), (1, 1), 1, S),
    ]
    for name, xs, ws, bias, st, pad, opad, dil, gr, dt in specs:
        ins = [torch.randn(xs, dtype=dt), torch.randn(ws, dtype=dt)]
        if bias:
            ins.append(torch.randn(ws[1] * gr, dtype=dt))

        def fn(x, w, b=None, st=st, pad=pad, opad=opad, dil=dil, gr=gr):
            return F.conv_transpose2d(x, w, b, stride=st, padding=pad, output_padding=opad,
                                      groups=gr, dilation=dil)

        cases.append(
            grad_case("conv_transpose2d/" + name, "conv_transpose2d", fn, ins, [True] * len(ins),
                      bias=bias, stride=st, padding=pad, output_padding=opad, dilation=dil, groups=gr)
        )


def pool_cases(cases):
    seed(13)
    maxspecs = [
        # name, x, kernel, stride, padding, dilation, ceil
        ("k2", (2, 3, 6, 6), (2, 2), (2, 2), (0, 0), (1, 1), False),
        ("k3s2p1", (2, 2, 7, 7), (3, 3), (2, 2), (1, 1), (1, 1), False),
        ("overlap", (1, 2, 5, 5), (3, 3), (1, 1), (0, 0), (1, 1), False),
        ("ceil", (1, 2, 7, 6), (3, 3), (2, 2), (0, 0), (1, 1), True),
        ("ceil_pad", (1, 1, 6, 6), (3, 3), (2, 2), (1, 1), (1, 1), True),
        ("dilation", (1, 2, 8, 8), (3, 2), (1, 2), (0, 1), (2, 2), False),
        ("nonsquare", (2, 1, 5, 7), (2, 3), (1, 2), (1, 1), (1, 1), False),
        ("ceil_dilation", (1, 2, 9, 8), (2, 3), (2, 2), (1, 1), (2, 1), True),
    ]
    for name, xs, k, st, pad, dil, ceil in maxspecs:
        x = torch.randn(xs, dtype=D)

        def fn(x, k=k, st=st, pad=pad, dil=dil, ceil=ceil):
            return F.max_pool2d(x, k, st, pad, dil, ceil_mode=ceil, return_indices=True)

        cases.append(grad_case("max_pool2d/" + name, "max_pool2d", fn, [x], [True],
                               kernel=k, stride=st, padding=pad, dilation=dil, ceil_mode=ceil))
    # Ties (small integers) and float32: the first maximum wins.
    x = torch.randint(0, 3, (2, 2, 6, 6)).to(S)
    cases.append(grad_case("max_pool2d/ties_float32", "max_pool2d",
                           lambda x: F.max_pool2d(x, 3, 1, 1, return_indices=True), [x], [True],
                           kernel=(3, 3), stride=(1, 1), padding=(1, 1), dilation=(1, 1), ceil_mode=False))
    # NaN and -inf: a NaN is the maximum.
    x = torch.tensor([[[[1.0, float("nan"), -2.0, 0.5],
                        [float("-inf"), 3.0, 4.0, float("nan")],
                        [0.0, 1.0, float("-inf"), float("-inf")],
                        [2.0, -1.0, float("-inf"), float("-inf")]]]], dtype=D)
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    cases.append(Case("max_pool2d/nonfinite", "max_pool2d", [x], [out, idx],
                      kernel=(2, 2), stride=(2, 2), padding=(0, 0), dilation=(1, 1), ceil_mode=False))

    avgspecs = [
        # name, x, kernel, stride, padding, ceil, count_include_pad
        ("k2", (2, 3, 6, 6), (2, 2), (2, 2), (0, 0), False, True),
        ("pad_include", (2, 2, 7, 7), (3, 3), (2, 2), (1, 1), False, True),
        ("pad_exclude", (2, 2, 7, 7), (3, 3), (2, 2), (1, 1), False, False),
        ("ceil_include", (1, 2, 6, 7), (3, 3), (2, 2), (1, 1), True, True),
        ("ceil_exclude", (1, 2, 6, 7), (3, 3), (2, 2), (1, 1), True, False),
        ("ceil_nopad", (1, 1, 7, 6), (3, 2), (2, 3), (0, 0), True, True),
        ("nonsquare", (2, 1, 5, 7), (2, 3), (2, 1), (1, 1), False, False),
        ("overlap", (1, 3, 5, 4), (3, 2), (1, 1), (0, 1), False, True),
    ]
    for name, xs, k, st, pad, ceil, cip in avgspecs:
        x = torch.randn(xs, dtype=D)

        def fn(x, k=k, st=st, pad=pad, ceil=ceil, cip=cip):
            return F.avg_pool2d(x, k, st, pad, ceil_mode=ceil, count_include_pad=cip)

        cases.append(grad_case("avg_pool2d/" + name, "avg_pool2d", fn, [x], [True],
                               kernel=k, stride=st, padding=pad, ceil_mode=ceil, count_include_pad=cip))
    x = torch.randn(2, 2, 6, 6, dtype=S)
    cases.append(grad_case("avg_pool2d/float32", "avg_pool2d",
                           lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), [x], [True],
                           kernel=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True, count_include_pad=False))

    for name, xs, osz in [
        ("down", (2, 3, 7, 5), (3, 2)),
        ("global", (2, 2, 4, 6), (1, 1)),
        ("identity", (1, 2, 3, 4), (3, 4)),
        ("up", (1, 2, 7, 3), (10, 4)),
        ("uneven", (2, 1, 10, 9), (4, 5)),
    ]:
        x = torch.randn(xs, dtype=D)
        cases.append(grad_case("adaptive_avg_pool2d/" + name, "adaptive_avg_pool2d",
                               lambda x, osz=osz: F.adaptive_avg_pool2d(x, osz), [x], [True], out_size=osz))


def softmax_cases(cases):
    seed(14)
    specs = [
        ("last", torch.randn(3, 5, dtype=D), -1),
        ("first", torch.randn(3, 5, dtype=D), 0),
        ("middle", torch.randn(2, 3, 4, dtype=D), 1),
        ("large", torch.randn(2, 4, dtype=D) * 1000, 1),
        ("float32", torch.randn(4, 6, dtype=S) * 10, -1),
        ("vector", torch.randn(7, dtype=D), 0),
    ]
    for name, x, axis in specs:
        cases.append(grad_case("softmax/" + name, "softmax", lambda x, a=axis: torch.softmax(x, a), [x], [True], axis=axis))
        cases.append(grad_case("log_softmax/" + name, "log_softmax", lambda x, a=axis: torch.log_softmax(x, a), [x], [True], axis=axis))
    x = torch.tensor([[0.0, float("-inf"), 1.0], [float("-inf"), float("-inf"), 2.0]], dtype=D)
    cases.append(Case("softmax/neg_inf", "softmax", [x], [torch.softmax(x, 1)], axis=1))
    cases.append(Case("log_softmax/neg_inf", "log_softmax", [x], [torch.log_softmax(x, 1)], axis=1))


def batch_norm_cases(cases):
    seed(15)
    specs = [
        # name, x shape, affine, running, training, momentum, eps, dtype
        ("train4d", (4, 3, 2, 2), True, True, True, 0.1, 1e-5, D),
        ("train2d", (5, 4), True, True, True, 0.1, 1e-5, D),
        ("train3d_plain", (3, 2, 4), False, False, True, 0.1, 1e-5, D),
        ("train_momentum", (2, 3, 3, 2), True, True, True, 0.3, 1e-3, D),
        ("eval4d", (3, 3, 2, 2), True, True, False, 0.1, 1e-5, D),
        ("train_float32", (4, 3, 3, 3), True, True, True, 0.1, 1e-5, S),
    ]
    for name, xs, affine, running, training, mom, eps, dt in specs:
        c = xs[1]
        x = torch.randn(xs, dtype=dt) * 2 + 0.5
        ins, diff = [x], [True]
        if affine:
            ins += [torch.randn(c, dtype=dt), torch.randn(c, dtype=dt)]
            diff += [True, True]
        if running:
            ins += [torch.randn(c, dtype=dt) * 0.1, torch.rand(c, dtype=dt) + 0.5]
            diff += [False, False]

        def fn(*a, affine=affine, running=running, training=training, mom=mom, eps=eps):
            x = a[0]
            w = b = rm = rv = None
            i = 1
            if affine:
                w, b = a[1], a[2]
                i = 3
            if running:
                rm, rv = a[i], a[i + 1]
            y = F.batch_norm(x, rm, rv, w, b, training=training, momentum=mom, eps=eps)
            if running:
                return y, rm.clone(), rv.clone()
            return y

        cases.append(grad_case("batch_norm/" + name, "batch_norm", fn, ins, diff,
                               affine=affine, running=running, training=training, momentum=mom, eps=eps))


def layer_norm_cases(cases):
    seed(16)
    specs = [
        ("last", (2, 3, 4), [4], True, 1e-5, D),
        ("two_axes", (2, 3, 4), [3, 4], True, 1e-5, D),
        ("plain", (3, 5), [5], False, 1e-5, D),
        ("eps", (2, 6), [6], True, 1e-2, D),
        ("float32", (4, 8), [8], True, 1e-5, S),
    ]
    for name, xs, ns, affine, eps, dt in specs:
        ins = [torch.randn(xs, dtype=dt) * 3 + 1]
        if affine:
            ins += [torch.randn(ns, dtype=dt), torch.randn(ns, dtype=dt)]

        def fn(x, w=None, b=None, ns=ns, eps=eps):
            return F.layer_norm(x, ns, w, b, eps)

        cases.append(grad_case("layer_norm/" + name, "layer_norm", fn, ins, [True] * len(ins),
                               normalized_shape=ns, eps=eps, affine=affine))


def group_norm_cases(cases):
    seed(17)
    specs = [
        ("groups3", (2, 6, 3, 3), 3, True, 1e-5, D),
        ("plain3d", (2, 4, 5), 2, False, 1e-5, D),
        ("one_group", (2, 3, 2, 2), 1, True, 1e-5, D),
        ("instance", (2, 3, 2, 3), 3, True, 1e-3, D),
        ("float32", (3, 4, 4, 4), 2, True, 1e-5, S),
    ]
    for name, xs, g, affine, eps, dt in specs:
        ins = [torch.randn(xs, dtype=dt) * 2 - 1]
        if affine:
            ins += [torch.randn(xs[1], dtype=dt), torch.randn(xs[1], dtype=dt)]

        def fn(x, w=None, b=None, g=g, eps=eps):
            return F.group_norm(x, g, w, b, eps)

        cases.append(grad_case("group_norm/" + name, "group_norm", fn, ins, [True] * len(ins),
                               groups=g, eps=eps, affine=affine))


def embedding_cases(cases):
    seed(18)
    w = torch.randn(10, 4, dtype=D)
    ids = torch.tensor([[1, 3, 3], [9, 0, 1]], dtype=torch.int64)
    cases.append(grad_case("embedding/repeats", "embedding", lambda i, w: F.embedding(i, w), [ids, w], [False, True]))
    w = torch.randn(5, 3, dtype=S)
    ids = torch.tensor([4, 2], dtype=torch.int64)
    cases.append(grad_case("embedding/float32", "embedding", lambda i, w: F.embedding(i, w), [ids, w], [False, True]))


def main():
    cases = []
    conv2d_cases(cases)
    conv1d_cases(cases)
    conv_transpose2d_cases(cases)
    pool_cases(cases)
    softmax_cases(cases)
    batch_norm_cases(cases)
    layer_norm_cases(cases)
    group_norm_cases(cases)
    embedding_cases(cases)
    write("tensor/testdata/golden_nn.json", cases)


if __name__ == "__main__":
    main()
