"""Golden values for package nn: recurrent and attention layers.

Writes nn/testdata/golden_rnn_attn.json, checked by nn/rnn_test.go,
nn/attention_test.go and nn/transformer_test.go.

Every case runs a torch module in float64 and eval mode (dropout off). Its
inputs are the data inputs (the op decides which: see below) followed by
the module's parameters in state-dict order, whose names are listed in the
attribute "params"; the Go test loads them with nn.LoadStateDict. Outputs
are the module's outputs; "grads" holds the gradients of every input and
parameter after backward with the random "grad_outputs" (cases with
"grad": false store none).

Ops and data inputs:
  rnn_cell, lstm_cell, gru_cell   x, h (and c) -> h' (and c')
  rnn, lstm, gru                  x, [h0, [c0]] -> output, h_n, [c_n]
                                  attr "lengths" (optional) runs torch's
                                  packed path (enforce_sorted=False)
  sdpa                            q, k, v, [float or bool mask] -> out
  mha                             query, key, value, [masks] -> out, weights
  encoder_layer, decoder_layer,
  encoder, decoder                src / tgt, memory -> out
"""

import math
import os
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence  # noqa: E402

from golden import Case, seed, write  # noqa: E402

F64 = torch.float64


def module_case(name, op, module, data, fn, grad=True, const=(), **attrs):
    """Run fn(*data) with module's parameters and record a case. Data
    inputs whose index is in const (masks) get no gradient."""
    module = module.double().eval()
    xs = []
    for i, x in enumerate(data):
        x = x.detach().clone()
        if grad and x.is_floating_point() and i not in const:
            x.requires_grad_(True)
        xs.append(x)
    names, params = [], []
    for n, p in module.named_parameters():
        names.append(n)
        params.append(p)
        p.grad = None
    outs = fn(*xs)
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    outs = [o for o in outs]
    attrs["params"] = names
    if not grad:
        return Case(name, op, xs + params, outs, **attrs)
    gouts = [torch.randn(o.shape, dtype=o.dtype) for o in outs]
    torch.autograd.backward([o for o in outs], gouts)
    grads = []
    for x in xs + params:
        if not x.requires_grad:
            grads.append(None)
        elif x.grad is None:
            grads.append(torch.zeros_like(x))
        else:
            grads.append(x.grad)
    return Case(name, op, xs + params, outs, grads=grads, grad_outputs=gouts, **attrs)


def cell_cases():
    cases = []
    seed(1)
    for kind, cls in (("rnn_cell", nn.RNNCell), ("lstm_cell", nn.LSTMCell), ("gru_cell", nn.GRUCell)):
        for bias in (True, False):
            for nl in (("tanh", "relu") if kind == "rnn_cell" else ("",)):
                kw = {"nonlinearity": nl} if nl else {}
                m = cls(3, 4, bias=bias, **kw)
                x = torch.randn(2, 3, dtype=F64)
                h = torch.randn(2, 4, dtype=F64)
                data = [x, h]
                if kind == "lstm_cell":
                    data.append(torch.randn(2, 4, dtype=F64))

                    def fn(x, h, c, m=m):
                        return m(x, (h, c))

                else:

                    def fn(x, h, m=m):
                        return m(x, h)

                name = "%s/bias=%s%s" % (kind, bias, "/" + nl if nl else "")
                cases.append(module_case(name, kind, m, data, fn, bias=bias, nonlinearity=nl or "tanh"))
    return cases


def seq_case(name, kind, cls, in_size, hidden, t, n, num_layers=1, bidirectional=False, batch_first=False,
             bias=True, nonlinearity="", h0=False, lengths=None):
    kw = {"nonlinearity": nonlinearity} if nonlinearity else {}
    m = cls(in_size, hidden, num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first,
            bias=bias, dropout=0.3 if num_layers > 1 else 0.0, **kw)
    shape = (n, t, in_size) if batch_first else (t, n, in_size)
    x = torch.randn(*shape, dtype=F64)
    data = [x]
    dirs = 2 if bidirectional else 1
    if h0:
        data.append(torch.randn(num_layers * dirs, n, hidden, dtype=F64))
        if kind == "lstm":
            data.append(torch.randn(num_layers * dirs, n, hidden, dtype=F64))

    def fn(x, *state):
        st = None
        if state:
            st = state if kind == "lstm" else state[0]
        if lengths is None:
            out, hn = m(x, st)
        else:
            packed = pack_padded_sequence(x, torch.tensor(lengths), batch_first=batch_first, enforce_sorted=False)
            out, hn = m(packed, st)
            out, _ = pad_packed_sequence(out, batch_first=batch_first, total_length=t)
        if kind == "lstm":
            return out, hn[0], hn[1]
        return out, hn

    attrs = dict(num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias,
                 nonlinearity=nonlinearity or "tanh", h0=h0, input_size=in_size, hidden_size=hidden)
    if lengths is not None:
        attrs["lengths"] = lengths
    return module_case(name, kind, m, data, fn, **attrs)


def seq_cases():
    cases = []
    seed(2)
    for kind, cls in (("rnn", nn.RNN), ("lstm", nn.LSTM), ("gru", nn.GRU)):
        cases.append(seq_case(kind + "/plain", kind, cls, 3, 4, 5, 2))
        cases.append(seq_case(kind + "/h0_nobias", kind, cls, 3, 4, 4, 2, bias=False, h0=True))
        cases.append(seq_case(kind + "/2layer_bidir_bf_h0", kind, cls, 3, 4, 4, 3, num_layers=2,
                              bidirectional=True, batch_first=True, h0=True))
        cases.append(seq_case(kind + "/packed", kind, cls, 3, 4, 5, 3, lengths=[3, 5, 1]))
        cases.append(seq_case(kind + "/packed_2layer_bidir_bf_h0", kind, cls, 2, 3, 4, 3, num_layers=2,
                              bidirectional=True, batch_first=True, h0=True, lengths=[2, 4, 3]))
    cases.append(seq_case("rnn/relu_2layer", "rnn", nn.RNN, 3, 4, 4, 2, num_layers=2, nonlinearity="relu"))
    return cases


def sdpa_cases():
    cases = []
    seed(3)
    empty = nn.Module()
    q = torch.randn(2, 3, 4, dtype=F64)
    k = torch.randn(2, 5, 4, dtype=F64)
    v = torch.randn(2, 5, 6, dtype=F64)
    bmask = torch.rand(3, 5) > 0.3
    bmask[:, 0] = True  # every query keeps a key
    fmask = torch.randn(2, 3, 5, dtype=F64)

    def sdpa(mask=None, causal=False):
        def fn(q, k, v, *m):
            return torch.nn.functional._scaled_dot_product_attention(
                q, k, v, m[0] if m else None, 0.0, False, causal)[0]
        return fn

    cases.append(module_case("sdpa/plain", "sdpa", empty, [q, k, v], sdpa(), mask="none", is_causal=False))
    cases.append(module_case("sdpa/causal", "sdpa", empty, [q, k, v], sdpa(causal=True), mask="none", is_causal=True))
    cases.append(module_case("sdpa/bool_mask", "sdpa", empty, [q, k, v, bmask], sdpa(), const=(3,),
                             mask="bool", is_causal=False))
    cases.append(module_case("sdpa/float_mask", "sdpa", empty, [q, k, v, fmask], sdpa(), const=(3,),
                             mask="float", is_causal=False))
    q4 = torch.randn(2, 2, 3, 4, dtype=F64)
    k4 = torch.randn(2, 2, 4, 4, dtype=F64)
    v4 = torch.randn(2, 2, 4, 3, dtype=F64)
    cases.append(module_case("sdpa/4d_causal", "sdpa", empty, [q4, k4, v4], sdpa(causal=True), mask="none",
                             is_causal=True))
    return cases


def mha_case(name, e, h, lq, s, n, batch_first=False, bias=True, self_attn=False, kpm=None, attn_mask=None,
             need_weights=True, average=True, unbatched=False):
    m = nn.MultiheadAttention(e, h, bias=bias, batch_first=batch_first, dropout=0.2)

    def shape(t):
        if unbatched:
            return (t, e)
        return (n, t, e) if batch_first else (t, n, e)

    data = [torch.randn(*shape(lq), dtype=F64)]
    if not self_attn:
        data += [torch.randn(*shape(s), dtype=F64), torch.randn(*shape(s), dtype=F64)]
    const = []
    for extra in (kpm, attn_mask):
        if extra is not None:
            const.append(len(data))
            data.append(extra)

    def fn(*xs):
        if self_attn:
            q = k = v = xs[0]
            rest = list(xs[1:])
        else:
            q, k, v = xs[:3]
            rest = list(xs[3:])
        kp = rest.pop(0) if kpm is not None else None
        am = rest.pop(0) if attn_mask is not None else None
        out, w = m(q, k, v, key_padding_mask=kp, attn_mask=am, need_weights=need_weights,
                   average_attn_weights=average)
        return (out, w) if need_weights else (out,)

    return module_case(name, "mha", m, data, fn, const=tuple(const), embed_dim=e, num_heads=h,
                       batch_first=batch_first, bias=bias, self_attn=self_attn, has_kpm=kpm is not None,
                       has_attn_mask=attn_mask is not None, need_weights=need_weights, average=average)


def mha_cases():
    cases = []
    seed(4)
    cases.append(mha_case("mha/self", 4, 2, 3, 3, 2, self_attn=True))
    cases.append(mha_case("mha/cross_seqfirst", 6, 3, 3, 4, 2))
    kpm = torch.tensor([[False, False, True, False], [False, True, True, False]])
    am = torch.rand(3, 4) > 0.7
    am[:, 0] = False
    cases.append(mha_case("mha/cross_bf_masks_perhead", 6, 2, 3, 4, 2, batch_first=True, kpm=kpm, attn_mask=am,
                          average=False))
    fam = torch.randn(2 * 2, 3, 4, dtype=F64)
    fkpm = torch.tensor([[False, True, False, False], [False, False, False, True]])
    cases.append(mha_case("mha/nobias_float_attn_mask", 4, 2, 3, 4, 2, bias=False, kpm=fkpm, attn_mask=fam))
    cases.append(mha_case("mha/no_weights_bf", 4, 1, 2, 3, 3, batch_first=True, need_weights=False))
    cases.append(mha_case("mha/unbatched", 4, 2, 3, 5, 1, unbatched=True,
                          kpm=torch.tensor([False, True, False, False, True])))
    return cases


def transformer_case(name, op, d, h, ff, t, s, n, activation="relu", eps=1e-5, batch_first=False, norm_first=False,
                     num_layers=1, final_norm=False, masks=None):
    kw = dict(dim_feedforward=ff, dropout=0.1, activation=activation, layer_norm_eps=eps, batch_first=batch_first,
              norm_first=norm_first)
    decoder = op.startswith("decoder")
    if op == "encoder_layer":
        m = nn.TransformerEncoderLayer(d, h, **kw)
    elif op == "decoder_layer":
        m = nn.TransformerDecoderLayer(d, h, **kw)
    elif op == "encoder":
        norm = nn.LayerNorm(d, eps=eps) if final_norm else None
        m = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, h, **kw), num_layers, norm=norm,
                                  enable_nested_tensor=False)
    else:
        norm = nn.LayerNorm(d, eps=eps) if final_norm else None
        m = nn.TransformerDecoder(nn.TransformerDecoderLayer(d, h, **kw), num_layers, norm=norm)
    # Distinct weights per layer and non-trivial norms and biases.
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.randn(p.shape) * 0.5)
    masks = masks or {}

    def shape(k):
        return (n, k, d) if batch_first else (k, n, d)

    data = [torch.randn(*shape(t), dtype=F64)]
    if decoder:
        data.append(torch.randn(*shape(s), dtype=F64))
    names = list(masks)
    const = tuple(range(len(data), len(data) + len(names)))
    data += [masks[k] for k in names]
    nfixed = 2 if decoder else 1

    def fn(*xs):
        kws = dict(zip(names, xs[nfixed:]))
        if decoder:
            return m(xs[0], xs[1], **kws)
        return m(xs[0], **kws)

    return module_case(name, op, m, data, fn, const=const, d_model=d, nhead=h, dim_feedforward=ff,
                       activation=activation, layer_norm_eps=eps, batch_first=batch_first, norm_first=norm_first,
                       num_layers=num_layers, final_norm=final_norm, masks=names)


def transformer_cases():
    cases = []
    seed(5)
    causal3 = torch.triu(torch.full((3, 3), float("-inf"), dtype=F64), diagonal=1)
    kpm = torch.tensor([[False, False, True], [False, True, False]])
    mkpm = torch.tensor([[False, False, False, True], [True, False, False, False]])
    mmask = torch.rand(3, 4) > 0.7
    mmask[:, 0] = False
    cases.append(transformer_case("encoder_layer/relu_post_mask", "encoder_layer", 4, 2, 6, 3, 0, 2,
                                  masks={"src_mask": causal3}))
    cases.append(transformer_case("encoder_layer/gelu_pre_bf_kpm", "encoder_layer", 4, 2, 6, 3, 0, 2,
                                  activation="gelu", eps=1e-6, batch_first=True, norm_first=True,
                                  masks={"src_key_padding_mask": kpm}))
    cases.append(transformer_case("decoder_layer/relu_post_masks", "decoder_layer", 4, 2, 6, 3, 4, 2,
                                  masks={"tgt_mask": causal3, "memory_key_padding_mask": mkpm}))
    cases.append(transformer_case("decoder_layer/gelu_pre_bf", "decoder_layer", 6, 3, 5, 3, 4, 2,
                                  activation="gelu", batch_first=True, norm_first=True,
                                  masks={"memory_mask": mmask, "tgt_key_padding_mask": kpm}))
    cases.append(transformer_case("encoder/2layers_norm", "encoder", 4, 2, 6, 3, 0, 2, num_layers=2,
                                  final_norm=True, masks={"mask": causal3, "src_key_padding_mask": kpm}))
    cases.append(transformer_case("encoder/2layers_bf", "encoder", 4, 1, 3, 3, 0, 2, num_layers=2,
                                  batch_first=True, norm_first=True))
    cases.append(transformer_case("decoder/2layers_norm", "decoder", 4, 2, 6, 3, 4, 2, num_layers=2,
                                  final_norm=True, masks={"tgt_mask": causal3, "memory_key_padding_mask": mkpm}))
    return cases


def attn_cases():
    return sdpa_cases() + mha_cases() + transformer_cases()


def main():
    write("nn/testdata/golden_rnn_attn.json", cell_cases() + seq_cases() + attn_cases())


if __name__ == "__main__":
    main()
