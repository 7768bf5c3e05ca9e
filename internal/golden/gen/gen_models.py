#!/usr/bin/python3
"""Reference models for package nn/models (the model zoo).

Two modes, both run with Debian's interpreter (python3-torch and
python3-torchvision):

    /usr/bin/python3 internal/golden/gen/gen_models.py
        writes nn/models/testdata/keys_models.json: for every model the
        state-dict keys in order with their shapes and dtypes, checked by
        nn/models/keys_test.go without Python. (A key list rather than a
        golden_<area>.json of tensors: the weights of these models are far
        too big to commit.)

    /usr/bin/python3 internal/golden/gen/gen_models.py --weights DIR [NAME...]
        writes DIR/<name>.safetensors (the state dict) and
        DIR/<name>_io.safetensors ("input", any keyword arguments of
        forward such as "lengths", the model's eval-mode "output", and
        "output64", the same in float64) for the named models of GOLDEN (all without names). nn/models/golden_test.go runs this
        into a temporary directory, so the weights never enter git.

torchvision models are built with weights=None (no download). The models
without a torchvision equivalent (LeNet5, GRUClassifier, GPT) are defined
here with the parameter names Ember's nn/models documents. Safetensors are
written with the standard library (struct, json) plus torch and numpy, as
nn/testdata/safetensors_io.py does, without the safetensors package.
"""

import json
import math
import os
import struct
import sys

sys.dont_write_bytecode = True

import torch  # noqa: E402
import torch.nn as tnn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import torchvision  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
KEYS_PATH = os.path.join(ROOT, "nn", "models", "testdata", "keys_models.json")

DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}


class LeNet5(tnn.Module):
    """Classic LeNet-5 with ReLU and max pooling, 32x32 inputs."""

    def __init__(self, in_channels=1, num_classes=10):
        super().__init__()
        self.conv1 = tnn.Conv2d(in_channels, 6, 5)
        self.conv2 = tnn.Conv2d(6, 16, 5)
        self.fc1 = tnn.Linear(16 * 5 * 5, 120)
        self.fc2 = tnn.Linear(120, 84)
        self.fc3 = tnn.Linear(84, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class GRUClassifier(tnn.Module):
    """Embedding -> batch-first GRU -> Linear on the final hidden state."""

    def __init__(self, vocab, embed, hidden, layers, classes, bidirectional):
        super().__init__()
        self.bidirectional = bidirectional
        self.embedding = tnn.Embedding(vocab, embed)
        self.gru = tnn.GRU(embed, hidden, num_layers=layers, batch_first=True, bidirectional=bidirectional)
        self.fc = tnn.Linear(hidden * (2 if bidirectional else 1), classes)

    def forward(self, ids, lengths=None):
        x = self.embedding(ids)
        if lengths is not None:
            x = tnn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        _, h = self.gru(x)
        h = torch.cat([h[-2], h[-1]], dim=1) if self.bidirectional else h[-1]
        return self.fc(h)


class GPTMLP(tnn.Module):
    def __init__(self, d):
        super().__init__()
        self.c_fc = tnn.Linear(d, 4 * d)
        self.c_proj = tnn.Linear(4 * d, d)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class GPTBlock(tnn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln_1 = tnn.LayerNorm(d)
        self.attn = tnn.MultiheadAttention(d, heads, batch_first=True)
        self.ln_2 = tnn.LayerNorm(d)
        self.mlp = GPTMLP(d)

    def forward(self, x, mask):
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class GPT(tnn.Module):
    """Pre-norm causal decoder: wte, wpe, h.N, ln_f, lm_head."""

    def __init__(self, vocab, block, layers, heads, d, tied):
        super().__init__()
        self.wte = tnn.Embedding(vocab, d)
        self.wpe = tnn.Embedding(block, d)
        self.h = tnn.ModuleList([GPTBlock(d, heads) for _ in range(layers)])
        self.ln_f = tnn.LayerNorm(d)
        self.lm_head = tnn.Linear(d, vocab, bias=False)
        if tied:
            self.lm_head.weight = self.wte.weight

    def forward(self, ids):
        t = ids.shape[1]
        x = self.wte(ids) + self.wpe(torch.arange(t))
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        for blk in self.h:
            x = blk(x, mask)
        return self.lm_head(self.ln_f(x))


tv = torchvision.models

# name -> constructor; the Go tests build the same configurations.
MODELS = {
    "mlp": lambda: torchvision.ops.MLP(8, [16, 16, 4]),
    "lenet5": lambda: LeNet5(),
    "gru_classifier": lambda: GRUClassifier(50, 8, 12, 2, 3, True),
    "gru_classifier_lengths": lambda: GRUClassifier(50, 8, 12, 2, 3, True),
    "gpt": lambda: GPT(64, 16, 2, 2, 16, False),
    "gpt_tied": lambda: GPT(64, 16, 2, 2, 16, True),
    "resnet18": lambda: tv.resnet18(weights=None),
    "resnet34": lambda: tv.resnet34(weights=None),
    "resnet50": lambda: tv.resnet50(weights=None),
    "mobilenet_v2": lambda: tv.mobilenet_v2(weights=None),
    "mobilenet_v2_w05": lambda: tv.mobilenet_v2(weights=None, width_mult=0.5, num_classes=10),
    "vgg11": lambda: tv.vgg11(weights=None),
    "vgg11_bn": lambda: tv.vgg11_bn(weights=None),
    "vgg16": lambda: tv.vgg16(weights=None),
    "vgg16_bn": lambda: tv.vgg16_bn(weights=None),
}

# name -> input maker for the golden (--weights) mode.
GOLDEN = {
    "mlp": lambda: torch.randn(3, 8),
    "lenet5": lambda: torch.randn(2, 1, 32, 32),
    "gru_classifier": lambda: torch.randint(0, 50, (2, 7)),
    # Padded sequences of lengths 7, 3 and 5 (keyword arguments of forward).
    "gru_classifier_lengths": lambda: (torch.randint(0, 50, (3, 7)), {"lengths": torch.tensor([7, 3, 5])}),
    "gpt": lambda: torch.randint(0, 64, (2, 10)),
    "gpt_tied": lambda: torch.randint(0, 64, (2, 10)),
    "resnet18": lambda: torch.randn(1, 3, 64, 64),
    "resnet50": lambda: torch.randn(1, 3, 64, 64),
    "mobilenet_v2": lambda: torch.randn(1, 3, 64, 64),
    "mobilenet_v2_w05": lambda: torch.randn(1, 3, 48, 48),
}


def save(path, tensors):
    """Write a dict name -> tensor as a safetensors file."""
    if sys.byteorder != "little":
        raise SystemExit("gen_models.py assumes a little-endian host")
    header = {"__metadata__": {"format": "pt", "source": "gen_models.py"}}
    chunks, offset = [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous()
        b = t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        chunks.append(b)
        offset += len(b)
    hdr = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hdr += b" " * (-len(hdr) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hdr)))
        f.write(hdr)
        for b in chunks:
            f.write(b)


def perturb(model, x):
    """Make every parameter and running statistic informative.

    Batch norms get random affine parameters and running statistics from
    one training-mode pass (momentum 1, so they are that batch's statistics,
    which keeps activations well scaled); every other parameter gets small
    noise, so zero-initialized biases are exercised too.
    """
    bns = [m for m in model.modules() if isinstance(m, tnn.modules.batchnorm._BatchNorm)]
    bn_params = set()
    for m in bns:
        bn_params.update([id(m.weight), id(m.bias)])
    with torch.no_grad():
        for p in model.parameters():
            if id(p) in bn_params:
                continue
            p.add_(0.02 * torch.randn_like(p))
        for m in bns:
            m.weight.uniform_(0.5, 1.5)
            m.bias.normal_(0, 0.1)
            m.momentum = 1.0
        if bns:
            model.train()
            model(torch.cat([x, torch.randn_like(x)]))
            for m in bns:
                m.momentum = 0.1
    model.eval()


def write_keys():
    out = {}
    for i, name in enumerate(sorted(MODELS)):
        torch.manual_seed(i)
        sd = MODELS[name]().state_dict()
        out[name] = [{"name": k, "shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")} for k, v in sd.items()]
    # One key per line keeps the file small and its diffs readable.
    lines = ['{"generator": "internal/golden/gen/gen_models.py",',
             ' "torch_version": %s, "torchvision_version": %s,' % (json.dumps(torch.__version__), json.dumps(torchvision.__version__)),
             ' "models": {']
    names = sorted(out)
    for i, name in enumerate(names):
        lines.append('  %s: [' % json.dumps(name))
        entries = out[name]
        for j, e in enumerate(entries):
            lines.append('   ' + json.dumps(e, sort_keys=True, separators=(",", ":")) + ("," if j + 1 < len(entries) else ""))
        lines.append('  ]' + ("," if i + 1 < len(names) else ""))
    lines.append(' }}')
    with open(KEYS_PATH, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote", os.path.relpath(KEYS_PATH, ROOT))


def write_weights(d, names):
    for name in names:
        if name not in GOLDEN:
            raise SystemExit("gen_models.py: no golden model %r (have %s)" % (name, ", ".join(sorted(GOLDEN))))
    for name in names:
        torch.manual_seed(1000 + sorted(GOLDEN).index(name))
        model = MODELS[name]()
        x, kwargs = GOLDEN[name](), {}
        if isinstance(x, tuple):
            x, kwargs = x
        perturb(model, x if x.dtype.is_floating_point else None)
        with torch.no_grad():
            y = model(x, **kwargs)
        save(os.path.join(d, name + ".safetensors"), model.state_dict())
        # The float64 forward pass of the same weights bounds the float32
        # rounding error that torch itself makes.
        model.double()
        with torch.no_grad():
            y64 = model(x.double() if x.dtype.is_floating_point else x, **kwargs)
        save(os.path.join(d, name + "_io.safetensors"), dict(kwargs, input=x, output=y, output64=y64))


def main():
    torch.set_num_threads(1)
    if len(sys.argv) >= 3 and sys.argv[1] == "--weights":
        write_weights(sys.argv[2], sys.argv[3:] or sorted(GOLDEN))
    elif len(sys.argv) == 1:
        write_keys()
    else:
        raise SystemExit("usage: gen_models.py [--weights DIR]")


if __name__ == "__main__":
    main()
