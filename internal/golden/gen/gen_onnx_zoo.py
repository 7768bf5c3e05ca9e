"""Larger PyTorch models exported with torch.onnx.export, for the onnx
package's zoo test (onnx/session_zoo_test.go) and the latency comparison with ONNX
Runtime (bench/onnx/compare.sh).

The files are big (ResNet-18 is 45 MB), so they stay out of git: they go to
$EMBER_ONNX_ZOO, default onnx/testdata/zoo (ignored by .gitignore), as
<name>_opset<N>/model.onnx, input_0.npy and output_0.npy.

Models: torchvision ResNet-18, MobileNetV2 and SqueezeNet 1.1 (weights=None,
no download; seeded random weights and random batch-norm statistics, eval
mode) on a 1x3x224x224 input with a dynamic batch axis, and a two-layer
transformer encoder (d_model 64, 4 heads) on a (seq 10, batch 2, 64) input,
each at opsets 13 and 17.

Run with Debian's python3-torch and python3-torchvision:

    /usr/bin/python3 internal/golden/gen/gen_onnx_zoo.py
"""

import os
import warnings

import numpy as np
import torch
import torchvision

from golden import ROOT, seed

warnings.filterwarnings("ignore")
OUT = os.environ.get("EMBER_ONNX_ZOO") or os.path.join(ROOT, "onnx", "testdata", "zoo")


def randomize_bn(model):
    """Gives every batch norm non-trivial statistics and affine parameters,
    so the exported (folded) graph is checked on more than identities."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            with torch.no_grad():
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
    return model


def export(name, model, x, opset, dynamic_axes):
    model.eval()
    d = os.path.join(OUT, "%s_opset%d" % (name, opset))
    os.makedirs(d, exist_ok=True)
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(
        model, (x,), os.path.join(d, "model.onnx"), opset_version=opset,
        input_names=["input"], output_names=["output"], dynamic_axes=dynamic_axes,
        do_constant_folding=True,
    )
    np.save(os.path.join(d, "input_0.npy"), x.numpy())
    np.save(os.path.join(d, "output_0.npy"), y.detach().numpy())
    print("wrote", d)


def main():
    vision = {
        "resnet18": torchvision.models.resnet18,
        "mobilenet_v2": torchvision.models.mobilenet_v2,
        "squeezenet1_1": torchvision.models.squeezenet1_1,
    }
    batch = {"input": {0: "batch"}, "output": {0: "batch"}}
    for opset in (13, 17):
        for i, (name, ctor) in enumerate(sorted(vision.items())):
            seed(100 + i)
            model = randomize_bn(ctor(weights=None))
            export(name, model, torch.randn(1, 3, 224, 224), opset, batch)
        seed(200)
        layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.0)
        enc = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        export("transformer", enc, torch.randn(10, 2, 64), opset, {"input": {0: "seq"}, "output": {0: "seq"}})


if __name__ == "__main__":
    main()
