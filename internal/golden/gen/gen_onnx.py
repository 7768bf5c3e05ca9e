"""Small PyTorch models exported with torch.onnx.export, with inputs and
PyTorch's outputs, for the onnx package's end-to-end tests.

Writes onnx/testdata/models/<name>/model.onnx, input_<i>.npy and
output_<i>.npy (inputs and outputs in graph order).
"""

import os
import shutil
import warnings

import numpy as np
import torch

from golden import ROOT, seed

warnings.filterwarnings("ignore")
OUT = os.path.join(ROOT, "onnx", "testdata", "models")


def export(name, model, inputs, opset, dynamic_axes=None, input_names=None, output_names=None):
    model.eval()
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    with torch.no_grad():
        outs = model(*inputs)
    if not isinstance(outs, (tuple, list)):
        outs = (outs,)
    flat = []
    for o in outs:
        if isinstance(o, (tuple, list)):
            flat.extend(o)
        else:
            flat.append(o)
    torch.onnx.export(
        model, tuple(inputs), os.path.join(d, "model.onnx"), opset_version=opset,
        input_names=input_names, output_names=output_names, dynamic_axes=dynamic_axes,
        do_constant_folding=True,
    )
    for i, x in enumerate(inputs):
        np.save(os.path.join(d, "input_%d.npy" % i), x.numpy())
    for i, y in enumerate(flat):
        np.save(os.path.join(d, "output_%d.npy" % i), y.detach().numpy())


class CNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(4)
        self.dw = torch.nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=4)
        self.fc = torch.nn.Linear(4, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = torch.nn.functional.max_pool2d(x, 2, ceil_mode=True)
        x = torch.nn.functional.hardswish(self.dw(x))
        x = torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)
        return torch.softmax(self.fc(x), dim=-1)


class Seq(torch.nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.rnn = cell

    def forward(self, x):
        y, h = self.rnn(x)
        return y, h


if os.path.isdir(OUT):
    shutil.rmtree(OUT)
seed(0)
cnn = CNN()
with torch.no_grad():
    cnn.bn.running_mean.uniform_(-0.5, 0.5)
    cnn.bn.running_var.uniform_(0.5, 1.5)
export("cnn_opset13", cnn, [torch.randn(2, 3, 9, 9)], 13,
       dynamic_axes={"x": {0: "N"}}, input_names=["x"], output_names=["probs"])
seed(1)
export("lstm_bidirectional", Seq(torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True)), [torch.randn(5, 2, 3)], 14)
seed(2)
export("gru_batch_first", Seq(torch.nn.GRU(3, 4, batch_first=True, bidirectional=True)), [torch.randn(2, 5, 3)], 14)
for opset in (13, 17):
    seed(3)
    enc = torch.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0)
    export("transformer_opset%d" % opset, enc, [torch.randn(4, 2, 8)], opset)
print("wrote", sorted(os.listdir(OUT)))
