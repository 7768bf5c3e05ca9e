"""Golden trajectories for ASGD, SparseAdam, LBFGS, LAMB, LARS and Adafactor.

Writes optim/testdata/golden_optim_extra.json, replayed by
optim/extra_golden_test.go. Every trajectory is in float64, over 20 steps.
ASGD, SparseAdam and LBFGS are torch 1.13's; LAMB, LARS and Adafactor are
not in torch, so they are the small reference implementations below,
written from the papers (Adafactor with Hugging Face transformers' options
and defaults).

op "mlp": a 3-4-2 MLP (Linear, tanh, Linear) on a fixed batch, as in
gen_optim_more.py.
    inputs:  X [5, 3], Y ([5, 2] floats for "mse", [5] int64 classes for
             "ce"), W1 [4, 3], b1 [4], W2 [2, 4], b2 [2]
    outputs: losses [20] (before each step), then W1, b1, W2, b2 after each
             step stacked along a new first dimension; for "asgd" then the
             averages ("ax") of W1, b1, W2, b2 after each step, stacked
    attrs:   optimizer ("asgd", "lbfgs", "lamb", "lars", "adafactor"), loss ("mse", "ce"), groups (list of
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


class Lamb(torch.optim.Optimizer):
    """You et al. 2019, Algorithm 2 (phi = identity), with bias correction."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            b1, b2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"], st["m"], st["v"] = 0, torch.zeros_like(p), torch.zeros_like(p)
                st["step"] += 1
                t = st["step"]
                st["m"] = b1 * st["m"] + (1 - b1) * p.grad
                st["v"] = b2 * st["v"] + (1 - b2) * p.grad ** 2
                r = (st["m"] / (1 - b1 ** t)) / ((st["v"] / (1 - b2 ** t)).sqrt() + group["eps"])
                r = r + group["weight_decay"] * p
                wn, rn = p.norm().item(), r.norm().item()
                trust = wn / rn if wn > 0 and rn > 0 else 1.0
                p.sub_(group["lr"] * trust * r)


class Lars(torch.optim.Optimizer):
    """You et al. 2017, Algorithm 1."""

    def __init__(self, params, lr, momentum=0.0, weight_decay=0.0, trust_coefficient=1e-3, eps=0.0):
        super().__init__(params, dict(lr=lr, momentum=momentum, weight_decay=weight_decay,
                                      trust_coefficient=trust_coefficient, eps=eps))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            wd = group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                wn, gn = p.norm().item(), p.grad.norm().item()
                local = group["trust_coefficient"] * wn / (gn + wd * wn + group["eps"]) if wn > 0 and gn > 0 else 1.0
                st = self.state[p]
                if not st:
                    st["buf"] = torch.zeros_like(p)
                st["buf"] = group["momentum"] * st["buf"] + group["lr"] * local * (p.grad + wd * p)
                p.sub_(st["buf"])


def rms(t):
    return t.norm() / (t.numel() ** 0.5)


class Adafactor(torch.optim.Optimizer):
    """Shazeer and Stern 2018, with Hugging Face transformers' options."""

    def __init__(self, params, lr=None, eps=(1e-30, 1e-3), clip_threshold=1.0, decay_rate=-0.8, beta1=None,
                 weight_decay=0.0, scale_parameter=True, relative_step=True, warmup_init=False):
        super().__init__(params, dict(lr=lr, eps=eps, clip_threshold=clip_threshold, decay_rate=decay_rate,
                                      beta1=beta1, weight_decay=weight_decay, scale_parameter=scale_parameter,
                                      relative_step=relative_step, warmup_init=warmup_init))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                st = self.state[p]
                factored = g.dim() >= 2
                if not st:
                    st["step"] = 0
                    if factored:
                        st["row"] = torch.zeros(g.shape[:-1], dtype=g.dtype)
                        st["col"] = torch.zeros(g.shape[:-2] + g.shape[-1:], dtype=g.dtype)
                    else:
                        st["v"] = torch.zeros_like(g)
                    if group["beta1"]:
                        st["m"] = torch.zeros_like(g)
                st["step"] += 1
                t = st["step"]
                lr = group["lr"]
                if group["relative_step"]:
                    lr = min(1e-6 * t if group["warmup_init"] else 1e-2, 1.0 / t ** 0.5)
                if group["scale_parameter"]:
                    lr = lr * max(group["eps"][1], rms(p).item())
                beta2 = 1.0 - t ** group["decay_rate"]
                sq = g ** 2 + group["eps"][0]
                if factored:
                    st["row"] = beta2 * st["row"] + (1 - beta2) * sq.mean(-1)
                    st["col"] = beta2 * st["col"] + (1 - beta2) * sq.mean(-2)
                    r = (st["row"] / st["row"].mean(-1, keepdim=True)).rsqrt().unsqueeze(-1)
                    c = st["col"].unsqueeze(-2).rsqrt()
                    u = r * c * g
                else:
                    st["v"] = beta2 * st["v"] + (1 - beta2) * sq
                    u = st["v"].rsqrt() * g
                u = u / max(1.0, (rms(u) / group["clip_threshold"]).item()) * lr
                if group["beta1"]:
                    st["m"] = group["beta1"] * st["m"] + (1 - group["beta1"]) * u
                    u = st["m"]
                if group["weight_decay"]:
                    p.mul_(1 - group["weight_decay"] * lr)
                p.sub_(u)


def make(name, groups):
    if name == "lamb":
        return Lamb(groups)
    if name == "lars":
        return Lars(groups, lr=groups[0]["lr"])
    if name == "adafactor":
        return Adafactor(groups)
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
        mlp("lamb/default", "lamb", "mse", one(lr=0.01)),
        mlp("lamb/weight_decay_betas", "lamb", "ce", one(lr=0.05, betas=[0.8, 0.95], eps=1e-4, weight_decay=0.1)),
        mlp("lamb/groups", "lamb", "mse", split(dict(lr=0.02), dict(lr=0.01, weight_decay=0.3))),
        mlp("lars/plain", "lars", "mse", one(lr=5.0)),
        mlp("lars/momentum_decay", "lars", "ce", one(lr=2.0, momentum=0.9, weight_decay=1e-3, trust_coefficient=0.02,
                                                     eps=1e-8)),
        mlp("lars/groups", "lars", "mse", split(dict(lr=3.0, momentum=0.5), dict(lr=1.0, trust_coefficient=0.01))),
        mlp("adafactor/default", "adafactor", "mse", one()),
        mlp("adafactor/beta1_decay_warmup", "adafactor", "ce", one(beta1=0.9, weight_decay=0.1, warmup_init=True,
                                                                    clip_threshold=0.5, decay_rate=-0.6)),
        mlp("adafactor/manual_lr", "adafactor", "mse", split(dict(lr=0.05, relative_step=False, scale_parameter=False),
                                                               dict(lr=0.02, relative_step=False, eps=[1e-20, 1e-2]))),
    ]
    write("optim/testdata/golden_optim_extra.json", cases)


if __name__ == "__main__":
    main()
