"""Golden values for Ember's indexing and joining ops (tensor/index.go,
autograd/ops_index.go): index_select, gather, scatter, scatter_add,
index_add, masked_fill/select/scatter, split, chunk, pad, repeat, tile,
roll, tril, triu and one_hot.

Writes tensor/testdata/golden_index.json. Floating-point cases go through
autograd_case, so they also carry gradients; integer cases are forward only.
Index tensors are inputs after the data tensors, in the op's call order.
"""

import torch
import torch.nn.functional as F

from golden import Case, autograd_case, seed, write

f64, f32, i64, i32 = torch.float64, torch.float32, torch.int64, torch.int32


def rnd(*shape, dtype=f64):
    return torch.randn(*shape, dtype=torch.float64).to(dtype)


def ints(*shape, lo=-9, hi=10, dtype=i64):
    return torch.randint(lo, hi, shape, dtype=dtype)


def idx(values, dtype=i64):
    return torch.tensor(values, dtype=dtype)


def perm_index(shape, axis, n):
    """An index of `shape` whose entries along `axis` are distinct values in
    [0, n) for every fixed position of the other axes (so scatter is
    deterministic)."""
    shape = list(shape)
    axis %= len(shape)
    k = shape[axis]
    moved = shape[:axis] + shape[axis + 1:] + [k]
    count = 1
    for d in moved[:-1]:
        count *= d
    rows = [torch.randperm(n)[:k] for _ in range(count)]
    t = torch.stack(rows).reshape(moved) if rows else torch.zeros(moved, dtype=i64)
    return t.movedim(-1, axis).contiguous()


cases = []

# ---- index_select -------------------------------------------------------
seed(1)
for name, x, axis, ix in [
    ("2d/axis0", rnd(4, 3), 0, idx([3, 0, 3, 1])),
    ("2d/axis1", rnd(4, 3), 1, idx([2, 2, 0])),
    ("2d/axis-1", rnd(4, 3), -1, idx([1])),
    ("3d/axis1", rnd(2, 5, 3), 1, idx([4, 0, 4, 4, 2, 1])),
    ("3d/axis2/int32", rnd(2, 3, 4), 2, idx([3, 1], i32)),
    ("3d/axis0/empty", rnd(2, 3, 4), 0, idx([], i64)),
    ("scalar_index", rnd(3, 4), 1, idx(2)),
    ("embedding", rnd(10, 4), 0, idx([7, 1, 7, 0, 9, 1, 1, 3])),
    ("f32", rnd(3, 5, dtype=f32), 1, idx([4, 0, 2])),
]:
    cases.append(autograd_case("index_select/" + name, "index_select",
                               lambda a, i, ax=axis: a.index_select(ax, i), [x, ix], axis=axis))
x = ints(4, 3)
cases.append(Case("index_select/int64", "index_select", [x, idx([2, 0])], [x.index_select(0, idx([2, 0]))], axis=0))

# ---- gather -------------------------------------------------------------
seed(2)
for name, x, axis, ix in [
    ("2d/axis0", rnd(3, 4), 0, torch.randint(0, 3, (5, 4))),
    ("2d/axis1", rnd(3, 4), 1, torch.randint(0, 4, (3, 6))),
    ("2d/smaller", rnd(3, 4), 1, torch.randint(0, 4, (2, 2))),
    ("3d/axis-1", rnd(2, 3, 4), -1, torch.randint(0, 4, (2, 3, 2))),
    ("3d/axis1", rnd(2, 3, 4), 1, torch.randint(0, 3, (2, 5, 3))),
    ("f32", rnd(4, 3, dtype=f32), 0, torch.randint(0, 4, (2, 3))),
]:
    cases.append(autograd_case("gather/" + name, "gather",
                               lambda a, i, ax=axis: a.gather(ax, i), [x, ix], axis=axis))
x = ints(3, 4)
ix = torch.randint(0, 4, (3, 2))
cases.append(Case("gather/int64", "gather", [x, ix], [x.gather(1, ix)], axis=1))

# ---- scatter (src), scatter (value), scatter_add ------------------------
seed(3)
for name, shape, axis, ishape, sshape in [
    ("2d/axis0", (4, 3), 0, (3, 3), (3, 3)),
    ("2d/axis1", (3, 5), 1, (3, 2), (3, 4)),
    ("3d/axis-1", (2, 3, 4), -1, (2, 2, 3), (2, 3, 3)),
    ("3d/axis1", (2, 4, 3), 1, (2, 2, 2), (2, 2, 3)),
]:
    x, src, big = rnd(*shape), rnd(*ishape), rnd(*sshape)
    ix = perm_index(ishape, axis, shape[axis])
    # torch 1.13's scatter backward mishandles a src larger than the index,
    # so gradient cases use an index-shaped src and big_src is forward only.
    cases.append(autograd_case("scatter/" + name, "scatter",
                               lambda a, s, i, ax=axis: a.scatter(ax, i, s), [x, src, ix], axis=axis))
    cases.append(Case("scatter/big_src/" + name, "scatter", [x, big, ix], [x.scatter(axis, ix, big)], axis=axis))
    cases.append(Case("scatter_add/big_src/" + name, "scatter_add", [x, big, ix],
                      [x.scatter_add(axis, ix, big)], axis=axis))
    cases.append(autograd_case("scatter_value/" + name, "scatter_value",
                               lambda a, i, ax=axis: a.scatter(ax, i, 2.5), [x, ix], axis=axis, value=2.5))
    rep = torch.randint(0, shape[axis], ishape)  # repeated targets accumulate
    cases.append(autograd_case("scatter_add/" + name, "scatter_add",
                               lambda a, s, i, ax=axis: a.scatter_add(ax, i, s), [x, src, rep], axis=axis))
x, src = ints(3, 4), ints(3, 4)
ix = perm_index((3, 2), 1, 4)
cases.append(Case("scatter/int64", "scatter", [x, src, ix], [x.scatter(1, ix, src)], axis=1))
cases.append(Case("scatter_add/int64", "scatter_add", [x, src, ix], [x.scatter_add(1, ix, src)], axis=1))

# ---- index_add ----------------------------------------------------------
seed(4)
for name, shape, axis, ix in [
    ("2d/axis0", (5, 3), 0, idx([4, 0, 4, 2])),
    ("2d/axis-1", (3, 4), -1, idx([1, 1, 3])),
    ("3d/axis1", (2, 4, 3), 1, idx([3, 0, 3, 3, 1], i32)),
]:
    x = rnd(*shape)
    sshape = list(shape)
    sshape[axis] = len(ix)
    src = rnd(*sshape)
    cases.append(autograd_case("index_add/" + name, "index_add",
                               lambda a, s, i, ax=axis: a.index_add(ax, i.long(), s), [x, src, ix], axis=axis))

# ---- masked_fill, masked_select, masked_scatter -------------------------
seed(5)
for name, x, m in [
    ("same", rnd(3, 4), torch.rand(3, 4) > 0.5),
    ("bcast_row", rnd(3, 4), torch.rand(4) > 0.5),
    ("bcast_col", rnd(2, 3, 4), torch.rand(3, 1) > 0.5),
]:
    cases.append(autograd_case("masked_fill/" + name, "masked_fill",
                               lambda a, mm: a.masked_fill(mm, -1.5), [x, m], value=-1.5))
    cases.append(autograd_case("masked_select/" + name, "masked_select",
                               lambda a, mm: a.masked_select(mm), [x, m]))
    n = int(m.expand_as(x).sum())
    src = rnd(n + 2)
    cases.append(autograd_case("masked_scatter/" + name, "masked_scatter",
                               lambda a, mm, s: a.masked_scatter(mm, s), [x, m, src]))
x, m = rnd(4), torch.rand(3, 4) > 0.4  # input broadcast by the mask
cases.append(autograd_case("masked_select/bcast_input", "masked_select", lambda a, mm: a.masked_select(mm), [x, m]))
x, m = ints(3, 4), torch.rand(3, 4) > 0.5
cases.append(Case("masked_fill/int64", "masked_fill", [x, m], [x.masked_fill(m, 7)], value=7.0))
cases.append(Case("masked_select/int64", "masked_select", [x, m], [x.masked_select(m)]))

# ---- split, split_sizes, chunk ------------------------------------------
seed(6)
for name, x, size, axis in [
    ("even", rnd(6, 2), 2, 0),
    ("ragged", rnd(3, 7), 3, 1),
    ("neg_axis", rnd(2, 5, 3), 2, -2),
    ("one", rnd(4, 3), 5, 0),
]:
    cases.append(autograd_case("split/" + name, "split", lambda a, s=size, ax=axis: a.split(s, ax), [x], size=size, axis=axis))
for name, x, sizes, axis in [
    ("2d", rnd(6, 2), [1, 3, 2], 0),
    ("zero", rnd(2, 5), [2, 0, 3], -1),
]:
    cases.append(autograd_case("split_sizes/" + name, "split_sizes", lambda a, s=sizes, ax=axis: a.split(s, ax), [x], sizes=sizes, axis=axis))
for name, x, n, axis in [
    ("even", rnd(6, 2), 3, 0),
    ("ragged", rnd(2, 5), 3, 1),
    ("fewer", rnd(6, 2), 4, 0),
    ("neg_axis", rnd(2, 3, 7), 2, -1),
]:
    cases.append(autograd_case("chunk/" + name, "chunk", lambda a, k=n, ax=axis: a.chunk(k, ax), [x], n=n, axis=axis))

# ---- pad ----------------------------------------------------------------
seed(7)
for name, shape, pads, mode, value in [
    ("constant/last", (3, 4), (1, 2), "constant", 0.0),
    ("constant/two", (2, 3, 4), (2, 0, 1, 3), "constant", 1.5),
    ("constant/three", (2, 3, 4), (1, 1, 0, 2, 1, 0), "constant", -2.0),
    ("constant/crop", (3, 5), (-1, 2, 1, -2), "constant", 0.5),
    ("reflect/1d", (2, 3, 5), (2, 3), "reflect", 0.0),
    ("reflect/2d", (1, 2, 4, 5), (1, 2, 3, 1), "reflect", 0.0),
    ("reflect/crop", (1, 3, 6), (-1, 3), "reflect", 0.0),
    ("replicate/1d", (2, 2, 4), (3, 1), "replicate", 0.0),
    ("replicate/2d", (1, 2, 3, 4), (2, 0, 1, 4), "replicate", 0.0),
    ("replicate/3d", (1, 1, 2, 3, 2), (1, 1, 0, 1, 2, 1), "replicate", 0.0),
    ("replicate/crop", (1, 2, 5), (2, -2), "replicate", 0.0),
    ("circular/1d", (1, 2, 5), (2, 3), "circular", 0.0),
    ("circular/2d", (1, 1, 3, 4), (1, 2, 2, 1), "circular", 0.0),
]:
    x = rnd(*shape)
    cases.append(autograd_case("pad/" + name, "pad",
                               lambda a, p=pads, md=mode, v=value: F.pad(a, p, mode=md, value=v) if md == "constant" else F.pad(a, p, mode=md),
                               [x], pads=list(pads), mode=mode, value=value))
x = ints(2, 3)
cases.append(Case("pad/int64", "pad", [x], [F.pad(x, (1, 1, 1, 0), value=4)], pads=[1, 1, 1, 0], mode="constant", value=4.0))

# ---- repeat, tile -------------------------------------------------------
seed(8)
for name, shape, reps in [
    ("1d", (3,), (2,)),
    ("2d", (2, 3), (2, 3)),
    ("lead", (2, 3), (2, 1, 2)),
    ("3d", (2, 1, 3), (1, 3, 2)),
    ("zero", (2, 3), (0, 2)),
]:
    x = rnd(*shape)
    cases.append(autograd_case("repeat/" + name, "repeat", lambda a, r=reps: a.repeat(*r), [x], reps=list(reps)))
for name, shape, reps in [
    ("short", (2, 3), (2,)),
    ("long", (2, 3), (2, 1, 2)),
    ("3d", (2, 2, 3), (3, 1)),
]:
    x = rnd(*shape)
    cases.append(autograd_case("tile/" + name, "tile", lambda a, r=reps: torch.tile(a, r), [x], reps=list(reps)))
x = ints(2, 2)
cases.append(Case("repeat/int64", "repeat", [x], [x.repeat(2, 3)], reps=[2, 3]))

# ---- roll ---------------------------------------------------------------
seed(9)
for name, shape, shifts, axes in [
    ("flat", (3, 4), [5], []),
    ("flat_neg", (2, 3, 2), [-4], []),
    ("axis0", (4, 3), [1], [0]),
    ("axis-1_big", (3, 5), [12], [-1]),
    ("two", (3, 4, 2), [-1, 2], [0, 1]),
    ("same_axis", (3, 4), [1, 2], [1, 1]),
]:
    x = rnd(*shape)
    fn = (lambda a, s=shifts: torch.roll(a, s[0])) if not axes else (lambda a, s=shifts, d=axes: torch.roll(a, s, d))
    cases.append(autograd_case("roll/" + name, "roll", fn, [x], shifts=shifts, axes=axes))

# ---- tril, triu ---------------------------------------------------------
seed(10)
for name, shape, k in [
    ("square", (4, 4), 0),
    ("wide_k1", (3, 5), 1),
    ("tall_k-1", (5, 3), -1),
    ("batch_k2", (2, 3, 4), 2),
    ("k_big_neg", (3, 3), -5),
]:
    x = rnd(*shape)
    cases.append(autograd_case("tril/" + name, "tril", lambda a, kk=k: torch.tril(a, kk), [x], k=k))
    cases.append(autograd_case("triu/" + name, "triu", lambda a, kk=k: torch.triu(a, kk), [x], k=k))
x = ints(3, 3)
cases.append(Case("tril/int64", "tril", [x], [torch.tril(x)], k=0))

# ---- one_hot ------------------------------------------------------------
seed(11)
for name, ix, n in [
    ("1d", idx([0, 3, 1, 3]), 5),
    ("2d_infer", idx([[2, 0], [1, 4]]), -1),
    ("scalar", idx(2), 3),
]:
    cases.append(Case("one_hot/" + name, "one_hot", [ix], [F.one_hot(ix, n)], num_classes=n))

write("tensor/testdata/golden_index.json", cases)
