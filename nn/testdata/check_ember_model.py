#!/usr/bin/python3
"""Check a model saved by Ember against PyTorch.

Usage: check_ember_model.py NAME WEIGHTS IO [NAME WEIGHTS IO ...]

For each triple, builds torch_models.build(NAME), loads the Ember-written
safetensors state dict WEIGHTS into it with load_state_dict(strict=True),
runs the "input" of the safetensors file IO and compares with Ember's
"output" stored there. Exits 0 when every model matches; prints the
differences and exits 1 otherwise; exits 3 when torch is unusable here (the
Go test then skips). One process checks every model, since importing torch
takes seconds.
"""

import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:
    import torch
except ImportError:
    sys.exit(3)

import safetensors_io  # noqa: E402
import torch_models  # noqa: E402


def check(name, weights, io):
    model = torch_models.build(name).eval()
    sd, meta = safetensors_io.load(weights)
    if meta.get("format") != "pt":
        print("%s: metadata %r lacks format=pt" % (name, meta))
        return False
    model.load_state_dict(sd, strict=True)
    tensors, _ = safetensors_io.load(io)
    with torch.no_grad():
        y = model(tensors["input"])
    want = tensors["output"]
    if y.shape != want.shape or not torch.allclose(y, want, rtol=1e-5, atol=1e-6):
        print("%s: torch output\n%s\nember output\n%s" % (name, y, want))
        return False
    print("ok: %s matches (%d values, max |diff| %.3g)" % (name, y.numel(), (y - want).abs().max().item()))
    return True


def main():
    if not torch_models.torch_version_ok():
        sys.exit(3)
    args = sys.argv[1:]
    if not args or len(args) % 3:
        print(__doc__)
        sys.exit(2)
    torch.set_num_threads(1)
    ok = True
    for i in range(0, len(args), 3):
        ok = check(*args[i : i + 3]) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
