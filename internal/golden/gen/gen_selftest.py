"""Self-test fixture for the golden loader.

Writes internal/golden/testdata/selftest.json, which
internal/golden/golden_test.go checks by recomputing each case in Go. It
exercises broadcasting with gradients, non-finite values, integer and bool
dtypes, a scalar, and every attribute accessor.
"""

import os
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from golden import Case, autograd_case, seed, write  # noqa: E402


def main():
    cases = []

    seed(1)
    a = torch.randn(2, 3, dtype=torch.float32)
    b = torch.randn(3, dtype=torch.float32)
    cases.append(autograd_case("add/broadcast", "add", torch.add, [a, b]))

    seed(2)
    x = torch.tensor([-1.0, 0.0, 0.5, 1.0, float("inf"), float("nan")], dtype=torch.float64)
    cases.append(autograd_case("log/special", "log", torch.log, [x]))

    seed(3)
    i = torch.randint(-5, 6, (2, 3), dtype=torch.int64)
    cases.append(
        Case(
            "sum/int64_keepdim",
            "sum",
            [i],
            [i.sum(dim=1, keepdim=True)],
            dim=1,
            keepdim=True,
        )
    )

    p = torch.tensor([1, 2, 3], dtype=torch.int32)
    q = torch.tensor([1, 0, 3], dtype=torch.int32)
    cases.append(
        Case(
            "eq/int32",
            "eq",
            [p, q],
            [torch.eq(p, q)],
            sizes=(2, 3),
            alpha=0.5,
            low=float("-inf"),
            mode="exact",
            flag=False,
        )
    )

    cases.append(Case("scalar/float32", "identity", [torch.tensor(1.0 / 3.0)], [torch.tensor(1.0 / 3.0)]))

    write("internal/golden/testdata/selftest.json", cases)


if __name__ == "__main__":
    main()
