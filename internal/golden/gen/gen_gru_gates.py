"""Golden values for the fused GRU gate step (tensor.GRUGates,
tensor.GRUGatesBackward and autograd.GRUGates) and the fused recurrence
(autograd.GRUSequence).

Each case draws gi and gh ([N, 3H]) and h ([N, H]) and computes, with
PyTorch's ops, the gate arithmetic of torch.nn.GRU (gate blocks r, z, n):
r = sigmoid(gi_r + gh_r), z = sigmoid(gi_z + gh_z),
n = tanh(gi_n + r * gh_n), h' = (1 - z) * n + z * h; the outputs are h' and
the gates [r, z, n], the gradients those of h' (weighted by a random
grad_output) with respect to gi, gh and h.
"""

import torch

from golden import autograd_case, seed, write

cases = []
seed(0)
for name, n, hidden, dtype, scale in (
    ("small", 2, 3, torch.float64, 1.0),
    ("wide", 3, 17, torch.float32, 2.0),
    ("large_inputs", 2, 5, torch.float64, 12.0),
    ("rows1", 1, 35, torch.float32, 1.0),
):
    gi = torch.randn(n, 3 * hidden, dtype=dtype) * scale
    gh = torch.randn(n, 3 * hidden, dtype=dtype) * scale
    h = torch.randn(n, hidden, dtype=dtype)

    def fn(gi, gh, h, hidden=hidden):
        ir, iz, inn = gi.chunk(3, 1)
        hr, hz, hn = gh.chunk(3, 1)
        r = torch.sigmoid(ir + hr)
        z = torch.sigmoid(iz + hz)
        nn_ = torch.tanh(inn + r * hn)
        return ((1 - z) * nn_ + z * h,)

    case = autograd_case("gru_gates/" + name, "gru_gates", fn, [gi, gh, h])
    cases.append(case)

# GRUSequence: h[t] = gates(gi[t], h[t-1] @ whh.T + bhh, h[t-1]) over the
# steps in order (or reversed); the output is every h[t], [T, N, H].
seed(1)
for name, steps, n, hidden, bias, reverse, dtype in (
    ("forward", 4, 2, 3, True, False, torch.float64),
    ("reverse", 3, 2, 3, True, True, torch.float64),
    ("no_bias", 3, 3, 2, False, False, torch.float64),
    ("float32", 5, 2, 17, True, False, torch.float32),
):
    gi = torch.randn(steps, n, 3 * hidden, dtype=dtype)
    h0 = torch.randn(n, hidden, dtype=dtype)
    whh = torch.randn(3 * hidden, hidden, dtype=dtype) * 0.5
    inputs = [gi, h0, whh]
    if bias:
        inputs.append(torch.randn(3 * hidden, dtype=dtype))

    def seq(gi, h, whh, bhh=None, steps=steps, reverse=reverse):
        outs = [None] * steps
        for i in range(steps):
            t = steps - 1 - i if reverse else i
            gh = h @ whh.T
            if bhh is not None:
                gh = gh + bhh
            ir, iz, inn = gi[t].chunk(3, 1)
            hr, hz, hn = gh.chunk(3, 1)
            r = torch.sigmoid(ir + hr)
            z = torch.sigmoid(iz + hz)
            nn_ = torch.tanh(inn + r * hn)
            h = (1 - z) * nn_ + z * h
            outs[t] = h
        return (torch.stack(outs, 0),)

    cases.append(autograd_case("gru_sequence/" + name, "gru_sequence", seq, inputs, reverse=reverse))

write("autograd/testdata/golden_gru_gates.json", cases)
