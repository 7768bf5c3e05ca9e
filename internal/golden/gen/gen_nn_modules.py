"""Golden values for package nn: losses and layers.

Writes nn/testdata/golden_nn_modules.json, checked by nn/golden_test.go.

Loss cases ("cross_entropy", "mse") store the inputs (logits, target and,
when the attr "weighted" is true, class weights) and the loss with the
gradient of the logits (and of the MSE input and target). Attributes mirror
torch.nn.CrossEntropyLoss: reduction, ignore_index, label_smoothing.

Layer cases ("linear", "conv2d", "maxpool2d", "flatten") store the input
and the parameters as inputs, in the order input, weight, bias; attributes
give the layer options (stride, padding, dilation, groups, kernel,
ceil_mode; a zero pooling stride means the kernel size).
"""

import os
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from golden import autograd_case, seed, write  # noqa: E402

F64 = torch.float64


def ce_case(name, logits, target, weight=None, reduction="mean", ignore_index=-100, label_smoothing=0.0):
    inputs = [logits, target] + ([weight] if weight is not None else [])

    def fn(x, t, *w):
        return F.cross_entropy(
            x,
            t,
            weight=w[0].detach() if w else None,
            reduction=reduction,
            ignore_index=ignore_index,
            label_smoothing=label_smoothing,
        )

    return autograd_case(
        name,
        "cross_entropy",
        fn,
        inputs,
        reduction=reduction,
        ignore_index=ignore_index,
        label_smoothing=label_smoothing,
        weighted=weight is not None,
    )


def loss_cases():
    cases = []
    seed(10)
    x = torch.randn(6, 5, dtype=F64) * 2
    t = torch.tensor([0, 4, 2, 2, 1, 3])
    w = torch.rand(5, dtype=F64) + 0.25
    t_ign = torch.tensor([0, 4, -1, 2, 1, -1])
    for red in ("mean", "sum", "none"):
        cases.append(ce_case("ce/plain/" + red, x, t, reduction=red))
        cases.append(ce_case("ce/weight/" + red, x, t, weight=w, reduction=red))
        cases.append(ce_case("ce/ignore/" + red, x, t_ign, reduction=red, ignore_index=-1))
        cases.append(ce_case("ce/smooth/" + red, x, t, reduction=red, label_smoothing=0.1))
        cases.append(
            ce_case("ce/smooth_ignore/" + red, x, t_ign, reduction=red, ignore_index=-1, label_smoothing=0.2)
        )
        cases.append(
            ce_case(
                "ce/smooth_ignore_weight/" + red,
                x,
                t_ign,
                weight=w,
                reduction=red,
                ignore_index=-1,
                label_smoothing=0.3,
            )
        )
    # A real class as the ignore index, and the all-ignored mean (NaN).
    cases.append(ce_case("ce/ignore_class/mean", x, t, ignore_index=2, label_smoothing=0.1))
    cases.append(ce_case("ce/all_ignored/mean", x[:2], torch.tensor([-100, -100])))
    cases.append(ce_case("ce/all_ignored/sum", x[:2], torch.tensor([-100, -100]), reduction="sum"))

    # Spatial targets: logits [N, C, H, W].
    seed(11)
    xs = torch.randn(2, 4, 3, 2, dtype=F64)
    ts = torch.randint(0, 4, (2, 3, 2))
    ts[0, 1, 1] = 7
    ts[1, 2, 0] = 7
    ws = torch.rand(4, dtype=F64) + 0.5
    for red in ("mean", "sum", "none"):
        cases.append(
            ce_case("ce/spatial/" + red, xs, ts, weight=ws, reduction=red, ignore_index=7, label_smoothing=0.15)
        )

    # Unbatched: logits [C], scalar target.
    seed(12)
    xu = torch.randn(4, dtype=F64)
    cases.append(ce_case("ce/unbatched/mean", xu, torch.tensor(2), label_smoothing=0.1))
    cases.append(ce_case("ce/unbatched/none", xu, torch.tensor(1), reduction="none"))

    # Class-probability targets (torch also differentiates the target; the
    # Go side only checks the logits' gradient).
    seed(13)
    xp = torch.randn(3, 4, dtype=F64)
    tp = torch.softmax(torch.randn(3, 4, dtype=F64), dim=1)
    wp = torch.rand(4, dtype=F64) + 0.5
    for red in ("mean", "sum", "none"):
        cases.append(ce_case("ce/probs/" + red, xp, tp, reduction=red))
        cases.append(ce_case("ce/probs_smooth_weight/" + red, xp, tp, weight=wp, reduction=red, label_smoothing=0.2))

    # float32 logits.
    seed(14)
    x32 = torch.randn(5, 3)
    t32 = torch.tensor([2, 0, 1, 1, -100])
    cases.append(ce_case("ce/float32/mean", x32, t32, label_smoothing=0.05))

    # MSE.
    seed(15)
    a = torch.randn(3, 4, dtype=F64)
    b = torch.randn(3, 4, dtype=F64)
    for red in ("mean", "sum", "none"):
        cases.append(
            autograd_case("mse/" + red, "mse", lambda p, q, r=red: F.mse_loss(p, q, reduction=r), [a, b], reduction=red)
        )
    return cases


def layer_cases():
    cases = []
    seed(20)
    x = torch.randn(3, 4, dtype=F64)
    w = torch.randn(5, 4, dtype=F64)
    b = torch.randn(5, dtype=F64)
    cases.append(autograd_case("linear/bias", "linear", F.linear, [x, w, b]))
    cases.append(autograd_case("linear/nobias", "linear", lambda i, ww: F.linear(i, ww), [x, w]))
    x3 = torch.randn(2, 3, 4, dtype=F64)
    cases.append(autograd_case("linear/batched3d", "linear", F.linear, [x3, w, b]))
    x4 = torch.randn(2, 3, 4, 5, dtype=F64)
    for start, end in ((1, -1), (0, 2), (2, 3), (-2, -1)):
        cases.append(
            autograd_case(
                "flatten/%d_%d" % (start, end),
                "flatten",
                lambda i, s=start, e=end: torch.flatten(i, s, e),
                [x4],
                start=start,
                end=end,
            )
        )
    # Conv2d layers (input, weight[, bias]) and max pooling.
    seed(21)
    xc = torch.randn(2, 4, 7, 6, dtype=F64)
    conv_cfgs = [
        ("conv2d/basic", dict(), (3, 4, 3, 3), True),
        ("conv2d/stride_pad_dilation_groups", dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2), (6, 2, 3, 2), True),
        ("conv2d/nobias_1x1", dict(), (5, 4, 1, 1), False),
    ]
    for name, kw, wshape, has_bias in conv_cfgs:
        wc = torch.randn(*wshape, dtype=F64) * 0.3
        ins = [xc, wc] + ([torch.randn(wshape[0], dtype=F64)] if has_bias else [])
        cases.append(
            autograd_case(
                name,
                "conv2d",
                lambda i, ww, *bb, kw=kw: F.conv2d(i, ww, bb[0] if bb else None, **kw),
                ins,
                stride=list(kw.get("stride", (1, 1))),
                padding=list(kw.get("padding", (0, 0))),
                dilation=list(kw.get("dilation", (1, 1))),
                groups=kw.get("groups", 1),
            )
        )
    pool_cfgs = [
        ("maxpool2d/k2", dict(kernel_size=(2, 2))),
        ("maxpool2d/k3_s2_p1_ceil", dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), ceil_mode=True)),
    ]
    for name, kw in pool_cfgs:
        cases.append(
            autograd_case(
                name,
                "maxpool2d",
                lambda i, kw=kw: F.max_pool2d(i, **kw),
                [xc],
                kernel=list(kw["kernel_size"]),
                stride=list(kw.get("stride", (0, 0))),
                padding=list(kw.get("padding", (0, 0))),
                ceil_mode=kw.get("ceil_mode", False),
            )
        )
    return cases


def main():
    write("nn/testdata/golden_nn_modules.json", loss_cases() + layer_cases())


if __name__ == "__main__":
    main()
