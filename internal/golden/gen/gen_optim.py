"""Golden training runs for package optim.

Writes optim/testdata/golden_optim.json, replayed by optim/golden_test.go.

Each case trains a 4-8-3 MLP (Linear, tanh, Linear) for 20 steps with one
torch.optim optimizer (foreach=False, torch 1.13's single-tensor code) on a
fixed batch, with the MSE or cross-entropy loss.

    inputs:  X [6, 4], Y (targets: [6, 3] floats for "mse", [6] int64 class
             indices for "ce"), then the initial W1 [8, 4], b1 [8], W2 [3, 8],
             b2 [3]
    outputs: losses [20] (the loss before each step), then W1, b1, W2, b2
             after each step, stacked: [20, 8, 4], [20, 8], [20, 3, 8], [20, 3]
    attrs:   optimizer ("sgd", "adam", "adamw"), loss ("mse", "ce"), groups
             (a list of {"params": [indices into W1, b1, W2, b2], options...}
             with torch's option names), and optionally lr_scale_at: [step,
             factor], multiplying every group's lr by factor before that
             (0-based) step.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from golden import Case, seed, write  # noqa: E402

STEPS = 20
ALL = [0, 1, 2, 3]


def data(dtype):
    seed(1)
    x = torch.randn(6, 4, dtype=torch.float64)
    y_mse = torch.randn(6, 3, dtype=torch.float64)
    y_ce = torch.tensor([0, 2, 1, 1, 0, 2])
    w1 = torch.randn(8, 4, dtype=torch.float64) * 0.5
    b1 = torch.randn(8, dtype=torch.float64) * 0.1
    w2 = torch.randn(3, 8, dtype=torch.float64) * 0.5
    b2 = torch.randn(3, dtype=torch.float64) * 0.1
    cast = lambda t: t.to(dtype)  # noqa: E731
    return cast(x), cast(y_mse), y_ce, [cast(t) for t in (w1, b1, w2, b2)]


def run(name, optimizer, loss, groups, dtype, lr_scale_at=None):
    x, y_mse, y_ce, init = data(dtype)
    params = [t.clone().requires_grad_(True) for t in init]
    y = y_mse if loss == "mse" else y_ce
    torch_groups = []
    for g in groups:
        opts = {k: (tuple(v) if k == "betas" else v) for k, v in g.items() if k != "params"}
        torch_groups.append(dict(params=[params[i] for i in g["params"]], **opts))
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[optimizer]
    opt = cls(torch_groups, foreach=False)
    losses, hist = [], [[] for _ in params]
    for step in range(STEPS):
        if lr_scale_at is not None and step == lr_scale_at[0]:
            for pg in opt.param_groups:
                pg["lr"] *= lr_scale_at[1]
        opt.zero_grad()
        h = torch.tanh(F.linear(x, params[0], params[1]))
        out = F.linear(h, params[2], params[3])
        loss_v = F.mse_loss(out, y) if loss == "mse" else F.cross_entropy(out, y)
        loss_v.backward()
        opt.step()
        losses.append(loss_v.detach())
        for i, p in enumerate(params):
            hist[i].append(p.detach().clone())
    attrs = dict(optimizer=optimizer, loss=loss, groups=groups)
    if lr_scale_at is not None:
        attrs["lr_scale_at"] = list(lr_scale_at)
    suffix = "/f32" if dtype == torch.float32 else "/f64"
    return Case(
        name + suffix,
        optimizer,
        [x, y] + init,
        [torch.stack(losses)] + [torch.stack(h) for h in hist],
        **attrs,
    )


def configs():
    one = lambda **o: [dict(params=ALL, **o)]  # noqa: E731
    split = lambda a, b: [dict(params=[0, 1], **a), dict(params=[2, 3], **b)]  # noqa: E731
    return [
        ("sgd/plain", "sgd", "mse", one(lr=0.1)),
        ("sgd/momentum", "sgd", "mse", one(lr=0.05, momentum=0.9)),
        ("sgd/momentum_dampening", "sgd", "ce", one(lr=0.1, momentum=0.8, dampening=0.3)),
        ("sgd/nesterov", "sgd", "mse", one(lr=0.05, momentum=0.9, nesterov=True)),
        ("sgd/nesterov_weight_decay", "sgd", "ce", one(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.05)),
        ("sgd/momentum_weight_decay_maximize", "sgd", "mse", one(lr=0.01, momentum=0.5, weight_decay=0.1, maximize=True)),
        ("sgd/groups", "sgd", "ce", split(dict(lr=0.1, momentum=0.9), dict(lr=0.05, momentum=0.5, nesterov=True, weight_decay=0.01))),
        ("adam/default", "adam", "mse", one(lr=0.01)),
        ("adam/weight_decay", "adam", "ce", one(lr=0.02, weight_decay=0.1)),
        ("adam/amsgrad", "adam", "mse", one(lr=0.01, amsgrad=True)),
        ("adam/amsgrad_weight_decay_betas", "adam", "ce", one(lr=0.03, betas=[0.8, 0.95], eps=1e-6, weight_decay=0.05, amsgrad=True)),
        ("adam/maximize", "adam", "mse", one(lr=0.01, maximize=True)),
        ("adam/groups", "adam", "ce", split(dict(lr=0.01), dict(lr=0.03, amsgrad=True, weight_decay=0.01))),
        ("adamw/default", "adamw", "mse", one(lr=0.01, weight_decay=0.01)),
        ("adamw/amsgrad", "adamw", "ce", one(lr=0.02, weight_decay=0.1, amsgrad=True)),
        ("adamw/betas_eps", "adamw", "mse", one(lr=0.05, betas=[0.5, 0.9], eps=1e-4, weight_decay=0.2)),
        ("adamw/groups", "adamw", "ce", split(dict(lr=0.01, weight_decay=0.0), dict(lr=0.02, weight_decay=0.3, amsgrad=True))),
    ]


# The configurations also replayed in float32 (float64 covers them all).
FLOAT32 = {
    "sgd/nesterov_weight_decay",
    "sgd/groups",
    "adam/amsgrad_weight_decay_betas",
    "adam/maximize",
    "adamw/amsgrad",
    "adamw/groups",
}


def main():
    cases = []
    for name, optimizer, loss, groups in configs():
        cases.append(run(name, optimizer, loss, groups, torch.float64))
        if name in FLOAT32:
            cases.append(run(name, optimizer, loss, groups, torch.float32))
    # A learning-rate schedule: halve every group's lr before step 5.
    for dtype in (torch.float64,):
        cases.append(run("sgd/lr_schedule", "sgd", "mse", [dict(params=ALL, lr=0.1, momentum=0.9)], dtype, (5, 0.5)))
        cases.append(
            run(
                "adam/lr_schedule",
                "adam",
                "ce",
                [dict(params=[0, 1], lr=0.02), dict(params=[2, 3], lr=0.01, amsgrad=True)],
                dtype,
                (5, 0.5),
            )
        )
    write("optim/testdata/golden_optim.json", cases)


if __name__ == "__main__":
    main()
