"""Golden trajectories for ASGD, SparseAdam and LBFGS of package optim.

Writes optim/testdata/golden_optim_extra.json, replayed by
optim/extra_golden_test.go. Every trajectory is torch 1.13's, in float64,
over 20 steps.

op "mlp": a 3-4-2 MLP (Linear, tanh, Linear) on a fixed batch, as in
gen_optim_more.py.
    inputs:  X [5, 3], Y ([5, 2] floats for "mse", [5] int64 classes for
             "ce"), W1 [4, 3], b1 [4], W2 [2, 4], b2 [2]
    outputs: losses [20] (before each step), then W1, b1, W2, b2 after each
             step stacked along a new first dimension; for "asgd" then the
             averages ("ax") of W1, b1, W2, b2 after each step, stacked
    attrs:   optimizer ("asgd", "lbfgs"), loss ("mse", "ce"), groups (list of
             {"params": [indices], options...} with torch's option names;
             lbfgs has one group and its line_search_fn as a string or null).
             LBFGS steps take the closure; its loss is the closure's first.

op "embedding": SparseAdam on an embedding table E [10, 3] looked up with
sparse gradients: at step s, rows = idx[s], loss = mean((tanh(E[rows]) -
T[rows])²).
    inputs:  E [10, 3], idx [20, 6] int64, T [10, 3]
    outputs: losses [20], E after each step [20, 10, 3]
    attrs:   optimizer "sparse_adam", groups as above.

op "rosenbrock": LBFGS on the extended Rosenbrock function of the
concatenation x of two parameters a [2] and b [3]:
f(x) = sum_i 100 (x[i+1] - x[i]²)² + (1 - x[i])².
    inputs:  a, b (initial)
    outputs: losses [20] (closure's first loss per step), a and b after each
             step, func_evals [20] (cumulative closure calls after each step)
    attrs:   optimizer "lbfgs", groups as above.
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


def make(name, groups):
    if name == "asgd":
        return torch.optim.ASGD(groups, foreach=False)
    if name == "sparse_adam":
        return torch.optim.SparseAdam(groups)
    if name == "lbfgs":
        assert len(groups) == 1
        g = dict(groups[0])
        return torch.optim.LBFGS(g.pop("params"), **g)
    raise ValueError(name)


def torch_groups(params, groups):
    out = []
    for g in groups:
        opts = {k: (tuple(v) if isinstance(v, list) else v) for k, v in g.items() if k != "params"}
        out.append(dict(params=[params[i] for i in g["params"]], **opts))
    return out


def mlp_data():
    seed(3)
    x = torch.randn(5, 3, dtype=torch.float64)
    y_mse = torch.randn(5, 2, dtype=torch.float64)
    y_ce = torch.tensor([0, 1, 1, 0, 1])
    w1 = torch.randn(4, 3, dtype=torch.float64) * 0.5
    b1 = torch.randn(4, dtype=torch.float64) * 0.1
    w2 = torch.randn(2, 4, dtype=torch.float64) * 0.5
    b2 = torch.randn(2, dtype=torch.float64) * 0.1
    return x, y_mse, y_ce, [w1, b1, w2, b2]


def mlp(name, optimizer, loss, groups):
    x, y_mse, y_ce, init = mlp_data()
    params = [t.clone().requires_grad_(True) for t in init]
    y = y_mse if loss == "mse" else y_ce
    opt = make(optimizer, torch_groups(params, groups))

    def closure():
        opt.zero_grad()
        h = torch.tanh(F.linear(x, params[0], params[1]))
        out = F.linear(h, params[2], params[3])
        loss_v = F.mse_loss(out, y) if loss == "mse" else F.cross_entropy(out, y)
        loss_v.backward()
        return loss_v

    losses, hist, axs = [], [[] for _ in params], [[] for _ in params]
    for _ in range(STEPS):
        if optimizer == "lbfgs":
            loss_v = opt.step(closure)
        else:
            loss_v = closure()
            opt.step()
        losses.append(loss_v.detach())
        for i, p in enumerate(params):
            hist[i].append(p.detach().clone())
            if optimizer == "asgd":
                axs[i].append(opt.state[p]["ax"].clone())
    extra = [torch.stack(a) for a in axs] if optimizer == "asgd" else []
    return Case(name, "mlp", [x, y] + init, [torch.stack(losses)] + [torch.stack(h) for h in hist] + extra,
                optimizer=optimizer, loss=loss, groups=groups)


def embedding(name, groups):
    seed(5)
    e0 = torch.randn(10, 3, dtype=torch.float64)
    # Rows 8 and 9 are never looked up; the others in some steps only, with
    # repeats inside a step.
    idx = torch.randint(0, 8, (STEPS, 6))
    target = torch.randn(10, 3, dtype=torch.float64)
    e = e0.clone().requires_grad_(True)
    opt = make("sparse_adam", torch_groups([e], groups))
    losses, hist = [], []
    for s in range(STEPS):
        opt.zero_grad()
        rows = idx[s]
        loss_v = ((torch.tanh(F.embedding(rows, e, sparse=True)) - target[rows]) ** 2).mean()
        loss_v.backward()
        assert e.grad.is_sparse
        opt.step()
        losses.append(loss_v.detach())
        hist.append(e.detach().clone())
    return Case(name, "embedding", [e0, idx, target], [torch.stack(losses), torch.stack(hist)],
                optimizer="sparse_adam", groups=groups)


def rosen(x):
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def rosenbrock(name, groups):
    a0 = torch.tensor([-1.2, 1.0], dtype=torch.float64)
    b0 = torch.tensor([-0.5, 0.8, 1.3], dtype=torch.float64)
    a, b = a0.clone().requires_grad_(True), b0.clone().requires_grad_(True)
    opt = make("lbfgs", torch_groups([a, b], groups))

    def closure():
        opt.zero_grad()
        f = rosen(torch.cat([a, b]))
        f.backward()
        return f

    losses, ha, hb, evals = [], [], [], []
    for _ in range(STEPS):
        losses.append(opt.step(closure).detach())
        ha.append(a.detach().clone())
        hb.append(b.detach().clone())
        evals.append(opt.state[a]["func_evals"])
    return Case(name, "rosenbrock", [a0, b0],
                [torch.stack(losses), torch.stack(ha), torch.stack(hb), torch.tensor(evals, dtype=torch.int64)],
                optimizer="lbfgs", groups=groups)


def main():
    one = lambda **o: [dict(params=ALL, **o)]  # noqa: E731
    split = lambda a, b: [dict(params=[0, 1], **a), dict(params=[2, 3], **b)]  # noqa: E731
    cases = [
        mlp("asgd/default", "asgd", "mse", one(lr=0.05)),
        mlp("asgd/averaging", "asgd", "ce", one(lr=0.1, lambd=0.01, alpha=0.5, t0=5, weight_decay=0.1)),
        mlp("asgd/groups_maximize", "asgd", "mse",
            split(dict(lr=0.02, t0=3, lambd=0.05), dict(lr=0.05, maximize=True, alpha=1.0, t0=0))),
        embedding("sparse_adam/default", [dict(params=[0], lr=0.05)]),
        embedding("sparse_adam/betas_eps", [dict(params=[0], lr=0.1, betas=[0.8, 0.9], eps=1e-4)]),
        rosenbrock("lbfgs/rosenbrock_wolfe", [dict(params=[0, 1], max_iter=1, history_size=3,
                                                   line_search_fn="strong_wolfe")]),
        rosenbrock("lbfgs/rosenbrock_wolfe_iters", [dict(params=[0, 1], max_iter=4, line_search_fn="strong_wolfe")]),
        rosenbrock("lbfgs/rosenbrock_fixed", [dict(params=[0, 1], lr=0.05, max_iter=2, history_size=4)]),
        mlp("lbfgs/mlp_wolfe", "lbfgs", "ce", one(lr=1, max_iter=3, history_size=5, line_search_fn="strong_wolfe")),
        mlp("lbfgs/mlp_fixed", "lbfgs", "mse", one(lr=0.5, max_iter=2, max_eval=3)),
    ]
    write("optim/testdata/golden_optim_extra.json", cases)


if __name__ == "__main__":
    main()
