"""Golden values for optim's learning-rate schedules and gradient clipping.

Each schedule case runs a real torch.optim.lr_scheduler on an SGD optimizer
with two parameter groups (learning rates 0.1 and 0.02) and records the
learning rates of both groups after construction and after each of 100
steps: output 0 has shape [101, 2]. Clipping cases record the gradients
before and after torch.nn.utils.clip_grad_norm_ / clip_grad_value_ and the
returned total norm.
"""

import math
import warnings

import torch
from torch.optim import lr_scheduler as S

import golden

warnings.simplefilter("ignore")

STEPS = 100


def make_opt():
    a = torch.zeros(2, requires_grad=True)
    b = torch.zeros(3, requires_grad=True)
    return torch.optim.SGD([{"params": [a], "lr": 0.1}, {"params": [b], "lr": 0.02}], lr=0.5, momentum=0.9)


def lrs(opt):
    return [g["lr"] for g in opt.param_groups]


def sched_case(name, build, metrics=None, **attrs):
    opt = make_opt()
    s = build(opt)
    rows = [lrs(opt)]
    for i in range(STEPS):
        if metrics is None:
            s.step()
        else:
            s.step(metrics[i])
        rows.append(lrs(opt))
    out = torch.tensor(rows, dtype=torch.float64)
    ins = []
    if metrics is not None:
        ins = [torch.tensor(metrics, dtype=torch.float64)]
    return golden.Case("schedule/" + name, "schedule", ins, [out], kind=name.split("/")[0], **attrs)


def plateau_metrics():
    # Decreasing, then flat, then noisy plateaus, so that patience,
    # thresholds and cooldown all matter.
    m = []
    for i in range(STEPS):
        if i < 15:
            m.append(1.0 - 0.05 * i)
        elif i < 40:
            m.append(0.3 + 0.00001 * (i % 3))
        elif i < 60:
            m.append(0.3 - 0.001 * (i - 40))
        else:
            m.append(0.28 + 0.01 * math.sin(i))
    return m


def main():
    cases = []
    cases.append(sched_case("step", lambda o: S.StepLR(o, step_size=7, gamma=0.5), step_size=7, gamma=0.5))
    cases.append(sched_case("multistep", lambda o: S.MultiStepLR(o, milestones=[10, 30, 30, 75], gamma=0.3),
                            milestones=[10, 30, 30, 75], gamma=0.3))
    cases.append(sched_case("exponential", lambda o: S.ExponentialLR(o, gamma=0.97), gamma=0.97))
    cases.append(sched_case("cosine", lambda o: S.CosineAnnealingLR(o, T_max=13, eta_min=0.001),
                            T_max=13, eta_min=0.001))
    cases.append(sched_case("warm_restarts/mult1", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=9, T_mult=1, eta_min=0.0005),
                            T_0=9, T_mult=1, eta_min=0.0005))
    cases.append(sched_case("warm_restarts/mult2", lambda o: S.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=0.001),
                            T_0=5, T_mult=2, eta_min=0.001))
    cases.append(sched_case("linear", lambda o: S.LinearLR(o, start_factor=0.25, end_factor=0.9, total_iters=20),
                            start_factor=0.25, end_factor=0.9, total_iters=20))
    cases.append(sched_case("constant", lambda o: S.ConstantLR(o, factor=0.4, total_iters=12), factor=0.4, total_iters=12))
    cases.append(sched_case("polynomial/p1", lambda o: S.PolynomialLR(o, total_iters=40, power=1.0), total_iters=40, power=1.0))
    cases.append(sched_case("polynomial/p2.5", lambda o: S.PolynomialLR(o, total_iters=60, power=2.5), total_iters=60, power=2.5))
    for strat in ("cos", "linear"):
        for three in (False, True):
            cases.append(sched_case(
                "onecycle/%s/three_phase=%s" % (strat, three),
                lambda o: S.OneCycleLR(o, max_lr=[1.0, 0.3], total_steps=STEPS + 1, pct_start=0.25,
                                       anneal_strategy=strat, div_factor=20.0, final_div_factor=500.0,
                                       three_phase=three, cycle_momentum=False),
                max_lr=[1.0, 0.3], total_steps=STEPS + 1, pct_start=0.25, anneal_strategy=strat,
                div_factor=20.0, final_div_factor=500.0, three_phase=three))
    for mode in ("triangular", "triangular2", "exp_range"):
        cases.append(sched_case(
            "cyclic/" + mode,
            lambda o: S.CyclicLR(o, base_lr=[0.01, 0.002], max_lr=[0.1, 0.05], step_size_up=7, step_size_down=5,
                                 mode=mode, gamma=0.98, cycle_momentum=False),
            base_lr=[0.01, 0.002], max_lr=[0.1, 0.05], step_size_up=7, step_size_down=5, mode=mode, gamma=0.98))
    m = plateau_metrics()
    for mode, tmode, thr in (("min", "rel", 1e-4), ("min", "abs", 0.005), ("max", "rel", 0.01), ("max", "abs", 0.001)):
        ms = m if mode == "min" else [-v for v in m]
        cases.append(sched_case(
            "plateau/%s/%s" % (mode, tmode),
            lambda o: S.ReduceLROnPlateau(o, mode=mode, factor=0.5, patience=3, threshold=thr, threshold_mode=tmode,
                                          cooldown=2, min_lr=[0.004, 0.001]),
            metrics=ms, mode=mode, factor=0.5, patience=3, threshold=thr, threshold_mode=tmode, cooldown=2,
            min_lr=[0.004, 0.001]))
    cases.append(sched_case("lambda", lambda o: S.LambdaLR(o, lambda e: 1.0 / (1.0 + 0.1 * e))))
    cases.append(sched_case(
        "sequential",
        lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.1, total_iters=10),
                                     S.CosineAnnealingLR(o, T_max=30, eta_min=0.002),
                                     S.StepLR(o, step_size=10, gamma=0.5)], milestones=[10, 50])))
    cases.append(sched_case(
        "chained",
        lambda o: S.ChainedScheduler([S.ConstantLR(o, factor=0.5, total_iters=8), S.ExponentialLR(o, gamma=0.98),
                                      S.MultiStepLR(o, milestones=[30, 60], gamma=0.5)])))

    # Gradient clipping.
    golden.seed(1)
    shapes = [(3, 4), (5,), (2, 2, 3)]
    for dtype in (torch.float32, torch.float64):
        for norm_type in (2.0, 1.0, math.inf, 3.0):
            for max_norm in (0.5, 100.0):
                grads = [torch.randn(s, dtype=dtype) * 1.5 for s in shapes]
                ps = [torch.zeros(s, dtype=dtype, requires_grad=True) for s in shapes]
                for p, g in zip(ps, grads):
                    p.grad = g.clone()
                total = torch.nn.utils.clip_grad_norm_(ps, max_norm, norm_type)
                cases.append(golden.Case(
                    "clip_norm/%s/p=%s/max=%s" % (str(dtype)[6:], norm_type, max_norm), "clip_grad_norm",
                    grads, [p.grad for p in ps] + [total.reshape(())], max_norm=max_norm, norm_type=norm_type))
        grads = [torch.randn(s, dtype=dtype) for s in shapes]
        ps = [torch.zeros(s, dtype=dtype, requires_grad=True) for s in shapes]
        for p, g in zip(ps, grads):
            p.grad = g.clone()
        torch.nn.utils.clip_grad_value_(ps, 0.7)
        cases.append(golden.Case("clip_value/%s" % str(dtype)[6:], "clip_grad_value", grads, [p.grad for p in ps],
                                 clip=0.7))
    golden.write("optim/testdata/golden_schedules.json", cases)


if __name__ == "__main__":
    main()
