"""Golden values for tensor.Sort and tensor.TopK (tensor/sort.go)."""

import torch

from golden import Case, seed, write

cases = []
seed(0)
x = torch.randn(3, 5, 4)
for axis in (0, 1, 2, -1):
    for desc in (False, True):
        v, i = torch.sort(x, dim=axis, descending=desc, stable=True)
        cases.append(Case("sort/axis%d/desc%d" % (axis, desc), "sort", [x], [v, i], axis=axis, descending=desc))
for k, axis, largest in ((2, 1, True), (3, 2, False), (1, 0, True), (5, 1, False), (0, 2, True)):
    v, i = torch.topk(x, k, dim=axis, largest=largest, sorted=True)
    cases.append(Case("topk/k%d/axis%d/largest%d" % (k, axis, largest), "topk", [x], [v, i], k=k, axis=axis, largest=largest))
xi = torch.randperm(24).reshape(4, 6) * 3 - 20
v, i = torch.topk(xi, 3, dim=1)
cases.append(Case("topk/int64", "topk", [xi], [v, i], k=3, axis=1, largest=True))
xd = torch.randn(2, 7, dtype=torch.float64)
v, i = torch.sort(xd, dim=1, descending=True, stable=True)
cases.append(Case("sort/float64", "sort", [xd], [v, i], axis=1, descending=True))
xn = torch.tensor([[1.0, float("nan"), -2.0, 3.0], [0.5, 0.25, float("nan"), -1.0]])
v, i = torch.sort(xn, dim=1, stable=True)
cases.append(Case("sort/nan", "sort", [xn], [v, i], axis=1, descending=False))
v, i = torch.topk(xn, 2, dim=1)
cases.append(Case("topk/nan", "topk", [xn], [v, i], k=2, axis=1, largest=True))
# Ties: a stable sort keeps the lower index first.
xt = torch.tensor([[2.0, 1.0, 2.0, 1.0, 2.0]])
v, i = torch.sort(xt, dim=1, descending=True, stable=True)
cases.append(Case("sort/ties", "sort", [xt], [v, i], axis=1, descending=True))
write("tensor/testdata/golden_sort.json", cases)
