"""Golden values for nn's streaming evaluation metrics (nn/metrics*.go).

Reference values come from scikit-learn (Debian's python3-sklearn), except
perplexity, which is exp of torch's cross_entropy. Each case holds one
dataset: inputs are [pred, target]; attrs["metrics"] names the metrics and
outputs[0] holds their values in the same order.

Run: /usr/bin/python3 internal/golden/gen/gen_metrics.py
"""

import numpy as np
import torch
import torch.nn.functional as F
from sklearn import metrics as skm

from golden import Case, seed, write

cases = []


def vec(vals):
    return torch.tensor(vals, dtype=torch.float64)


def classification(name, pred, target, c):
    """pred: scores with class axis 1 or integer labels; target: labels."""
    if pred.dtype.is_floating_point:
        yp = pred.argmax(1).reshape(-1).numpy()
    else:
        yp = pred.reshape(-1).numpy()
    yt = target.reshape(-1).numpy()
    labels = list(range(c))
    present = sorted(set(yt.tolist()) | set(yp.tolist()))
    res = {
        "accuracy": skm.accuracy_score(yt, yp),
        "balanced_accuracy": skm.balanced_accuracy_score(yt, yp),
        "mcc": skm.matthews_corrcoef(yt, yp),
        "kappa": skm.cohen_kappa_score(yt, yp),
        "mean_iou": skm.jaccard_score(yt, yp, labels=present, average="macro", zero_division=0),
        "mean_dice": skm.f1_score(yt, yp, labels=present, average="macro", zero_division=0),
    }
    for avg in ("micro", "macro", "weighted"):
        kw = dict(labels=labels, average=avg, zero_division=0)
        res["precision_" + avg] = skm.precision_score(yt, yp, **kw)
        res["recall_" + avg] = skm.recall_score(yt, yp, **kw)
        res["f1_" + avg] = skm.f1_score(yt, yp, **kw)
    per = {
        "iou": skm.jaccard_score(yt, yp, labels=labels, average=None, zero_division=0),
        "dice": skm.f1_score(yt, yp, labels=labels, average=None, zero_division=0),
        "precision": skm.precision_score(yt, yp, labels=labels, average=None, zero_division=0),
        "recall": skm.recall_score(yt, yp, labels=labels, average=None, zero_division=0),
    }
    names = sorted(res)
    outputs = [vec([res[k] for k in names]),
               torch.tensor(skm.confusion_matrix(yt, yp, labels=labels), dtype=torch.int64)]
    outputs += [vec(per[k]) for k in sorted(per)]
    cases.append(Case(name, "classification", [pred, target], outputs,
                      num_classes=c, metrics=names, per_class=sorted(per)))


def topk(name, scores, target, ks):
    c = scores.shape[1]
    vals = [skm.top_k_accuracy_score(target.numpy(), scores.numpy(), k=k, labels=list(range(c)))
            for k in ks]
    cases.append(Case(name, "topk", [scores, target], [vec(vals)], ks=list(ks)))


def regression(name, pred, target):
    yp, yt = pred.reshape(-1).numpy(), target.reshape(-1).numpy()
    res = {
        "mse": skm.mean_squared_error(yt, yp),
        "rmse": skm.mean_squared_error(yt, yp, squared=False),
        "mae": skm.mean_absolute_error(yt, yp),
        "r2": skm.r2_score(yt, yp),
        "mape": skm.mean_absolute_percentage_error(yt, yp),
    }
    names = sorted(res)
    cases.append(Case(name, "regression", [pred, target], [vec([res[k] for k in names])], metrics=names))


def cosine(name, pred, target):
    p, t = pred.numpy(), target.numpy()
    v = float(np.mean(np.diag(skm.pairwise.cosine_similarity(p, t))))
    cases.append(Case(name, "cosine", [pred, target], [vec([v])]))


def logloss(name, pred, target, c, eps="auto"):
    kw = {} if eps == "auto" else {"eps": eps}
    if pred.dim() == target.dim():
        v = skm.log_loss(target.numpy(), pred.numpy(), labels=[0, 1], **kw)
    else:
        p = pred.movedim(1, -1).reshape(-1, c).numpy()
        v = skm.log_loss(target.reshape(-1).numpy(), p, labels=list(range(c)), **kw)
    cases.append(Case(name, "logloss", [pred, target], [vec([v])], eps=0.0 if eps == "auto" else eps))


def perplexity(name, logits, target):
    v = torch.exp(F.cross_entropy(logits, target)).item()
    cases.append(Case(name, "perplexity", [logits, target], [vec([v])]))


def ranking(name, scores, target):
    yt, s = target.numpy(), scores.numpy()
    prec, rec, _ = skm.precision_recall_curve(yt, s)
    names = ["average_precision", "pr_auc", "roc_auc"]
    vals = [skm.average_precision_score(yt, s), skm.auc(rec, prec), skm.roc_auc_score(yt, s)]
    cases.append(Case(name, "ranking", [scores, target], [vec(vals)], metrics=names))


def imbalanced(n, probs):
    return torch.multinomial(torch.tensor(probs), n, replacement=True)


seed(1)
# Multiclass logits with class imbalance; predictions follow targets loosely.
y = imbalanced(60, [0.5, 0.25, 0.15, 0.1])
logits = torch.randn(60, 4, dtype=torch.float64) + 1.5 * F.one_hot(y, 4)
classification("logits_imbalanced", logits, y, 4)
# Integer labels; class 4 never occurs (zero-division paths).
yt = imbalanced(50, [0.4, 0.3, 0.2, 0.1, 0.0])
yp = torch.where(torch.rand(50) < 0.6, yt, imbalanced(50, [0.2, 0.2, 0.2, 0.4, 0.0]))
classification("labels_missing_class", yp, yt, 5)
# Segmentation: logits [N,C,H,W], labels [N,H,W].
seg_t = imbalanced(2 * 4 * 5, [0.6, 0.3, 0.1]).reshape(2, 4, 5)
seg = torch.randn(2, 3, 4, 5, dtype=torch.float32) + 2 * F.one_hot(seg_t, 3).permute(0, 3, 1, 2)
classification("segmentation", seg, seg_t, 3)
# Binary labels.
bt = imbalanced(40, [0.8, 0.2])
bp = torch.where(torch.rand(40) < 0.7, bt, 1 - bt)
classification("binary_labels", bp, bt, 2)

seed(2)
sc = torch.randn(30, 6, dtype=torch.float64)
topk("topk", sc, imbalanced(30, [0.3, 0.2, 0.2, 0.1, 0.1, 0.1]), [1, 2, 3, 6])
sc = torch.randint(0, 3, (30, 5)).to(torch.float64)  # many ties
topk("topk_ties", sc, torch.randint(0, 5, (30,)), [1, 2, 4])

seed(3)
yt = torch.randn(50, dtype=torch.float64) * 3 + 1
regression("regression", yt + torch.randn(50, dtype=torch.float64), yt)
yt = torch.randn(8, 3, dtype=torch.float64)
yt[0, 0] = 0.0  # MAPE's eps clamp
regression("regression_2d_zero", yt + 0.5 * torch.randn(8, 3, dtype=torch.float64), yt)
cosine("cosine", torch.randn(12, 5, dtype=torch.float64), torch.randn(12, 5, dtype=torch.float64))

seed(4)
pb = torch.rand(40, dtype=torch.float64)
pb[0], pb[1] = 0.0, 1.0  # clipping
tb = imbalanced(40, [0.7, 0.3])
tb[0], tb[1] = 1, 0
logloss("logloss_binary", pb, tb, 2)
logloss("logloss_binary_eps", pb, tb, 2, eps=1e-3)
pm = torch.softmax(torch.randn(30, 4, dtype=torch.float64) * 2, 1)
pm[0] = torch.tensor([0.0, 0.0, 1.0, 0.0], dtype=torch.float64)
tm = imbalanced(30, [0.4, 0.3, 0.2, 0.1])
tm[0] = 0
logloss("logloss_multiclass", pm, tm, 4)
pm = pm * 0.9  # rows no longer sum to 1: renormalization
logloss("logloss_unnormalized", pm, tm, 4, eps=1e-6)
perplexity("perplexity", torch.randn(25, 7, dtype=torch.float64), torch.randint(0, 7, (25,)))
perplexity("perplexity_seq", torch.randn(3, 5, 4, dtype=torch.float64), torch.randint(0, 5, (3, 4)))

seed(5)
yt = imbalanced(50, [0.75, 0.25])
ranking("ranking", torch.randn(50, dtype=torch.float64) + yt, yt)
s = torch.round((torch.rand(60, dtype=torch.float64) + 0.4 * imbalanced(60, [0.8, 0.2])) * 5) / 5
ranking("ranking_ties", s, (torch.rand(60) < 0.2 + 0.5 * s.clamp(0, 1)).long())

write("nn/testdata/golden_metrics.json", cases)
