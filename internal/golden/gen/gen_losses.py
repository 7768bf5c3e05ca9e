"""Golden values for the loss functions in package nn (nn/losses_*.go).

Writes nn/testdata/golden_losses.json. Every case records the forward value
and, through autograd_case, the gradients of every floating-point input; the
attr "diff" lists the inputs whose gradients the Go test compares (the
others are labels Ember takes as plain tensors). FocalLoss and DiceLoss are
computed from their formulas here (torchvision may be absent).
"""

import math

import torch
import torch.nn.functional as F

from golden import Case, autograd_case, seed, write

D = torch.float64
REDS = ("none", "mean", "sum")
cases = []


def add(name, op, fn, inputs, diff, **attrs):
    """Record fn(*inputs); inputs not listed in diff enter fn detached."""

    def run(*xs):
        return fn(*[x if i in diff else x.detach() for i, x in enumerate(xs)])

    cases.append(autograd_case(name, op, run, inputs, diff=list(diff), **attrs))


def sigmoid_focal(x, t, alpha, gamma, reduction):
    p = torch.sigmoid(x)
    ce = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    p_t = p * t + (1 - p) * (1 - t)
    loss = ce * (1 - p_t) ** gamma
    if alpha >= 0:
        loss = (alpha * t + (1 - alpha) * (1 - t)) * loss
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


def dice(p, t, smooth, reduction):
    dims = tuple(range(1, p.dim()))
    inter = (p * t).sum(dims)
    d = (2 * inter + smooth) / (p.sum(dims) + t.sum(dims) + smooth)
    loss = 1 - d
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


# Elementwise regression losses.
seed(1)
x, y = torch.randn(3, 4, dtype=D), torch.randn(3, 4, dtype=D)
for r in REDS:
    add("l1/" + r, "l1", lambda a, b, r=r: F.l1_loss(a, b, reduction=r), [x, y], [0, 1], reduction=r)
add("l1/float32", "l1", lambda a, b: F.l1_loss(a, b), [x.float(), y.float()], [0, 1], reduction="mean")
x, y = torch.randn(3, 4, dtype=D) * 2, torch.randn(3, 4, dtype=D)
for r in REDS:
    for beta in (1.0, 0.5, 0.0):
        add("smooth_l1/%s/beta%g" % (r, beta), "smooth_l1",
            lambda a, b, r=r, beta=beta: F.smooth_l1_loss(a, b, reduction=r, beta=beta),
            [x, y], [0, 1], reduction=r, beta=beta)
    for delta in (1.0, 2.0):
        add("huber/%s/delta%g" % (r, delta), "huber",
            lambda a, b, r=r, delta=delta: F.huber_loss(a, b, reduction=r, delta=delta),
            [x, y], [0, 1], reduction=r, delta=delta)

# NLL.
seed(2)
lp = torch.log_softmax(torch.randn(5, 4, dtype=D), 1)
tg = torch.tensor([0, 2, 3, 2, 1])
w = torch.rand(4, dtype=D) + 0.5
lp4 = torch.log_softmax(torch.randn(2, 3, 2, 2, dtype=D), 1)
tg4 = torch.randint(0, 3, (2, 2, 2))
for r in REDS:
    add("nll/" + r, "nll", lambda a, t, r=r: F.nll_loss(a, t, reduction=r), [lp, tg], [0], reduction=r, ignore_index=-100)
    add("nll/weight_ignore/" + r, "nll",
        lambda a, t, w, r=r: F.nll_loss(a, t, weight=w, ignore_index=2, reduction=r),
        [lp, tg, w], [0], reduction=r, ignore_index=2, weighted=True)
    add("nll/spatial/" + r, "nll",
        lambda a, t, w, r=r: F.nll_loss(a, t, weight=w, reduction=r),
        [lp4, tg4, w[:3]], [0], reduction=r, ignore_index=-100, weighted=True)

# BCE family.
seed(3)
p = torch.sigmoid(torch.randn(3, 4, dtype=D))
t = torch.rand(3, 4, dtype=D)
w = torch.rand(4, dtype=D) + 0.5
logits = torch.randn(3, 4, dtype=D) * 2
pw = torch.rand(4, dtype=D) * 2 + 0.1
for r in REDS:
    add("bce/" + r, "bce", lambda a, b, r=r: F.binary_cross_entropy(a, b, reduction=r), [p, t], [0], reduction=r)
    add("bce/weight/" + r, "bce", lambda a, b, w, r=r: F.binary_cross_entropy(a, b, weight=w, reduction=r),
        [p, t, w], [0], reduction=r, weighted=True)
    add("bce_logits/" + r, "bce_logits",
        lambda a, b, r=r: F.binary_cross_entropy_with_logits(a, b, reduction=r), [logits, t], [0], reduction=r)
    add("bce_logits/weights/" + r, "bce_logits",
        lambda a, b, w, pw, r=r: F.binary_cross_entropy_with_logits(a, b, weight=w, pos_weight=pw, reduction=r),
        [logits, t, w, pw], [0], reduction=r, weighted=True, pos_weighted=True)
edge = torch.tensor([0.0, 1.0, 0.5, 1e-50], dtype=D)
edge_t = torch.tensor([1.0, 0.0, 1.0, 1.0], dtype=D)
cases.append(Case("bce/clamp", "bce", [edge, edge_t],
                  [F.binary_cross_entropy(edge, edge_t, reduction="none")], reduction="none", diff=[]))
big = torch.tensor([[-800.0, 800.0, 30.0, -30.0]], dtype=D)
big_t = torch.tensor([[1.0, 0.0, 0.3, 0.7]], dtype=D)
add("bce_logits/extreme", "bce_logits",
    lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction="none"), [big, big_t], [0], reduction="none")

# KL divergence.
seed(4)
inp = torch.log_softmax(torch.randn(3, 5, dtype=D), 1)
tp = torch.softmax(torch.randn(3, 5, dtype=D), 1)
for r in REDS + ("batchmean",):
    add("kl_div/" + r, "kl_div", lambda a, b, r=r: F.kl_div(a, b, reduction=r), [inp, tp], [0, 1],
        reduction=r, log_target=False)
    add("kl_div/log_target/" + r, "kl_div", lambda a, b, r=r: F.kl_div(a, b, reduction=r, log_target=True),
        [inp, tp.log()], [0, 1], reduction=r, log_target=True)

# Poisson NLL.
seed(5)
li = torch.randn(3, 4, dtype=D)
rate = torch.rand(3, 4, dtype=D) * 3 + 0.1
tgt = torch.rand(3, 4, dtype=D) * 4 + 0.05
for r in REDS:
    for full in (False, True):
        add("poisson_nll/log/%s/full%d" % (r, full), "poisson_nll",
            lambda a, b, r=r, full=full: F.poisson_nll_loss(a, b, log_input=True, full=full, reduction=r),
            [li, tgt], [0, 1], reduction=r, log_input=True, full=full, eps=1e-8)
        add("poisson_nll/rate/%s/full%d" % (r, full), "poisson_nll",
            lambda a, b, r=r, full=full: F.poisson_nll_loss(a, b, log_input=False, full=full, eps=1e-3, reduction=r),
            [rate, tgt], [0, 1], reduction=r, log_input=False, full=full, eps=1e-3)

# Gaussian NLL.
seed(6)
mu, tg = torch.randn(4, 3, dtype=D), torch.randn(4, 3, dtype=D)
for vshape in ((4, 3), (4, 1), (4,)):
    var = torch.rand(*vshape, dtype=D) + 0.2
    for r in REDS:
        for full in (False, True):
            add("gaussian_nll/%s/%s/full%d" % ("x".join(map(str, vshape)), r, full), "gaussian_nll",
                lambda a, b, v, r=r, full=full: F.gaussian_nll_loss(a, b, v, full=full, reduction=r),
                [mu, tg, var], [0, 1, 2], reduction=r, full=full, eps=1e-6)
var = torch.tensor([[0.5], [1e-9], [0.3], [2.0]], dtype=D)
add("gaussian_nll/clamped", "gaussian_nll", lambda a, b, v: F.gaussian_nll_loss(a, b, v, eps=1e-3, reduction="none"),
    [mu, tg, var], [0, 1, 2], reduction="none", full=False, eps=1e-3)

# Margin losses.
seed(7)
x1, x2 = torch.randn(6, dtype=D), torch.randn(6, dtype=D)
yy = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0], dtype=D)
hx = torch.randn(2, 3, dtype=D) * 2
hy = torch.tensor([[1.0, -1.0, -1.0], [-1.0, 1.0, -1.0]], dtype=D)
sm = torch.randn(3, 4, dtype=D)
sy = torch.sign(torch.randn(3, 4, dtype=D))
for r in REDS:
    for m in (0.0, 0.5):
        add("margin_ranking/%s/m%g" % (r, m), "margin_ranking",
            lambda a, b, c, r=r, m=m: F.margin_ranking_loss(a, b, c, margin=m, reduction=r),
            [x1, x2, yy], [0, 1], reduction=r, margin=m)
    for m in (1.0, 2.0):
        add("hinge_embedding/%s/m%g" % (r, m), "hinge_embedding",
            lambda a, b, r=r, m=m: F.hinge_embedding_loss(a, b, margin=m, reduction=r),
            [hx, hy], [0], reduction=r, margin=m)
    add("soft_margin/" + r, "soft_margin", lambda a, b, r=r: F.soft_margin_loss(a, b, reduction=r),
        [sm, sy], [0], reduction=r)

seed(8)
mx = torch.randn(3, 5, dtype=D)
mt = torch.tensor([[3, 0, -1, 1, 2], [1, 2, 4, 0, -1], [4, -1, 0, 0, 0]])
mst = (torch.rand(3, 5) > 0.5).to(D)
mw = torch.rand(5, dtype=D) + 0.5
mmt = torch.tensor([1, 4, 0])
for r in REDS:
    add("multilabel_margin/" + r, "multilabel_margin",
        lambda a, t, r=r: F.multilabel_margin_loss(a, t, reduction=r), [mx, mt], [0], reduction=r)
    add("multilabel_soft_margin/" + r, "multilabel_soft_margin",
        lambda a, t, r=r: F.multilabel_soft_margin_loss(a, t, reduction=r), [mx, mst], [0], reduction=r)
    add("multilabel_soft_margin/weight/" + r, "multilabel_soft_margin",
        lambda a, t, w, r=r: F.multilabel_soft_margin_loss(a, t, weight=w, reduction=r),
        [mx, mst, mw], [0], reduction=r, weighted=True)
    for pp, m in ((1, 1.0), (2, 0.7)):
        add("multi_margin/%s/p%d" % (r, pp), "multi_margin",
            lambda a, t, r=r, pp=pp, m=m: F.multi_margin_loss(a, t, p=pp, margin=m, reduction=r),
            [mx, mmt], [0], reduction=r, p=pp, margin=m)
        add("multi_margin/weight/%s/p%d" % (r, pp), "multi_margin",
            lambda a, t, w, r=r, pp=pp, m=m: F.multi_margin_loss(a, t, p=pp, margin=m, weight=w, reduction=r),
            [mx, mmt, mw], [0], reduction=r, p=pp, margin=m, weighted=True)

seed(9)
c1, c2 = torch.randn(4, 3, dtype=D), torch.randn(4, 3, dtype=D)
cy = torch.tensor([1.0, -1.0, -1.0, 1.0], dtype=D)
an, po, ne = (torch.randn(4, 3, dtype=D) for _ in range(3))
for r in REDS:
    for m in (0.0, -0.3):
        add("cosine_embedding/%s/m%g" % (r, m), "cosine_embedding",
            lambda a, b, c, r=r, m=m: F.cosine_embedding_loss(a, b, c, margin=m, reduction=r),
            [c1, c2, cy], [0, 1], reduction=r, margin=m)
    for pp, swap in ((2.0, False), (1.0, True), (3.0, False)):
        add("triplet_margin/%s/p%g/swap%d" % (r, pp, swap), "triplet_margin",
            lambda a, b, c, r=r, pp=pp, swap=swap: F.triplet_margin_loss(a, b, c, margin=1.5, p=pp, swap=swap, reduction=r),
            [an, po, ne], [0, 1, 2], reduction=r, margin=1.5, p=pp, eps=1e-6, swap=swap)
    for swap in (False, True):
        add("triplet_distance/default/%s/swap%d" % (r, swap), "triplet_distance",
            lambda a, b, c, r=r, swap=swap: F.triplet_margin_with_distance_loss(a, b, c, margin=1.5, swap=swap, reduction=r),
            [an, po, ne], [0, 1, 2], reduction=r, margin=1.5, swap=swap, distance="default")
        add("triplet_distance/cosine/%s/swap%d" % (r, swap), "triplet_distance",
            lambda a, b, c, r=r, swap=swap: F.triplet_margin_with_distance_loss(
                a, b, c, distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), margin=0.8, swap=swap, reduction=r),
            [an, po, ne], [0, 1, 2], reduction=r, margin=0.8, swap=swap, distance="cosine")

# Focal and Dice (formula references above).
seed(10)
fx = torch.randn(3, 4, dtype=D) * 2
ft = (torch.rand(3, 4) > 0.5).to(D)
for r in REDS:
    for alpha, gamma in ((0.25, 2.0), (-1.0, 0.0), (0.6, 1.5)):
        add("focal/%s/a%g/g%g" % (r, alpha, gamma), "focal",
            lambda a, b, r=r, alpha=alpha, gamma=gamma: sigmoid_focal(a, b, alpha, gamma, r),
            [fx, ft], [0], reduction=r, alpha=alpha, gamma=gamma)
dp = torch.sigmoid(torch.randn(2, 3, 4, dtype=D))
dt = (torch.rand(2, 3, 4) > 0.5).to(D)
for r in REDS:
    for smooth in (1.0, 0.0):
        add("dice/%s/s%g" % (r, smooth), "dice",
            lambda a, b, r=r, smooth=smooth: dice(a, b, smooth, r), [dp, dt], [0], reduction=r, smooth=smooth)

# CTC: logits -> log_softmax inside, so the input gradient is the one with
# respect to the logits (Ember's CTC gradient is the exact one with respect
# to log_probs; PyTorch's differs by a term log_softmax's backward removes).
seed(11)
T, N, C = 6, 3, 4
ctc_logits = torch.randn(T, N, C, dtype=D)
ctc_tg = torch.tensor([[1, 2, 2], [3, 1, 0], [2, 0, 0]])
ctc_il = torch.tensor([6, 5, 4])
ctc_tl = torch.tensor([3, 2, 1])
for r in REDS:
    add("ctc/padded/" + r, "ctc",
        lambda a, t, il, tl, r=r: F.ctc_loss(a.log_softmax(2), t, il, tl, blank=0, reduction=r),
        [ctc_logits, ctc_tg, ctc_il, ctc_tl], [0], reduction=r, blank=0, zero_infinity=False)
flat = torch.tensor([1, 1, 3, 3, 2])
flat_tl = torch.tensor([2, 2, 1])
add("ctc/concat/mean", "ctc",
    lambda a, t, il, tl: F.ctc_loss(a.log_softmax(2), t, il, tl, blank=0),
    [ctc_logits, flat, ctc_il, flat_tl], [0], reduction="mean", blank=0, zero_infinity=False)
blank_last = torch.tensor([[0, 1, 2], [2, 1, 0], [1, 0, 0]])
add("ctc/blank3/sum", "ctc",
    lambda a, t, il, tl: F.ctc_loss(a.log_softmax(2), t, il, tl, blank=3, reduction="sum"),
    [ctc_logits, blank_last, ctc_il, ctc_tl], [0], reduction="sum", blank=3, zero_infinity=False)
# Infeasible sample 1 (needs 4 frames for "1 1 1", has 3).
inf_tg = torch.tensor([[1, 2, 0], [1, 1, 1], [2, 0, 0]])
inf_il = torch.tensor([6, 3, 4])
inf_tl = torch.tensor([2, 3, 1])
for zi in (False, True):
    r = "none" if not zi else "mean"
    add("ctc/infeasible/zi%d" % zi, "ctc",
        lambda a, t, il, tl, zi=zi, r=r: F.ctc_loss(a.log_softmax(2), t, il, tl, reduction=r, zero_infinity=zi),
        [ctc_logits, inf_tg, inf_il, inf_tl], [0] if zi else [], reduction=r, blank=0, zero_infinity=zi)

write("nn/testdata/golden_losses.json", cases)
