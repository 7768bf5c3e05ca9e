"""Golden training runs for the further optimizers of package optim.

Writes optim/testdata/golden_optim_more.json, replayed by
optim/more_golden_test.go.

Each case trains a 3-4-2 MLP (Linear, tanh, Linear) for 20 steps in float64
with one optimizer on a fixed batch, with the MSE or cross-entropy loss.
Adagrad, RMSprop, Adamax, NAdam, RAdam, Adadelta and Rprop are torch 1.13's
(foreach=False); Lion is not in torch 1.13, so it is the small reference
implementation `Lion` below (Chen et al. 2023, Algorithm 2).

    inputs:  X [5, 3], Y (targets: [5, 2] floats for "mse", [5] int64 class
             indices for "ce"), then the initial W1 [4, 3], b1 [4], W2 [2, 4],
             b2 [2]
    outputs: losses [20] (the loss before each step), then W1, b1, W2, b2
             after each step, stacked: [20, 4, 3], [20, 4], [20, 2, 4],
             [20, 2]
    attrs:   optimizer ("adagrad", "rmsprop", "adamax", "nadam", "radam",
             "adadelta", "rprop", "lion"), loss ("mse", "ce"), groups (a list
             of {"params": [indices into W1, b1, W2, b2], options...} with
             torch's option names).
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


class Lion(torch.optim.Optimizer):
    """Reference Lion: sign of the interpolated momentum, decoupled decay."""

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=False):
        super().__init__(params, dict(lr=lr, betas=betas, weight_decay=weight_decay, maximize=maximize))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            lr, (b1, b2), wd = group["lr"], group["betas"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = -p.grad if group["maximize"] else p.grad
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                m = state["exp_avg"]
                c = m * b1 + g * (1 - b1)
                if wd != 0:
                    p.mul_(1 - lr * wd)
                p.sub_(torch.sign(c) * lr)
                m.copy_(m * b2 + g * (1 - b2))


def make(name, groups):
    if name == "lion":
        return Lion(groups)
    cls = {
        "adagrad": torch.optim.Adagrad,
        "rmsprop": torch.optim.RMSprop,
        "adamax": torch.optim.Adamax,
        "nadam": torch.optim.NAdam,
        "radam": torch.optim.RAdam,
        "adadelta": torch.optim.Adadelta,
        "rprop": torch.optim.Rprop,
    }[name]
    if name == "adagrad":
        # torch 1.13 fills every group's "sum" from the constructor's
        # initial_accumulator_value, not the group's; pass it there too.
        init = {g.get("initial_accumulator_value", 0) for g in groups}
        assert len(init) == 1, "adagrad cases need one initial_accumulator_value"
        return cls(groups, foreach=False, initial_accumulator_value=init.pop())
    return cls(groups, foreach=False)


def data():
    seed(3)
    x = torch.randn(5, 3, dtype=torch.float64)
    y_mse = torch.randn(5, 2, dtype=torch.float64)
    y_ce = torch.tensor([0, 1, 1, 0, 1])
    w1 = torch.randn(4, 3, dtype=torch.float64) * 0.5
    b1 = torch.randn(4, dtype=torch.float64) * 0.1
    w2 = torch.randn(2, 4, dtype=torch.float64) * 0.5
    b2 = torch.randn(2, dtype=torch.float64) * 0.1
    return x, y_mse, y_ce, [w1, b1, w2, b2]


def run(name, optimizer, loss, groups):
    x, y_mse, y_ce, init = data()
    params = [t.clone().requires_grad_(True) for t in init]
    y = y_mse if loss == "mse" else y_ce
    torch_groups = []
    for g in groups:
        opts = {k: (tuple(v) if isinstance(v, list) else v) for k, v in g.items() if k != "params"}
        torch_groups.append(dict(params=[params[i] for i in g["params"]], **opts))
    opt = make(optimizer, torch_groups)
    losses, hist = [], [[] for _ in params]
    for _ in range(STEPS):
        opt.zero_grad()
        h = torch.tanh(F.linear(x, params[0], params[1]))
        out = F.linear(h, params[2], params[3])
        loss_v = F.mse_loss(out, y) if loss == "mse" else F.cross_entropy(out, y)
        loss_v.backward()
        opt.step()
        losses.append(loss_v.detach())
        for i, p in enumerate(params):
            hist[i].append(p.detach().clone())
    return Case(
        name,
        optimizer,
        [x, y] + init,
        [torch.stack(losses)] + [torch.stack(h) for h in hist],
        optimizer=optimizer,
        loss=loss,
        groups=groups,
    )


def configs():
    one = lambda **o: [dict(params=ALL, **o)]  # noqa: E731
    split = lambda a, b: [dict(params=[0, 1], **a), dict(params=[2, 3], **b)]  # noqa: E731
    return [
        ("adagrad/default", "adagrad", "mse", one(lr=0.1)),
        ("adagrad/all", "adagrad", "ce", one(lr=0.2, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.3, eps=1e-6)),
        ("adagrad/groups_maximize", "adagrad", "mse", split(dict(lr=0.05, maximize=True), dict(lr=0.1, lr_decay=0.01))),
        ("rmsprop/default", "rmsprop", "mse", one(lr=0.01)),
        ("rmsprop/centered_momentum", "rmsprop", "ce", one(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.05, momentum=0.8, centered=True)),
        ("rmsprop/groups", "rmsprop", "mse", split(dict(lr=0.02, centered=True), dict(lr=0.01, momentum=0.5, maximize=True))),
        ("adamax/default", "adamax", "mse", one(lr=0.02)),
        ("adamax/weight_decay_betas", "adamax", "ce", one(lr=0.05, betas=[0.8, 0.95], eps=1e-6, weight_decay=0.1)),
        ("adamax/groups_maximize", "adamax", "mse", split(dict(lr=0.01), dict(lr=0.03, maximize=True))),
        ("nadam/default", "nadam", "mse", one(lr=0.02)),
        ("nadam/all", "nadam", "ce", one(lr=0.05, betas=[0.85, 0.99], eps=1e-6, weight_decay=0.1, momentum_decay=0.01)),
        ("nadam/groups", "nadam", "mse", split(dict(lr=0.01), dict(lr=0.03, momentum_decay=0.002))),
        # betas[1] = 0.9 makes rho_t pass 5 at step 6, covering both branches.
        ("radam/default", "radam", "mse", one(lr=0.02)),
        ("radam/rectified", "radam", "ce", one(lr=0.05, betas=[0.8, 0.9], eps=1e-6, weight_decay=0.1)),
        ("radam/groups", "radam", "mse", split(dict(lr=0.01, betas=[0.9, 0.9]), dict(lr=0.03))),
        ("adadelta/default", "adadelta", "mse", one()),
        ("adadelta/all", "adadelta", "ce", one(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1)),
        ("adadelta/groups_maximize", "adadelta", "mse", split(dict(lr=2.0), dict(lr=1.0, rho=0.95, maximize=True))),
        ("rprop/default", "rprop", "mse", one(lr=0.01)),
        ("rprop/etas_step_sizes", "rprop", "ce", one(lr=0.05, etas=[0.3, 1.5], step_sizes=[1e-3, 0.08])),
        ("rprop/groups_maximize", "rprop", "mse", split(dict(lr=0.02), dict(lr=0.01, maximize=True, etas=[0.4, 1.1]))),
        ("lion/default", "lion", "mse", one(lr=0.003)),
        ("lion/weight_decay_betas", "lion", "ce", one(lr=0.01, betas=[0.8, 0.95], weight_decay=0.5)),
        ("lion/groups_maximize", "lion", "mse", split(dict(lr=0.002, weight_decay=0.1), dict(lr=0.005, maximize=True))),
    ]


def main():
    cases = [run(*c) for c in configs()]
    write("optim/testdata/golden_optim_more.json", cases)


if __name__ == "__main__":
    main()
