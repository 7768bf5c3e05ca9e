#!/usr/bin/python3
"""Check that PyTorch reads a checkpoint written by Ember's train package.

Usage: check_checkpoint.py CHECKPOINT IO

CHECKPOINT holds a model torch.nn.Sequential(Linear(4, 16), Dropout(0.25),
Linear(16, 2)) under "model.", AdamW's state under "optimizers.adamw." and
the JSON part under the metadata key "ember.train.checkpoint". The script
loads the model's state dict into torch with strict=True, runs the "input"
of the safetensors file IO in evaluation mode and compares with Ember's
"output" there; it checks the optimizer's moments have the parameters'
shapes and reads step, epoch and the user metadata from the JSON. Exits 0
when everything matches, 1 otherwise, 3 when torch is unusable here (the Go
test then skips).
"""

import json
import os
import sys

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "nn", "testdata"))

try:
    import torch
except ImportError:
    sys.exit(3)
if not hasattr(torch, "frombuffer"):
    sys.exit(3)

import safetensors_io  # noqa: E402


def main():
    ckpt_path, io_path = sys.argv[1:3]
    tensors, meta = safetensors_io.load(ckpt_path)
    info = json.loads(meta["ember.train.checkpoint"])
    model = torch.nn.Sequential(
        torch.nn.Linear(4, 16), torch.nn.Dropout(0.25), torch.nn.Linear(16, 2)
    ).double()
    sd = {k[len("model."):]: v for k, v in tensors.items() if k.startswith("model.")}
    model.load_state_dict(sd, strict=True)
    model.eval()
    io, _ = safetensors_io.load(io_path)
    with torch.no_grad():
        y = model(io["input"])
    ok = True
    if not torch.allclose(y, io["output"], rtol=1e-12, atol=1e-12):
        print("torch output\n%s\nember output\n%s" % (y, io["output"]))
        ok = False
    params = list(model.state_dict().values())
    for i, p in enumerate(params):
        for moment in ("exp_avg", "exp_avg_sq"):
            t = tensors.get("optimizers.adamw.state.%d.%s" % (i, moment))
            if t is None or t.shape != p.shape:
                print("optimizer %s of parameter %d: %s, want shape %s" % (moment, i, None if t is None else t.shape, p.shape))
                ok = False
    print("step %d epoch %d metadata %s" % (info["step"], info["epoch"], json.dumps(info["metadata"], sort_keys=True)))
    sys.exit(0 if ok else 1)


main()
